/* test_cp_event.c — unit tests for controlproto/cp_event.c: the CIRC, HS_DESC, HS_DESC_CONTENT, STATUS_*,
 * CONF_CHANGED and SIGNAL event decoders, GETINFO/GETCONF answers and the ADD_ONION answer.
 *
 * Each case is wire text, framed by the real cp_reply_parser, then decoded; the result is compared as a
 * canonical dump (or the error, which must name the event and the field). Where the inputs come from:
 *   [tor]   captured from Debian's tor 0.4.9.11 on this machine (DisableNetwork, or a network whose only
 *           directory authority was a dead port on 127.0.0.1; addresses and keys from throwaway services),
 *   [facts] /work/shared/TOR-FACTS.md (measured on a private network), with placeholders filled in,
 *   [spec]  control-spec examples,
 *   [fmt]   written in the format of tor's circuit_describe_status_for_controller() / hs_control.c for
 *           states a local tor cannot reach without a network (built one-hop intro circuits). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controlproto/cp_event.h"
#include "controlproto/cp_reply.h"

#define ONION "xlfbxawllakyno2pxt4lkm55rotu7x6wdfqgqcol7q6gtnpwd5l5goqd"
#define ONION2 "vww6ybal4bd7szmgncyruucpgfkqahzddi37ktceo3ah7ngmcopnpyyd"
#define FP1 "F5B58FEE44573C3BFD7D176D918BA5B4057519D7"
#define FP2 "14AE2154A26F1D42C3C3BEDC10D05FDD9F8545BB"
#define FP3 "67B2BDA4264D8A189D9270E28B1D30A262838243"
#define FP4 "8A30C9E8F5954EE286D29BD65CADEA6991200804"
#define DESCID "NHN9fUdcd/9nJF6PSF6/IzdqkCiEoCsexfMv+7SGpCQ"
#define HSDIR_INDEX "2A6E8F1C1F0D4B5B9D6C3D3E8A0B7F31A0F3D0E5C2B8A9F6E3D2C1B0A9F8E7D6"
#define KEY "ED25519-V3:OLby5WF9svUV3Ry67kQeOhR5DrfE9vccmuDX9xv0wVYeEzuBqiq3+Z1pKDy7Hc2NcHnaSa8a9pPewMxNuyvqog=="

#define DUMPLEN 4096
#define ERRLEN 256

struct fixture {
    struct cp_reply_parser *parser;
    struct cp_reply *reply;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || (f->parser = cp_reply_parser_new(0, 0)) == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    cp_reply_free(f->reply);
    cp_reply_parser_free(f->parser);
    free(f);
    return 0;
}

/* Frame `wire` with the fixture's parser; it must hold exactly one reply. The previous reply is freed. */
static const struct cp_reply *frame(struct fixture *f, const char *wire)
{
    char err[ERRLEN] = "";

    cp_reply_free(f->reply);
    f->reply = NULL;
    if (cp_reply_parser_feed(f->parser, wire, strlen(wire), err, sizeof err) < 0)
        fail_msg("framing \"%s\": %s", wire, err);
    f->reply = cp_reply_parser_next(f->parser);
    if (f->reply == NULL)
        fail_msg("framing \"%s\": no complete reply", wire);
    assert_null(cp_reply_parser_next(f->parser));
    return f->reply;
}

/* ---- canonical dumps ---- */

static void dump_add(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dump_add(char *out, const char *fmt, ...)
{
    size_t o = strlen(out);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out + o, DUMPLEN - o, fmt, ap);
    va_end(ap);
    assert_true(strlen(out) < DUMPLEN - 1);
}

/* Append bytes with newlines, tabs and non-printables as \xNN. */
static void dump_bytes(char *out, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= 0x20 && c < 0x7f && c != '\\')
            dump_add(out, "%c", c);
        else
            dump_add(out, "\\x%02x", c);
    }
}

static const char *opt(const char *s)
{
    return s != NULL ? s : "-";
}

static void dump_server(char *out, const char *fp, const char *nick)
{
    if (fp[0] == '\0' && nick[0] == '\0')
        dump_add(out, "UNKNOWN");
    else if (fp[0] == '\0')
        dump_add(out, "%s", nick);
    else
        dump_add(out, "$%s%s%s", fp, nick[0] ? "~" : "", nick);
}

static void dump_circ(const struct cp_event_circ *c, char *out)
{
    static const struct {
        unsigned bit;
        const char *name;
    } flags[] = {
        {CP_BUILD_ONEHOP_TUNNEL, "ONEHOP_TUNNEL"},
        {CP_BUILD_IS_INTERNAL, "IS_INTERNAL"},
        {CP_BUILD_NEED_CAPACITY, "NEED_CAPACITY"},
        {CP_BUILD_NEED_UPTIME, "NEED_UPTIME"},
    };
    size_t i, nf = 0;

    out[0] = '\0';
    dump_add(out, "id=%lu status=%s path=[", c->id, cp_circ_status_str(c->status));
    for (i = 0; i < c->n_hops; i++) {
        if (i > 0)
            dump_add(out, ",");
        dump_server(out, c->hops[i].fp, c->hops[i].nick);
    }
    dump_add(out, "] flags=");
    for (i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (c->build_flags & flags[i].bit)
            dump_add(out, "%s%s", nf++ ? "," : "", flags[i].name);
    }
    if (nf == 0)
        dump_add(out, "-");
    dump_add(out, " purpose=%s hs_state=%s rend=%s time=%s reason=%s remote=%s", opt(c->purpose),
             opt(c->hs_state), opt(c->rend_query), opt(c->time_created), opt(c->reason), opt(c->remote_reason));
}

static void dump_hs_desc(const struct cp_event_hs_desc *e, char *out)
{
    out[0] = '\0';
    dump_add(out, "action=%s addr=%s auth=%s hsdir=", cp_hs_desc_action_str(e->action), e->address,
             e->auth_type);
    dump_server(out, e->hsdir_fp, e->hsdir_nick);
    dump_add(out, " descid=%s index=%s reason=%s replica=%s", opt(e->desc_id), opt(e->hsdir_index),
             opt(e->reason), opt(e->replica));
}

static void dump_hs_desc_content(const struct cp_event_hs_desc_content *e, char *out)
{
    out[0] = '\0';
    dump_add(out, "addr=%s descid=%s hsdir=", e->address, e->desc_id);
    dump_server(out, e->hsdir_fp, e->hsdir_nick);
    dump_add(out, " len=%zu body=", e->body_len);
    dump_bytes(out, e->body, e->body_len);
}

static void dump_status(const struct cp_event_status *e, char *out)
{
    size_t i;

    out[0] = '\0';
    dump_add(out, "type=%s sev=%s action=%s progress=%d tag=%s summary=%s pos=[", e->type, e->severity,
             e->action, e->progress, opt(e->tag), opt(e->summary));
    for (i = 0; i < e->args.n_pos; i++)
        dump_add(out, "%s%s", i ? "|" : "", e->args.pos[i]);
    dump_add(out, "] kv=[");
    for (i = 0; i < e->args.n_kv; i++)
        dump_add(out, "%s%s=%s", i ? "|" : "", e->args.kv[i].key, e->args.kv[i].value);
    dump_add(out, "]");
}

static void dump_info(const struct cp_info *info, char *out)
{
    size_t i;

    out[0] = '\0';
    for (i = 0; i < info->n; i++) {
        dump_add(out, "%s%s", i ? "|" : "", info->items[i].key);
        if (info->items[i].value != NULL) {
            dump_add(out, "=");
            dump_bytes(out, info->items[i].value, strlen(info->items[i].value));
        }
    }
}

