/* test_log.c — level parsing, threshold, the text, journald and JSON formats (each line checked), JSON
 * validity for arbitrary message bytes, the per-call-site rate limit and log-level's timed override
 * with an injected clock (counts, never durations), and libevent's messages through the same limit.
 * stderr is captured into a temporary file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/core/log.h"

/* ---- capture and clock ------------------------------------------------------------------------------ */

static uint64_t fake_ms;
static uint64_t fake_now(void)
{
    return fake_ms;
}

/* Run `fn` with stderr redirected into a temporary file; return what it wrote (malloc'd, NUL-ended). */
static char *capture(void (*fn)(void))
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t n = lseek(fileno(tmp), 0, SEEK_END);
    assert_true(n >= 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fileno(tmp), buf, (size_t)n, 0), n);
    buf[n] = '\0';
    fclose(tmp);
    return buf;
}

static char *capture_in_journal(void (*fn)(void))
{
    log_set_journal(true);
    char *buf = capture(fn);
    log_set_journal(false);
    return buf;
}

static size_t count_lines(const char *buf, const char *substr)
{
    size_t n = 0;
    for (const char *p = buf; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (!substr || memmem(p, len, substr, strlen(substr)))
            n++;
        p += len + (nl ? 1 : 0);
    }
    return n;
}

static void end_override(void)
{
    char msg[128];
    log_override("config", 0, msg, sizeof(msg));
}

/* Each test starts from the defaults: info, text, not the journal, the fake clock at 0. */
static int reset(void **state)
{
    (void)state;
    log_set_level(LOG_LVL_INFO);
    log_set_format(LOG_FORMAT_TEXT);
    log_set_journal(false);
    fake_ms = 0;
    log_set_clock(fake_now);
    free(capture(end_override));
    return 0;
}

/* ---- names, threshold, text ------------------------------------------------------------------------- */

