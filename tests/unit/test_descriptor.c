/* test_descriptor.c — unit tests for sidecar/publish/descriptor.c: the HS_DESC state machine, the fetch probe and
 * republish decisions, fed recorded events and driven by a fake clock; commands go to a recording sender.
 * The tracker keeps every time on the monotonic clock (f->now here) and reads the wall clock (f->wall)
 * only to show dates, so the wall clock jumps in one test and nothing but the dates moves.
 *
 * The event lines are recorded from Debian's tor 0.4.9.11 running a single onion service (onionfront's
 * tor) in the private test network (3 authorities + 8 relays, all HSDirs): at start tor CREATED two
 * descriptors, uploaded each to 8 HSDirs (7 of them responsible for both) and every HSDir confirmed with
 * an UPLOADED that carries no descriptor id. Failures, rotations and fetch answers are in the same format
 * (HS_DESC FAILED ... REASON=UPLOAD_REJECTED and REASON=NOT_FOUND were also recorded there). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "controlproto/cp_event.h"
#include "controlproto/cp_reply.h"
#include "sidecar/core/clock.h"
#include "sidecar/publish/descriptor.h"
#include "sidecar/core/metrics.h"
#include "sidecar/publish/served.h"
#include "sidecar/publish/served_find.h"
#include "tests/fake/fake_desc.h"

#define ONION "nkfp4y5sdp4laifn2jjhvooirlcxreopj2bygizfy5x5so7774l6u5id"
#define ONION2 "rcyyg2a356lak3j2pcrmk6mqnfj5dokbkacnlhrnbj5uhoez7ji5pkyd"
#define ID_A "kuO9sjs6h5s1HevfyKFLcLq78UyStWmQikgpm48sSsU" /* first CREATED: current */
#define ID_B "iVHSzo/oetlpMAKoLKt8wMEsI+YIiDqqMEnjYA/spvw" /* second CREATED: next */
#define ID_C "nb1TtMXLWjTgUN508bbxrziAB/uHq/mBPYaoHWc2+00" /* after a rotation */
#define RELAY2 "52FA8FCA143160F14519D7FC019717E8705B74AE"
#define RELAY3 "BCFAC56464F954D03B5A872B11997E92B451570A"
#define RELAY6 "7F7BB4712B86BB22FD78AA122981E264E678BBF4"
#define RELAY7 "B625FC04E357BC907BADEB04729A977FEA390F54"
#define AUTH1 "993312A32167039C467A293814467EF1EE6A80BC"
#define AUTH3 "38A80F075FE6064F6EFAD6A6C09E25946CF1AB17"
#define INTERVAL 60
#define DEADLINE 30
#define T0 1000000.0 /* the fake monotonic clock at the start (an arbitrary origin) */
#define WALL0 1796299200.0 /* the fake wall clock meanwhile: 2026-12-03T12:00:00Z */

/* Recorded: tor starting the service (two CREATED, 8 + 8 UPLOAD, 16 UPLOADED). */
static const char *const start_events[] = {
    "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_A,
    "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_B,
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6 " ID_A " HSDIR_INDEX=F11B49D2870DC2EB725CCF842AFD8FECFDE65B6D5AADDE7AE561AC2FEE1335F7",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3 " ID_A " HSDIR_INDEX=082A5BA080DDF82DF233E63CAAF45E2DC7BD2F608CCAAF6CD8D2AF48D8C1FFA2",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8 " ID_A " HSDIR_INDEX=0D949D7B31098692D7D09457F13D4A06C90B20D42D8D45334426176D5B9A3075",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3 " ID_A " HSDIR_INDEX=2087F95114F82F2D4BF55D8A81B93FC1A8A8C6366C2148DE33737DC92107CBAE",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5~tnrelay5 " ID_A " HSDIR_INDEX=7B93250C531459AB2BBC538FDB05496B5B0775D6F0883D86BE423946889B081B",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $9F1435095B20A17DE75B2573EA20ECB1E34EAC9E~tnrelay4 " ID_A " HSDIR_INDEX=7BA0AF67DBAEE3CECD26186733479DB1D316638A6C0E9D72BCD3646AF08A1BB3",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7 " ID_A " HSDIR_INDEX=8B4DC4DC7E333760DC1DB69C73A76909467477194C987C2EA7E708DB88ADBEBA",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2 " ID_A " HSDIR_INDEX=29C4B009C6916A16A4FA5FE4CE08E12D40B58B93658C2B2A0FB07DE55352156E",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5~tnrelay5 " ID_B " HSDIR_INDEX=500D2E73C26177A2F112D48122A2C15E1273C8EC5B8FA29A596C5B1EB65AAC64",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $993312A32167039C467A293814467EF1EE6A80BC~tnauth1 " ID_B " HSDIR_INDEX=509E0D5A2F9A03579F19F77A17C3403C0A88D4ACA4C073B8B218DB3F6584DC03",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8 " ID_B " HSDIR_INDEX=6405B7BBCEFF50A27FDD5C15AF3E2D7B1F08467516A65DD1550E1F8CE8BC87D6",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2 " ID_B " HSDIR_INDEX=C9F05E4DB0FA50B9C8B7F63D11FAFAE32676CCFF67A3285999835D28F949E56E",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3 " ID_B " HSDIR_INDEX=D34374EF543B60F5B1FAC2412544AFDE0420A785BBE418666B655ACB53A4E51E",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $9F1435095B20A17DE75B2573EA20ECB1E34EAC9E~tnrelay4 " ID_B " HSDIR_INDEX=D481144866FDE45E185D4C21AABF81B2748A39E9C26C1EB84BFF92CFCD37BC34",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6 " ID_B " HSDIR_INDEX=D8B37D499498D79E918AA6AEC688879712722959115D9210E939D05C85C3578D",
    "650 HS_DESC UPLOAD " ONION " UNKNOWN $B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7 " ID_B " HSDIR_INDEX=E06D7AE2BF72F881D436198CBEF7641B517A09D9594865D25E8D37029E24C208",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $9F1435095B20A17DE75B2573EA20ECB1E34EAC9E~tnrelay4",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $993312A32167039C467A293814467EF1EE6A80BC~tnauth1",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5~tnrelay5",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $9F1435095B20A17DE75B2573EA20ECB1E34EAC9E~tnrelay4",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2",
    "650 HS_DESC UPLOADED " ONION " UNKNOWN $83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5~tnrelay5",
};
#define N_START (sizeof(start_events) / sizeof(start_events[0]))
#define N_UPLOAD_END 18 /* start_events[0..17]: CREATED and UPLOAD; then the UPLOADED events */

/* The HSDirs responsible for each descriptor in start_events. */
static const char *const hsdirs_a[] = {RELAY6, AUTH3, "8C14334907BB1CAF6B86241C749F36E0614544CA", RELAY3,
                                       "83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5",
                                       "9F1435095B20A17DE75B2573EA20ECB1E34EAC9E", RELAY7, RELAY2};
static const char *const hsdirs_b[] = {"83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5", AUTH1,
                                       "8C14334907BB1CAF6B86241C749F36E0614544CA",
                                       "381F392D065DD094150E912C19CB8E1B353A58CB", RELAY3,
                                       "9F1435095B20A17DE75B2573EA20ECB1E34EAC9E", RELAY6, RELAY7};

/* A stand-in descriptor body: the tracker treats the body as opaque text. */
#define BODY "hs-descriptor 3\ndescriptor-lifetime 180\nrevision-counter 42\nsignature abc"

struct sent {
    char *cmd;
    cp_conn_reply_cb cb;
    void *arg;
};

struct fixture {
    struct descriptor_tracker *t;
    struct cp_reply_parser *parser;
    double now;  /* the monotonic clock */
    double wall; /* the wall clock, for dates only */
    struct sent sent[64];
    size_t n_sent;
    size_t n_done; /* sent[0..n_done) completed */
};

static double fake_clock(void *arg)
{
    return ((struct fixture *)arg)->now;
}

static double fake_wall_clock(void *arg)
{
    return ((struct fixture *)arg)->wall;
}

/* `wall` (seconds since the epoch) as the tracker shows a date. */
static void date_of(double wall, char *out, size_t len)
{
    time_t sec = (time_t)wall;
    struct tm tm;
    assert_non_null(gmtime_r(&sec, &tm));
    assert_int_not_equal(strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm), 0);
}

static int fake_send(void *arg, const char *cmd, cp_conn_reply_cb cb, void *cb_arg)
{
    struct fixture *f = arg;
    if (f->n_sent == sizeof(f->sent) / sizeof(f->sent[0]))
        return -1;
    f->sent[f->n_sent].cmd = strdup(cmd);
    f->sent[f->n_sent].cb = cb;
    f->sent[f->n_sent].arg = cb_arg;
    f->n_sent++;
    return 0;
}