static void dump_add_onion(const struct cp_add_onion_reply *a, char *out)
{
    out[0] = '\0';
    dump_add(out, "id=%s key=%s", a->service_id, opt(a->private_key));
}

/* ---- one table runner for every decoder ---- */

struct dec_case {
    const char *wire;
    const char *expect; /* canonical dump, or NULL when the decoder must fail */
    const char *errsub; /* part of the error message when it fails */
};

/* Decode the fixture's current reply with one decoder, dump it and clear it. Return the decoder's result. */
typedef int (*decode_fn)(const struct cp_reply *r, char *out, char *err, size_t errlen);

static int dec_circ(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_event_circ c;
    int rc = cp_event_circ_parse(r, &c, err, errlen);

    if (rc == 0)
        dump_circ(&c, out);
    else
        assert_int_equal(c.n_hops, 0); /* cleared on error */
    cp_event_circ_clear(&c);
    assert_null(c.hops);
    return rc;
}

static int dec_hs_desc(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_event_hs_desc e;
    int rc = cp_event_hs_desc_parse(r, &e, err, errlen);

    if (rc == 0)
        dump_hs_desc(&e, out);
    else
        assert_null(e.address);
    cp_event_hs_desc_clear(&e);
    assert_null(e.address);
    return rc;
}

static int dec_hs_desc_content(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_event_hs_desc_content e;
    int rc = cp_event_hs_desc_content_parse(r, &e, err, errlen);

    if (rc == 0)
        dump_hs_desc_content(&e, out);
    else
        assert_null(e.body);
    cp_event_hs_desc_content_clear(&e);
    assert_null(e.body);
    return rc;
}

static int dec_status(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_event_status e;
    int rc = cp_event_status_parse(r, &e, err, errlen);

    if (rc == 0)
        dump_status(&e, out);
    else
        assert_null(e.type);
    cp_event_status_clear(&e);
    assert_null(e.type);
    return rc;
}

static int dec_info(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_info i;
    int rc = cp_info_parse(r, &i, err, errlen);

    if (rc == 0)
        dump_info(&i, out);
    else
        assert_int_equal(i.n, 0);
    cp_info_clear(&i);
    assert_null(i.items);
    return rc;
}

static int dec_conf_changed(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_info i;
    int rc = cp_event_conf_changed_parse(r, &i, err, errlen);

    if (rc == 0)
        dump_info(&i, out);
    else
        assert_null(i.items);
    cp_info_clear(&i);
    assert_null(i.items);
    return rc;
}

static int dec_signal(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    char name[16] = "x";
    int rc = cp_event_signal_parse(r, name, sizeof name, err, errlen);

    if (rc == 0)
        snprintf(out, DUMPLEN, "%s", name);
    else
        assert_string_equal(name, "");
    return rc;
}

static int dec_add_onion(const struct cp_reply *r, char *out, char *err, size_t errlen)
{
    struct cp_add_onion_reply a;
    int rc = cp_add_onion_reply_parse(r, &a, err, errlen);

    if (rc == 0)
        dump_add_onion(&a, out);
    else
        assert_null(a.private_key);
    cp_add_onion_reply_clear(&a);
    assert_null(a.private_key);
    return rc;
}

static void run_table(struct fixture *f, const char *name, decode_fn fn, const struct dec_case *t, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char out[DUMPLEN] = "", err[ERRLEN] = "";
        const struct cp_reply *r = frame(f, t[i].wire);
        int rc = fn(r, out, err, sizeof err);

        if (t[i].expect != NULL) {
            if (rc != 0)
                fail_msg("%s case %zu: %s", name, i, err);
            if (strcmp(out, t[i].expect) != 0)
                fail_msg("%s case %zu:\n  got    %s\n  expect %s", name, i, out, t[i].expect);
        } else {
            if (rc != -1)
                fail_msg("%s case %zu: expected an error containing \"%s\", decoded \"%s\"", name, i, t[i].errsub,
                         out);
            if (strstr(err, t[i].errsub) == NULL)
                fail_msg("%s case %zu: error \"%s\" does not contain \"%s\"", name, i, err, t[i].errsub);
        }
    }
}

/* ---- CIRC ---- */