static void test_parse(void **state)
{
    (void)state;
    const struct { const char *s; int ok; enum log_level l; int prio; } cases[] = {
        {"debug", 0, LOG_LVL_DEBUG, 7}, {"info", 0, LOG_LVL_INFO, 6}, {"notice", 0, LOG_LVL_NOTICE, 5},
        {"warn", 0, LOG_LVL_WARN, 4},   {"error", 0, LOG_LVL_ERROR, 3}, {"INFO", -1, 0, 0}, {"", -1, 0, 0},
        {"warning", -1, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum log_level l = LOG_LVL_ERROR;
        assert_int_equal(log_level_parse(cases[i].s, &l), cases[i].ok);
        if (cases[i].ok == 0) {
            assert_int_equal(l, cases[i].l);
            assert_string_equal(log_level_str(l), cases[i].s);
            assert_int_equal(log_level_priority(l), cases[i].prio);
        }
    }
    enum log_format f = LOG_FORMAT_TEXT;
    assert_int_equal(log_format_parse("json", &f), 0);
    assert_int_equal(f, LOG_FORMAT_JSON);
    assert_string_equal(log_format_str(f), "json");
    assert_int_equal(log_format_parse("text", &f), 0);
    assert_int_equal(f, LOG_FORMAT_TEXT);
    assert_int_equal(log_format_parse("JSON", &f), -1);
    assert_int_equal(log_format_parse("syslog", &f), -1);
}

static void emit_some(void)
{
    log_set_level(LOG_LVL_NOTICE);
    log_debug("hidden debug %d", 1);
    log_info("hidden info");
    log_notice("shown notice %s", "x");
    errno = ENOENT;
    log_warn("open %s", "/nope");
    log_error("two\nlines");
    log_set_level(LOG_LVL_INFO);
}

static void test_threshold_and_format(void **state)
{
    (void)state;
    char *buf = capture(emit_some);
    assert_null(strstr(buf, "hidden"));
    assert_non_null(strstr(buf, "[notice] shown notice x\n"));
    assert_non_null(strstr(buf, "[warn] open /nope: No such file or directory\n"));
    assert_non_null(strstr(buf, "[error] two lines\n")); /* one message, one line */
    assert_int_equal(count_lines(buf, NULL), 3);
    free(buf);
}

static void emit_long(void)
{
    char big[10000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_info("%s", big);
}

static void test_long_line_truncated_not_overflowed(void **state)
{
    (void)state;
    char *buf = capture(emit_long);
    size_t n = strlen(buf);
    assert_true(n > 1000 && n <= 4096 + 64);
    assert_int_equal(buf[n - 1], '\n');
    assert_int_equal(count_lines(buf, NULL), 1);
    free(buf);
}

/* ---- journald ---------------------------------------------------------------------------------------- */

static void emit_levels(void)
{
    log_set_level(LOG_LVL_DEBUG);
    log_debug("proxy a: a debug line");
    log_info("tor: an info line");
    log_notice("service a: a notice line");
    log_warnx("SINGLE ONION SERVICE MODE: a warning");
    log_error("reload: an error");
    log_relay(LOG_LVL_WARN, "tor", "Dec 03 10:00:00.000 [warn] tor warns");
    log_set_level(LOG_LVL_INFO);
}

static void test_journal_priorities(void **state)
{
    (void)state;
    char *buf = capture_in_journal(emit_levels);
    assert_string_equal(buf, "<7>proxy a: a debug line\n"
                             "<6>tor: an info line\n"
                             "<5>service a: a notice line\n"
                             "<4>SINGLE ONION SERVICE MODE: a warning\n"
                             "<3>reload: an error\n"
                             "<4>tor: Dec 03 10:00:00.000 [warn] tor warns\n");
    free(buf);
}

/* JOURNAL_STREAM must name stderr's own device and inode: the same file yes, any other no. */
static void test_journal_detection(void **state)
{
    (void)state;
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    struct stat st;
    assert_int_equal(fstat(fileno(tmp), &st), 0);
    char env[64];
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", env, 1);
    bool same = log_detect_journal();
    snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
    setenv("JOURNAL_STREAM", env, 1);
    bool other = log_detect_journal();
    setenv("JOURNAL_STREAM", "garbage", 1);
    bool garbage = log_detect_journal();
    snprintf(env, sizeof(env), "%llu:%llux", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", env, 1);
    bool trailing = log_detect_journal();
    unsetenv("JOURNAL_STREAM");
    bool unset = log_detect_journal();
    dup2(saved, 2);
    close(saved);
    fclose(tmp);
    assert_true(same);
    assert_false(other);
    assert_false(garbage);
    assert_false(trailing);
    assert_false(unset);
}

/* ---- JSON lines -------------------------------------------------------------------------------------- */

/* Every line of `buf` parses as a JSON object with the four required string members; returns them. */
static json_t *json_lines(const char *buf, const char *prefix)
{
    json_t *all = json_array();
    for (const char *p = buf; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        if (prefix) {
            assert_memory_equal(p, prefix, strlen(prefix));
            p += strlen(prefix);
        }
        json_error_t jerr;
        json_t *o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &jerr);
        if (!o)
            fail_msg("not JSON (%s): %.*s", jerr.text, (int)(nl - p), p);
        assert_true(json_is_object(o));
        static const char *const keys[] = {"time", "level", "module", "message"};
        for (size_t i = 0; i < 4; i++)
            assert_true(json_is_string(json_object_get(o, keys[i])));
        json_array_append_new(all, o);
        p = nl + 1;
    }
    return all;
}

static const char *member(json_t *all, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(all, i), key));
}

static void emit_json(void)
{
    log_set_format(LOG_FORMAT_JSON);
    log_info_f(LOG_BACKEND("alpha", "web1"), "backend web1: down -> up (check ok), pool alpha:80");
    log_notice_f(LOG_SERVICE("alpha"), "service alpha: descriptor \"x\" uploaded\t(tab)");
    log_warnx("SINGLE ONION SERVICE MODE: not hidden");
    log_relay(LOG_LVL_ERROR, "tor", "Dec 03 10:00:00.000 [err] tor failed");
    log_msgf(LOG_LVL_INFO, &(struct log_fields){.worker = "tor-1"}, "worker tor-1: up");
    log_set_format(LOG_FORMAT_TEXT);
}

