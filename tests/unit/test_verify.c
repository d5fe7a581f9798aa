/* test_verify.c — unit tests for sidecar/publish/verify.c: verdicts from recorded CIRC lines and the mode check
 * from recorded GETCONF/GETINFO answers.
 *
 * Every CIRC line and answer below was recorded from Debian's tor 0.4.9.11 in the private test network:
 * onionfront's single-hop tor running a torrc/SETCONF service (one-hop HS_SERVICE_INTRO/REND circuits with
 * ONEHOP_TUNNEL, four-hop HS_SERVICE_HSDIR uploads), a service added on the same tor with
 * `ADD_ONION NEW:ED25519-V3 Flags=NonAnonymous,Detach` (four-hop intro and rendezvous circuits), and the
 * network's client tor (a SocksPort, not single-hop) for the mode violation; and onionfront's anonymous
 * services' tor (per-service modes, issue 17; tests/integration/test_modes.sh, 2026-12-04): its intro and
 * rendezvous circuits are four hops (guard, vanguards-lite layer-2 guard, middle, relay). */
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
#include "sidecar/core/metrics.h"
#include "sidecar/publish/verify.h"

#define OURS "nkfp4y5sdp4laifn2jjhvooirlcxreopj2bygizfy5x5so7774l6u5id"
#define ADDED "bcwprnore7ytunzxgv4nzkupzxt2b2h5fhdffgdk4irmub4wgss7cyqd" /* via ADD_ONION */

/* Our single onion: three intro circuits and two rendezvous circuits, one hop each. */
static const char *const single_onion[] = {
    "650 CIRC 10 LAUNCHED BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING TIME_CREATED=2026-12-03T05:51:47.161522",
    "650 CIRC 10 EXTENDED $CE21CAEBDD63B1F872A3B3B2ED2B1B20A7FF849B~tnrelay1 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T05:51:47.161522",
    "650 CIRC 10 BUILT $CE21CAEBDD63B1F872A3B3B2ED2B1B20A7FF849B~tnrelay1 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T05:51:47.161522",
    "650 CIRC 11 BUILT $52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T05:51:47.161595",
    "650 CIRC 13 BUILT $7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T05:51:47.161672",
    "650 CIRC 402 BUILT $381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T06:08:57.840502",
    "650 CIRC 403 BUILT $B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T06:08:58.112634",
};

/* The ADD_ONION service on the same tor: four-hop intro and rendezvous circuits. */
static const char *const add_onion[] = {
    "650 CIRC 412 BUILT $BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3,$7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6,$38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3,$B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" ADDED " TIME_CREATED=2026-12-03T06:09:08.000000",
    "650 CIRC 404 BUILT $7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6,$B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7,$CE21CAEBDD63B1F872A3B3B2ED2B1B20A7FF849B~tnrelay1,$381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" ADDED " TIME_CREATED=2026-12-03T06:09:08.000000",
    "650 CIRC 407 BUILT $993312A32167039C467A293814467EF1EE6A80BC~tnauth1,$52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2,$381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2,$38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=" ADDED " TIME_CREATED=2026-12-03T06:09:08.000000",
    "650 CIRC 427 EXTENDED $38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" ADDED " TIME_CREATED=2026-12-03T06:09:17.533672",
    "650 CIRC 427 BUILT $38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3,$381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2,$B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7,$7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" ADDED " TIME_CREATED=2026-12-03T06:09:17.533672",
};

/* Descriptor uploads: four hops (vanguard layers), no REND_QUERY. */
static const char *const hsdir_upload[] = {
    "650 CIRC 16 LAUNCHED BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_HSDIR HS_STATE=HSSI_CONNECTING TIME_CREATED=2026-12-03T05:51:48.180802",
    "650 CIRC 16 BUILT $BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3,$52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2,$83219BE3EC35C638606A82FFA2D1BAF57AC3C9E5~tnrelay5,$38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_HSDIR HS_STATE=HSSI_CONNECTING TIME_CREATED=2026-12-03T05:51:48.180802",
    /* a three-hop vanguard circuit, later extended and used for an upload */
    "650 CIRC 115 BUILT $8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8,$52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2,$BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY,NEED_UPTIME PURPOSE=HS_VANGUARDS TIME_CREATED=2026-12-03T05:53:06.222927",
    "650 CIRC 115 BUILT $8C14334907BB1CAF6B86241C749F36E0614544CA~tnrelay8,$52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2,$BCFAC56464F954D03B5A872B11997E92B451570A~tnrelay3,$993312A32167039C467A293814467EF1EE6A80BC~tnauth1 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY,NEED_UPTIME PURPOSE=HS_SERVICE_HSDIR HS_STATE=HSSI_CONNECTING TIME_CREATED=2026-12-03T05:53:06.222927",
};