static struct cp_reply *frame(struct fixture *f, const char *wire)
{
    char err[256] = "";
    if (cp_reply_parser_feed(f->parser, wire, strlen(wire), err, sizeof(err)) < 0)
        fail_msg("framing \"%s\": %s", wire, err);
    struct cp_reply *r = cp_reply_parser_next(f->parser);
    if (!r)
        fail_msg("framing \"%s\": no complete reply", wire);
    return r;
}

/* Complete every command sent so far with the reply `wire` (NULL: a closed connection). */
static void complete_all(struct fixture *f, const char *wire)
{
    struct cp_reply *r = wire ? frame(f, wire) : NULL;
    while (f->n_done < f->n_sent) {
        struct sent *s = &f->sent[f->n_done++];
        s->cb(NULL, r, r ? NULL : "connection closed", s->arg);
    }
    cp_reply_free(r);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct probe_conf pc = {.hsfetch_interval = INTERVAL, .republish_deadline = DEADLINE};
    if (!f || !(f->parser = cp_reply_parser_new(0, 0)) || !(f->t = descriptor_tracker_new(NULL, &pc)))
        return -1;
    f->now = T0;
    f->wall = WALL0;
    descriptor_tracker_set_clock(f->t, fake_clock, fake_wall_clock, f);
    descriptor_tracker_set_sender(f->t, fake_send, f);
    const char *names[] = {"alpha"}, *addrs[] = {ONION};
    if (descriptor_tracker_set_services(f->t, names, addrs, 1) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    /* Free first: commands still in flight then complete into orphaned contexts, as when the tracker
     * goes before a connection. */
    descriptor_tracker_free(f->t);
    complete_all(f, NULL);
    for (size_t i = 0; i < f->n_sent; i++)
        free(f->sent[i].cmd);
    cp_reply_parser_free(f->parser);
    free(f);
    return 0;
}

/* Feed one event line (an HS_DESC, or an HS_DESC_CONTENT with its data) at f->now. */
static void feed(struct fixture *f, const char *line)
{
    char wire[8192], err[256], name[32];
    if (strncmp(line, "650+", 4) == 0)
        snprintf(wire, sizeof(wire), "%s", line); /* complete multi-line event */
    else
        snprintf(wire, sizeof(wire), "%s\r\n", line);
    struct cp_reply *r = frame(f, wire);
    cp_event_name(r, name, sizeof(name));
    if (strcmp(name, "HS_DESC") == 0) {
        struct cp_event_hs_desc e;
        if (cp_event_hs_desc_parse(r, &e, err, sizeof(err)) < 0)
            fail_msg("%s: %s", line, err);
        descriptor_on_hs_desc(f->t, &e, f->now);
        cp_event_hs_desc_clear(&e);
    } else if (strcmp(name, "HS_DESC_CONTENT") == 0) {
        struct cp_event_hs_desc_content e;
        if (cp_event_hs_desc_content_parse(r, &e, err, sizeof(err)) < 0)
            fail_msg("%s: %s", line, err);
        descriptor_on_hs_desc_content(f->t, &e, f->now);
        cp_event_hs_desc_content_clear(&e);
    } else {
        fail_msg("not an HS_DESC event: %s", line);
    }
    cp_reply_free(r);
}

static void feed_range(struct fixture *f, const char *const *lines, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        feed(f, lines[i]);
}

static void feedf(struct fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void feedf(struct fixture *f, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    feed(f, line);
}

static struct descriptor_counts counts(struct fixture *f)
{
    struct descriptor_counts c;
    assert_int_equal(descriptor_service_counts(f->t, ONION, &c), 0);
    return c;
}

/* The JSON object of HSDir `fp` in descriptor `slot` ("current"/"next"), or NULL. Borrowed from `svc`. */
static json_t *hsdir_json(json_t *svc, const char *slot, const char *fp)
{
    json_t *descs = json_object_get(svc, "descriptors"), *d, *h;
    size_t i, j;
    json_array_foreach(descs, i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "slot")), slot) != 0)
            continue;
        json_array_foreach(json_object_get(d, "hsdirs"), j, h)
        {
            if (strcmp(json_string_value(json_object_get(h, "fp")), fp) == 0)
                return h;
        }
    }
    return NULL;
}

static json_t *desc_json(json_t *svc, const char *slot)
{
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(svc, "descriptors"), i, d)
    {
        if (strcmp(json_string_value(json_object_get(d, "slot")), slot) == 0)
            return d;
    }
    return NULL;
}

static const char *hsdir_state(struct fixture *f, const char *slot, const char *fp, char *reason, size_t rlen)
{
    static char state[32];
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    json_t *h = svc ? hsdir_json(svc, slot, fp) : NULL;
    snprintf(state, sizeof(state), "%s", h ? json_string_value(json_object_get(h, "state")) : "absent");
    if (reason) {
        const char *r = h ? json_string_value(json_object_get(h, "reason")) : NULL;
        snprintf(reason, rlen, "%s", r ? r : "");
    }
    json_decref(svc);
    return state;
}

/* ---- start, duplicates, ambiguity ---------------------------------------------------------------------- */

static void test_start_two_descriptors(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_START);
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.hsdirs_total, 8);
    assert_int_equal(c.hsdirs_confirmed, 8);
    assert_int_equal(c.hsdirs_failed, 0);
    assert_int_equal(c.uploads_confirmed, 16);
    assert_true(descriptor_service_reachable(f->t, ONION));
    assert_false(descriptor_service_reachable(f->t, ONION2));

    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_non_null(svc);
    assert_string_equal(json_string_value(json_object_get(svc, "service")), "alpha");
    assert_int_equal(json_array_size(json_object_get(svc, "descriptors")), 2);
    json_t *a = desc_json(svc, "current"), *b = desc_json(svc, "next");
    assert_string_equal(json_string_value(json_object_get(a, "id")), ID_A);
    assert_string_equal(json_string_value(json_object_get(b, "id")), ID_B);
    assert_string_equal(json_string_value(json_object_get(a, "status")), "complete");
    assert_string_equal(json_string_value(json_object_get(b, "status")), "complete");
    for (size_t i = 0; i < 8; i++) {
        json_t *h = hsdir_json(svc, "current", hsdirs_a[i]);
        assert_non_null(h);
        assert_string_equal(json_string_value(json_object_get(h, "state")), "confirmed");
        h = hsdir_json(svc, "next", hsdirs_b[i]);
        assert_non_null(h);
        assert_string_equal(json_string_value(json_object_get(h, "state")), "confirmed");
    }
    assert_null(hsdir_json(svc, "current", AUTH1)); /* responsible for the next descriptor only */
    assert_true(json_is_string(json_object_get(svc, "last_confirmed_upload")));
    assert_true(json_is_null(json_object_get(svc, "probe")));
    json_decref(svc);
}

/* descriptor_service_fetched_round_at (a rolling restart's view): the fetched descriptor's round start,
 * complete only once every responsible HSDir holds it, and incomplete again while a newer round is
 * pending. */
static void test_fetched_round_at(void **state)
{
    struct fixture *f = *state;
    bool complete = true;
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, NULL) < 0);
    assert_false(complete);
    feed_range(f, start_events, 0, N_UPLOAD_END);
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, NULL) == T0);
    assert_false(complete);
    feed_range(f, start_events, N_UPLOAD_END, N_START);
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, NULL) == T0);
    assert_true(complete);
    assert_true(descriptor_service_fetched_round_at(f->t, ONION2, &complete, NULL) < 0);
    assert_false(complete);
    f->now = T0 + 60;
    feed_range(f, start_events, 0, N_UPLOAD_END); /* a new round of the same descriptors */
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, NULL) == T0 + 60);
    assert_false(complete);
    feed_range(f, start_events, N_UPLOAD_END, N_START);
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, NULL) == T0 + 60);
    assert_true(complete);
}

/* A round every HSDir answered with UPLOAD_REJECTED is held ("present") but not complete: the HSDirs keep
 * a revision at least as high, perhaps another tor's with the same key, so no roll may conclude that they
 * serve this tor's. (Seen: two tors' first uploads in the same second; the roll ended the one served.) */
static void test_fetched_round_rejected_not_complete(void **state)
{
    static const char *const fps[] = {
        "$7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6", "$38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3",
        "$8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8", "$BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3",
        "$83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5~tnrelay5", "$9F1435095B20A17DE75B2573EA20ECB1E34EAC9E~tnrelay4",
        "$B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7", "$52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2",
        "$993312A32167039C467A293814467EF1EE6A80BC~tnauth1", "$381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2",
    };
    struct fixture *f = *state;
    bool complete = true;
    char line[256];
    feed_range(f, start_events, 0, N_UPLOAD_END);
    for (size_t i = 0; i < sizeof(fps) / sizeof(fps[0]); i++)
        for (int id = 0; id < 2; id++) {
            snprintf(line, sizeof(line), "650 HS_DESC FAILED " ONION " NO_AUTH %s %s REASON=UPLOAD_REJECTED", fps[i],
                     id ? ID_B : ID_A);
            feed(f, line);
        }
    assert_string_equal(hsdir_state(f, "current", RELAY3, NULL, 0), "present");
    bool rejected = false;
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, &rejected) == T0);
    assert_false(complete);
    assert_true(rejected); /* this round changed nothing on the HSDirs */
}