static void test_json_lines(void **state)
{
    (void)state;
    char *buf = capture(emit_json);
    json_t *all = json_lines(buf, NULL);
    assert_int_equal(json_array_size(all), 5);
    assert_string_equal(member(all, 0, "level"), "info");
    assert_string_equal(member(all, 0, "module"), "backend");
    assert_string_equal(member(all, 0, "service"), "alpha");
    assert_string_equal(member(all, 0, "backend"), "web1");
    assert_null(member(all, 0, "worker"));
    assert_string_equal(member(all, 0, "message"), "backend web1: down -> up (check ok), pool alpha:80");
    assert_string_equal(member(all, 1, "level"), "notice");
    assert_string_equal(member(all, 1, "module"), "service");
    assert_string_equal(member(all, 1, "service"), "alpha");
    assert_null(member(all, 1, "backend"));
    assert_string_equal(member(all, 1, "message"), "service alpha: descriptor \"x\" uploaded\t(tab)");
    assert_string_equal(member(all, 2, "level"), "warn");
    assert_string_equal(member(all, 2, "module"), "onionfront");
    assert_null(member(all, 2, "service"));
    assert_string_equal(member(all, 3, "level"), "error");
    assert_string_equal(member(all, 3, "module"), "tor");
    assert_string_equal(member(all, 3, "message"), "tor: Dec 03 10:00:00.000 [err] tor failed");
    assert_string_equal(member(all, 4, "worker"), "tor-1");
    /* "2026-12-03T10:00:00.123Z" */
    const char *t = member(all, 0, "time");
    assert_int_equal(strlen(t), 24);
    assert_int_equal(t[10], 'T');
    assert_int_equal(t[23], 'Z');
    json_decref(all);
    free(buf);
}

static void test_json_in_journal(void **state)
{
    (void)state;
    char *buf = capture_in_journal(emit_json);
    /* each line is "<N>" + JSON; check the priorities one by one */
    const char *prio[] = {"<6>{", "<5>{", "<4>{", "<3>{", "<6>{"};
    const char *p = buf;
    for (size_t i = 0; i < 5; i++) {
        assert_memory_equal(p, prio[i], 4);
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        json_t *o = json_loadb(p + 3, (size_t)(nl - p - 3), 0, NULL);
        assert_non_null(o);
        json_decref(o);
        p = nl + 1;
    }
    assert_string_equal(p, "");
    free(buf);
}