static void test_circ(void **state)
{
    static const struct dec_case t[] = {
        /* [tor] directory circuits of a tor whose only authority refused the TLS handshake */
        {"650 CIRC 1 LAUNCHED BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY PURPOSE=GENERAL "
         "TIME_CREATED=2026-12-03T05:31:34.602540\r\n",
         "id=1 status=LAUNCHED path=[] flags=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY purpose=GENERAL hs_state=- "
         "rend=- time=2026-12-03T05:31:34.602540 reason=- remote=-", NULL},
        {"650 CIRC 12 FAILED BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY PURPOSE=GENERAL "
         "TIME_CREATED=2026-12-03T05:32:15.719157 REASON=TORPROTOCOL\r\n",
         "id=12 status=FAILED path=[] flags=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY purpose=GENERAL hs_state=- "
         "rend=- time=2026-12-03T05:32:15.719157 reason=TORPROTOCOL remote=-", NULL},
        /* [facts]/[fmt] a single onion's one-hop introduction circuit */
        {"650 CIRC 12 BUILT $" FP1 "~relay3 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
         "PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=" ONION
         " TIME_CREATED=2026-12-03T05:00:00.000000\r\n",
         "id=12 status=BUILT path=[$" FP1 "~relay3] flags=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
         "purpose=HS_SERVICE_INTRO hs_state=HSSI_ESTABLISHED rend=" ONION
         " time=2026-12-03T05:00:00.000000 reason=- remote=-", NULL},
        /* [facts]/[fmt] a one-hop rendezvous circuit, joined */
        {"650 CIRC 40 BUILT $" FP2 "~relay7 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
         "PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_JOINED REND_QUERY=" ONION " TIME_CREATED=2026-12-03T05:00:01.5\r\n",
         "id=40 status=BUILT path=[$" FP2 "~relay7] flags=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
         "purpose=HS_SERVICE_REND hs_state=HSSR_JOINED rend=" ONION " time=2026-12-03T05:00:01.5 reason=- remote=-",
         NULL},
        /* [facts]/[fmt] descriptor uploads still use 4 hops */
        {"650 CIRC 7 BUILT $" FP1 "~guard1,$" FP2 "~relay2,$" FP3 "~relay5,$" FP4 "~hsdir1 "
         "BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY,NEED_UPTIME PURPOSE=HS_SERVICE_HSDIR "
         "TIME_CREATED=2026-12-03T05:00:02.000000\r\n",
         "id=7 status=BUILT path=[$" FP1 "~guard1,$" FP2 "~relay2,$" FP3 "~relay5,$" FP4 "~hsdir1] "
         "flags=IS_INTERNAL,NEED_CAPACITY,NEED_UPTIME purpose=HS_SERVICE_HSDIR hs_state=- rend=- "
         "time=2026-12-03T05:00:02.000000 reason=- remote=-", NULL},
        /* closed with both reasons */
        {"650 CIRC 40 CLOSED $" FP2 "~relay7 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
         "PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_JOINED REND_QUERY=" ONION
         " TIME_CREATED=2026-12-03T05:00:01.5 REASON=DESTROYED REMOTE_REASON=FINISHED\r\n",
         "id=40 status=CLOSED path=[$" FP2 "~relay7] flags=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
         "purpose=HS_SERVICE_REND hs_state=HSSR_JOINED rend=" ONION
         " time=2026-12-03T05:00:01.5 reason=DESTROYED remote=FINISHED", NULL},
        /* [spec] 4.1: old nickname-only paths, extra words and extra lines are tolerated */
        {"650 CIRC 1000 EXTENDED moria1,moria2\r\n",
         "id=1000 status=EXTENDED path=[moria1,moria2] flags=- purpose=- hs_state=- rend=- time=- reason=- remote=-",
         NULL},
        {"650-CIRC 1000 EXTENDED moria1,moria2 0xBEEF\r\n650-EXTRAMAGIC=99\r\n650 ANONYMITY=high\r\n",
         "id=1000 status=EXTENDED path=[moria1,moria2] flags=- purpose=- hs_state=- rend=- time=- reason=- remote=-",
         NULL},
        /* "$fp=nick" (tor < 0.3.1.3), a bare "$fp", lowercase hex (stored uppercase) */
        {"650 CIRC 3 EXTENDED $" FP3 "=europa1,$" FP1 ",$8a30c9e8f5954ee286d29bd65cadea6991200804~x "
         "PURPOSE=GENERAL\r\n",
         "id=3 status=EXTENDED path=[$" FP3 "~europa1,$" FP1 ",$" FP4 "~x] flags=- purpose=GENERAL hs_state=- "
         "rend=- time=- reason=- remote=-", NULL},
        /* unknown status, unknown flag, unknown and quoted keywords: decoded, the rest ignored */
        {"650 CIRC 5 FROBNICATED BUILD_FLAGS=SHINY,ONEHOP_TUNNEL SOCKS_USERNAME=\"a b\" HS_POW=v1,5 "
         "CONFLUX_ID=ABC\r\n",
         "id=5 status=UNKNOWN path=[] flags=ONEHOP_TUNNEL purpose=- hs_state=- rend=- time=- reason=- remote=-",
         NULL},
        {"650 CIRC 6 GUARD_WAIT $" FP1 "~a,$" FP2 "~b,$" FP3 "~c PURPOSE=GENERAL\r\n",
         "id=6 status=GUARD_WAIT path=[$" FP1 "~a,$" FP2 "~b,$" FP3 "~c] flags=- purpose=GENERAL hs_state=- "
         "rend=- time=- reason=- remote=-", NULL},
        /* malformed */
        {"650 CIRC\r\n", NULL, "CIRC: circuit id missing"},
        {"650 CIRC 12\r\n", NULL, "CIRC: status missing"},
        {"650 CIRC abc BUILT\r\n", NULL, "CIRC: circuit id must be a decimal number 0-4294967295"},
        {"650 CIRC -3 BUILT\r\n", NULL, "CIRC: circuit id must be a decimal number 0-4294967295"},
        {"650 CIRC 12345678901234567 BUILT\r\n", NULL, "CIRC: circuit id must be a decimal number 0-4294967295"},
        /* tor's ids are uint32_t: the largest it can send, and one more (which CLOSECIRCUIT would refuse) */
        {"650 CIRC 4294967295 LAUNCHED\r\n",
         "id=4294967295 status=LAUNCHED path=[] flags=- purpose=- hs_state=- rend=- time=- reason=- remote=-", NULL},
        {"650 CIRC 4294967296 BUILT\r\n", NULL, "CIRC: circuit id must be a decimal number 0-4294967295"},
        {"650 CIRC 9999999999999999 BUILT\r\n", NULL, "CIRC: circuit id must be a decimal number 0-4294967295"},
        {"650 CIRC 12 BUILT $0123~relay3\r\n", NULL, "CIRC: path hop 1: fingerprint must be \"$\" and 40 hex"},
        {"650 CIRC 12 BUILT $" FP1 "~relay3,$" FP2 "~\r\n", NULL, "CIRC: path hop 2: nickname must be 1-19"},
        {"650 CIRC 12 BUILT $" FP1 "~relay3,,$" FP2 "\r\n", NULL, "CIRC: path hop 2: nickname must be"},
        {"650 CIRC 12 BUILT $" FP1 "!relay3\r\n", NULL, "CIRC: path hop 1: fingerprint must be followed by"},
        {"650 CIRC 12 BUILT abcdefghijabcdefghijX\r\n", NULL, "CIRC: path hop 1: nickname must be 1-19"},
        {"650 CIRC 12 BUILT relay-3\r\n", NULL, "CIRC: path hop 1: nickname must be"},
        {"650 CIRC 12 BUILT $" FP1 "~relay3 SOCKS_USERNAME=\"abc\r\n", NULL, "CIRC: "},
        {"650 CIRC_MINOR 12 PURPOSE_CHANGED\r\n", NULL, "CIRC: not a CIRC event"},
        {"650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " DESCID "\r\n", NULL, "CIRC: not a CIRC event"},
        {"250 CIRC 1 BUILT\r\n", NULL, "CIRC: not a CIRC event (status 250)"},
    };

    run_table(*state, "CIRC", dec_circ, t, sizeof t / sizeof t[0]);
}

/* ---- HS_DESC ---- */

