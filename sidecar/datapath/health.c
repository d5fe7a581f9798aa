/* health.c — per-pool scheduling of active health checks (see health.h). */
#include "sidecar/core/clock.h"
#include "sidecar/datapath/health.h"

#include <event2/event.h>
#include <event2/util.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/check_http.h"
#include "sidecar/datapath/check_tcp.h"
#include "sidecar/core/log.h"

#define HEALTH_FIRST_SPREAD_MAX_MS 1000 /* first checks start within min(interval / 10, this) */

struct health_target { /* one backend's schedule: b->check_state */
    struct health_checker *hc;
    struct backend *b;
    struct health_target *prev, *next;
    struct event *timer;     /* start of the next check */
    struct check_tcp *tcp;   /* the running check, if any (at most one of the two) */
    struct check_http *http;
    uint64_t started_ms;     /* clock_now_ms() at the start of the running or last check */
    uint64_t due_ms;         /* clock_now_ms() at which the next check is due (the timer only wakes us) */
    struct backend_addr addr; /* the address being checked */
};

struct health_checker {
    struct event_base *base;
    struct backend_pool *pool;
    struct check_http_loop *curl; /* created with the first check that needs libcurl */
    struct health_target *targets;
    struct health_conf conf;      /* the settings the schedules follow */
    uint64_t checks_done;
};

/* Uniform in [0, n]. */
static unsigned health_jitter(unsigned n)
{
    uint32_t r = 0;
    evutil_secure_rng_get_bytes(&r, sizeof(r));
    return n ? (unsigned)(r % ((uint32_t)n + 1)) : 0;
}

/* Schedules, like the checks' deadlines, are on clock_now_ms (CLOCK_MONOTONIC). */
static void health_schedule(struct health_target *t, uint64_t delay_ms)
{
    t->due_ms = clock_now_ms() + delay_ms;
    struct timeval tv = clock_tv_ms(delay_ms);
    if (evtimer_add(t->timer, &tv) != 0)
        log_warnx("health: backend %s: cannot schedule the next check", t->b->conf.name);
}

/* A first check (new backend, new address, new settings): soon, spread so that many do not align. */
static void health_schedule_first(struct health_target *t)
{
    unsigned spread = t->hc->conf.interval_ms / 10;
    if (spread > HEALTH_FIRST_SPREAD_MAX_MS)
        spread = HEALTH_FIRST_SPREAD_MAX_MS;
    health_schedule(t, health_jitter(spread));
}

/* The next check: interval_ms after the last one's start, less up to 5% so that checks of backends
 * started together drift apart (and detection never takes longer than fall * interval). */
static void health_schedule_next(struct health_target *t)
{
    unsigned interval = t->hc->conf.interval_ms;
    uint64_t next = t->started_ms + interval - health_jitter(interval / 20);
    uint64_t now = clock_now_ms();
    health_schedule(t, next > now ? next - now : 0);
}

static bool health_addr_equal(const struct backend_addr *a, const struct backend_addr *b)
{
    return a->kind == b->kind && a->family == b->family && a->port == b->port && strcmp(a->host, b->host) == 0 &&
           strcmp(a->path, b->path) == 0;
}

/* The one completion of every check: count it, hand it to backend.c's funnel, schedule the next. */
static void health_check_done_cb(enum check_result r, const char *detail, void *arg)
{
    struct health_target *t = arg;
    t->tcp = NULL;
    t->http = NULL;
    t->hc->checks_done++;
    log_debug_f(LOG_BACKEND(backend_pool_service(t->b->pool), t->b->conf.name), "backend %s: check %s%s%s in %llu ms",
                t->b->conf.name, check_result_str(r), *detail ? ": " : "", detail,
                (unsigned long long)(clock_now_ms() - t->started_ms));
    backend_health_result(t->b, r, detail);
    health_schedule_next(t);
}

static void health_start_cb(evutil_socket_t fd, short what, void *arg)
{
    struct health_target *t = arg;
    struct health_checker *hc = t->hc;
    const struct health_conf *conf = &hc->conf;
    char err[256] = "";
    (void)fd;
    (void)what;

    if (conf->type == HEALTH_NONE || t->tcp || t->http)
        return;
    uint64_t now = clock_now_ms();
    if (now < t->due_ms) {
        /* libevent's timer woke us early by our clock (see clock.h): the check is not due yet. */
        health_schedule(t, t->due_ms - now);
        return;
    }
    t->started_ms = now;
    t->addr = t->b->conf.addr;
    if (conf->type == HEALTH_TCP && check_tcp_supports(&t->addr)) {
        t->tcp = check_tcp_start(hc->base, &t->addr, conf->timeout_ms, health_check_done_cb, t, err, sizeof(err));
    } else {
        if (!hc->curl)
            hc->curl = check_http_loop_new(hc->base, err, sizeof(err));
        if (hc->curl)
            t->http = check_http_start(hc->curl, &t->addr, conf, health_check_done_cb, t, err, sizeof(err));
    }
    if (!t->tcp && !t->http) {
        /* Our failure, not the backend's: no result; try again at the next interval. */
        log_warnx("health: backend %s: check not started: %s", t->b->conf.name, err);
        health_schedule_next(t);
    }
}

