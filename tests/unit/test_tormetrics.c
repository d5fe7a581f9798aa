/* test_tormetrics.c — unit tests for sidecar/tor/tormetrics.c, tor's MetricsPort text parsed strictly.
 *
 * Why: these numbers tell an operator whether a service is under an introduction flood; a parser that
 * guesses would show wrong ones, and the port is reachable by other local processes.
 *
 * Covers: the sample recorded from Debian's tor 0.4.9.11 on the private network (two services, one with
 * PoW, five requests: tests/unit/data/tor-0.4.9.11-metrics.txt; run from the source tree) — every field
 * present, values as tor printed them, per-reason families summed; a table of inputs and the canonical
 * dump of what was kept (escapes, timestamps, +Inf, a trailing comma, families missing = absent, other
 * families ignored); a table of malformed inputs, each refused with the line and the problem; a table of
 * several tors' texts combined per service (tormetrics_service_add): counters and counts summed, the
 * highest PoW effort, a field present once any tor has it, a tor without the service adding nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/tor/tormetrics.h"

#define SAMPLE "tests/unit/data/tor-0.4.9.11-metrics.txt"
#define PRIV_POW "n34y7dymsnjidn7r2vphpr7gkm7nknwnfvndx5e5j5umngt2llxjt2ad" /* PoW on, 5 requests */
#define PLAIN "ndxd7ptdmgtzy2tpyrzjzhxc4rklmzwuvfw7ntacafg2uevx5izjpwqd"    /* PoW off, no requests */
#define A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* "onion field=value ...", the fields present, in table order; services in order. */
static void dump(const struct tormetrics *m, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < m->n && o < len; i++) {
        o += (size_t)snprintf(out + o, len - o, "%s%.4s", i ? "; " : "", m->svc[i].onion);
        for (int f = 0; f < TORMETRICS_N && o < len; f++)
            if (m->svc[i].has[f])
                o += (size_t)snprintf(out + o, len - o, " %s=%g", tormetrics_field_str(f), m->svc[i].value[f]);
    }
}

static void test_recorded_sample(void **state)
{
    (void)state;
    FILE *f = fopen(SAMPLE, "r");
    assert_non_null(f); /* run from the source tree */
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof(text), f);
    fclose(f);
    char err[256] = "";
    struct tormetrics *m = tormetrics_parse(text, len, err, sizeof(err));
    if (!m)
        fail_msg("%s", err);
    assert_int_equal(m->n, 2);
    const struct tormetrics_service *s = tormetrics_find(m, PRIV_POW ".onion");
    assert_non_null(s);
    for (int i = 0; i < TORMETRICS_N; i++)
        assert_true(s->has[i]);
    assert_true(s->value[TORMETRICS_INTRO_RECEIVED] == 1);
    assert_true(s->value[TORMETRICS_REND_CREATED] == 1);
    assert_true(s->value[TORMETRICS_REND_ESTABLISHED] == 1);
    assert_true(s->value[TORMETRICS_INTRO_ESTABLISHED] == 6);
    assert_true(s->value[TORMETRICS_INTRO_REJECTED] == 0);
    assert_true(s->value[TORMETRICS_REND_ERRORS] == 0);
    assert_true(s->value[TORMETRICS_POW_EFFORT] == 0);
    assert_true(s->value[TORMETRICS_POW_QUEUE] == 0);
    s = tormetrics_find(m, PLAIN);
    assert_non_null(s);
    assert_true(s->has[TORMETRICS_INTRO_RECEIVED] && s->value[TORMETRICS_INTRO_RECEIVED] == 0);
    assert_null(tormetrics_find(m, A));
    tormetrics_free(m);
}