static void test_hs_desc(void **state)
{
    static const struct dec_case t[] = {
        /* [facts] the service side */
        {"650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " DESCID "\r\n",
         "action=CREATED addr=" ONION " auth=UNKNOWN hsdir=UNKNOWN descid=" DESCID " index=- reason=- replica=-",
         NULL},
        {"650 HS_DESC UPLOAD " ONION " UNKNOWN $" FP1 "~hsdir1 " DESCID " HSDIR_INDEX=" HSDIR_INDEX "\r\n",
         "action=UPLOAD addr=" ONION " auth=UNKNOWN hsdir=$" FP1 "~hsdir1 descid=" DESCID " index=" HSDIR_INDEX
         " reason=- replica=-", NULL},
        {"650 HS_DESC UPLOADED " ONION " UNKNOWN $" FP1 "~hsdir1\r\n",
         "action=UPLOADED addr=" ONION " auth=UNKNOWN hsdir=$" FP1 "~hsdir1 descid=- index=- reason=- replica=-",
         NULL},
        {"650 HS_DESC FAILED " ONION " NO_AUTH $" FP2 "~hsdir2 " DESCID " REASON=UPLOAD_REJECTED\r\n",
         "action=FAILED addr=" ONION " auth=NO_AUTH hsdir=$" FP2 "~hsdir2 descid=" DESCID
         " index=- reason=UPLOAD_REJECTED replica=-", NULL},
        /* [facts] HSFETCH on the service's tor */
        {"650 HS_DESC REQUESTED " ONION2 " NO_AUTH $" FP3 "~hsdir3 " DESCID " HSDIR_INDEX=" HSDIR_INDEX "\r\n",
         "action=REQUESTED addr=" ONION2 " auth=NO_AUTH hsdir=$" FP3 "~hsdir3 descid=" DESCID " index=" HSDIR_INDEX
         " reason=- replica=-", NULL},
        {"650 HS_DESC RECEIVED " ONION2 " NO_AUTH $" FP3 "~hsdir3 " DESCID "\r\n",
         "action=RECEIVED addr=" ONION2 " auth=NO_AUTH hsdir=$" FP3 "~hsdir3 descid=" DESCID
         " index=- reason=- replica=-", NULL},
        {"650 HS_DESC FAILED " ONION2 " NO_AUTH $" FP3 "~hsdir3 " DESCID " REASON=NOT_FOUND\r\n",
         "action=FAILED addr=" ONION2 " auth=NO_AUTH hsdir=$" FP3 "~hsdir3 descid=" DESCID
         " index=- reason=NOT_FOUND replica=-", NULL},
        /* [spec] HsDir UNKNOWN for QUERY_NO_HSDIR; a bare fingerprint; old "=" form; REPLICA */
        {"650 HS_DESC FAILED " ONION2 " NO_AUTH UNKNOWN REASON=QUERY_NO_HSDIR\r\n",
         "action=FAILED addr=" ONION2 " auth=NO_AUTH hsdir=UNKNOWN descid=- index=- reason=QUERY_NO_HSDIR replica=-",
         NULL},
        {"650 HS_DESC REQUESTED ajhb7kljbiru65qo NO_AUTH $" FP3 "=europa1 b3oeducbhjmbqmgw2i3jtz4fekkrinwj\r\n",
         "action=REQUESTED addr=ajhb7kljbiru65qo auth=NO_AUTH hsdir=$" FP3
         "~europa1 descid=b3oeducbhjmbqmgw2i3jtz4fekkrinwj index=- reason=- replica=-", NULL},
        {"650 HS_DESC UPLOAD " ONION " UNKNOWN $" FP4 " " DESCID "\r\n",
         "action=UPLOAD addr=" ONION " auth=UNKNOWN hsdir=$" FP4 " descid=" DESCID " index=- reason=- replica=-",
         NULL},
        {"650 HS_DESC CREATED ajhb7kljbiru65qo UNKNOWN UNKNOWN b3oeducbhjmbqmgw2i3jtz4fekkrinwj REPLICA=1\r\n",
         "action=CREATED addr=ajhb7kljbiru65qo auth=UNKNOWN hsdir=UNKNOWN descid=b3oeducbhjmbqmgw2i3jtz4fekkrinwj "
         "index=- reason=- replica=1", NULL},
        {"650 HS_DESC FROB " ONION " NO_AUTH UNKNOWN NEWFIELD=1\r\n",
         "action=UNKNOWN addr=" ONION " auth=NO_AUTH hsdir=UNKNOWN descid=- index=- reason=- replica=-", NULL},
        /* malformed */
        {"650 HS_DESC\r\n", NULL, "HS_DESC: action missing"},
        {"650 HS_DESC UPLOADED\r\n", NULL, "HS_DESC: address missing"},
        {"650 HS_DESC UPLOADED " ONION "\r\n", NULL, "HS_DESC: auth type missing"},
        {"650 HS_DESC UPLOADED " ONION " UNKNOWN\r\n", NULL, "HS_DESC: HSDir missing"},
        {"650 HS_DESC UPLOADED " ONION " UNKNOWN $12AB~hsdir1\r\n", NULL, "HS_DESC: HSDir: fingerprint must be"},
        {"650 HS_DESC UPLOADED " ONION " UNKNOWN $" FP1 "~\r\n", NULL, "HS_DESC: HSDir: nickname must be"},
        {"650 HS_DESC UPLOADED " ONION " UNKNOWN $" FP1 " " DESCID " REASON=\"open\r\n", NULL, "HS_DESC: "},
        {"650+HS_DESC_CONTENT " ONION " " DESCID " UNKNOWN\r\n\r\n.\r\n650 OK\r\n", NULL,
         "HS_DESC: not a HS_DESC event"},
        {"250 OK\r\n", NULL, "HS_DESC: not a HS_DESC event"},
    };

    run_table(*state, "HS_DESC", dec_hs_desc, t, sizeof t / sizeof t[0]);
}

/* ---- HS_DESC_CONTENT ---- */

/* A FAILED answer is a fetch's by its reason (control-spec 4.1.25); an upload's reason, no reason, or
 * another action is not. */
static void test_hs_desc_failed_fetch(void **state)
{
    (void)state;
    static const struct {
        enum cp_hs_desc_action action;
        const char *reason;
        bool fetch;
    } rows[] = {
        {CP_HS_DESC_FAILED, "NOT_FOUND", true},          {CP_HS_DESC_FAILED, "QUERY_REJECTED", true},
        {CP_HS_DESC_FAILED, "BAD_DESC", true},           {CP_HS_DESC_FAILED, "QUERY_NO_HSDIR", true},
        {CP_HS_DESC_FAILED, "QUERY_RATE_LIMITED", true}, {CP_HS_DESC_FAILED, "UPLOAD_REJECTED", false},
        {CP_HS_DESC_FAILED, "UNEXPECTED", false},        {CP_HS_DESC_FAILED, NULL, false},
        {CP_HS_DESC_UPLOADED, "NOT_FOUND", false},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct cp_event_hs_desc e = {.action = rows[i].action, .reason = (char *)rows[i].reason};
        if (cp_event_hs_desc_failed_fetch(&e) != rows[i].fetch)
            fail_msg("row %zu (%s): want %d", i, rows[i].reason ? rows[i].reason : "no reason", rows[i].fetch);
    }
}

static void test_hs_desc_content(void **state)
{
    static const struct dec_case t[] = {
        /* [fmt] tor writes "650+HS_DESC_CONTENT a d h\r\n%s\r\n.\r\n650 OK\r\n" with the descriptor's own
         * "\n" line endings; a v3 descriptor ends in "\n", so one empty line precedes the ".". */
        {"650+HS_DESC_CONTENT " ONION2 " " DESCID " $" FP4 "~hsdir4\r\n"
         "hs-descriptor 3\ndescriptor-lifetime 180\nrevision-counter 42\n..dotted\nsignature abc\n\r\n.\r\n650 OK\r\n",
         "addr=" ONION2 " descid=" DESCID " hsdir=$" FP4 "~hsdir4 len=82 body=hs-descriptor 3\\x0a"
         "descriptor-lifetime 180\\x0arevision-counter 42\\x0a.dotted\\x0asignature abc\\x0a", NULL},
        /* a CRLF descriptor without a final newline */
        {"650+HS_DESC_CONTENT " ONION2 " " DESCID " $" FP4 "~hsdir4\r\nhs-descriptor 3\r\nsignature abc\r\n.\r\n"
         "650 OK\r\n",
         "addr=" ONION2 " descid=" DESCID " hsdir=$" FP4 "~hsdir4 len=29 body=hs-descriptor 3\\x0asignature abc",
         NULL},
        /* [fmt] a failed fetch: empty descriptor, HsDir UNKNOWN (4.1.26) */
        {"650+HS_DESC_CONTENT " ONION2 " " DESCID " UNKNOWN\r\n\r\n.\r\n650 OK\r\n",
         "addr=" ONION2 " descid=" DESCID " hsdir=UNKNOWN len=0 body=", NULL},
        {"650+HS_DESC_CONTENT UNKNOWN " DESCID " $" FP1 "~a\r\n.\r\n650 OK\r\n",
         "addr=UNKNOWN descid=" DESCID " hsdir=$" FP1 "~a len=0 body=", NULL},
        /* [spec] a v2 example with the old name form */
        {"650+HS_DESC_CONTENT facebookcorewwwi riwvyw6njgvs4koel4heqs7w4bssnmlw $" FP4 "~YorkshireTOR\r\n"
         "rendezvous-service-descriptor riwvyw6njgvs4koel4heqs7w4bssnmlw\r\nversion 2\r\n.\r\n650 OK\r\n",
         "addr=facebookcorewwwi descid=riwvyw6njgvs4koel4heqs7w4bssnmlw hsdir=$" FP4 "~YorkshireTOR len=72 "
         "body=rendezvous-service-descriptor riwvyw6njgvs4koel4heqs7w4bssnmlw\\x0aversion 2", NULL},
        /* malformed */
        {"650 HS_DESC_CONTENT " ONION2 " " DESCID " $" FP4 "~hsdir4\r\n", NULL,
         "HS_DESC_CONTENT: no data block"},
        {"650+HS_DESC_CONTENT\r\nx\r\n.\r\n650 OK\r\n", NULL, "HS_DESC_CONTENT: address missing"},
        {"650+HS_DESC_CONTENT " ONION2 "\r\nx\r\n.\r\n650 OK\r\n", NULL, "HS_DESC_CONTENT: descriptor id missing"},
        {"650+HS_DESC_CONTENT " ONION2 " " DESCID "\r\nx\r\n.\r\n650 OK\r\n", NULL, "HS_DESC_CONTENT: HSDir missing"},
        {"650+HS_DESC_CONTENT " ONION2 " " DESCID " $" FP4 "~hsdir-4\r\nx\r\n.\r\n650 OK\r\n", NULL,
         "HS_DESC_CONTENT: HSDir: nickname must be"},
        {"650 HS_DESC RECEIVED " ONION2 " NO_AUTH $" FP3 "~hsdir3 " DESCID "\r\n", NULL,
         "HS_DESC_CONTENT: not a HS_DESC_CONTENT event"},
    };

    run_table(*state, "HS_DESC_CONTENT", dec_hs_desc_content, t, sizeof t / sizeof t[0]);
}