/* A rendezvous retry of our service: tor uses a multi-hop circuit for it. (Format as recorded; path
 * from the ADD_ONION rendezvous circuit above.) */
static const char *const rend_retry =
    "650 CIRC 500 BUILT $38A80F075FE6064F6EFAD6A6C09E25946CF1AB17~tnauth3,$381F392D065DD094150E912C19CB8E1B353A58CB~tnauth2,$B625FC04E357BC907BADEB04729A977FEA390F54~tnrelay7,$7F7BB4712B86BB22FD78AA122981E264E678BBF4~tnrelay6 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" OURS " TIME_CREATED=2026-12-03T06:10:00.000000";

/* After the service was removed, tor kept intro circuit 11 as a vanguard circuit: BUILT again. */
static const char *const repurposed =
    "650 CIRC 11 BUILT $52FA8FCA143160F14519D7FC019717E8705B74AE~tnrelay2 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_UPTIME PURPOSE=HS_VANGUARDS TIME_CREATED=2026-12-03T05:51:47.161595";

/* Mode answers: onionfront's tor, then the network's client tor. */
#define HIDDEN "dkmo2t4qy33jinxyenfxpytffkesb267vqbuwva6mz2oavgjvsxmoyid" /* an anonymous service */

/* The anonymous services' tor: two intro circuits (from GETINFO circuit-status) and two rendezvous
 * circuits (CIRC events), four hops each, no ONEHOP_TUNNEL. */
static const char *const anonymous[] = {
    "650 CIRC 6 BUILT $437ABCDE71A69D2CD2B5E8B248C88D46DAE31E45~tnrelay2,$16632D02726C36FF6CB05F2740A14C5C788D970B~tnrelay4,$D2B58C45DF7DBD0979467573F095D35D2EDA7A08~tnauth3,$5D05A2D4D0AA80FD45373205E2CD64591AA67469~tnrelay1 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=" HIDDEN " TIME_CREATED=2026-12-04T05:29:13.716971",
    "650 CIRC 7 BUILT $437ABCDE71A69D2CD2B5E8B248C88D46DAE31E45~tnrelay2,$16632D02726C36FF6CB05F2740A14C5C788D970B~tnrelay4,$ABE6AA38CEDBB0D926B6227470195C11A073A17A~tnrelay8,$D2B58C45DF7DBD0979467573F095D35D2EDA7A08~tnauth3 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=" HIDDEN " TIME_CREATED=2026-12-04T05:29:13.717075",
    "650 CIRC 41 BUILT $437ABCDE71A69D2CD2B5E8B248C88D46DAE31E45~tnrelay2,$16632D02726C36FF6CB05F2740A14C5C788D970B~tnrelay4,$7BADBBFF33BD3A2CA5CA6DC3AB61B4EF895AA515~tnauth2,$5D05A2D4D0AA80FD45373205E2CD64591AA67469~tnrelay1 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" HIDDEN " TIME_CREATED=2026-12-04T05:29:36.644513",
    "650 CIRC 43 BUILT $437ABCDE71A69D2CD2B5E8B248C88D46DAE31E45~tnrelay2,$5D05A2D4D0AA80FD45373205E2CD64591AA67469~tnrelay1,$ABE6AA38CEDBB0D926B6227470195C11A073A17A~tnrelay8,$7BADBBFF33BD3A2CA5CA6DC3AB61B4EF895AA515~tnauth2 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" HIDDEN " TIME_CREATED=2026-12-04T05:29:38.366639",
};
/* A one-hop rendezvous circuit for the anonymous service: the single-onion tor's recorded line
 * (2026-12-04) with the anonymous service's REND_QUERY, i.e. what a single-hop tor would do with it. */