/* descriptor_service_round_answered_at (a rolling restart's "the restarted tor publishes"): a round is
 * answered once every responsible HSDir accepted it or refused it as holding one at least as new — the
 * case of two tors with one key encoding the same revision at a time-period rotation, which leaves the
 * round answered but never complete — and not while an HSDir has not answered. */
static void test_round_answered_with_rejections(void **state)
{
    struct fixture *f = *state;
    bool answered = true, complete = true;
    assert_true(descriptor_service_round_answered_at(f->t, ONION, &answered) < 0);
    assert_false(answered);
    feed_range(f, start_events, 0, N_UPLOAD_END);
    assert_true(descriptor_service_round_answered_at(f->t, ONION, &answered) == T0);
    assert_false(answered); /* no HSDir answered yet */
    /* every HSDir but one accepts; that one refuses the current descriptor (it holds the other tor's) */
    for (size_t i = N_UPLOAD_END; i < N_START; i++)
        if (!strstr(start_events[i], RELAY3))
            feed(f, start_events[i]);
    assert_true(descriptor_service_round_answered_at(f->t, ONION, &answered) == T0);
    assert_false(answered); /* RELAY3 has not answered */
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY3 "~tnrelay3 " ID_A " REASON=UPLOAD_REJECTED");
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY3 "~tnrelay3 " ID_B " REASON=UPLOAD_REJECTED");
    assert_true(descriptor_service_round_answered_at(f->t, ONION, &answered) == T0);
    assert_true(answered);
    assert_true(descriptor_service_fetched_round_at(f->t, ONION, &complete, NULL) == T0);
    assert_false(complete); /* answered, yet not accepted everywhere */
}

/* The same HSDir is responsible for both descriptors: the first UPLOADED confirms the earlier upload,
 * the second one the other; one UPLOADED alone leaves the other pending. */
static void test_uploaded_without_id_shared_hsdir(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_UPLOAD_END);
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY3 "~tnrelay3");
    assert_string_equal(hsdir_state(f, "current", RELAY3, NULL, 0), "confirmed");
    assert_string_equal(hsdir_state(f, "next", RELAY3, NULL, 0), "pending");
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY3 "~tnrelay3");
    assert_string_equal(hsdir_state(f, "next", RELAY3, NULL, 0), "confirmed");
    assert_int_equal(counts(f).uploads_confirmed, 2);
}

/* An UPLOADED matched to the current descriptor turns out to be for the next one when a FAILED for the
 * current one (which carries the descriptor id) arrives. */
static void test_ambiguous_match_corrected(void **state)
{
    struct fixture *f = *state;
    char reason[32];
    feed_range(f, start_events, 0, N_UPLOAD_END);
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY6 "~tnrelay6");
    assert_string_equal(hsdir_state(f, "current", RELAY6, NULL, 0), "confirmed");
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY6 "~tnrelay6 " ID_A " REASON=UNEXPECTED");
    assert_string_equal(hsdir_state(f, "current", RELAY6, reason, sizeof(reason)), "failed");
    assert_string_equal(reason, "UNEXPECTED");
    assert_string_equal(hsdir_state(f, "next", RELAY6, NULL, 0), "confirmed");
    assert_int_equal(counts(f).uploads_confirmed, 1);
}

/* A repeated UPLOAD in the same round does not add an HSDir; an UPLOADED with nothing pending is a
 * duplicate and confirms nothing. */
static void test_duplicates(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_START);
    feed(f, start_events[5]); /* UPLOAD to tnrelay3 of ID_A again, same second */
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY3 "~tnrelay3");
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY3 "~tnrelay3"); /* nothing pending now */
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY3 "~tnrelay3");
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.hsdirs_total, 8);
    assert_int_equal(c.hsdirs_confirmed, 8);
    assert_int_equal(c.uploads_confirmed, 17);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_int_equal(json_array_size(json_object_get(desc_json(svc, "current"), "hsdirs")), 8);
    json_decref(svc);
}

/* Attached, the start events at f->now, except tnrelay7's confirmations: it never answers. */
static void start_attached_relay7_silent(struct fixture *f)
{
    descriptor_tracker_attach(f->t, NULL);
    for (size_t i = 0; i < N_START; i++)
        if (!strstr(start_events[i], "UPLOADED") || !strstr(start_events[i], RELAY7))
            feed(f, start_events[i]);
}

/* ---- failures and the deadline -------------------------------------------------------------------------- */

/* tnrelay7 is down: its uploads get no answer at all (as observed on tor 0.4.9); past the deadline it is
 * failed with NO_ANSWER in both descriptors. */
static void test_failed_hsdir_no_answer(void **state)
{
    struct fixture *f = *state;
    char reason[32];
    start_attached_relay7_silent(f);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "pending");
    f->now = T0 + DEADLINE - 1;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "pending");
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_string_equal(json_string_value(json_object_get(desc_json(svc, "current"), "status")), "uploading");
    json_decref(svc);

    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, reason, sizeof(reason)), "failed");
    assert_string_equal(reason, "NO_ANSWER");
    assert_string_equal(hsdir_state(f, "next", RELAY7, NULL, 0), "failed");
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.hsdirs_total, 8);
    assert_int_equal(c.hsdirs_confirmed, 7);
    assert_int_equal(c.hsdirs_failed, 1);
    assert_true(descriptor_service_reachable(f->t, ONION)); /* seven others have it */
    svc = descriptor_service_to_json(f->t, ONION);
    assert_string_equal(json_string_value(json_object_get(desc_json(svc, "current"), "status")), "incomplete");
    json_decref(svc);

    /* A late answer still counts. */
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY7 "~tnrelay7");
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "confirmed");
}

/* Deadlines do not run while there is no connection to tor. */
static void test_no_deadline_while_detached(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_UPLOAD_END);
    f->now = T0 + 10 * DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "pending");
    assert_int_equal(f->n_sent, 0);
}

/* UPLOAD_REJECTED: the HSDir already holds this revision (or a newer one) — present, not failed. */
static void test_upload_rejected_is_present(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_UPLOAD_END);
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY3 "~tnrelay3 " ID_B " REASON=UPLOAD_REJECTED");
    assert_string_equal(hsdir_state(f, "next", RELAY3, NULL, 0), "present");
    assert_string_equal(hsdir_state(f, "current", RELAY3, NULL, 0), "pending");
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY2 "~tnrelay2 " ID_A " REASON=UNEXPECTED");
    assert_string_equal(hsdir_state(f, "current", RELAY2, NULL, 0), "failed");
    /* A result for an HSDir the descriptor has nothing to do with changes nothing. */
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" AUTH1 "~tnauth1 " ID_A " REASON=UPLOAD_REJECTED");
    assert_string_equal(hsdir_state(f, "current", AUTH1, NULL, 0), "absent");
}

/* ---- rotation and new rounds ----------------------------------------------------------------------------- */

static void test_rotation(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_START);
    f->now = T0 + 240;
    feed(f, "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_C);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    json_t *cur = desc_json(svc, "current"), *next = desc_json(svc, "next");
    assert_string_equal(json_string_value(json_object_get(cur, "id")), ID_B); /* next became current */
    assert_int_equal(json_array_size(json_object_get(cur, "hsdirs")), 8);
    assert_string_equal(json_string_value(json_object_get(next, "id")), ID_C);
    assert_int_equal(json_array_size(json_object_get(next, "hsdirs")), 0);
    assert_string_equal(json_string_value(json_object_get(next, "status")), "none");
    json_decref(svc);
    feedf(f, "650 HS_DESC UPLOAD " ONION " UNKNOWN $%s~tnrelay7 " ID_C " HSDIR_INDEX=00", RELAY7);
    feedf(f, "650 HS_DESC UPLOAD " ONION " UNKNOWN $%s~tnrelay2 " ID_C " HSDIR_INDEX=01", RELAY2);
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY2 "~tnrelay2");
    assert_string_equal(hsdir_state(f, "next", RELAY2, NULL, 0), "confirmed");
    assert_string_equal(hsdir_state(f, "next", RELAY7, NULL, 0), "pending");
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "confirmed");
}