/* The body keeps NUL bytes: body_len, not strlen, is its length. */
static void test_hs_desc_content_binary(void **state)
{
    static const char wire[] = "650+HS_DESC_CONTENT " ONION2 " " DESCID " UNKNOWN\r\na\0b\r\n.\r\n650 OK\r\n";
    struct fixture *f = *state;
    struct cp_event_hs_desc_content e;
    char err[ERRLEN] = "";

    cp_reply_free(f->reply);
    assert_int_equal(cp_reply_parser_feed(f->parser, wire, sizeof wire - 1, err, sizeof err), 0);
    f->reply = cp_reply_parser_next(f->parser);
    assert_non_null(f->reply);
    assert_int_equal(cp_event_hs_desc_content_parse(f->reply, &e, err, sizeof err), 0);
    assert_int_equal(e.body_len, 3);
    assert_memory_equal(e.body, "a\0b", 4);
    cp_event_hs_desc_content_clear(&e);
}

/* ---- STATUS_* ---- */

static void test_status(void **state)
{
    static const struct dec_case t[] = {
        /* [tor] GETINFO status/bootstrap-phase of a fresh tor, as its event */
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=0 TAG=starting SUMMARY=\"Starting\"\r\n",
         "type=STATUS_CLIENT sev=NOTICE action=BOOTSTRAP progress=0 tag=starting summary=Starting pos=[] "
         "kv=[PROGRESS=0|TAG=starting|SUMMARY=Starting]", NULL},
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=75 TAG=enough_dirinfo SUMMARY=\"Loaded enough directory "
         "info to build circuits\"\r\n",
         "type=STATUS_CLIENT sev=NOTICE action=BOOTSTRAP progress=75 tag=enough_dirinfo summary=Loaded enough "
         "directory info to build circuits pos=[] kv=[PROGRESS=75|TAG=enough_dirinfo|SUMMARY=Loaded enough "
         "directory info to build circuits]", NULL},
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"\r\n",
         "type=STATUS_CLIENT sev=NOTICE action=BOOTSTRAP progress=100 tag=done summary=Done pos=[] "
         "kv=[PROGRESS=100|TAG=done|SUMMARY=Done]", NULL},
        /* [spec] a bootstrap problem report */
        {"650 STATUS_CLIENT WARN BOOTSTRAP PROGRESS=5 TAG=conn SUMMARY=\"Connecting to a relay\" "
         "WARNING=\"Connection refused\" REASON=CONNECTREFUSED COUNT=1 RECOMMENDATION=ignore HOSTID=\"" FP1 "\" "
         "HOSTADDR=\"127.0.0.1:5901\"\r\n",
         "type=STATUS_CLIENT sev=WARN action=BOOTSTRAP progress=5 tag=conn summary=Connecting to a relay pos=[] "
         "kv=[PROGRESS=5|TAG=conn|SUMMARY=Connecting to a relay|WARNING=Connection refused|REASON=CONNECTREFUSED|"
         "COUNT=1|RECOMMENDATION=ignore|HOSTID=" FP1 "|HOSTADDR=127.0.0.1:5901]", NULL},
        /* 4.1.10: missing arguments are tolerated */
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP TAG=done\r\n",
         "type=STATUS_CLIENT sev=NOTICE action=BOOTSTRAP progress=-1 tag=done summary=- pos=[] kv=[TAG=done]", NULL},
        {"650 STATUS_CLIENT NOTICE CIRCUIT_ESTABLISHED\r\n",
         "type=STATUS_CLIENT sev=NOTICE action=CIRCUIT_ESTABLISHED progress=-1 tag=- summary=- pos=[] kv=[]", NULL},
        {"650 STATUS_GENERAL WARN CLOCK_JUMPED TIME=120\r\n",
         "type=STATUS_GENERAL sev=WARN action=CLOCK_JUMPED progress=-1 tag=- summary=- pos=[] kv=[TIME=120]", NULL},
        /* PROGRESS on a non-BOOTSTRAP action is just an argument */
        {"650 STATUS_SERVER NOTICE EXTERNAL_ADDRESS ADDRESS=127.0.0.1 METHOD=CONFIGURED PROGRESS=x extra\r\n",
         "type=STATUS_SERVER sev=NOTICE action=EXTERNAL_ADDRESS progress=-1 tag=- summary=- pos=[extra] "
         "kv=[ADDRESS=127.0.0.1|METHOD=CONFIGURED|PROGRESS=x]", NULL},
        /* [spec] tor < 0.2.0.22-rc */
        {"650 STATUS_SEVER NOTICE GOOD_SERVER_DESCRIPTOR\r\n",
         "type=STATUS_SEVER sev=NOTICE action=GOOD_SERVER_DESCRIPTOR progress=-1 tag=- summary=- pos=[] kv=[]",
         NULL},
        /* malformed */
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=abc TAG=x\r\n", NULL,
         "STATUS: BOOTSTRAP PROGRESS must be a number 0-100"},
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=101\r\n", NULL, "STATUS: BOOTSTRAP PROGRESS must be"},
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=\r\n", NULL, "STATUS: BOOTSTRAP PROGRESS must be"},
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=-5\r\n", NULL, "STATUS: BOOTSTRAP PROGRESS must be"},
        {"650 STATUS_CLIENT\r\n", NULL, "STATUS_CLIENT: severity missing"},
        {"650 STATUS_GENERAL NOTICE\r\n", NULL, "STATUS_GENERAL: action missing"},
        {"650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=5 SUMMARY=\"unterminated\r\n", NULL, "STATUS_CLIENT: "},
        /* found by fuzz_event: a first word with '=' is not an event name */
        {"650 STATUS_CLIE=NT NOTICE BOOTSTRAP PROGRESS=0\r\n", NULL, "malformed event name"},
        {"650 CIRC 1 LAUNCHED\r\n", NULL, "STATUS: not a STATUS_* event"},
        {"250 STATUS_CLIENT NOTICE BOOTSTRAP\r\n", NULL, "STATUS: not a STATUS_* event"},
    };

    run_table(*state, "STATUS", dec_status, t, sizeof t / sizeof t[0]);
}