static const char *const anonymous_one_hop =
    "650 CIRC 44 BUILT $F80975D0A2D5D54B4BE2E3170D5120802E41785B~tnrelay3 BUILD_FLAGS=ONEHOP_TUNNEL,IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_SERVICE_REND HS_STATE=HSSR_CONNECTING REND_QUERY=" HIDDEN " TIME_CREATED=2026-12-04T05:29:38.021348";

static const char *const conf_ok = "250-HiddenServiceSingleHopMode=1\r\n250 HiddenServiceNonAnonymousMode=1\r\n";
static const char *const info_ok = "250-net/listeners/socks=\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"
                                   "250-net/listeners/dns=\r\n250-net/listeners/httptunnel=\r\n250 OK\r\n";
static const char *const conf_client = "250-HiddenServiceSingleHopMode=0\r\n250 HiddenServiceNonAnonymousMode=0\r\n";
static const char *const info_client = "250-net/listeners/socks=\"127.0.0.1:25030\"\r\n250-net/listeners/trans=\r\n"
                                       "250-net/listeners/natd=\r\n250-net/listeners/dns=\r\n"
                                       "250-net/listeners/httptunnel=\r\n250 OK\r\n";

struct fixture {
    struct verify *v;
    struct cp_reply_parser *parser;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || !(f->parser = cp_reply_parser_new(0, 0)) || !(f->v = verify_new(NULL)))
        return -1;
    const char *names[] = {"alpha"}, *addrs[] = {OURS};
    if (verify_set_services(f->v, names, addrs, 1) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    verify_free(f->v);
    cp_reply_parser_free(f->parser);
    free(f);
    return 0;
}

static struct cp_reply *frame(struct fixture *f, const char *wire)
{
    char err[256] = "";
    if (cp_reply_parser_feed(f->parser, wire, strlen(wire), err, sizeof(err)) < 0)
        fail_msg("framing: %s", err);
    struct cp_reply *r = cp_reply_parser_next(f->parser);
    if (!r)
        fail_msg("framing \"%s\": incomplete", wire);
    return r;
}

static void feed(struct fixture *f, const char *line)
{
    char wire[4096], err[256];
    snprintf(wire, sizeof(wire), "%s\r\n", line);
    struct cp_reply *r = frame(f, wire);
    struct cp_event_circ c;
    if (cp_event_circ_parse(r, &c, err, sizeof(err)) < 0)
        fail_msg("%s: %s", line, err);
    verify_on_circ(f->v, &c);
    cp_event_circ_clear(&c);
    cp_reply_free(r);
}

static void feed_all(struct fixture *f, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        feed(f, lines[i]);
}

#define FEED_ALL(f, a) feed_all((f), (a), sizeof(a) / sizeof((a)[0]))

static enum verify_mode mode_from(struct fixture *f, const char *conf, const char *info)
{
    struct cp_reply *rc = conf ? frame(f, conf) : NULL, *ri = info ? frame(f, info) : NULL;
    struct cp_info ic = {0}, ii = {0};
    char err[256];
    if (rc && cp_info_parse(rc, &ic, err, sizeof(err)) < 0)
        fail_msg("conf: %s", err);
    if (ri && cp_info_parse(ri, &ii, err, sizeof(err)) < 0)
        fail_msg("info: %s", err);
    enum verify_mode m = verify_on_mode(f->v, rc ? &ic : NULL, ri ? &ii : NULL);
    cp_info_clear(&ic);
    cp_info_clear(&ii);
    cp_reply_free(rc);
    cp_reply_free(ri);
    return m;
}

static void test_single_onion(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_UNVERIFIED);
    FEED_ALL(f, single_onion);
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_SINGLE_ONION);
    assert_int_equal(verify_service_counts(f->v, OURS, &c), 0);
    assert_int_equal(c.intro_one_hop, 3);
    assert_int_equal(c.intro_multi_hop, 0);
    assert_int_equal(c.rend_one_hop, 2);
    assert_int_equal(c.rend_multi_hop, 0);
    assert_int_equal(verify_circuits(f->v, "HS_SERVICE_INTRO", 1), 3);
    assert_int_equal(verify_circuits(f->v, "HS_SERVICE_REND", 1), 2);
    json_t *j = verify_service_to_json(f->v, OURS);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "single_onion");
    assert_string_equal(json_string_value(json_object_get(j, "service")), "alpha");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(j, "intro"), "hops"), "1")), 3);
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")), "5 of 5"));
    json_decref(j);
}

