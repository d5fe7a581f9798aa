/* test_torscrape.c — unit tests for sidecar/tor/torscrape.c, with the real event loop and libcurl against an
 * evhttp server on 127.0.0.1 standing in for tor's MetricsPort.
 *
 * Why: the values must be tor's current ones or absent — never stale after tor is gone or answers
 * something the parser refuses.
 *
 * Covers: the recorded tor 0.4.9.11 answer is read at once after torscrape_set_port, shown per service
 * as JSON (only fields tor exported) and as onionfront_tor_hs_* samples for the named services (not for
 * a service tor does not list); a malformed answer, an HTTP error and port 0 forget the values
 * (onionfront_tor_metrics_up 0, no samples); several tors: samples labelled instance in one family each,
 * and the status sum over them; 512 services on 4 tors parsed, rendered and summed with O(log n) address
 * comparisons per look-up (counted through link-time wraps). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sidecar/core/metrics.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/tor/tormetrics.h"
#include "sidecar/tor/torscrape.h"

/* Comparisons of onion addresses, counted: the Makefile links this test with --wrap for both (its
 * TEST_LDFLAGS_test_torscrape), so every call from torscrape.c and tormetrics.c comes through here. */
static unsigned long address_compares;
int __real_onion_address_cmp(const char *a, const char *b);
bool __real_onion_address_equal(const char *a, const char *b);
int __wrap_onion_address_cmp(const char *a, const char *b);
bool __wrap_onion_address_equal(const char *a, const char *b);
int __wrap_onion_address_cmp(const char *a, const char *b)
{
    address_compares++;
    return __real_onion_address_cmp(a, b);
}
bool __wrap_onion_address_equal(const char *a, const char *b)
{
    address_compares++;
    return __real_onion_address_equal(a, b);
}

#define SAMPLE "tests/unit/data/tor-0.4.9.11-metrics.txt"
#define PRIV_POW "n34y7dymsnjidn7r2vphpr7gkm7nknwnfvndx5e5j5umngt2llxjt2ad"
#define OTHER "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

struct ctx {
    struct event_base *base;
    struct evhttp *http;
    unsigned port;
    int status;
    const char *body;
    unsigned requests;
    char sample[1 << 20];
};

static void http_cb(struct evhttp_request *req, void *arg)
{
    struct ctx *c = arg;
    c->requests++;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, c->body, strlen(c->body));
    evhttp_send_reply(req, c->status, "x", b);
    evbuffer_free(b);
}

static int setup(void **state)
{
    struct ctx *c = calloc(1, sizeof(*c));
    FILE *f = fopen(SAMPLE, "r");
    if (!c || !f)
        return -1;
    c->sample[fread(c->sample, 1, sizeof(c->sample) - 1, f)] = '\0';
    fclose(f);
    c->base = event_base_new();
    c->http = evhttp_new(c->base);
    evhttp_set_gencb(c->http, http_cb, c);
    struct evhttp_bound_socket *s = evhttp_bind_socket_with_handle(c->http, "127.0.0.1", 0);
    if (!s)
        return -1;
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&sa, &len);
    c->port = ntohs(sa.sin_port);
    c->status = 200;
    c->body = c->sample;
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    evhttp_free(c->http);
    event_base_free(c->base);
    free(c);
    return 0;
}

/* Run the loop until `requests` answers were sent and their results taken (bounded: 5 s). */
static void run_until(struct ctx *c, unsigned requests)
{
    for (int i = 0; i < 500 && c->requests < requests; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(c->base, &tv);
        event_base_dispatch(c->base);
    }
    assert_true(c->requests >= requests);
    for (int i = 0; i < 20; i++) { /* the completion comes a loop turn or two later */
        struct timeval tv = {0, 10000};
        event_base_loopexit(c->base, &tv);
        event_base_dispatch(c->base);
    }
}

static char *metrics_of(struct torscrape *s)
{
    struct metrics *m = metrics_new();
    const char *names[] = {"web", "other"}, *addrs[] = {PRIV_POW, OTHER}, *inst[] = {"1"};
    const struct torscrape *all[] = {s};
    assert_int_equal(torscrape_metrics(all, inst, 1, names, addrs, 2, m), 0);
    char *t = strdup(metrics_text(m, NULL));
    metrics_free(m);
    return t;
}