static void health_target_stop(struct health_target *t)
{
    check_tcp_cancel(t->tcp);
    check_http_cancel(t->http);
    t->tcp = NULL;
    t->http = NULL;
    if (t->timer)
        evtimer_del(t->timer);
}

static void health_target_free(struct health_target *t)
{
    health_target_stop(t);
    if (t->prev)
        t->prev->next = t->next;
    else
        t->hc->targets = t->next;
    if (t->next)
        t->next->prev = t->prev;
    if (t->timer)
        event_free(t->timer);
    t->b->check_state = NULL;
    free(t);
}

static struct health_target *health_target_new(struct health_checker *hc, struct backend *b)
{
    struct health_target *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->hc = hc;
    t->b = b;
    t->addr = b->conf.addr;
    t->timer = evtimer_new(hc->base, health_start_cb, t);
    if (!t->timer) {
        free(t);
        return NULL;
    }
    t->next = hc->targets;
    if (hc->targets)
        hc->targets->prev = t;
    hc->targets = t;
    b->check_state = t;
    health_schedule_first(t);
    return t;
}

/* The pool's detach hook: `b` leaves the pool; abandon its check. */
static void health_detach_cb(struct backend *b, void *arg)
{
    (void)arg;
    if (b->check_state)
        health_target_free(b->check_state);
}

static bool health_conf_is_unverified(const struct health_conf *conf)
{
    return conf->type == HEALTH_HTTPS && !conf->tls_verify;
}

/* The one warning for a pool whose https checks verify nothing: when the settings are applied, not for
 * every check. */
static void health_warn_unverified(const struct health_checker *hc)
{
    log_warnx("health: pool %s:%u: tls_verify is false: certificate checks are off for this port (https checks "
              "accept any certificate, for any name)",
              backend_pool_service(hc->pool), (unsigned)backend_pool_port(hc->pool)->virtual_port);
}

/* Give every backend without a schedule one. */
static void health_attach_all(struct health_checker *hc)
{
    for (size_t i = 0; i < backend_pool_count(hc->pool); i++) {
        struct backend *b = backend_pool_get(hc->pool, i);
        if (!b->check_state && !health_target_new(hc, b))
            log_warnx("health: backend %s: out of memory, not checked", b->conf.name);
    }
}

struct health_checker *health_new(struct event_base *base, struct backend_pool *pool)
{
    struct health_checker *hc = calloc(1, sizeof(*hc));
    if (!hc)
        return NULL;
    hc->base = base;
    hc->pool = pool;
    hc->conf = backend_pool_port(pool)->health;
    if (health_conf_is_unverified(&hc->conf))
        health_warn_unverified(hc);
    backend_pool_set_detach_cb(pool, health_detach_cb, hc);
    if (hc->conf.type != HEALTH_NONE)
        health_attach_all(hc);
    return hc;
}

void health_free(struct health_checker *hc)
{
    if (!hc)
        return;
    backend_pool_set_detach_cb(hc->pool, NULL, NULL);
    while (hc->targets)
        health_target_free(hc->targets);
    check_http_loop_free(hc->curl);
    free(hc);
}

void health_update(struct health_checker *hc)
{
    const struct health_conf *now = &backend_pool_port(hc->pool)->health;
    bool changed = !health_conf_equal(&hc->conf, now);
    bool was_unverified = health_conf_is_unverified(&hc->conf);
    hc->conf = *now;
    if (health_conf_is_unverified(&hc->conf) && !was_unverified)
        health_warn_unverified(hc);
    if (hc->conf.type == HEALTH_NONE) {
        while (hc->targets)
            health_target_free(hc->targets);
        return;
    }
    for (struct health_target *t = hc->targets; t; t = t->next) {
        if (!health_addr_equal(&t->addr, &t->b->conf.addr)) {
            /* A check of the old address says nothing about the new one. */
            health_target_stop(t);
            t->addr = t->b->conf.addr;
            health_schedule_first(t);
        } else if (changed && !t->tcp && !t->http) {
            health_target_stop(t);
            health_schedule_first(t);
        }
    }
    health_attach_all(hc);
}

uint64_t health_checks_done(const struct health_checker *hc)
{
    return hc->checks_done;
}