/* LAUNCHED/EXTENDED do not count, nor a repeated BUILT; a circuit BUILT again under another purpose counts
 * there, not for the service. */
static void test_only_built_once(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    FEED_ALL(f, single_onion);
    feed(f, single_onion[2]); /* circuit 10 BUILT again */
    feed(f, repurposed);
    assert_int_equal(verify_service_counts(f->v, OURS, &c), 0);
    assert_int_equal(c.intro_one_hop, 3);
    assert_int_equal(verify_circuits(f->v, "HS_VANGUARDS", 1), 1);
}

/* The ADD_ONION service on the same tor is flagged; it is not ours, so it is reported separately. */
static void test_add_onion_flagged(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    FEED_ALL(f, single_onion);
    FEED_ALL(f, add_onion);
    assert_int_equal(verify_service_verdict(f->v, ADDED), VERIFY_NOT_SINGLE_ONION);
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_SINGLE_ONION);
    assert_int_equal(verify_service_counts(f->v, ADDED, &c), 0);
    assert_int_equal(c.intro_multi_hop, 3);
    assert_int_equal(c.rend_multi_hop, 1);
    assert_null(verify_service_to_json(f->v, ADDED)); /* not one of onionfront's services */
    json_t *all = verify_to_json(f->v);
    json_t *others = json_object_get(all, "other_services");
    assert_int_equal(json_array_size(others), 1);
    json_t *o = json_array_get(others, 0);
    assert_string_equal(json_string_value(json_object_get(o, "address")), ADDED);
    assert_string_equal(json_string_value(json_object_get(o, "verdict")), "not_single_onion");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(o, "intro"), "hops"), "4")), 3);
    json_decref(all);

    /* Declared as onionfront's (an operator pointing onionfront at it): its counts move along, still flagged. */
    const char *names[] = {"alpha", "added"}, *addrs[] = {OURS, ADDED};
    assert_int_equal(verify_set_services(f->v, names, addrs, 2), 0);
    json_t *j = verify_service_to_json(f->v, ADDED);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "not_single_onion");
    json_decref(j);
    all = verify_to_json(f->v);
    assert_int_equal(json_array_size(json_object_get(all, "other_services")), 0);
    json_decref(all);
}

/* Descriptor uploads are multi-hop by design: counted, never a verdict. */
static void test_hsdir_counted_not_flagged(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    FEED_ALL(f, hsdir_upload);
    assert_int_equal(verify_circuits(f->v, "HS_SERVICE_HSDIR", 4), 2);
    assert_int_equal(verify_circuits(f->v, "HS_VANGUARDS", 3), 1);
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_UNVERIFIED);
    assert_int_equal(verify_service_counts(f->v, OURS, &c), 0);
    assert_int_equal(c.intro_one_hop + c.intro_multi_hop + c.rend_one_hop + c.rend_multi_hop, 0);
    json_t *all = verify_to_json(f->v);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(all, "circuits"),
                                                                        "HS_SERVICE_HSDIR"), "4")), 2);
    assert_int_equal(json_array_size(json_object_get(all, "other_services")), 0);
    json_decref(all);
}

/* A multi-hop rendezvous retry among one-hop circuits is counted but does not change the verdict. */
static void test_retry_counted(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    FEED_ALL(f, single_onion);
    feed(f, rend_retry);
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_SINGLE_ONION);
    assert_int_equal(verify_service_counts(f->v, OURS, &c), 0);
    assert_int_equal(c.rend_multi_hop, 1);
    json_t *j = verify_service_to_json(f->v, OURS);
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")), "1 multi-hop retry"));
    json_decref(j);
}

/* Too little evidence is "unverified"; mostly multi-hop for our own service is "not_single_onion". */
static void test_thresholds(void **state)
{
    struct fixture *f = *state;
    feed(f, single_onion[2]);
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_UNVERIFIED);
    feed(f, rend_retry);
    /* one of each: not more than half one-hop */
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_NOT_SINGLE_ONION);
    feed(f, single_onion[3]);
    assert_int_equal(verify_service_verdict(f->v, OURS), VERIFY_SINGLE_ONION);
    /* a one-hop path without ONEHOP_TUNNEL is not taken as one-hop evidence */
    char line[1024];
    snprintf(line, sizeof(line), "%s", single_onion[4]);
    char *fl = strstr(line, "ONEHOP_TUNNEL,");
    assert_non_null(fl);
    memmove(fl, fl + strlen("ONEHOP_TUNNEL,"), strlen(fl + strlen("ONEHOP_TUNNEL,")) + 1);
    feed(f, line);
    struct verify_counts c;
    verify_service_counts(f->v, OURS, &c);
    assert_int_equal(c.intro_multi_hop, 1);
}