static void test_scrape(void **state)
{
    struct ctx *c = *state;
    struct torscrape *s = torscrape_new(c->base, "tor");
    assert_null(torscrape_latest(s));
    torscrape_set_port(s, c->port);
    run_until(c, 1);
    assert_non_null(torscrape_latest(s));
    assert_int_equal(torscrape_latest(s)->n, 2);

    json_t *o = torscrape_service_to_json(s, PRIV_POW ".onion");
    assert_non_null(o);
    assert_int_equal(json_object_size(o), TORMETRICS_N);
    assert_true(json_real_value(json_object_get(o, "introductions_received")) == 1);
    assert_true(json_real_value(json_object_get(o, "pow_suggested_effort")) == 0);
    json_decref(o);
    assert_null(torscrape_service_to_json(s, OTHER));

    char *t = metrics_of(s);
    assert_non_null(strstr(t, "onionfront_tor_metrics_up{instance=\"1\"} 1\n"));
    assert_non_null(strstr(t, "onionfront_tor_hs_introductions_received_total{service=\"web\",instance=\"1\"} 1\n"));
    assert_non_null(strstr(t, "onionfront_tor_hs_pow_suggested_effort{service=\"web\",instance=\"1\"} 0\n"));
    assert_non_null(strstr(t, "onionfront_tor_hs_rendezvous_errors_total{service=\"web\",instance=\"1\"} 0\n"));
    assert_null(strstr(t, "service=\"other\""));
    free(t);

    /* tor answers something the parser refuses: the values go */
    c->body = "tor_hs_intro_num_total 1\n";
    torscrape_set_port(s, 0);
    torscrape_set_port(s, c->port);
    run_until(c, 2);
    assert_null(torscrape_latest(s));
    t = metrics_of(s);
    assert_non_null(strstr(t, "onionfront_tor_metrics_up{instance=\"1\"} 0\n"));
    assert_null(strstr(t, "service=\"web\""));
    free(t);

    /* good again, then an HTTP error */
    c->body = c->sample;
    torscrape_set_port(s, 0);
    torscrape_set_port(s, c->port);
    run_until(c, 3);
    assert_non_null(torscrape_latest(s));
    c->status = 503;
    torscrape_set_port(s, 0);
    assert_null(torscrape_latest(s)); /* port 0: forgotten at once */
    torscrape_set_port(s, c->port);
    run_until(c, 4);
    assert_null(torscrape_latest(s));
    torscrape_free(s);
}

/* Two tors (two scrapers of the same answer here): each tor's samples with its instance label, in one
 * family each; the status sum adds the counters; a tor without an answer adds nothing and says so. */
static void test_two_tors(void **state)
{
    struct ctx *c = *state;
    struct torscrape *s1 = torscrape_new(c->base, "tor"), *s2 = torscrape_new(c->base, "tor 2");
    struct torscrape *s3 = torscrape_new(c->base, "tor 3"); /* never read */
    torscrape_set_port(s1, c->port);
    torscrape_set_port(s2, c->port);
    run_until(c, 2);
    const struct torscrape *all[] = {s1, s2, s3};
    const char *names[] = {"web"}, *addrs[] = {PRIV_POW}, *inst[] = {"1", "2", "anonymous"};
    struct metrics *m = metrics_new();
    assert_int_equal(torscrape_metrics(all, inst, 3, names, addrs, 1, m), 0);
    const char *t = metrics_text(m, NULL);
    assert_non_null(strstr(t, "onionfront_tor_metrics_up{instance=\"1\"} 1\n"
                              "onionfront_tor_metrics_up{instance=\"2\"} 1\n"
                              "onionfront_tor_metrics_up{instance=\"anonymous\"} 0\n"));
    assert_non_null(strstr(t, "onionfront_tor_hs_introductions_received_total{service=\"web\",instance=\"1\"} 1\n"
                              "onionfront_tor_hs_introductions_received_total{service=\"web\",instance=\"2\"} 1\n"));
    assert_null(strstr(t, "instance=\"anonymous\"} 1"));
    /* one # TYPE line per family, not one per tor */
    const char *type = "# TYPE onionfront_tor_hs_introductions_received_total counter\n";
    assert_non_null(strstr(t, type));
    assert_null(strstr(strstr(t, type) + 1, type));
    metrics_free(m);

    json_t *sum = torscrape_sum_to_json(all, 3, PRIV_POW);
    assert_non_null(sum);
    assert_true(json_real_value(json_object_get(sum, "introductions_received")) == 2);
    assert_true(json_real_value(json_object_get(sum, "pow_suggested_effort")) == 0);
    json_decref(sum);
    assert_null(torscrape_sum_to_json(all, 3, OTHER));
    assert_null(torscrape_sum_to_json(all + 2, 1, PRIV_POW));
    torscrape_free(s1);
    torscrape_free(s2);
    torscrape_free(s3);
}