/* PROGRESS= alone, as tor.c reads it from GETINFO status/bootstrap-phase: 0-100 and nothing else (atoi
 * read "4294967396" as 100 on glibc, and "-3" as -3). */
static void test_bootstrap_progress(void **state)
{
    static const struct {
        const char *in;
        int rc, value;
    } t[] = {
        {"0", 0, 0},    {"5", 0, 5},     {"100", 0, 100},  {"007", 0, 7},    {"101", -1, 0},
        {"-3", -1, 0},  {"", -1, 0},     {"1000", -1, 0},  {"4294967396", -1, 0}, {"+5", -1, 0},
        {"5 ", -1, 0},  {"0x10", -1, 0},
    };
    (void)state;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char err[128] = "";
        int v = -7;
        int rc = cp_bootstrap_progress_parse(t[i].in, &v, err, sizeof err);
        if (rc != t[i].rc)
            fail_msg("PROGRESS=\"%s\": returned %d (%s)", t[i].in, rc, err);
        if (rc == 0)
            assert_int_equal(v, t[i].value);
        else
            assert_string_equal(err, "BOOTSTRAP PROGRESS must be a number 0-100");
    }
}

/* ---- GETINFO / GETCONF ---- */

static void test_info(void **state)
{
    static const struct dec_case t[] = {
        /* [tor] GETINFO version status/bootstrap-phase config-text net/listeners/control */
        {"250-version=0.4.9.11\r\n"
         "250-status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=0 TAG=starting SUMMARY=\"Starting\"\r\n"
         "250+config-text=\r\nControlPort unix:/tmp/cpev/ctl\r\nCookieAuthentication 1\r\nSocksPort 0\r\n.\r\n"
         "250-net/listeners/control=\"unix:/tmp/cpev/ctl\"\r\n250 OK\r\n",
         "version=0.4.9.11|status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=0 TAG=starting SUMMARY=\"Starting\"|"
         "config-text=ControlPort unix:/tmp/cpev/ctl\\x0aCookieAuthentication 1\\x0aSocksPort 0|"
         "net/listeners/control=unix:/tmp/cpev/ctl", NULL},
        /* [tor] GETCONF SocksPort ControlPort HiddenServiceOptions Nickname ExitPolicy: bare keys are
         * defaults, and the last line is an item too */
        {"250-SocksPort=0\r\n250-ControlPort=unix:/tmp/cpev/ctl\r\n250-HiddenServiceOptions\r\n250-Nickname\r\n"
         "250 ExitPolicy\r\n",
         "SocksPort=0|ControlPort=unix:/tmp/cpev/ctl|HiddenServiceOptions|Nickname|ExitPolicy", NULL},
        /* [tor] GETCONF HiddenServiceOptions ContactInfo after a SETCONF: repeated keys in order; tor leaves
         * quotes and backslashes unescaped unless the value needs quoting */
        {"250-HiddenServiceDir=/tmp/cpev/hs/a b\r\n250-HiddenServicePort=80 127.0.0.1:8080\r\n"
         "250-HiddenServicePort=443 unix:/tmp/cpev/web.sock\r\n250 ContactInfo=x \"y\" \\ z\r\n",
         "HiddenServiceDir=/tmp/cpev/hs/a b|HiddenServicePort=80 127.0.0.1:8080|"
         "HiddenServicePort=443 unix:/tmp/cpev/web.sock|ContactInfo=x \"y\" \\x5c z", NULL},
        /* [tor] a value with a tab is sent as a CString */
        {"250 ContactInfo=\"tab\\there\"\r\n", "ContactInfo=tab\\x09here", NULL},
        /* [tor] onions/current: empty, one, two (a data block) */
        {"250-onions/current=\r\n250 OK\r\n", "onions/current=", NULL},
        {"250-onions/detached=i436gmv3y4huxtvjuid2kq2gb2p5wmlxyk6cpbyjv6o2pncyu5jzj7qd\r\n"
         "250-onions/current=\r\n250 OK\r\n",
         "onions/detached=i436gmv3y4huxtvjuid2kq2gb2p5wmlxyk6cpbyjv6o2pncyu5jzj7qd|onions/current=", NULL},
        {"250+onions/current=\r\nmdajj5wfxpixffnb6gek2otppczklqk3heirhjlz6ndr7umv2dckjkyd\r\n"
         "qrxthyerg37v777jrlh5iykje7igkjixsmkdvb5zbgkgap6667xhpaid\r\n.\r\n250 OK\r\n",
         "onions/current=mdajj5wfxpixffnb6gek2otppczklqk3heirhjlz6ndr7umv2dckjkyd\\x0a"
         "qrxthyerg37v777jrlh5iykje7igkjixsmkdvb5zbgkgap6667xhpaid", NULL},
        /* an empty data block, and a data block with a stuffed dot */
        {"250+md/all=\r\n.\r\n250 OK\r\n", "md/all=", NULL},
        {"250+x=\r\n..a\r\n\r\n.\r\n250 OK\r\n", "x=.a\\x0a", NULL},
        /* [tor] GETCONF with no keys */
        {"250 OK\r\n", "", NULL},
        /* two quoted strings are not one value: kept verbatim */
        {"250-net/listeners/socks=\"127.0.0.1:9050\" \"[::1]:9050\"\r\n250 OK\r\n",
         "net/listeners/socks=\"127.0.0.1:9050\" \"[::1]:9050\"", NULL},
        /* errors */
        {"552 Unrecognized configuration key \"Bogus\"\r\n", NULL, "status 552: Unrecognized configuration key"},
        {"650 CIRC 1 LAUNCHED\r\n", NULL, "is an event, not a reply"},
        /* [tor] a PROTOCOLINFO answer is not a GETINFO answer */
        {"250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"/x/control_auth_cookie\"\r\n"
         "250-VERSION Tor=\"0.4.9.11\"\r\n250 OK\r\n", NULL, "line 1: bad key"},
        {"250-version=1\r\n250-=value\r\n250 OK\r\n", NULL, "line 2: bad key"},
        {"250+config-text=extra\r\nx\r\n.\r\n250 OK\r\n", NULL, "line 1: data line must be \"key=\""},
        {"250+config text=\r\nx\r\n.\r\n250 OK\r\n", NULL, "line 1: data line must be"},
    };

    run_table(*state, "GETINFO", dec_info, t, sizeof t / sizeof t[0]);
}

/* ---- CONF_CHANGED / SIGNAL ---- */