static void test_mode(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(verify_mode_state(f->v), VERIFY_MODE_UNKNOWN);
    assert_int_equal(mode_from(f, conf_ok, info_ok), VERIFY_MODE_OK);
    assert_string_equal(verify_mode_detail(f->v), "");
    assert_int_equal(mode_from(f, conf_client, info_ok), VERIFY_MODE_VIOLATION);
    assert_non_null(strstr(verify_mode_detail(f->v), "HiddenServiceSingleHopMode is 0"));
    assert_int_equal(mode_from(f, conf_ok, info_client), VERIFY_MODE_VIOLATION);
    assert_non_null(strstr(verify_mode_detail(f->v), "net/listeners/socks"));
    assert_int_equal(mode_from(f, conf_ok, NULL), VERIFY_MODE_UNKNOWN);
    assert_int_equal(mode_from(f, conf_ok, info_ok), VERIFY_MODE_OK);
    json_t *all = verify_to_json(f->v);
    json_t *mode = json_object_get(all, "mode");
    assert_string_equal(json_string_value(json_object_get(mode, "state")), "ok");
    assert_true(json_is_string(json_object_get(mode, "checked")));
    json_decref(all);
    verify_detach(f->v);
    assert_int_equal(verify_mode_state(f->v), VERIFY_MODE_UNKNOWN);
}

static void test_metrics(void **state)
{
    struct fixture *f = *state;
    FEED_ALL(f, single_onion);
    FEED_ALL(f, hsdir_upload);
    FEED_ALL(f, add_onion);
    mode_from(f, conf_ok, info_ok);
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(verify_metrics(f->v, m), 0);
    const char *text = metrics_text(m, NULL);
    static const char *const want[] = {
        "onionfront_circuits_total{purpose=\"HS_SERVICE_INTRO\",hops=\"1\"} 3\n",
        "onionfront_circuits_total{purpose=\"HS_SERVICE_INTRO\",hops=\"4\"} 3\n",
        "onionfront_circuits_total{purpose=\"HS_SERVICE_REND\",hops=\"1\"} 2\n",
        "onionfront_circuits_total{purpose=\"HS_SERVICE_HSDIR\",hops=\"4\"} 2\n",
        "onionfront_service_verified{service=\"alpha\"} 1\n",
        "onionfront_tor_mode_ok 1\n",
        "# TYPE onionfront_circuits_total counter\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("metrics lack \"%s\" in:\n%s", want[i], text);
    metrics_free(m);
}

static void test_set_services_keeps_counts(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    FEED_ALL(f, single_onion);
    const char *names[] = {"renamed", "x"}, *addrs[] = {OURS, ""};
    assert_int_equal(verify_set_services(f->v, names, addrs, 2), 0);
    assert_int_equal(verify_service_counts(f->v, OURS, &c), 0);
    assert_int_equal(c.intro_one_hop, 3);
    json_t *j = verify_service_to_json(f->v, OURS);
    assert_string_equal(json_string_value(json_object_get(j, "service")), "renamed");
    json_decref(j);
    assert_int_equal(verify_set_services(f->v, NULL, NULL, 0), 0);
    assert_int_equal(verify_service_counts(f->v, OURS, &c), -1);
}

/* The anonymous services' tor: its services' four-hop circuits verify them as anonymous (the same lines
 * on a single-onion tor's verifier mean "not a single onion"), and one one-hop circuit makes the verdict
 * not_anonymous at once, a problem (verify_verdict_is_violation). */