/* A restarted tor announces the same blinded key again (same time period): that slot starts afresh. */
static void test_created_same_id_rebuilds(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_START);
    f->now = T0 + 50;
    feed(f, "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_A);
    feed(f, "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_B);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_string_equal(json_string_value(json_object_get(desc_json(svc, "current"), "id")), ID_A);
    assert_string_equal(json_string_value(json_object_get(desc_json(svc, "next"), "id")), ID_B);
    assert_int_equal(json_array_size(json_object_get(desc_json(svc, "current"), "hsdirs")), 0);
    json_decref(svc);
    /* A restart in a later time period: (B, C) after (A, B) ends as current B, next C. */
    feed_range(f, start_events, 0, N_START);
    f->now = T0 + 500;
    feed(f, "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_B);
    feed(f, "650 HS_DESC CREATED " ONION " UNKNOWN UNKNOWN " ID_C);
    svc = descriptor_service_to_json(f->t, ONION);
    assert_string_equal(json_string_value(json_object_get(desc_json(svc, "current"), "id")), ID_B);
    assert_string_equal(json_string_value(json_object_get(desc_json(svc, "next"), "id")), ID_C);
    json_decref(svc);
}

/* tor uploads again later (new intro points, a new HSDir set): the new round's UPLOAD events are the
 * responsible set; an HSDir no longer listed drops out. */
static void test_new_round_replaces_set(void **state)
{
    struct fixture *f = *state;
    feed_range(f, start_events, 0, N_START);
    f->now = T0 + 3600;
    for (size_t i = 2; i < 10; i++) /* ID_A's uploads, but tnrelay7 replaced by tnauth1 */
        if (!strstr(start_events[i], RELAY7))
            feed(f, start_events[i]);
    feedf(f, "650 HS_DESC UPLOAD " ONION " UNKNOWN $%s~tnauth1 " ID_A " HSDIR_INDEX=02", AUTH1);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "absent");
    assert_string_equal(hsdir_state(f, "current", AUTH1, NULL, 0), "pending");
    assert_string_equal(hsdir_state(f, "current", RELAY3, NULL, 0), "pending");
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.hsdirs_total, 8);
    assert_int_equal(c.hsdirs_confirmed, 0);
    /* Every HSDir confirmed before still has the earlier copy: reachable through the re-upload. */
    assert_true(descriptor_service_reachable(f->t, ONION));
}

/* ---- probe ------------------------------------------------------------------------------------------------ */

static void probe_answers(struct fixture *f, const char *served_id)
{
    const char *const *resp = strcmp(served_id, ID_B) == 0 ? hsdirs_b : hsdirs_a;
    const char *asked[] = {RELAY6, AUTH3, "8C14334907BB1CAF6B86241C749F36E0614544CA", RELAY3,
                           "83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5", "9F1435095B20A17DE75B2573EA20ECB1E34EAC9E",
                           RELAY7, RELAY2, AUTH1, "381F392D065DD094150E912C19CB8E1B353A58CB"};
    for (size_t i = 0; i < 10; i++)
        feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~x %s HSDIR_INDEX=00", asked[i], served_id);
    f->now += 0.5;
    for (size_t i = 0; i < 10; i++) {
        bool responsible = false;
        for (size_t j = 0; j < 8; j++)
            responsible = responsible || strcmp(resp[j], asked[i]) == 0;
        if (responsible)
            feedf(f, "650 HS_DESC RECEIVED " ONION " NO_AUTH $%s~x %s", asked[i], served_id);
        else
            feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~x %s REASON=NOT_FOUND", asked[i], served_id);
    }
}

static size_t count_sent(struct fixture *f, const char *prefix);

static void start_attached(struct fixture *f)
{
    descriptor_tracker_attach(f->t, NULL);
    feed_range(f, start_events, 0, N_START);
}

/* The first probe comes soon after the first round settled, asks every responsible HSDir of either
 * descriptor, and learns which descriptor clients fetch (here the next one). */
static void test_probe_counts(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    descriptor_tick(f->t, f->now + 1);
    assert_int_equal(f->n_sent, 0);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    assert_int_equal(f->n_sent, 1);
    const char *cmd = f->sent[0].cmd;
    assert_true(strncmp(cmd, "HSFETCH " ONION " ", strlen("HSFETCH " ONION " ")) == 0);
    size_t servers = 0;
    for (const char *p = cmd; (p = strstr(p, "SERVER=$")); p++)
        servers++;
    assert_int_equal(servers, 10); /* 8 + 8 with 6 shared */
    assert_non_null(strstr(cmd, "SERVER=$" AUTH1));
    assert_non_null(strstr(cmd, "SERVER=$" AUTH3));
    complete_all(f, "250 OK\r\n");
    probe_answers(f, ID_B);

    struct descriptor_counts c = counts(f);
    assert_int_equal(c.probes_ok, 1);
    assert_int_equal(c.probe_served, 8);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    json_t *p = json_object_get(svc, "probe");
    assert_true(json_is_true(json_object_get(p, "ok")));
    assert_int_equal(json_integer_value(json_object_get(p, "served")), 8);
    assert_int_equal(json_integer_value(json_object_get(p, "not_found")), 2);
    assert_int_equal(json_integer_value(json_object_get(p, "asked")), 10);
    assert_int_equal(json_integer_value(json_object_get(p, "responsible")), 8);
    assert_int_equal(json_integer_value(json_object_get(p, "responsible_served")), 8);
    assert_string_equal(json_string_value(json_object_get(p, "slot")), "next");
    assert_true(json_real_value(json_object_get(p, "latency_seconds")) > 0.49 &&
                json_real_value(json_object_get(p, "latency_seconds")) < 0.51);
    assert_true(json_is_true(json_object_get(desc_json(svc, "next"), "client_fetched")));
    assert_true(json_is_false(json_object_get(desc_json(svc, "current"), "client_fetched")));
    json_decref(svc);
    assert_true(descriptor_service_reachable(f->t, ONION));

    /* The next probe one interval later, not before. */
    descriptor_tick(f->t, T0 + 2 + INTERVAL - 1);
    assert_int_equal(f->n_sent, 1);
    descriptor_tick(f->t, T0 + 2 + INTERVAL);
    assert_int_equal(f->n_sent, 2);
}

/* No probe while the first upload round is still running; it follows as soon as the round settles. With
 * nothing seen at all (attached to a tor that uploaded long ago), a bare HSFETCH after two minutes. */
static void test_probe_waits_for_uploads(void **state)
{
    struct fixture *f = *state;
    struct probe_conf pc = {.hsfetch_interval = 10, .republish_deadline = DEADLINE};
    descriptor_tracker_set_probe_conf(f->t, &pc);
    descriptor_tracker_attach(f->t, NULL);
    feed_range(f, start_events, 0, N_UPLOAD_END);
    f->now = T0 + 10; /* due, but the uploads are still pending */
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "HSFETCH"), 0);
    feed_range(f, start_events, N_UPLOAD_END, N_START);
    descriptor_tick(f->t, f->now + 1);
    assert_int_equal(count_sent(f, "HSFETCH"), 0);
    descriptor_tick(f->t, f->now + 2);
    assert_int_equal(count_sent(f, "HSFETCH " ONION " SERVER="), 1);

    const char *names[] = {"beta"}, *addrs[] = {ONION2};
    assert_int_equal(descriptor_tracker_set_services(f->t, names, addrs, 1), 0);
    descriptor_tracker_attach(f->t, NULL); /* a new connection at T0 + 10 */
    for (int i = 1; i < 120; i++)
        descriptor_tick(f->t, f->now + i);
    assert_int_equal(count_sent(f, "HSFETCH " ONION2), 0);
    descriptor_tick(f->t, f->now + 120);
    assert_int_equal(count_sent(f, "HSFETCH " ONION2 "\r\n"), 1);
}

/* Many services due at once (attached to a tor that uploaded long ago: every one's bare fetch is due one
 * interval after attaching, in the same second) are paced: at most 3 fetches in flight, starts at least
 * interval / services apart (at most 2 s), the rest wait their turn, and each is fetched once within the
 * interval. */
static void test_probes_paced(void **state)
{
    struct fixture *f = *state;
    enum { N = 10 };
    char addrs_buf[N][57];
    const char *names[N], *addrs[N];
    static const char *const svc_names[N] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
    for (int i = 0; i < N; i++) {
        memset(addrs_buf[i], 'a', 55);
        addrs_buf[i][55] = (char)('b' + i);
        addrs_buf[i][56] = '\0';
        names[i] = svc_names[i];
        addrs[i] = addrs_buf[i];
    }
    struct probe_conf pc = {.hsfetch_interval = 300, .republish_deadline = DEADLINE};
    descriptor_tracker_set_probe_conf(f->t, &pc);
    assert_int_equal(descriptor_tracker_set_services(f->t, names, addrs, N), 0);
    descriptor_tracker_attach(f->t, NULL);
    double t0 = f->now;
    size_t started_at[N + 1] = {0};
    for (int sec = 0; sec < 600; sec++) {
        descriptor_tick(f->t, t0 + sec);
        complete_all(f, "250 OK\r\n"); /* tor accepts each HSFETCH; the fetch runs until answered or 60 s */
        assert_true(count_sent(f, "HSFETCH") <= N);
        for (size_t k = 0; k < f->n_sent && k < N; k++)
            if (!started_at[k])
                started_at[k] = (size_t)sec;
        /* in flight: fetches started less than 60 s ago (none is answered here) */
        size_t running = 0;
        for (size_t k = 0; k < f->n_sent && k < N; k++)
            running += (size_t)sec < started_at[k] + 60;
        assert_true(running <= 3);
    }
    assert_int_equal(count_sent(f, "HSFETCH"), N); /* each once within the interval */
    assert_int_equal(started_at[0], 300);          /* all due then */
    for (size_t k = 1; k < 3; k++)
        assert_int_equal(started_at[k] - started_at[k - 1], 2); /* spread, not in one second */
    assert_int_equal(started_at[3], 360); /* the fourth waits for a fetch to end */
    for (size_t k = 0; k < N; k++)
        for (size_t j = k + 1; j < N; j++)
            assert_string_not_equal(f->sent[k].cmd, f->sent[j].cmd); /* ten different services */
}