static void test_conf_changed(void **state)
{
    static const struct dec_case t[] = {
        /* [tor] a SETCONF of two services: the whole HiddenService group, in order */
        {"650-CONF_CHANGED\r\n650-HiddenServiceDir=/tmp/trx/hs0\r\n650-HiddenServicePort=80 127.0.0.1:9\r\n"
         "650-HiddenServiceDir=/tmp/trx/hs1\r\n650-HiddenServicePort=80 127.0.0.1:9\r\n650 OK\r\n",
         "HiddenServiceDir=/tmp/trx/hs0|HiddenServicePort=80 127.0.0.1:9|HiddenServiceDir=/tmp/trx/hs1|"
         "HiddenServicePort=80 127.0.0.1:9", NULL},
        /* [tor] SETCONF HiddenServiceDir (reset): the emptied group, bare */
        {"650-CONF_CHANGED\r\n650-HiddenServiceOptions\r\n650 OK\r\n", "HiddenServiceOptions", NULL},
        /* [tor] SIGHUP: what the torrc says now, without the SETCONF'd service */
        {"650-CONF_CHANGED\r\n650-HiddenServiceDir=/tmp/trx/hs0\r\n650-HiddenServicePort=80 127.0.0.1:9\r\n"
         "650 OK\r\n", "HiddenServiceDir=/tmp/trx/hs0|HiddenServicePort=80 127.0.0.1:9", NULL},
        /* values are verbatim: tor does not quote them */
        {"650-CONF_CHANGED\r\n650-ContactInfo=\"a b\" \\ c=d\r\n650-Nickname\r\n650 OK\r\n",
         "ContactInfo=\"a b\" \\x5c c=d|Nickname", NULL},
        {"650-CONF_CHANGED\r\n650 OK\r\n", "", NULL},
        /* malformed */
        {"650 CONF_CHANGED\r\n", NULL, "CONF_CHANGED: must be a multi-line event"},
        {"650-CONF_CHANGED\r\n650-=x\r\n650 OK\r\n", NULL, "CONF_CHANGED: line 2: must be"},
        {"650-CONF_CHANGED\r\n650+Key=\r\nx\r\n.\r\n650 OK\r\n", NULL, "CONF_CHANGED: line 2: must be"},
        {"650 SIGNAL RELOAD\r\n", NULL, "CONF_CHANGED: not a CONF_CHANGED event"},
        {"250-CONF_CHANGED\r\n250 OK\r\n", NULL, "CONF_CHANGED: not a CONF_CHANGED event"},
        {"650-CONF_CHANGEDX\r\n650 OK\r\n", NULL, "CONF_CHANGED: not a CONF_CHANGED event"},
    };

    run_table(*state, "CONF_CHANGED", dec_conf_changed, t, sizeof t / sizeof t[0]);
}

static void test_signal(void **state)
{
    static const struct dec_case t[] = {
        /* [tor] after SIGNAL RELOAD and after kill -HUP alike */
        {"650 SIGNAL RELOAD\r\n", "RELOAD", NULL},
        {"650 SIGNAL NEWNYM extra\r\n", "NEWNYM", NULL},
        {"650 SIGNAL\r\n", NULL, "SIGNAL: signal name missing"},
        {"650 SIGNAL ABCDEFGHIJKLMNOPQRSTUVWXYZ\r\n", NULL, "SIGNAL: signal name missing or too long"},
        {"650 SIGNALS RELOAD\r\n", NULL, "SIGNAL: not a SIGNAL event"},
        {"250 SIGNAL RELOAD\r\n", NULL, "SIGNAL: not a SIGNAL event"},
    };

    run_table(*state, "SIGNAL", dec_signal, t, sizeof t / sizeof t[0]);
}

static void test_info_get(void **state)
{
    struct fixture *f = *state;
    const struct cp_reply *r =
        frame(f, "250-SocksPort=0\r\n250-HiddenServicePort=80\r\n250-HiddenServicePort=443\r\n250 Nickname\r\n");
    struct cp_info i;
    char err[ERRLEN] = "";

    assert_int_equal(cp_info_parse(r, &i, err, sizeof err), 0);
    assert_int_equal(i.n, 4);
    assert_string_equal(cp_info_get(&i, "SocksPort"), "0");
    assert_string_equal(cp_info_get(&i, "HiddenServicePort"), "80"); /* the first */
    assert_null(cp_info_get(&i, "Nickname"));                         /* present, at its default */
    assert_string_equal(i.items[3].key, "Nickname");
    assert_null(cp_info_get(&i, "socksport")); /* keys are case-sensitive */
    assert_null(cp_info_get(&i, "ControlPort"));
    assert_null(cp_info_get(NULL, "SocksPort"));
    cp_info_clear(&i);
    assert_int_equal(i.n, 0);
    cp_info_clear(&i); /* twice is harmless */
}

/* ---- ADD_ONION ---- */

static void test_add_onion_reply(void **state)
{
    static const struct dec_case t[] = {
        /* [tor] ADD_ONION NEW:BEST Port=80,127.0.0.1:8080 Port=443 */
        {"250-ServiceID=" ONION "\r\n250-PrivateKey=" KEY "\r\n250 OK\r\n", "id=" ONION " key=" KEY, NULL},
        /* [tor] Flags=DiscardPK,Detach */
        {"250-ServiceID=i436gmv3y4huxtvjuid2kq2gb2p5wmlxyk6cpbyjv6o2pncyu5jzj7qd\r\n250 OK\r\n",
         "id=i436gmv3y4huxtvjuid2kq2gb2p5wmlxyk6cpbyjv6o2pncyu5jzj7qd key=-", NULL},
        /* [tor] with ClientAuthV3 (ignored) */
        {"250-ServiceID=5kmc5hfwjye6uumzf2n7pf7rl6g26unj3ixqd4erf6onsaazbqwo7nqd\r\n250-PrivateKey=" KEY "\r\n"
         "250-ClientAuthV3=7C5NQKLY6AZK4MWZF6BNYQF3CW3GHSAVVZKJLQXRUOHWFNZ3K4ZQ\r\n250 OK\r\n",
         "id=5kmc5hfwjye6uumzf2n7pf7rl6g26unj3ixqd4erf6onsaazbqwo7nqd key=" KEY, NULL},
        /* [tor] errors */
        {"512 Tor is in anonymous hidden service mode\r\n", NULL,
         "ADD_ONION reply: status 512: Tor is in anonymous hidden service mode"},
        {"250 OK\r\n", NULL, "ADD_ONION reply: ServiceID missing"},
        {"250-PrivateKey=" KEY "\r\n250 OK\r\n", NULL, "ADD_ONION reply: ServiceID missing"},
        {"250-ServiceID=sampleonion12456\r\n250 OK\r\n", NULL, "line 1: ServiceID must be 56 base32"},
        {"250-ServiceID=" ONION ".onion\r\n250 OK\r\n", NULL, "line 1: ServiceID must be"},
        {"250-ServiceID=" ONION "\r\n250-ServiceID=" ONION "\r\n250 OK\r\n", NULL, "line 2: ServiceID given twice"},
        {"250-ServiceID=" ONION "\r\n250-PrivateKey=SECRETNOCOLON\r\n250 OK\r\n", NULL,
         "line 2: PrivateKey must be KeyType:KeyBlob"},
        {"250-ServiceID=" ONION "\r\n250-PrivateKey=" KEY "\r\n250-PrivateKey=" KEY "\r\n250 OK\r\n", NULL,
         "line 3: PrivateKey given twice"},
        {"650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " DESCID "\r\n", NULL, "ADD_ONION reply: status 650"},
    };

    run_table(*state, "ADD_ONION", dec_add_onion, t, sizeof t / sizeof t[0]);
}

/* An error about a private key never quotes it. */
static void test_add_onion_reply_key_not_in_error(void **state)
{
    struct fixture *f = *state;
    const struct cp_reply *r = frame(f, "250-ServiceID=" ONION "\r\n250-PrivateKey=SECRETNOCOLON\r\n250 OK\r\n");
    struct cp_add_onion_reply a;
    char err[ERRLEN] = "";

    assert_int_equal(cp_add_onion_reply_parse(r, &a, err, sizeof err), -1);
    assert_null(strstr(err, "SECRET"));
    assert_null(a.service_id);
    assert_null(a.private_key);
}

/* ---- event names ---- */