/* Messages that must still give valid JSON; `want` is the decoded message ("\xef\xbf\xbd" = U+FFFD). */
static const struct {
    const char *in;
    const char *want;
} json_cases[] = {
    {"quote \" backslash \\ slash /", "quote \" backslash \\ slash /"},
    {"ctl \x01\x1f\x7f\r\n\t end", "ctl \x01\x1f\x7f\r\n\t end"},
    {"bad \xff\xfe end", "bad \xef\xbf\xbd\xef\xbf\xbd end"},
    {"overlong \xc0\xaf", "overlong \xef\xbf\xbd\xef\xbf\xbd"},
    {"surrogate \xed\xa0\x80", "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"too big \xf4\x90\x80\x80", "too big \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    {"cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd"},
    {"fine \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "fine \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
};
static size_t json_case_i;

static void emit_json_case(void)
{
    log_set_format(LOG_FORMAT_JSON);
    log_info("%s", json_cases[json_case_i].in);
    log_msgf(LOG_LVL_INFO, LOG_BACKEND(json_cases[json_case_i].in, "\xff"), "fields %d", 1);
    log_set_format(LOG_FORMAT_TEXT);
}

static void test_json_escapes_and_utf8(void **state)
{
    (void)state;
    for (json_case_i = 0; json_case_i < sizeof(json_cases) / sizeof(json_cases[0]); json_case_i++) {
        fake_ms += 2 * LOG_RATE_WINDOW_MS; /* a fresh window for each case */
        char *buf = capture(emit_json_case);
        json_t *all = json_lines(buf, NULL);
        assert_int_equal(json_array_size(all), 2);
        assert_string_equal(member(all, 0, "message"), json_cases[json_case_i].want);
        assert_string_equal(member(all, 1, "service"), json_cases[json_case_i].want);
        assert_string_equal(member(all, 1, "backend"), "\xef\xbf\xbd");
        json_decref(all);
        free(buf);
    }
}

/* Fuzz-style: random messages of any bytes but NUL, through log_msg and log_relay, each window fresh. */
static void emit_random(void)
{
    unsigned seed = 12345;
    char msg[600];
    log_set_format(LOG_FORMAT_JSON);
    for (int i = 0; i < 3000; i++) {
        size_t len = (size_t)(rand_r(&seed) % (sizeof(msg) - 1));
        for (size_t k = 0; k < len; k++)
            msg[k] = (char)(1 + rand_r(&seed) % 255);
        msg[len] = '\0';
        fake_ms += LOG_RATE_WINDOW_MS;
        if (i % 2)
            log_info("%s", msg);
        else
            log_relay(LOG_LVL_WARN, "tor", msg);
    }
    log_set_format(LOG_FORMAT_TEXT);
}

static void test_json_random_bytes(void **state)
{
    (void)state;
    char *buf = capture(emit_random);
    json_t *all = json_lines(buf, NULL);
    assert_int_equal(json_array_size(all), 3000);
    json_decref(all);
    free(buf);
}

/* ---- rate limit ---------------------------------------------------------------------------------------- */

static void flood(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        log_warnx("proxy a: stream %u: bad PROXY line; closing it", i);
}

static void emit_flood(void)
{
    flood(100);                  /* window 1: LOG_RATE_BURST written, 90 held back */
    log_info("other: a site of its own"); /* not limited by the flood's site */
    fake_ms += LOG_RATE_WINDOW_MS - 1;
    flood(5);                    /* still window 1: held back */
    fake_ms += 1;
    flood(3);                    /* window 2: the summary of 95, then 3 lines */
    fake_ms += 5 * LOG_RATE_WINDOW_MS;
    log_info("other: again"); /* nothing held: no summary */
    flood(50);                /* window 3: 10 written, 40 held */
    log_flush(true);          /* shutdown: the summary of 40 */
}

static unsigned long repeated_sum(const char *buf)
{
    unsigned long sum = 0;
    for (const char *p = buf; (p = strstr(p, "... repeated ")) != NULL; p++)
        sum += strtoul(p + strlen("... repeated "), NULL, 10);
    return sum;
}

static void test_rate_limit_counts(void **state)
{
    (void)state;
    char *buf = capture(emit_flood);
    size_t written = count_lines(buf, "bad PROXY line") - count_lines(buf, "... repeated");
    assert_int_equal(written, LOG_RATE_BURST + 3 + LOG_RATE_BURST);
    assert_int_equal(count_lines(buf, "... repeated"), 2);
    assert_non_null(strstr(buf, "[warn] proxy a: stream 10: bad PROXY line; closing it ... repeated 95 more times\n"));
    assert_non_null(strstr(buf, "... repeated 40 more times\n"));
    /* Nothing is lost from the count: written + held back = sent. */
    assert_int_equal(written + repeated_sum(buf), 100 + 5 + 3 + 50);
    assert_int_equal(count_lines(buf, "other:"), 2);
    /* the summary comes first, then the next window's lines */
    const char *summary = strstr(buf, "repeated 95 more times\n");
    assert_non_null(summary);
    const char *next = strchr(summary, '\n') + 1, *eol = strchr(next, '\n');
    assert_non_null(eol);
    assert_non_null(memmem(next, (size_t)(eol - next), "proxy a: stream 0: bad PROXY line", 33));
    free(buf);
}

static void emit_debug_flood(void)
{
    log_set_level(LOG_LVL_DEBUG);
    for (int i = 0; i < LOG_RATE_BURST_DEBUG + 500; i++)
        log_debug("proxy a: stream %d: trying backend b", i);
    log_flush(true);
    log_set_level(LOG_LVL_INFO);
}

/* debug lines have a larger burst of their own, and are limited all the same */
static void test_rate_limit_debug(void **state)
{
    (void)state;
    char *buf = capture(emit_debug_flood);
    assert_int_equal(count_lines(buf, "trying backend") - count_lines(buf, "... repeated"), LOG_RATE_BURST_DEBUG);
    assert_non_null(strstr(buf, "... repeated 500 more times\n"));
    free(buf);
}

static void emit_relay_mix(void)
{
    char line[128];
    /* 30 identical tor lines (different timestamps) are one message; 30 different lines are not limited */
    for (int i = 0; i < 30; i++) {
        snprintf(line, sizeof(line), "Dec 03 10:00:%02d.000 [warn] Our clock is skewed", i);
        log_relay(LOG_LVL_WARN, "tor", line);
    }
    for (int i = 0; i < 30; i++) {
        snprintf(line, sizeof(line), "Dec 03 10:00:00.000 [notice] Bootstrapped %d%%", i);
        log_relay(LOG_LVL_NOTICE, "tor", line);
    }
    log_flush(true);
}

static void test_rate_limit_relay(void **state)
{
    (void)state;
    char *buf = capture(emit_relay_mix);
    assert_int_equal(count_lines(buf, "Our clock is skewed") - count_lines(buf, "... repeated"), LOG_RATE_BURST);
    assert_non_null(strstr(buf, "... repeated 20 more times\n"));
    assert_int_equal(count_lines(buf, "Bootstrapped"), 30);
    free(buf);
}

static void emit_libevent(void)
{
    /* libevent logs "no event mechanism available" (event_warnx) when every backend is avoided. */
    log_route_libevent();
    for (int i = 0; i < 40; i++) {
        struct event_config *cfg = event_config_new();
        event_config_avoid_method(cfg, "epoll");
        event_config_avoid_method(cfg, "poll");
        event_config_avoid_method(cfg, "select");
        struct event_base *b = event_base_new_with_config(cfg);
        if (b)
            event_base_free(b);
        event_config_free(cfg);
    }
    log_flush(true);
    event_set_log_callback(NULL);
}

static void test_rate_limit_libevent(void **state)
{
    (void)state;
    char *buf = capture(emit_libevent);
    size_t lines = count_lines(buf, "libevent: ");
    if (lines == 0)
        fail_msg("libevent's message did not come through the log: %s", buf);
    assert_int_equal(lines, LOG_RATE_BURST + 1);
    assert_int_equal(count_lines(buf, "[warn] libevent: "), LOG_RATE_BURST + 1);
    assert_int_equal(LOG_RATE_BURST + repeated_sum(buf), 40);
    free(buf);
}

/* ---- log-level override -------------------------------------------------------------------------------- */

static int override_rc[4];
static char override_msg[4][160];

static void emit_override(void)
{
    log_set_level(LOG_LVL_INFO);
    log_debug("debug 1 (hidden)");
    override_rc[0] = log_override("debug", 300, override_msg[0], sizeof(override_msg[0]));
    log_debug("debug 2 (shown)");
    fake_ms += 300 * 1000 - 1;
    log_set_level(LOG_LVL_NOTICE); /* a reload: the override stays */
    log_debug("debug 3 (shown)");
    fake_ms += 1;
    log_debug("debug 4 (hidden)"); /* over: back to the configured level, now notice */
    log_info("info 5 (hidden)");
    override_rc[1] = log_override("error", 0, override_msg[1], sizeof(override_msg[1]));
    fake_ms += 1000u * 1000 * 1000;
    log_warnx("warn 6 (hidden)"); /* no timeout: still error */
    override_rc[2] = log_override("loud", 5, override_msg[2], sizeof(override_msg[2]));
    override_rc[3] = log_override("config", 0, override_msg[3], sizeof(override_msg[3]));
    log_warnx("warn 7 (shown)");
    log_set_level(LOG_LVL_INFO);
}

static void test_override(void **state)
{
    (void)state;
    char *buf = capture(emit_override);
    assert_int_equal(count_lines(buf, "(hidden)"), 0);
    assert_int_equal(count_lines(buf, "(shown)"), 3);
    assert_int_equal(override_rc[0], 0);
    assert_string_equal(override_msg[0], "log level debug for 300 s, then info (the configured level)");
    assert_non_null(strstr(buf, "[notice] log: log level debug for 300 s"));
    assert_non_null(strstr(buf, "[notice] log: level back to notice after 300 s of log-level debug\n"));
    assert_int_equal(count_lines(buf, "level back to"), 1);
    assert_int_equal(override_rc[1], 0);
    assert_non_null(strstr(buf, "[notice] log: log level error until the next log-level command or restart\n"));
    assert_int_equal(override_rc[2], -1);
    assert_string_equal(override_msg[2], "level: must be debug, info, notice, warn, error or config");
    assert_int_equal(override_rc[3], 0);
    assert_string_equal(override_msg[3], "log level notice (the configured level)");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_parse, reset),
        cmocka_unit_test_setup(test_threshold_and_format, reset),
        cmocka_unit_test_setup(test_long_line_truncated_not_overflowed, reset),
        cmocka_unit_test_setup(test_journal_priorities, reset),
        cmocka_unit_test_setup(test_journal_detection, reset),
        cmocka_unit_test_setup(test_json_lines, reset),
        cmocka_unit_test_setup(test_json_in_journal, reset),
        cmocka_unit_test_setup(test_json_escapes_and_utf8, reset),
        cmocka_unit_test_setup(test_json_random_bytes, reset),
        cmocka_unit_test_setup(test_rate_limit_counts, reset),
        cmocka_unit_test_setup(test_rate_limit_debug, reset),
        cmocka_unit_test_setup(test_rate_limit_relay, reset),
        cmocka_unit_test_setup(test_rate_limit_libevent, reset),
        cmocka_unit_test_setup(test_override, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