/* No HSDir serves it, or none answers: the probe fails and the service is not reachable. */
static void test_probe_failure_and_timeout(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    assert_int_equal(f->n_sent, 1);
    complete_all(f, "250 OK\r\n");
    f->now = T0 + 2 + INTERVAL - 1; /* the fetch times out after min(60 s, interval) */
    descriptor_tick(f->t, f->now);
    assert_int_equal(counts(f).probes_failed, 0);
    f->now = T0 + 2 + INTERVAL; /* timed out; the next probe starts in the same tick */
    descriptor_tick(f->t, f->now);
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.probes_failed, 1);
    assert_int_equal(c.probe_served, 0);
    assert_false(descriptor_service_reachable(f->t, ONION));
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(svc, "probe"), "no_answer")), 10);
    json_decref(svc);

    /* The next probe: every HSDir says NOT_FOUND. */
    assert_int_equal(f->n_sent, 2);
    complete_all(f, "250 OK\r\n");
    const char *asked[] = {RELAY6, AUTH3, "8C14334907BB1CAF6B86241C749F36E0614544CA", RELAY3,
                           "83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5", "9F1435095B20A17DE75B2573EA20ECB1E34EAC9E",
                           RELAY7, RELAY2, AUTH1, "381F392D065DD094150E912C19CB8E1B353A58CB"};
    for (size_t i = 0; i < 10; i++)
        feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~x " ID_A " REASON=NOT_FOUND", asked[i]);
    c = counts(f);
    assert_int_equal(c.probes_failed, 2);
    svc = descriptor_service_to_json(f->t, ONION);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(svc, "probe"), "not_found")), 10);
    json_decref(svc);
    /* HSDirs that confirmed the upload but answer NOT_FOUND have lost it: failed, reason NOT_FOUND. */
    c = counts(f);
    assert_int_equal(c.hsdirs_confirmed, 0);
    assert_int_equal(c.hsdirs_failed, 8);
    char reason[32];
    assert_string_equal(hsdir_state(f, "current", RELAY7, reason, sizeof(reason)), "failed");
    assert_string_equal(reason, "NOT_FOUND");
    /* The next descriptor was not fetched: nothing is known against its copies. */
    assert_string_equal(hsdir_state(f, "next", RELAY7, NULL, 0), "confirmed");
}

/* tor refuses the HSFETCH (e.g. no consensus yet): the probe ends at once with tor's message. */
static void test_probe_refused(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    complete_all(f, "551 No usable consensus\r\n");
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.probes_failed, 1);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    const char *err = json_string_value(json_object_get(json_object_get(svc, "probe"), "error"));
    assert_non_null(err);
    assert_non_null(strstr(err, "No usable consensus"));
    json_decref(svc);
}

/* During a probe, an UNEXPECTED failure from an HSDir we asked is the fetch's; UPLOAD_REJECTED never is. */
static void test_failed_fetch_or_upload(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    complete_all(f, "250 OK\r\n");
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY2 "~tnrelay2 " ID_A " REASON=UNEXPECTED");
    assert_string_equal(hsdir_state(f, "current", RELAY2, NULL, 0), "confirmed");
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY3 "~tnrelay3 " ID_A " REASON=UPLOAD_REJECTED");
    assert_string_equal(hsdir_state(f, "current", RELAY3, NULL, 0), "present");
    /* Once the probe is answered, UNEXPECTED is an upload failure. */
    probe_answers(f, ID_A);
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY2 "~tnrelay2 " ID_A " REASON=UNEXPECTED");
    assert_string_equal(hsdir_state(f, "current", RELAY2, NULL, 0), "failed");
}

/* ---- republish ------------------------------------------------------------------------------------------- */

static size_t count_sent(struct fixture *f, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_sent; i++)
        n += strncmp(f->sent[i].cmd, prefix, strlen(prefix)) == 0;
    return n;
}

static size_t count_servers(const char *cmd)
{
    size_t n = 0;
    for (const char *p = cmd; (p = strstr(p, "SERVER=")); p++)
        n++;
    return n;
}

/* HSFETCH commands naming 1-3 HSDirs: fetches of a copy for republishing (probes name all 8-10). */
static size_t count_source_fetches(struct fixture *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_sent; i++) {
        size_t k = count_servers(f->sent[i].cmd);
        n += strncmp(f->sent[i].cmd, "HSFETCH ", 8) == 0 && k >= 1 && k <= 3;
    }
    return n;
}

static const char *last_sent(struct fixture *f)
{
    return f->n_sent ? f->sent[f->n_sent - 1].cmd : "";
}

/* tnrelay7 never answered for the current descriptor: at the deadline onionfront fetches a copy from the
 * HSDir that confirmed most recently and re-posts it to tnrelay7 only; without an answer it tries again
 * after the backoff (deadline, then doubled); the confirmation ends it. */
static void test_republish_flow(void **state)
{
    struct fixture *f = *state;
    start_attached_relay7_silent(f);
    /* (tnrelay7 keeps the round unsettled, so no probe runs before the deadline) */
    size_t base = f->n_sent;

    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    /* No copy of this round yet: a fetch from one HSDir that holds it; its REQUESTED event shows that
     * clients fetch ID_A now. */
    assert_int_equal(f->n_sent, base + 1);
    assert_true(strncmp(last_sent(f), "HSFETCH " ONION " SERVER=$", strlen("HSFETCH " ONION " SERVER=$")) == 0);
    assert_int_equal(count_servers(last_sent(f)), 3); /* three holders at once: the first answer is used */
    assert_null(strstr(last_sent(f), RELAY7));
    char src[41];
    const char *p = strstr(last_sent(f), "SERVER=$");
    assert_non_null(p);
    snprintf(src, sizeof(src), "%.40s", p + 8);
    complete_all(f, "250 OK\r\n");
    feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~src " ID_A " HSDIR_INDEX=00", src);
    feedf(f, "650 HS_DESC RECEIVED " ONION " NO_AUTH $%s~src " ID_A, src);
    feedf(f, "650+HS_DESC_CONTENT " ONION " " ID_A " $%s~src\r\n%s\r\n.\r\n650 OK\r\n", src,
          "hs-descriptor 3\r\ndescriptor-lifetime 180\r\nrevision-counter 42\r\nsignature abc");

    /* The copy arrived: one HSPOST, to tnrelay7 only, with the body and the address. */
    assert_int_equal(count_sent(f, "+HSPOST"), 1);
    const char *post = last_sent(f);
    assert_non_null(strstr(post, "+HSPOST SERVER=$" RELAY7 " HSADDRESS=" ONION "\r\n"));
    assert_non_null(strstr(post, "revision-counter 42\r\n"));
    assert_non_null(strstr(post, "\r\n.\r\n"));
    assert_int_equal(counts(f).republishes, 1);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "pending");
    complete_all(f, "250 OK\r\n");

    /* No answer: not again before the backoff (one deadline for the first attempt). */
    f->now = T0 + 2 * DEADLINE - 1;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST"), 1);
    f->now = T0 + 2 * DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST"), 2); /* the body is still current: no second fetch */
    complete_all(f, "250 OK\r\n");
    /* The second attempt waits twice as long. */
    f->now = T0 + 3 * DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "failed");
    assert_int_equal(count_sent(f, "+HSPOST"), 2);
    f->now = T0 + 4 * DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST"), 3);
    complete_all(f, "250 OK\r\n");

    /* tnrelay7 is back and takes it. */
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY7 "~tnrelay7");
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "confirmed");
    struct descriptor_counts c = counts(f);
    assert_int_equal(c.republishes, 3);
    assert_int_equal(c.hsdirs_confirmed, 8);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    json_t *h = hsdir_json(svc, "current", RELAY7);
    assert_int_equal(json_integer_value(json_object_get(h, "republishes")), 3);
    json_decref(svc);
    /* The next descriptor's tnrelay7 was never repaired (clients fetch the current one). */
    assert_string_equal(hsdir_state(f, "next", RELAY7, NULL, 0), "failed");
    assert_int_equal(count_sent(f, "+HSPOST SERVER=$" RELAY7 " HSADDRESS=" ONION), 3);
    f->now = T0 + 10 * DEADLINE;
    descriptor_tick(f->t, f->now);
    for (size_t i = 0; i < f->n_sent; i++)
        assert_false(strstr(f->sent[i].cmd, "+HSPOST") && strstr(f->sent[i].cmd, ID_B));
}