static void test_event_name(void **state)
{
    struct fixture *f = *state;
    char buf[32];
    char small[6];

    assert_string_equal(cp_event_name(frame(f, "650 CIRC 1 LAUNCHED\r\n"), buf, sizeof buf), "CIRC");
    assert_string_equal(cp_event_name(frame(f, "650+HS_DESC_CONTENT a b c\r\n\r\n.\r\n650 OK\r\n"), buf, sizeof buf),
                        "HS_DESC_CONTENT");
    assert_string_equal(cp_event_name(frame(f, "650-CIRC 1000 EXTENDED\r\n650 ANONYMITY=high\r\n"), buf, sizeof buf),
                        "CIRC");
    assert_string_equal(cp_event_name(frame(f, "650 STATUS_CLIENT NOTICE X\r\n"), small, sizeof small), "STATU");
    assert_string_equal(cp_event_name(frame(f, "250 OK\r\n"), buf, sizeof buf), "");
    assert_string_equal(cp_event_name(NULL, buf, sizeof buf), "");
    assert_string_equal(cp_event_name(f->reply, buf, 0), "");
}

static void test_enum_strings(void **state)
{
    (void)state;
    assert_string_equal(cp_circ_status_str(CP_CIRC_LAUNCHED), "LAUNCHED");
    assert_string_equal(cp_circ_status_str(CP_CIRC_GUARD_WAIT), "GUARD_WAIT");
    assert_string_equal(cp_circ_status_str(CP_CIRC_CLOSED), "CLOSED");
    assert_string_equal(cp_circ_status_str(CP_CIRC_UNKNOWN), "UNKNOWN");
    assert_string_equal(cp_circ_status_str((enum cp_circ_status)99), "UNKNOWN");
    assert_string_equal(cp_hs_desc_action_str(CP_HS_DESC_REQUESTED), "REQUESTED");
    assert_string_equal(cp_hs_desc_action_str(CP_HS_DESC_CREATED), "CREATED");
    assert_string_equal(cp_hs_desc_action_str(CP_HS_DESC_UNKNOWN), "UNKNOWN");
    assert_string_equal(cp_hs_desc_action_str((enum cp_hs_desc_action)99), "UNKNOWN");
}

/* Clearing a zeroed struct, or twice, is harmless. */
static void test_clear_zeroed(void **state)
{
    struct cp_event_circ c = {0};
    struct cp_event_hs_desc h = {0};
    struct cp_event_hs_desc_content hc = {0};
    struct cp_event_status s = {0};
    struct cp_info i = {0};
    struct cp_add_onion_reply a = {0};

    (void)state;
    cp_event_circ_clear(&c);
    cp_event_circ_clear(NULL);
    cp_event_hs_desc_clear(&h);
    cp_event_hs_desc_clear(NULL);
    cp_event_hs_desc_content_clear(&hc);
    cp_event_hs_desc_content_clear(NULL);
    cp_event_status_clear(&s);
    cp_event_status_clear(&s);
    cp_event_status_clear(NULL);
    cp_info_clear(&i);
    cp_info_clear(NULL);
    cp_add_onion_reply_clear(&a);
    cp_add_onion_reply_clear(NULL);
    assert_int_equal(s.progress, -1);
}

/* Decoders refuse a NULL reply and an empty one with a message. */
static void test_null_and_empty(void **state)
{
    struct cp_reply empty = {0};
    struct cp_event_circ c;
    struct cp_event_hs_desc h;
    struct cp_event_hs_desc_content hc;
    struct cp_event_status s;
    struct cp_info i;
    struct cp_add_onion_reply a;
    char err[ERRLEN];
    const struct cp_reply *rs[2] = {NULL, &empty};
    size_t k;

    (void)state;
    for (k = 0; k < 2; k++) {
        err[0] = '\0';
        assert_int_equal(cp_event_circ_parse(rs[k], &c, err, sizeof err), -1);
        assert_non_null(strstr(err, "CIRC"));
        assert_int_equal(cp_event_hs_desc_parse(rs[k], &h, err, sizeof err), -1);
        assert_non_null(strstr(err, "HS_DESC"));
        assert_int_equal(cp_event_hs_desc_content_parse(rs[k], &hc, err, sizeof err), -1);
        assert_non_null(strstr(err, "HS_DESC_CONTENT"));
        assert_int_equal(cp_event_status_parse(rs[k], &s, err, sizeof err), -1);
        assert_non_null(strstr(err, "STATUS"));
        assert_int_equal(cp_info_parse(rs[k], &i, err, sizeof err), -1);
        assert_non_null(strstr(err, "GETINFO"));
        assert_int_equal(cp_add_onion_reply_parse(rs[k], &a, err, sizeof err), -1);
        assert_non_null(strstr(err, "ADD_ONION"));
        assert_int_equal(cp_event_conf_changed_parse(rs[k], &i, err, sizeof err), -1);
        assert_non_null(strstr(err, "CONF_CHANGED"));
    }
}

/* GETINFO circuit-status lines (3.9): the CIRC event's fields without "650 CIRC", into the same struct. */
static void test_circ_status_line(void **state)
{
    struct cp_event_circ c;
    char err[256];
    (void)state;
    assert_int_equal(cp_circ_status_line_parse("33 BUILT $B94895EF35F09E840C4DDE46DB700276969AFFFA~tnrelay8 "
                                               "BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY "
                                               "PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_JOINED REND_QUERY=abc "
                                               "TIME_CREATED=2026-12-04T15:47:17.2",
                                               &c, err, sizeof err),
                     0);
    assert_int_equal(c.id, 33);
    assert_int_equal(c.status, CP_CIRC_BUILT);
    assert_int_equal(c.n_hops, 1);
    assert_string_equal(c.hops[0].nick, "tnrelay8");
    assert_int_equal(c.build_flags, CP_BUILD_ONEHOP_TUNNEL | CP_BUILD_IS_INTERNAL | CP_BUILD_NEED_CAPACITY);
    assert_string_equal(c.purpose, "HS_SERVICE_REND");
    assert_string_equal(c.hs_state, "HSSR_JOINED");
    assert_string_equal(c.rend_query, "abc");
    cp_event_circ_clear(&c);
    /* no path yet */
    assert_int_equal(cp_circ_status_line_parse("7 LAUNCHED PURPOSE=HS_SERVICE_INTRO", &c, err, sizeof err), 0);
    assert_int_equal(c.status, CP_CIRC_LAUNCHED);
    assert_int_equal(c.n_hops, 0);
    assert_string_equal(c.purpose, "HS_SERVICE_INTRO");
    cp_event_circ_clear(&c);
    assert_int_equal(cp_circ_status_line_parse("CIRC 7 BUILT", &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "circuit id"));
    assert_null(c.purpose);
    assert_int_equal(cp_circ_status_line_parse("", &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "circuit id missing"));
    assert_int_equal(cp_circ_status_line_parse(NULL, &c, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_circ, setup, teardown),
        cmocka_unit_test(test_circ_status_line),
        cmocka_unit_test_setup_teardown(test_hs_desc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hs_desc_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hs_desc_content_binary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status, setup, teardown),
        cmocka_unit_test(test_bootstrap_progress),
        cmocka_unit_test_setup_teardown(test_info, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conf_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_onion_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_onion_reply_key_not_in_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_name, setup, teardown),
        cmocka_unit_test(test_enum_strings),
        cmocka_unit_test(test_hs_desc_failed_fetch),
        cmocka_unit_test(test_clear_zeroed),
        cmocka_unit_test(test_null_and_empty),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