static void test_good(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"", ""},
        {"#\n# a comment\n# HELP x y z\n# TYPE x counter\nx 1\n", ""},
        {"tor_hs_intro_num_total{onion=\"" A "\"} 7\n", "aaaa introductions_received=7"},
        /* summed over reason; a trailing comma; a timestamp */
        {"tor_hs_rdv_error_count{onion=\"" A "\",reason=\"a\",} 2\n"
         "tor_hs_rdv_error_count{reason=\"b\",onion=\"" A "\"} 3 1700000000000\n",
         "aaaa rendezvous_errors=5"},
        /* escapes in other labels; other families and suffixes ignored */
        {"tor_relay_flag{type=\"a\\\"b\\\\c\\nd\"} 1\ntor_hs_intro_num_total_x{onion=\"bad\"} 1\n"
         "tor_hs_pow_suggested_effort{onion=\"" A "\"} +Inf\n",
         "aaaa pow_suggested_effort=inf"},
        {"tor_hs_pow_suggested_effort{onion=\"" A "\"} 1.5e3\n", "aaaa pow_suggested_effort=1500"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "", got[512];
        struct tormetrics *m = tormetrics_parse(cases[i].in, strlen(cases[i].in), err, sizeof(err));
        if (!m)
            fail_msg("case %zu: %s", i, err);
        dump(m, got, sizeof(got));
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, got, cases[i].want);
        tormetrics_free(m);
    }
}

static void test_bad(void **state)
{
    (void)state;
    static const struct {
        const char *in, *err;
    } cases[] = {
        {"x 1", "line 0: the text does not end with a newline"},
        {"x 1\n\nx 2\n", "line 2: an empty line"},
        {"x 1\r\n", "line 1: a NUL or CR byte"},
        {"#HELP x y\n", "line 1: a comment must start with \"# \""},
        {"# TYPE x\n", "line 1: # TYPE without a type"},
        {"# TYPE x countr\n", "line 1: unknown type \"countr\""},
        {"# HELP 1x y\n", "line 1: # HELP without a metric name"},
        {"{a=\"b\"} 1\n", "line 1: no metric name"},
        {"x{1a=\"b\"} 1\n", "line 1: bad label name"},
        {"x{a=b} 1\n", "line 1: label a: expected =\""},
        {"x{a=\"b} 1\n", "line 1: label value not closed"},
        {"x{a=\"\\t\"} 1\n", "line 1: bad escape in a label value"},
        {"x{a=\"b\" c=\"d\"} 1\n", "line 1: expected , or } after a label"},
        {"x{a=\"b\",a=\"c\"} 1\n", "line 1: label a twice"},
        {"x{a=\"b\"\n", "line 1: labels not closed"},
        {"x\t1\n", "line 1: expected a space before the value"},
        {"x 1x\n", "line 1: bad value \"1x\""},
        {"x inf\n", "line 1: bad value \"inf\""},
        {"x 0x10\n", "line 1: bad value \"0x10\""},
        {"x \n", "line 1: bad value \"\""},
        {"x 1 2.5\n", "line 1: bad timestamp"},
        {"x 1 \n", "line 1: bad timestamp"},
        {"tor_hs_intro_num_total 1\n", "line 1: tor_hs_intro_num_total without an onion="},
        {"tor_hs_intro_num_total{onion=\"abc\"} 1\n", "line 1: tor_hs_intro_num_total without an onion="},
        {"x{a=\"1\",b=\"1\",c=\"1\",d=\"1\",e=\"1\",f=\"1\",g=\"1\",h=\"1\",i=\"1\",j=\"1\",k=\"1\",l=\"1\",m=\"1\","
         "n=\"1\",o=\"1\",p=\"1\",q=\"1\"} 1\n",
         "line 1: more than 16 labels"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        struct tormetrics *m = tormetrics_parse(cases[i].in, strlen(cases[i].in), err, sizeof(err));
        if (m)
            fail_msg("case %zu accepted: %s", i, cases[i].in);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, cases[i].err);
    }
}