/* tnrelay3 restarted and lost its copy (HSDir caches are in memory): it confirmed the upload, but the probe
 * gets NOT_FOUND from it. It is marked failed (NOT_FOUND) and gets the probe's copy re-posted at once. */
static void test_probe_detects_lost_descriptor(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    complete_all(f, "250 OK\r\n");
    for (size_t i = 0; i < 8; i++)
        feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~x " ID_B " HSDIR_INDEX=00", hsdirs_b[i]);
    feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~x " ID_B " HSDIR_INDEX=00", AUTH3);
    feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~x " ID_B " HSDIR_INDEX=00", RELAY2);
    f->now = T0 + 3;
    for (size_t i = 0; i < 8; i++) {
        if (strcmp(hsdirs_b[i], RELAY3) == 0) {
            feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~tnrelay3 " ID_B " REASON=NOT_FOUND", RELAY3);
            continue;
        }
        feedf(f, "650 HS_DESC RECEIVED " ONION " NO_AUTH $%s~x " ID_B, hsdirs_b[i]);
        if (strcmp(hsdirs_b[i], RELAY6) == 0)
            feedf(f, "650+HS_DESC_CONTENT " ONION " " ID_B " $%s~tnrelay6\r\n%s\r\n.\r\n650 OK\r\n", RELAY6, BODY);
    }
    feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~x " ID_B " REASON=NOT_FOUND", AUTH3);
    feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~x " ID_B " REASON=NOT_FOUND", RELAY2);

    assert_int_equal(counts(f).probe_served, 7);
    /* re-posted right away: so pending again, as a republish */
    assert_string_equal(hsdir_state(f, "next", RELAY3, NULL, 0), "pending");
    assert_int_equal(count_sent(f, "+HSPOST SERVER=$" RELAY3 " HSADDRESS=" ONION), 1);
    assert_int_equal(counts(f).republishes, 1);
    /* tnauth3 and tnrelay2 hold only the current descriptor: their NOT_FOUND for the next one is normal */
    assert_string_equal(hsdir_state(f, "current", AUTH3, NULL, 0), "confirmed");
    assert_string_equal(hsdir_state(f, "current", RELAY2, NULL, 0), "confirmed");
    /* the current descriptor's copy on tnrelay3 is not questioned by a fetch of the next one */
    assert_string_equal(hsdir_state(f, "current", RELAY3, NULL, 0), "confirmed");
    complete_all(f, "250 OK\r\n");
    /* no answer within the deadline: failed (NO_ANSWER), and re-posted again once the backoff allows */
    f->now = T0 + 3 + DEADLINE - 1;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "next", RELAY3, NULL, 0), "pending");
    f->now = T0 + 3 + DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST SERVER=$" RELAY3 " HSADDRESS=" ONION), 2);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_int_equal(json_integer_value(json_object_get(hsdir_json(svc, "next", RELAY3), "republishes")), 2);
    json_decref(svc);
    feed(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $" RELAY3 "~tnrelay3");
    assert_string_equal(hsdir_state(f, "next", RELAY3, NULL, 0), "confirmed");
}

/* A re-posted descriptor the HSDir already has: UPLOAD_REJECTED = present, no more attempts. */
static void test_republish_rejected_is_present(void **state)
{
    struct fixture *f = *state;
    start_attached_relay7_silent(f);
    /* a copy of this round's current descriptor, from an HSDir that confirmed it */
    feedf(f, "650+HS_DESC_CONTENT " ONION " " ID_A " $%s~tnrelay3\r\n%s\r\n.\r\n650 OK\r\n", RELAY3, BODY);
    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST SERVER=$" RELAY7 " HSADDRESS=" ONION), 1); /* the copy at hand */
    assert_int_equal(count_source_fetches(f), 1); /* for the next descriptor, which has no copy */
    complete_all(f, "250 OK\r\n");
    feed(f, "650 HS_DESC FAILED " ONION " NO_AUTH $" RELAY7 "~tnrelay7 " ID_A " REASON=UPLOAD_REJECTED");
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "present");
    f->now = T0 + 20 * DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST"), 1);
}

/* tor refuses the HSPOST: the HSDir stays failed (HSPOST_REFUSED) until the backoff allows another try. */
static void test_republish_refused(void **state)
{
    struct fixture *f = *state;
    char reason[32];
    start_attached_relay7_silent(f);
    /* a copy of this round's current descriptor, from an HSDir that confirmed it */
    feedf(f, "650+HS_DESC_CONTENT " ONION " " ID_A " $%s~tnrelay3\r\n%s\r\n.\r\n650 OK\r\n", RELAY3, BODY);
    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    complete_all(f, "554 Invalid descriptor\r\n");
    assert_string_equal(hsdir_state(f, "current", RELAY7, reason, sizeof(reason)), "failed");
    assert_string_equal(reason, "HSPOST_REFUSED");
}

/* Clients fetch the next descriptor now: the current one cannot be fetched (HSFETCH asks for the
 * client's time period), so its missing HSDirs are reported, not re-posted, and no copy is fetched. */
static void test_republish_blocked_for_other_descriptor(void **state)
{
    struct fixture *f = *state;
    descriptor_tracker_attach(f->t, NULL);
    for (size_t i = 0; i < N_START; i++)
        if (!strstr(start_events[i], "UPLOADED") || !strstr(start_events[i], RELAY2))
            feed(f, start_events[i]); /* tnrelay2 is responsible for the current one (ID_A) only */
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    complete_all(f, "250 OK\r\n");
    probe_answers(f, ID_B);
    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY2, NULL, 0), "failed");
    f->now = T0 + 3 * DEADLINE; /* (another probe goes out meanwhile) */
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST"), 0);
    assert_int_equal(count_source_fetches(f), 0);
    assert_int_equal(count_sent(f, "HSFETCH"), 2);
}

/* A copy from an HSDir that did not confirm this round (an older revision) is never re-posted. */
static void test_stale_copy_not_used(void **state)
{
    struct fixture *f = *state;
    start_attached_relay7_silent(f);
    /* the copy comes from tnrelay7 itself, which did not confirm */
    feedf(f, "650+HS_DESC_CONTENT " ONION " " ID_A " $%s~tnrelay7\r\n%s\r\n.\r\n650 OK\r\n", RELAY7, BODY);
    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "+HSPOST"), 0);
    assert_int_equal(count_source_fetches(f), 1); /* a fresh copy is fetched instead */
}

/* ---- whose descriptor HSDirs serve (served.h) ----------------------------------------------------------- */

/* Complete sent[i] with `wire`. */
static void complete_one(struct fixture *f, size_t i, const char *wire)
{
    struct cp_reply *r = frame(f, wire);
    f->sent[i].cb(NULL, r, NULL, f->sent[i].arg);
    cp_reply_free(r);
}

/* Answer GETINFO hs/service/desc/id (sent[i]) with a descriptor signed by key `key_byte`. */
static void own_answer(struct fixture *f, size_t i, unsigned char key_byte)
{
    char body[1024], wire[2048];
    assert_non_null(strstr(f->sent[i].cmd, "GETINFO hs/service/desc/id/" ONION));
    fake_desc_body(body, sizeof(body), key_byte, 500, "\r\n");
    snprintf(wire, sizeof(wire), "250+hs/service/desc/id/%s=\r\n%s\r\n.\r\n250 OK\r\n", ONION, body);
    complete_one(f, i, wire);
}

/* The probe's answers for descriptor ID_B: the responsible HSDirs serve copies signed by keys[j] (0: not
 * found), the other two asked say NOT_FOUND. */
static void probe_copies(struct fixture *f, const unsigned char keys[8])
{
    static const char *const others[] = {AUTH3, RELAY2};
    char body[1024];
    for (size_t j = 0; j < 8; j++)
        feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~x " ID_B " HSDIR_INDEX=00", hsdirs_b[j]);
    for (size_t j = 0; j < 2; j++)
        feedf(f, "650 HS_DESC REQUESTED " ONION " NO_AUTH $%s~x " ID_B " HSDIR_INDEX=00", others[j]);
    f->now += 0.5;
    for (size_t j = 0; j < 8; j++) {
        if (!keys[j]) {
            feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~x " ID_B " REASON=NOT_FOUND", hsdirs_b[j]);
            continue;
        }
        feedf(f, "650 HS_DESC RECEIVED " ONION " NO_AUTH $%s~x " ID_B, hsdirs_b[j]);
        fake_desc_body(body, sizeof(body), keys[j], 400 + j, "\r\n");
        feedf(f, "650+HS_DESC_CONTENT " ONION " " ID_B " $%s~x\r\n%s\r\n.\r\n650 OK\r\n", hsdirs_b[j], body);
    }
    for (size_t j = 0; j < 2; j++)
        feedf(f, "650 HS_DESC FAILED " ONION " NO_AUTH $%s~x " ID_B " REASON=NOT_FOUND", others[j]);
}