static void test_anonymous(void **state)
{
    struct fixture *f = *state;
    struct verify_counts c;
    const char *names[] = {"hidden"}, *addrs[] = {HIDDEN};
    verify_set_mode(f->v, SERVICE_MODE_ANONYMOUS);
    assert_int_equal(verify_set_services(f->v, names, addrs, 1), 0);
    feed(f, anonymous[0]);
    assert_int_equal(verify_service_verdict(f->v, HIDDEN), VERIFY_UNVERIFIED);
    FEED_ALL(f, anonymous);
    assert_int_equal(verify_service_verdict(f->v, HIDDEN), VERIFY_ANONYMOUS);
    assert_false(verify_verdict_is_violation(VERIFY_ANONYMOUS));
    assert_int_equal(verify_service_counts(f->v, HIDDEN, &c), 0);
    assert_int_equal(c.intro_multi_hop, 2);
    assert_int_equal(c.rend_multi_hop, 2);
    assert_int_equal(c.not_anonymous, 0);
    assert_int_equal(verify_circuits(f->v, "HS_SERVICE_REND", 4), 2);
    json_t *j = verify_service_to_json(f->v, HIDDEN);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "anonymous");
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")), "all 4"));
    json_decref(j);

    feed(f, anonymous_one_hop);
    assert_int_equal(verify_service_verdict(f->v, HIDDEN), VERIFY_NOT_ANONYMOUS);
    assert_true(verify_verdict_is_violation(VERIFY_NOT_ANONYMOUS));
    assert_non_null(strstr(verify_verdict_problem(VERIFY_NOT_ANONYMOUS), "NOT anonymous"));
    assert_int_equal(verify_service_counts(f->v, HIDDEN, &c), 0);
    assert_int_equal(c.not_anonymous, 1);
    assert_int_equal(c.rend_one_hop, 1);
    /* and the same four-hop lines on a single-onion tor: not a single onion */
    struct verify *single = verify_new(NULL);
    assert_non_null(single);
    assert_int_equal(verify_set_services(single, names, addrs, 1), 0);
    for (size_t i = 0; i < sizeof(anonymous) / sizeof(anonymous[0]); i++) {
        struct fixture g = {single, f->parser};
        feed(&g, anonymous[i]);
    }
    assert_int_equal(verify_service_verdict(single, HIDDEN), VERIFY_NOT_SINGLE_ONION);
    verify_free(single);
}

/* The anonymous services' tor's mode: both single-hop options 0 and no client port is ok; single-hop
 * mode (the recorded single-onion answer) or a client port is a violation, named in the problem. */
static void test_anonymous_mode(void **state)
{
    struct fixture *f = *state;
    verify_set_mode(f->v, SERVICE_MODE_ANONYMOUS);
    assert_int_equal(mode_from(f, conf_client, info_ok), VERIFY_MODE_OK);
    assert_string_equal(verify_mode_problem(f->v), "");
    assert_int_equal(mode_from(f, conf_ok, info_ok), VERIFY_MODE_VIOLATION);
    assert_non_null(strstr(verify_mode_detail(f->v), "HiddenServiceSingleHopMode is 1, not 0"));
    assert_non_null(strstr(verify_mode_problem(f->v), "no longer an ordinary tor"));
    assert_int_equal(mode_from(f, conf_client, info_client), VERIFY_MODE_VIOLATION);
    assert_non_null(strstr(verify_mode_detail(f->v), "net/listeners/socks"));
}

static void test_strings(void **state)
{
    (void)state;
    assert_string_equal(verify_verdict_str(VERIFY_UNVERIFIED), "unverified");
    assert_string_equal(verify_verdict_str(VERIFY_SINGLE_ONION), "single_onion");
    assert_string_equal(verify_verdict_str(VERIFY_NOT_SINGLE_ONION), "not_single_onion");
    assert_string_equal(verify_verdict_str(VERIFY_ANONYMOUS), "anonymous");
    assert_string_equal(verify_verdict_str(VERIFY_NOT_ANONYMOUS), "not_anonymous");
    assert_string_equal(verify_mode_str(VERIFY_MODE_UNKNOWN), "unknown");
    assert_string_equal(verify_mode_str(VERIFY_MODE_OK), "ok");
    assert_string_equal(verify_mode_str(VERIFY_MODE_VIOLATION), "violation");
    verify_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_single_onion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_built_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_onion_flagged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hsdir_counted_not_flagged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thresholds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_services_keeps_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymous, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymous_mode, setup, teardown),
        cmocka_unit_test(test_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