/* A line over the cap and too many services. */
static void test_limits(void **state)
{
    (void)state;
    char err[256];
    size_t n = TORMETRICS_LINE_MAX + 10;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'x', n);
    big[n - 3] = ' ';
    big[n - 2] = '1';
    big[n - 1] = '\n';
    assert_null(tormetrics_parse(big, n, err, sizeof(err)));
    assert_string_equal(err, "line 1: longer than 4096 bytes");
    free(big);

    size_t cap = (TORMETRICS_SERVICES_MAX + 1) * 100, o = 0;
    char *many = malloc(cap);
    assert_non_null(many);
    for (unsigned i = 0; i <= TORMETRICS_SERVICES_MAX; i++) {
        char onion[57];
        memset(onion, 'a', 56);
        onion[56] = '\0';
        for (unsigned k = i, j = 0; k; k /= 26, j++)
            onion[j] = (char)('a' + k % 26);
        o += (size_t)snprintf(many + o, cap - o, "tor_hs_intro_num_total{onion=\"%s\"} 1\n", onion);
    }
    assert_null(tormetrics_parse(many, o, err, sizeof(err)));
    assert_non_null(strstr(err, "more than 1024 services"));
    free(many);
}

/* Several tors' answers for service A, combined as status shows one number. */
static void test_add(void **state)
{
    (void)state;
    static const struct {
        const char *tors[3]; /* NULL ends; each a whole MetricsPort text */
        const char *want;    /* dump of the sum */
    } cases[] = {
        {{"tor_hs_intro_num_total{onion=\"" A "\"} 4\n", "tor_hs_intro_num_total{onion=\"" A "\"} 3\n"},
         "aaaa introductions_received=7"},
        /* the highest effort, not the sum; queue lengths add up */
        {{"tor_hs_pow_suggested_effort{onion=\"" A "\"} 30\ntor_hs_rdv_pow_pqueue_count{onion=\"" A "\"} 2\n",
          "tor_hs_pow_suggested_effort{onion=\"" A "\"} 12\ntor_hs_rdv_pow_pqueue_count{onion=\"" A "\"} 5\n"},
         "aaaa pow_suggested_effort=30 pow_queue_length=7"},
        /* a field only one tor exported is present; a tor without the service adds nothing */
        {{"tor_hs_rdv_error_count{onion=\"" A "\",reason=\"x\"} 1\n",
          "tor_hs_intro_established_count{onion=\"" A "\"} 3\ntor_hs_rdv_established_count{onion=\"" A "\"} 2\n",
          "tor_hs_intro_num_total{onion=\"" PLAIN "\"} 9\n"},
         "aaaa intro_circuits=3 rendezvous_established=2 rendezvous_errors=1"},
        /* effort 0 on one tor, 5 on the other, in either order */
        {{"tor_hs_pow_suggested_effort{onion=\"" A "\"} 0\n", "tor_hs_pow_suggested_effort{onion=\"" A "\"} 5\n"},
         "aaaa pow_suggested_effort=5"},
        {{"tor_hs_pow_suggested_effort{onion=\"" A "\"} 5\n", "tor_hs_pow_suggested_effort{onion=\"" A "\"} 0\n"},
         "aaaa pow_suggested_effort=5"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct tormetrics_service sum = {0};
        struct tormetrics one = {.svc = &sum, .n = 1};
        char err[128], out[512];
        memcpy(sum.onion, A, sizeof(sum.onion));
        for (size_t k = 0; k < 3 && cases[c].tors[k]; k++) {
            struct tormetrics *m = tormetrics_parse(cases[c].tors[k], strlen(cases[c].tors[k]), err, sizeof(err));
            if (!m)
                fail_msg("case %zu tor %zu: %s", c, k, err);
            tormetrics_service_add(&sum, tormetrics_find(m, A));
            tormetrics_free(m);
        }
        dump(&one, out, sizeof(out));
        if (strcmp(out, cases[c].want) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", c, out, cases[c].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_sample),
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
