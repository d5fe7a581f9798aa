/* torscrape.c — a spawned tor's MetricsPort, read periodically (see torscrape.h). */
#include "sidecar/tor/torscrape.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/datapath/check_http.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/tor/tormetrics.h"

struct torscrape {
    struct event_base *base;
    char label[16];
    struct check_http_loop *curl; /* created with the first scrape */
    struct event *timer;
    unsigned port;
    struct check_http *inflight;
    char *body; /* the answer being read */
    size_t body_len, body_cap;
    bool body_too_big;
    struct tormetrics *latest;
    char last_error[256]; /* "" after a good scrape: log only changes */
    bool ever;            /* a scrape has completed since the port was set */
};

struct torscrape *torscrape_new(struct event_base *base, const char *label)
{
    struct torscrape *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->base = base;
    snprintf(s->label, sizeof(s->label), "%s", label);
    return s;
}

static void torscrape_forget(struct torscrape *s)
{
    check_http_cancel(s->inflight);
    s->inflight = NULL;
    tormetrics_free(s->latest);
    s->latest = NULL;
    free(s->body);
    s->body = NULL;
    s->body_len = s->body_cap = 0;
}

void torscrape_free(struct torscrape *s)
{
    if (!s)
        return;
    torscrape_forget(s);
    if (s->timer)
        event_free(s->timer);
    check_http_loop_free(s->curl);
    free(s);
}

static size_t torscrape_body_cb(char *data, size_t size, size_t n, void *arg)
{
    struct torscrape *s = arg;
    size_t len = size * n;
    if (s->body_len + len > TORMETRICS_TEXT_MAX) {
        s->body_too_big = true;
        return 0; /* curl aborts the transfer */
    }
    if (s->body_len + len > s->body_cap) {
        size_t cap = s->body_cap ? s->body_cap : 65536;
        while (cap < s->body_len + len)
            cap *= 2;
        char *b = realloc(s->body, cap);
        if (!b)
            return 0;
        s->body = b;
        s->body_cap = cap;
    }
    memcpy(s->body + s->body_len, data, len);
    s->body_len += len;
    return len;
}

/* One funnel for every outcome: keep the values or forget them; log when the outcome changes. */
static void torscrape_result(struct torscrape *s, struct tormetrics *m, const char *error)
{
    tormetrics_free(s->latest);
    s->latest = m;
    if (m && (s->last_error[0] || !s->ever))
        log_info("%s: read its MetricsPort (127.0.0.1:%u): %zu service%s", s->label, s->port, m->n,
                 m->n == 1 ? "" : "s");
    else if (!m && strcmp(s->last_error, error) != 0)
        log_info("%s: cannot read its MetricsPort (127.0.0.1:%u): %s; its per-service metrics are absent until "
                 "it answers", s->label, s->port, error);
    snprintf(s->last_error, sizeof(s->last_error), "%s", m ? "" : error);
    s->ever = true;
}

static void torscrape_done_cb(CURL *easy, CURLcode rc, const char *errbuf, void *arg)
{
    struct torscrape *s = arg;
    long status = 0;
    char err[256];
    s->inflight = NULL;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {
        snprintf(err, sizeof(err), "%s", s->body_too_big ? "answer too big" : errbuf[0] ? errbuf
                                                                               : curl_easy_strerror(rc));
        torscrape_result(s, NULL, err);
    } else if (status != 200) {
        snprintf(err, sizeof(err), "HTTP status %ld", status);
        torscrape_result(s, NULL, err);
    } else {
        struct tormetrics *m = tormetrics_parse(s->body ? s->body : "", s->body_len, err, sizeof(err));
        torscrape_result(s, m, err);
    }
    s->body_len = 0;
}

static void torscrape_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct torscrape *s = arg;
    char url[64], err[256];
    (void)fd;
    (void)what;
    if (s->inflight || !s->port)
        return;
    if (!s->curl && !(s->curl = check_http_loop_new(s->base, err, sizeof(err)))) {
        torscrape_result(s, NULL, err);
        return;
    }
    CURL *e = curl_easy_init();
    if (!e) {
        torscrape_result(s, NULL, "out of memory");
        return;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", s->port);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never an http_proxy from the environment */
    curl_easy_setopt(e, CURLOPT_USERAGENT, "onionfront");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, torscrape_body_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    s->body_len = 0;
    s->body_too_big = false;
    s->inflight = check_http_run(s->curl, e, (TORSCRAPE_INTERVAL_S - 1) * 1000, torscrape_done_cb, s, err,
                                 sizeof(err));
    if (!s->inflight)
        torscrape_result(s, NULL, err);
}