#define MANY_SERVICES 512
#define MANY_TORS 4

/* 512 services on each of 4 tors: parsing an answer and rendering /metrics look each service up through
 * the index (O(log n) comparisons each), never by walking the list (fields x tors x services x n/2). */
static void test_many_services_indexed(void **state)
{
    struct ctx *c = *state;
    static char onions[MANY_SERVICES][ONION_ADDRESS_SIZE], names_buf[MANY_SERVICES][16];
    const char *names[MANY_SERVICES], *addrs[MANY_SERVICES];
    struct evbuffer *body = evbuffer_new();
    for (size_t i = 0; i < MANY_SERVICES; i++) {
        unsigned char raw[35];
        for (size_t b = 0; b < sizeof(raw); b++)
            raw[b] = (unsigned char)(i * 131 + b * 7 + (i >> 3) * b); /* distinct per i */
        raw[0] = (unsigned char)i;
        raw[1] = (unsigned char)(i >> 8);
        onion_address_base32(raw, sizeof(raw), onions[i]);
        snprintf(names_buf[i], sizeof(names_buf[i]), "s%zu", i);
        names[i] = names_buf[i];
        addrs[i] = onions[i];
    }
    /* tor lists the services family by family, in its own order (here reversed) */
    for (int f = 0; f < TORMETRICS_N; f++)
        for (size_t i = MANY_SERVICES; i-- > 0;)
            evbuffer_add_printf(body, "%s{onion=\"%s\"} %zu\n", tormetrics_field_family(f), onions[i], i);
    size_t len = evbuffer_get_length(body);
    char *text = malloc(len + 1);
    assert_non_null(text);
    evbuffer_remove(body, text, len);
    text[len] = '\0';
    evbuffer_free(body);
    c->body = text;

    struct torscrape *s[MANY_TORS];
    const char *inst[MANY_TORS] = {"1", "2", "3", "4"};
    address_compares = 0;
    for (int k = 0; k < MANY_TORS; k++) {
        s[k] = torscrape_new(c->base, inst[k]);
        torscrape_set_port(s[k], c->port);
    }
    run_until(c, MANY_TORS);
    for (int k = 0; k < MANY_TORS; k++) {
        assert_non_null(torscrape_latest(s[k]));
        assert_int_equal(torscrape_latest(s[k])->n, MANY_SERVICES);
    }
    /* parsing: a binary search per sample line (10 comparisons for 512), not a walk of the list */
    unsigned long lines = (unsigned long)TORMETRICS_N * MANY_SERVICES * MANY_TORS;
    if (address_compares > lines * 10)
        fail_msg("parsing %d answers took %lu address comparisons (at most %lu)", MANY_TORS, address_compares,
                 lines * 10);

    struct metrics *m = metrics_new();
    address_compares = 0;
    assert_int_equal(torscrape_metrics((const struct torscrape *const *)s, inst, MANY_TORS, names, addrs,
                                       MANY_SERVICES, m), 0);
    /* rendering: each service found once per tor, each search at most 10 comparisons (log2 512 + 1) */
    unsigned long bound = (unsigned long)MANY_TORS * MANY_SERVICES * 10;
    if (address_compares > bound)
        fail_msg("rendering %d services x %d tors took %lu address comparisons (at most %lu)", MANY_SERVICES,
                 MANY_TORS, address_compares, bound);
    const char *t = metrics_text(m, NULL);
    assert_non_null(strstr(t, "onionfront_tor_hs_intro_circuits{service=\"s511\",instance=\"4\"} 511\n"));
    assert_non_null(strstr(t, "onionfront_tor_hs_rendezvous_errors_total{service=\"s0\",instance=\"1\"} 0\n"));
    metrics_free(m);

    /* the status look-ups too */
    address_compares = 0;
    for (size_t i = 0; i < MANY_SERVICES; i++) {
        json_t *sum = torscrape_sum_to_json((const struct torscrape *const *)s, MANY_TORS, addrs[i]);
        assert_non_null(sum);
        assert_true(json_real_value(json_object_get(sum, "introductions_received")) == (double)i * MANY_TORS);
        json_decref(sum);
    }
    if (address_compares > bound)
        fail_msg("summing %d services over %d tors took %lu address comparisons (at most %lu)", MANY_SERVICES,
                 MANY_TORS, address_compares, bound);
    for (int k = 0; k < MANY_TORS; k++)
        torscrape_free(s[k]);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scrape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_tors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_services_indexed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