/* With read_own, a probe first reads tor's own descriptor, then records what each responsible HSDir
 * served (not the two asked that are responsible only for the other descriptor); served_find names the
 * tor whose own descriptor most copies are. A new tor forgets its own descriptor: copies of HSDirs that
 * accepted its upload before serving them still say which is its; once uploads follow the copies, only
 * the acceptance record answers. */
static void test_served_copies(void **state)
{
    struct fixture *f = *state;
    descriptor_tracker_set_read_own(f->t, true);
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    assert_int_equal(f->n_sent, 2);
    assert_string_equal(f->sent[0].cmd, "GETINFO hs/service/desc/id/" ONION "\r\n");
    assert_true(strncmp(f->sent[1].cmd, "HSFETCH ", 8) == 0);
    own_answer(f, 0, 7);
    complete_one(f, 1, "250 OK\r\n");
    f->n_done = 2;
    probe_copies(f, (const unsigned char[8]){7, 7, 9, 7, 0, 7, 9, 7});

    struct served_ident own;
    assert_int_equal(descriptor_service_own(f->t, ONION, &own), 0);
    assert_int_equal(own.signing_key[0], 7);
    assert_true(own.revision == 500);
    struct served_copy copies[SERVED_HSDIRS_MAX];
    double at;
    size_t n = descriptor_service_copies(f->t, ONION, copies, SERVED_HSDIRS_MAX, &at);
    assert_int_equal(n, 8);
    assert_true(at == T0 + 2.5);
    for (size_t j = 0; j < n; j++)
        assert_string_equal(copies[j].fp, hsdirs_b[j]);
    assert_false(copies[4].ident.valid);
    assert_true(copies[2].ident.valid && copies[2].ident.signing_key[0] == 9 && copies[2].ident.revision == 402);

    /* Tor 0 is this tracker (key 7); tor 1 another whose own descriptor is key 9. */
    struct descriptor_tracker *t1 = descriptor_tracker_new(NULL, &(struct probe_conf){.hsfetch_interval = INTERVAL,
                                                                                       .republish_deadline = DEADLINE});
    const char *names[] = {"alpha"}, *addrs[] = {ONION};
    assert_non_null(t1);
    assert_int_equal(descriptor_tracker_set_services(t1, names, addrs, 1), 0);
    const struct descriptor_tracker *ts[2] = {f->t, t1};
    struct served_result r;
    served_find(ts, 2, ONION, SERVED_BASIS_FETCHED, &r);
    assert_int_equal(r.tor, 0);
    assert_int_equal(r.source, SERVED_SOURCE_FETCHED);
    assert_int_equal(r.holding, 5);
    assert_int_equal(r.asked, 8);
    assert_int_equal(r.dirs[2].tor, SERVED_OTHER); /* key 9 is nobody's own descriptor known here */
    assert_int_equal(r.dirs[4].tor, SERVED_NONE);
    /* By the acceptance record alone: not known, since the probe found one responsible HSDir without
     * tor 0's descriptor (NOT_FOUND: re-posted), so its round is no longer complete. */
    served_find(ts, 2, ONION, SERVED_BASIS_ACCEPTED, &r);
    assert_int_equal(r.tor, -1);
    assert_int_equal(r.source, SERVED_SOURCE_NONE);
    assert_int_equal(r.asked, 0);

    /* Tor 1 completes a round after the probe: its upload replaced tor 0's on every HSDir, which the
     * acceptance record (the failover's and the roll's basis) says at once; the copies (status's) still
     * say tor 0 until the next probe. */
    struct descriptor_tracker *t0 = f->t;
    double before_now = f->now;
    f->t = t1;
    f->now = T0 + 3;
    descriptor_tracker_attach(t1, NULL);
    feed_range(f, start_events, 0, N_START);
    f->t = t0;
    f->now = before_now;
    served_find(ts, 2, ONION, SERVED_BASIS_ACCEPTED, &r);
    assert_int_equal(r.tor, 1);
    assert_int_equal(r.source, SERVED_SOURCE_UPLOADS);
    served_find(ts, 2, ONION, SERVED_BASIS_FETCHED, &r);
    assert_int_equal(r.tor, 0);
    assert_int_equal(r.source, SERVED_SOURCE_FETCHED);
    assert_int_equal(r.holding, 5);
    descriptor_tracker_free(t1);

    /* The next probe: only tor's key-9 copies now, from a tracker whose own descriptor is key 9. (The
     * responsible HSDir that said NOT_FOUND was republished meanwhile: those commands are answered.) */
    complete_all(f, "250 OK\r\n");
    size_t before = f->n_sent;
    f->now = T0 + 2 + INTERVAL;
    descriptor_tick(f->t, f->now);
    assert_true(f->n_sent >= before + 2); /* and the lost HSDir's re-post, due again */
    own_answer(f, before, 9);
    f->n_done = before + 1;
    assert_true(strncmp(f->sent[before + 1].cmd, "HSFETCH ", 8) == 0);
    complete_all(f, "250 OK\r\n");
    probe_copies(f, (const unsigned char[8]){9, 9, 9, 9, 9, 9, 9, 0});
    const struct descriptor_tracker *one[1] = {f->t};
    served_find(one, 1, ONION, SERVED_BASIS_FETCHED, &r);
    assert_int_equal(r.tor, 0);
    assert_int_equal(r.holding, 7);

    /* A new tor: its own descriptor is read again; meanwhile the acceptance record (round complete). */
    descriptor_tracker_detach(f->t);
    descriptor_tracker_attach(f->t, NULL);
    assert_int_equal(descriptor_service_own(f->t, ONION, &own), -1);
    served_find(one, 1, ONION, SERVED_BASIS_FETCHED, &r);
    /* its descriptor is still known from copies of HSDirs that accepted its upload before they served them */
    assert_int_equal(r.tor, 0);
    assert_int_equal(r.source, SERVED_SOURCE_ACCEPTED_COPY);
    assert_int_equal(r.holding, 7);
    f->now += 10;
    for (size_t j = 0; j < 8; j++)
        feedf(f, "650 HS_DESC UPLOAD " ONION " UNKNOWN $%s~x " ID_B " HSDIR_INDEX=00", hsdirs_b[j]);
    for (size_t j = 0; j < 8; j++)
        feedf(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $%s~x", hsdirs_b[j]);
    /* uploads after the copies: they say nothing; the round is complete */
    served_find(one, 1, ONION, SERVED_BASIS_FETCHED, &r);
    assert_int_equal(r.tor, 0);
    assert_int_equal(r.source, SERVED_SOURCE_UPLOADS);
    assert_int_equal(r.holding, 0);
}

/* A settled upload round brings the next probe forward (read_own only). */
static void test_served_probe_after_round(void **state)
{
    struct fixture *f = *state;
    descriptor_tracker_set_read_own(f->t, true);
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    assert_int_equal(count_sent(f, "HSFETCH"), 1);
    complete_all(f, "250 OK\r\n");
    probe_answers(f, ID_B);
    /* tor's next round of descriptor B, all confirmed: a probe 2 s later, not an interval later */
    f->now = T0 + 20;
    for (size_t j = 0; j < 8; j++)
        feedf(f, "650 HS_DESC UPLOAD " ONION " UNKNOWN $%s~x " ID_B " HSDIR_INDEX=00", hsdirs_b[j]);
    for (size_t j = 0; j < 8; j++)
        feedf(f, "650 HS_DESC UPLOADED " ONION " UNKNOWN $%s~x", hsdirs_b[j]);
    descriptor_tick(f->t, f->now);
    descriptor_tick(f->t, f->now + 1.9);
    assert_int_equal(count_sent(f, "HSFETCH"), 1);
    descriptor_tick(f->t, f->now + 2);
    assert_int_equal(count_sent(f, "HSFETCH"), 2);
}

/* ---- services, JSON, metrics ----------------------------------------------------------------------------- */

static void test_set_services(void **state)
{
    struct fixture *f = *state;
    struct descriptor_counts c;
    feed_range(f, start_events, 0, N_START);
    const char *names[] = {"alpha", "beta", "gamma"}, *addrs[] = {ONION, ONION2, ""};
    assert_int_equal(descriptor_tracker_set_services(f->t, names, addrs, 3), 0);
    assert_int_equal(counts(f).uploads_confirmed, 16); /* kept */
    assert_int_equal(descriptor_service_counts(f->t, ONION2, &c), 0);
    assert_int_equal(c.uploads_confirmed, 0);
    json_t *all = descriptor_to_json(f->t);
    assert_int_equal(json_array_size(all), 2); /* gamma has no address yet */
    json_decref(all);
    const char *names2[] = {"beta"}, *addrs2[] = {ONION2};
    assert_int_equal(descriptor_tracker_set_services(f->t, names2, addrs2, 1), 0);
    assert_int_equal(descriptor_service_counts(f->t, ONION, &c), -1);
    assert_null(descriptor_service_to_json(f->t, ONION));
    /* events for a service no longer tracked are ignored */
    feed_range(f, start_events, 0, N_START);
    assert_int_equal(descriptor_service_counts(f->t, ONION2, &c), 0);
    assert_int_equal(c.uploads_confirmed, 0);
}

static void test_json_shape(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    complete_all(f, "250 OK\r\n");
    probe_answers(f, ID_B);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    json_error_t jerr;
    json_t *descs = NULL, *probe = NULL;
    const char *name = NULL, *addr = NULL, *last = NULL;
    int reachable = 0;
    json_int_t confirmed = -1, total = -1, failed = -1, age = -1, uploads = -1, rep = -1, pok = -1, pfail = -1;
    json_t *last_rep = NULL;
    int rc = json_unpack_ex(svc, &jerr, JSON_STRICT,
                            "{s:s, s:s, s:b, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I}", "service",
                            &name, "address", &addr, "reachable", &reachable, "hsdirs_confirmed", &confirmed,
                            "hsdirs_total", &total, "hsdirs_failed", &failed, "last_confirmed_upload", &last,
                            "last_upload_age_seconds", &age, "uploads_confirmed", &uploads, "republishes", &rep,
                            "last_republish", &last_rep, "descriptors", &descs, "probe", &probe, "probes_ok", &pok,
                            "probes_failed", &pfail);
    if (rc < 0)
        fail_msg("service JSON: %s", jerr.text);
    assert_string_equal(addr, ONION);
    assert_true(reachable);
    assert_int_equal(confirmed, 8);
    assert_int_equal(total, 8);
    assert_int_equal(age, 2);
    assert_int_equal(uploads, 16);
    assert_true(json_is_null(last_rep));
    assert_int_equal(pok, 1);
    json_t *h = hsdir_json(svc, "next", AUTH1);
    const char *fp, *nick, *st, *t, *conf;
    json_t *reason;
    json_int_t reps;
    rc = json_unpack_ex(h, &jerr, JSON_STRICT, "{s:s, s:s, s:s, s:o, s:s, s:s, s:I}", "fp", &fp, "nick", &nick,
                        "state", &st, "reason", &reason, "time", &t, "confirmed", &conf, "republishes", &reps);
    if (rc < 0)
        fail_msg("hsdir JSON: %s", jerr.text);
    assert_string_equal(nick, "tnauth1");
    assert_true(json_is_null(reason));
    /* confirmed at T0 on the monotonic clock, f->now - T0 ago: shown as the wall-clock date of then */
    char want[32];
    date_of(f->wall - (f->now - T0), want, sizeof(want));
    assert_string_equal(t, want);
    assert_string_equal(conf, want);
    assert_string_equal(last, want);
    json_decref(svc);
}

/* The wall clock jumps (an NTP step, an operator's `date -s`): deadlines, backoffs and ages do not move,
 * only the dates shown do. */
static void test_wall_clock_jump(void **state)
{
    struct fixture *f = *state;
    start_attached_relay7_silent(f);
    f->wall -= 86400; /* a day back */
    f->now = T0 + DEADLINE - 1;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "pending");
    f->wall += 2 * 86400; /* a day ahead of where it was */
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "pending");
    f->now = T0 + DEADLINE;
    descriptor_tick(f->t, f->now);
    assert_string_equal(hsdir_state(f, "current", RELAY7, NULL, 0), "failed");

    json_t *svc = descriptor_service_to_json(f->t, ONION);
    assert_int_equal(json_integer_value(json_object_get(svc, "last_upload_age_seconds")), DEADLINE);
    char want[32];
    date_of(f->wall - DEADLINE, want, sizeof(want));
    assert_string_equal(json_string_value(json_object_get(svc, "last_confirmed_upload")), want);
    json_decref(svc);
}