void torscrape_set_port(struct torscrape *s, unsigned port)
{
    if (port == s->port)
        return;
    torscrape_forget(s);
    s->port = port;
    s->ever = false;
    s->last_error[0] = '\0';
    if (!s->timer && !(s->timer = event_new(s->base, -1, EV_PERSIST, torscrape_tick_cb, s))) {
        log_error("%s: out of memory; its MetricsPort is not read", s->label);
        return;
    }
    event_del(s->timer);
    if (port) {
        event_add(s->timer, &(struct timeval){TORSCRAPE_INTERVAL_S, 0});
        event_active(s->timer, EV_TIMEOUT, 0);
    }
}

const struct tormetrics *torscrape_latest(const struct torscrape *s)
{
    return s ? s->latest : NULL;
}

static json_t *torscrape_values_json(const struct tormetrics_service *ts)
{
    json_t *o = json_object();
    for (int f = 0; o && f < TORMETRICS_N; f++)
        if (ts->has[f])
            json_object_set_new(o, tormetrics_field_str(f), json_real(ts->value[f]));
    return o;
}

json_t *torscrape_service_to_json(const struct torscrape *s, const char *address)
{
    const struct tormetrics_service *ts = tormetrics_find(torscrape_latest(s), address);
    return ts ? torscrape_values_json(ts) : NULL;
}

json_t *torscrape_sum_to_json(const struct torscrape *const *s, size_t n, const char *address)
{
    struct tormetrics_service sum = {0};
    bool any = false;
    for (size_t k = 0; k < n; k++) {
        const struct tormetrics_service *ts = tormetrics_find(torscrape_latest(s[k]), address);
        tormetrics_service_add(&sum, ts);
        any = any || ts;
    }
    return any ? torscrape_values_json(&sum) : NULL;
}

int torscrape_metrics(const struct torscrape *const *s, const char *const *instances, size_t n_tors,
                      const char *const *names, const char *const *addresses, size_t n, struct metrics *m)
{
    char name[96], help[200];
    int rc = -1;
    /* Each service looked up once per tor, then every family reads the table: the families are printed
     * one after the other, and a render must not cost fields x tors x services searches. */
    const struct tormetrics_service **found = calloc(n_tors * n + 1, sizeof(*found));
    if (!found)
        return -1;
    for (size_t k = 0; k < n_tors; k++)
        for (size_t i = 0; torscrape_latest(s[k]) && i < n; i++)
            found[k * n + i] = tormetrics_find(torscrape_latest(s[k]), addresses[i]);
    if (metrics_family(m, "onionfront_tor_metrics_up", METRICS_GAUGE,
                       "1 if the last read of the tor's MetricsPort worked, else 0 (no tor_hs samples then)."))
        goto done;
    for (size_t k = 0; k < n_tors; k++)
        if (metrics_sample(m, "onionfront_tor_metrics_up", (const char *const[]){"instance", instances[k], NULL},
                           torscrape_latest(s[k]) ? 1 : 0))
            goto done;
    for (int f = 0; f < TORMETRICS_N; f++) {
        bool counter = tormetrics_field_is_counter(f);
        snprintf(name, sizeof(name), "onionfront_tor_hs_%s%s", tormetrics_field_str(f), counter ? "_total" : "");
        snprintf(help, sizeof(help), "tor's %s for the service, as read from each tor's MetricsPort (instance); "
                 "absent if tor does not export it.", tormetrics_field_family(f));
        if (metrics_family(m, name, counter ? METRICS_COUNTER : METRICS_GAUGE, help))
            goto done;
        for (size_t k = 0; k < n_tors; k++)
            for (size_t i = 0; i < n; i++) {
                const struct tormetrics_service *ts = found[k * n + i];
                if (ts && ts->has[f] &&
                    metrics_sample(m, name, (const char *const[]){"service", names[i], "instance", instances[k], NULL},
                                   ts->value[f]))
                    goto done;
            }
    }
    rc = 0;
done:
    free(found);
    return rc;
}