/* The real clocks: times kept are CLOCK_MONOTONIC (what clock_now_ms reads), dates CLOCK_REALTIME. */
static void test_real_clocks(void **state)
{
    struct fixture *f = *state;
    descriptor_tracker_set_clock(f->t, NULL, NULL, NULL);
    /* CLOCK_REALTIME as the tracker reads it: time(NULL) is the coarse clock, which may still show the
     * previous second for a few milliseconds after the precise one has moved on (seen under load). */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t w0 = ts.tv_sec;
    uint64_t m0 = clock_now_ms();
    f->now = (double)m0 / 1e3;
    start_attached(f);
    json_t *svc = descriptor_service_to_json(f->t, ONION);
    uint64_t m1 = clock_now_ms();
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t w1 = ts.tv_sec;
    /* the age is the tracker's reading of its clock less f->now, read in between on CLOCK_MONOTONIC */
    json_int_t age = json_integer_value(json_object_get(svc, "last_upload_age_seconds"));
    assert_true(age >= 0 && (uint64_t)age * 1000 <= m1 - m0);
    /* the date shown is that of a moment between w0 and w1 on CLOCK_REALTIME (to the second) */
    char lo[32], hi[32];
    date_of((double)w0 - 1, lo, sizeof(lo));
    date_of((double)w1, hi, sizeof(hi));
    const char *last = json_string_value(json_object_get(svc, "last_confirmed_upload"));
    assert_non_null(last);
    if (strcmp(last, lo) < 0 || strcmp(last, hi) > 0)
        fail_msg("last_confirmed_upload %s is not within %s .. %s", last, lo, hi);
    json_decref(svc);
}

static void test_metrics(void **state)
{
    struct fixture *f = *state;
    start_attached(f);
    f->now = T0 + 2;
    descriptor_tick(f->t, f->now);
    complete_all(f, "250 OK\r\n");
    probe_answers(f, ID_B);
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(descriptor_metrics(f->t, m), 0);
    const char *text = metrics_text(m, NULL);
    static const char *const want[] = {
        "onionfront_descriptor_uploads_confirmed_total{service=\"alpha\"} 16\n",
        "onionfront_descriptor_hsdirs{service=\"alpha\",slot=\"current\",state=\"confirmed\"} 8\n",
        "onionfront_descriptor_hsdirs{service=\"alpha\",slot=\"next\",state=\"failed\"} 0\n",
        "onionfront_republish_total{service=\"alpha\"} 0\n",
        "onionfront_probe_hsdirs_serving{service=\"alpha\"} 8\n",
        "onionfront_probe_success_total{service=\"alpha\"} 1\n",
        "onionfront_probe_failure_total{service=\"alpha\"} 0\n",
        "onionfront_probe_latency_seconds{service=\"alpha\"} 0.5\n",
        "# TYPE onionfront_republish_total counter\n",
        "# TYPE onionfront_probe_latency_seconds gauge\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("metrics lack \"%s\" in:\n%s", want[i], text);
    /* each family's HELP once */
    const char *p = strstr(text, "# HELP onionfront_descriptor_hsdirs ");
    assert_non_null(p);
    assert_null(strstr(p + 1, "# HELP onionfront_descriptor_hsdirs "));
    /* a second call on the same writer is a family twice: refused */
    assert_int_equal(descriptor_metrics(f->t, m), -1);
    metrics_free(m);
}

static void test_enum_strings(void **state)
{
    (void)state;
    assert_string_equal(desc_hsdir_state_str(DESC_HSDIR_PENDING), "pending");
    assert_string_equal(desc_hsdir_state_str(DESC_HSDIR_CONFIRMED), "confirmed");
    assert_string_equal(desc_hsdir_state_str(DESC_HSDIR_FAILED), "failed");
    assert_string_equal(desc_hsdir_state_str(DESC_HSDIR_PRESENT), "present");
    assert_string_equal(desc_status_str(DESC_STATUS_NONE), "none");
    assert_string_equal(desc_status_str(DESC_STATUS_UPLOADING), "uploading");
    assert_string_equal(desc_status_str(DESC_STATUS_COMPLETE), "complete");
    assert_string_equal(desc_status_str(DESC_STATUS_INCOMPLETE), "incomplete");
    descriptor_tracker_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_start_two_descriptors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uploaded_without_id_shared_hsdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetched_round_rejected_not_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetched_round_at, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_answered_with_rejections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ambiguous_match_corrected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_hsdir_no_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_deadline_while_detached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upload_rejected_is_present, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_same_id_rebuilds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_round_replaces_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_waits_for_uploads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probes_paced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_failure_and_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_fetch_or_upload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_republish_flow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_detects_lost_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_republish_rejected_is_present, setup, teardown),
        cmocka_unit_test_setup_teardown(test_republish_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_republish_blocked_for_other_descriptor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_copy_not_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_served_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_served_probe_after_round, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_services, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wall_clock_jump, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_clocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test(test_enum_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
