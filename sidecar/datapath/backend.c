/* backend.c — backend pools: selection (smooth weighted round robin, weighted least connections,
 * weighted rendezvous hashing for circuit affinity), the rise/fall funnel, passive ejection, reload in
 * place by name, and the pool's JSON and metrics (see backend.h).
 *
 * Owns struct backend_pool and every struct backend in it, including removed backends that still carry
 * streams. Does not run checks or schedule anything (health.c does), and knows nothing of sockets. */
#include "sidecar/datapath/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"

struct backend_pool {
    struct event_base *base;
    char service[CONFIG_SERVICE_NAME_MAX + 1];
    struct port_conf port;          /* our copy; port.backends is ours too */
    struct backend **backends;      /* port.n_backends entries, in config order (the round-robin order) */
    struct backend *removed;        /* removed from the config, still carrying streams */
    backend_detach_cb detach_cb;
    void *detach_arg;
};

const char *backend_state_str(enum backend_state s)
{
    switch (s) {
    case BACKEND_UP:
        return "up";
    case BACKEND_DOWN:
        return "down";
    case BACKEND_DRAINED:
        return "drained";
    }
    return "unknown";
}

/* ---- state ------------------------------------------------------------------------------------- */

static enum backend_state backend_derive_state(const struct backend *b)
{
    if (b->conf.weight == 0)
        return BACKEND_DRAINED;
    return b->healthy ? BACKEND_UP : BACKEND_DOWN;
}

static int64_t backend_now(void)
{
    return (int64_t)time(NULL);
}

/* Recompute b->state after `healthy` or the weight changed; log the change once at info, with `why`
 * ("connect timeout, 3/3", "weight 0" ...). A change of the health verdict while drained is logged too
 * (it decides what the backend will be when undrained), marked as such. */
static void backend_apply_state(struct backend *b, bool was_healthy, const char *why)
{
    enum backend_state old = b->state;
    b->state = backend_derive_state(b);
    if (b->state != old) {
        b->last_change = backend_now();
        log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name), "backend %s: %s -> %s (%s), pool %s:%u",
                   b->conf.name, backend_state_str(old), backend_state_str(b->state), why, b->pool->service,
                   (unsigned)b->pool->port.virtual_port);
    } else if (b->healthy != was_healthy) {
        b->last_change = backend_now();
        log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name),
                   "backend %s: %s -> %s (%s), drained, pool %s:%u", b->conf.name, was_healthy ? "up" : "down",
                   b->healthy ? "up" : "down", why, b->pool->service, (unsigned)b->pool->port.virtual_port);
    }
}

/* "<result>" or "<result>: <detail>" */
static void backend_describe(char *out, size_t outlen, enum check_result r, const char *detail)
{
    if (detail && *detail)
        snprintf(out, outlen, "%s: %s", check_result_str(r), detail);
    else
        snprintf(out, outlen, "%s", check_result_str(r));
}

static void backend_record(struct backend *b, enum check_result r, const char *detail)
{
    b->last_result = r;
    snprintf(b->last_detail, sizeof(b->last_detail), "%s", detail ? detail : "");
    b->last_check = backend_now();
}

void backend_health_result(struct backend *b, enum check_result r, const char *detail)
{
    const struct health_conf *hc = &b->pool->port.health;
    bool was = b->healthy;
    char why[200];

    backend_record(b, r, detail);
    if (r == CHECK_OK)
        b->checks_ok++;
    else
        b->checks_failed++;
    if (hc->type == HEALTH_NONE)
        return; /* nothing to decide: such backends are always healthy */

    /* relayd/haproxy arithmetic: `rise` consecutive successes bring an unhealthy backend back, `fall`
     * consecutive failures take a healthy one out; any other result resets the opposite count. */
    if (r == CHECK_OK) {
        b->fall_count = 0;
        if (b->healthy)
            return;
        b->rise_count++;
        if (b->rise_count < hc->rise) {
            log_debug_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name), "backend %s: check ok (%u/%u)",
                        b->conf.name, b->rise_count, hc->rise);
            return;
        }
        backend_describe(why, sizeof(why), r, detail);
        snprintf(why + strlen(why), sizeof(why) - strlen(why), ", %u/%u", b->rise_count, hc->rise);
        b->healthy = true;
        b->rise_count = 0;
    } else {
        b->rise_count = 0;
        if (!b->healthy)
            return;
        b->fall_count++;
        if (b->fall_count < hc->fall) {
            log_debug_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name),
                        "backend %s: check failed: %s%s%s (%u/%u)", b->conf.name, check_result_str(r),
                        detail && *detail ? ": " : "", detail ? detail : "", b->fall_count, hc->fall);
            return;
        }
        backend_describe(why, sizeof(why), r, detail);
        snprintf(why + strlen(why), sizeof(why) - strlen(why), ", %u/%u", b->fall_count, hc->fall);
        b->healthy = false;
        b->fall_count = 0;
    }
    backend_apply_state(b, was, why);
}

void backend_passive_failure(struct backend *b, enum check_result r, const char *detail)
{
    b->failed_connects++;
    if (b->removed)
        return;
    backend_record(b, r, detail);
    if (b->pool->port.health.type == HEALTH_NONE) {
        log_debug_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name),
                    "backend %s: %s (no health checks: stays up)", b->conf.name, check_result_str(r));
        return;
    }
    b->rise_count = 0; /* a failure interrupts a run of successes */
    if (!b->healthy)
        return;
    bool was = b->healthy;
    char why[200];
    backend_describe(why, sizeof(why), r, detail);
    snprintf(why + strlen(why), sizeof(why) - strlen(why), ", passive");
    b->healthy = false;
    b->fall_count = 0;
    backend_apply_state(b, was, why);
}

bool backend_is_up(const struct backend *b)
{
    return b->state == BACKEND_UP;
}

/* ---- backends and the pool ----------------------------------------------------------------------- */

/* FNV-1a of the name, then the splitmix64 finalizer: a stable per-backend seed for rendezvous hashing
 * (the name, not the position, so reordering the config keeps every circuit where it is). Not a
 * cryptographic hash: circuit ids are tor's, not the visitor's, and only spread load. */
static uint64_t backend_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t backend_name_key(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
        h ^= *s;
        h *= 0x100000001b3ULL;
    }
    return backend_mix64(h);
}

static struct backend *backend_new(struct backend_pool *p, const struct backend_conf *conf)
{
    struct backend *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->conf = *conf;
    b->pool = p;
    b->healthy = true; /* optimistic: the first check or real connection tells otherwise */
    b->state = backend_derive_state(b);
    b->last_result = CHECK_OK;
    b->hash_key = backend_name_key(conf->name);
    return b;
}

static void backend_detach(struct backend_pool *p, struct backend *b)
{
    if (b->check_state && p->detach_cb)
        p->detach_cb(b, p->detach_arg);
    b->check_state = NULL;
}

static void backend_unlink_removed(struct backend_pool *p, struct backend *b)
{
    for (struct backend **pp = &p->removed; *pp; pp = &(*pp)->next_removed) {
        if (*pp == b) {
            *pp = b->next_removed;
            b->next_removed = NULL;
            return;
        }
    }
}

static struct backend_conf *backend_conf_dup(const struct port_conf *port)
{
    struct backend_conf *c = calloc(port->n_backends ? port->n_backends : 1, sizeof(*c));
    if (c && port->n_backends)
        memcpy(c, port->backends, port->n_backends * sizeof(*c));
    return c;
}

struct backend_pool *backend_pool_new(struct event_base *base, const char *service_name,
                                      const struct port_conf *port)
{
    if (port->n_backends > CONFIG_MAX_BACKENDS)
        return NULL;
    struct backend_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->base = base;
    snprintf(p->service, sizeof(p->service), "%s", service_name);
    p->port = *port;
    p->port.backends = backend_conf_dup(port);
    p->backends = calloc(port->n_backends ? port->n_backends : 1, sizeof(*p->backends));
    if (!p->port.backends || !p->backends) {
        p->port.n_backends = 0;
        backend_pool_free(p);
        return NULL;
    }
    for (size_t i = 0; i < port->n_backends; i++) {
        p->backends[i] = backend_new(p, &port->backends[i]);
        if (!p->backends[i]) {
            p->port.n_backends = i;
            backend_pool_free(p);
            return NULL;
        }
    }
    return p;
}

void backend_pool_free(struct backend_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->port.n_backends; i++) {
        if (p->backends && p->backends[i]) {
            backend_detach(p, p->backends[i]);
            free(p->backends[i]);
        }
    }
    while (p->removed) {
        struct backend *b = p->removed;
        p->removed = b->next_removed;
        free(b);
    }
    free(p->backends);
    free(p->port.backends);
    free(p);
}

void backend_pool_set_detach_cb(struct backend_pool *p, backend_detach_cb cb, void *arg)
{
    p->detach_cb = cb;
    p->detach_arg = arg;
}

static struct backend *backend_take_by_name(struct backend **list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (list[i] && strcmp(list[i]->conf.name, name) == 0) {
            struct backend *b = list[i];
            list[i] = NULL;
            return b;
        }
    }
    return NULL;
}

int backend_pool_update(struct backend_pool *p, const struct port_conf *port, char *err, size_t errlen)
{
    if (port->n_backends == 0 || port->n_backends > CONFIG_MAX_BACKENDS) {
        snprintf(err, errlen, "pool %s:%u: %zu backends (must be 1-%d)", p->service, (unsigned)port->virtual_port,
                 port->n_backends, CONFIG_MAX_BACKENDS);
        return -1;
    }
    for (size_t i = 0; i < port->n_backends; i++) {
        for (size_t j = i + 1; j < port->n_backends; j++) {
            if (strcmp(port->backends[i].name, port->backends[j].name) == 0) {
                snprintf(err, errlen, "pool %s:%u: backend name \"%s\" used twice", p->service,
                         (unsigned)port->virtual_port, port->backends[i].name);
                return -1;
            }
        }
    }

    /* Allocate everything first so that a failure leaves the pool as it was. */
    struct backend_conf *confs = backend_conf_dup(port);
    struct backend **next = calloc(port->n_backends, sizeof(*next));
    struct backend **fresh = calloc(port->n_backends, sizeof(*fresh));
    bool ok = confs && next && fresh;
    for (size_t i = 0; ok && i < port->n_backends; i++) {
        bool known = false;
        for (size_t j = 0; j < p->port.n_backends && !known; j++)
            known = strcmp(p->backends[j]->conf.name, port->backends[i].name) == 0;
        for (struct backend *r = p->removed; r && !known; r = r->next_removed)
            known = strcmp(r->conf.name, port->backends[i].name) == 0;
        if (!known && !(fresh[i] = backend_new(p, &port->backends[i])))
            ok = false;
    }
    if (!ok) {
        for (size_t i = 0; fresh && i < port->n_backends; i++)
            free(fresh[i]);
        free(fresh);
        free(next);
        free(confs);
        snprintf(err, errlen, "pool %s:%u: out of memory", p->service, (unsigned)port->virtual_port);
        return -1;
    }

    bool none_before = p->port.health.type == HEALTH_NONE;
    struct backend **old = p->backends;
    size_t n_old = p->port.n_backends;
    free(p->port.backends);
    p->port = *port;
    p->port.backends = confs;
    p->backends = next;

    for (size_t i = 0; i < port->n_backends; i++) {
        const struct backend_conf *c = &port->backends[i];
        struct backend *b = fresh[i];
        if (!b) {
            b = backend_take_by_name(old, n_old, c->name);
            if (!b) { /* revived: removed earlier, still draining its streams */
                for (b = p->removed; b && strcmp(b->conf.name, c->name) != 0; b = b->next_removed)
                    ;
                backend_unlink_removed(p, b);
                b->removed = false;
                log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name), "backend %s: back in pool %s:%u",
                           b->conf.name, p->service, (unsigned)port->virtual_port);
            }
            bool moved = b->conf.addr.kind != c->addr.kind || strcmp(b->conf.addr.host, c->addr.host) != 0 ||
                         b->conf.addr.port != c->addr.port || strcmp(b->conf.addr.path, c->addr.path) != 0;
            unsigned old_weight = b->conf.weight;
            b->conf = *c;
            if (moved) { /* a new address: the counts so far were about another server */
                b->rise_count = 0;
                b->fall_count = 0;
                log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name), "backend %s: address now %s",
                           b->conf.name, c->addr.text);
            }
            if (old_weight != c->weight) {
                char why[32];
                snprintf(why, sizeof(why), "weight %u", c->weight);
                backend_apply_state(b, b->healthy, why);
            }
        } else {
            log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name),
                       "backend %s: added to pool %s:%u (%s, weight %u)", b->conf.name, p->service,
                       (unsigned)port->virtual_port, c->addr.text, c->weight);
        }
        b->rr_current = 0; /* weights or order may have changed: start the round-robin cycle afresh */
        next[i] = b;
    }

    /* Backends not in the new config: stop checking them now; free them now or at their last stream. */
    for (size_t i = 0; i < n_old; i++) {
        struct backend *b = old[i];
        if (!b)
            continue;
        backend_detach(p, b);
        if (b->active == 0) {
            log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name), "backend %s: removed from pool %s:%u",
                       b->conf.name, p->service, (unsigned)port->virtual_port);
            free(b);
        } else {
            log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name),
                       "backend %s: removed from pool %s:%u, %u streams still open", b->conf.name, p->service,
                       (unsigned)port->virtual_port, b->active);
            b->removed = true;
            b->next_removed = p->removed;
            p->removed = b;
        }
    }
    free(old);
    free(fresh);

    /* Checks turned off: nothing could bring a down backend back, so every backend counts as healthy. */
    if (port->health.type == HEALTH_NONE && !none_before) {
        for (size_t i = 0; i < port->n_backends; i++) {
            struct backend *b = next[i];
            bool was = b->healthy;
            b->healthy = true;
            b->rise_count = b->fall_count = 0;
            backend_apply_state(b, was, "health checks off");
        }
    }
    return 0;
}

/* ---- selection --------------------------------------------------------------------------------- */

static bool backend_excluded(const struct backend *b, struct backend *const *exclude, size_t n_exclude)
{
    for (size_t i = 0; i < n_exclude; i++)
        if (exclude[i] == b)
            return true;
    return false;
}

static bool backend_eligible(const struct backend *b, struct backend *const *exclude, size_t n_exclude)
{
    return b->state == BACKEND_UP && b->conf.weight > 0 && !backend_excluded(b, exclude, n_exclude);
}

/* nginx's smooth weighted round robin over the eligible backends for which `among` is true (all if NULL):
 * each gains its weight, the one with the most current weight wins and pays back the sum. Over any
 * sum-of-weights consecutive picks of an unchanged set, each backend is picked exactly weight times,
 * interleaved rather than in bursts. */
static struct backend *backend_pick_swrr(struct backend_pool *p, const bool *among, struct backend *const *exclude,
                                         size_t n_exclude)
{
    struct backend *best = NULL;
    int64_t total = 0;
    for (size_t i = 0; i < p->port.n_backends; i++) {
        struct backend *b = p->backends[i];
        if ((among && !among[i]) || !backend_eligible(b, exclude, n_exclude))
            continue;
        b->rr_current += b->conf.weight;
        total += b->conf.weight;
        if (!best || b->rr_current > best->rr_current)
            best = b;
    }
    if (best)
        best->rr_current -= total;
    return best;
}

/* Fewest active streams relative to weight (a/wa < b/wb, compared as a*wb < b*wa); ties are broken by
 * smooth weighted round robin among the tied backends, as nginx's least_conn does, so equal loads are
 * shared by weight instead of always going to the first. */
static struct backend *backend_pick_least_conn(struct backend_pool *p, struct backend *const *exclude,
                                               size_t n_exclude)
{
    struct backend *best = NULL;
    size_t n_tied = 0;
    bool tied[CONFIG_MAX_BACKENDS] = {false};
    for (size_t i = 0; i < p->port.n_backends && i < CONFIG_MAX_BACKENDS; i++) {
        struct backend *b = p->backends[i];
        if (!backend_eligible(b, exclude, n_exclude))
            continue;
        uint64_t lhs = (uint64_t)b->active * (best ? best->conf.weight : 1);
        uint64_t rhs = best ? (uint64_t)best->active * b->conf.weight : 0;
        if (!best || lhs < rhs) {
            best = b;
            memset(tied, 0, sizeof(tied));
            tied[i] = true;
            n_tied = 1;
        } else if (lhs == rhs) {
            tied[i] = true;
            n_tied++;
        }
    }
    if (n_tied <= 1)
        return best;
    return backend_pick_swrr(p, tied, exclude, n_exclude);
}

/* Weighted rendezvous hashing: every backend gets a pseudo-random score for the circuit, scaled by
 * weight as w / -ln(u) (u uniform in (0,1)), and the highest eligible score wins. A backend's score
 * does not depend on the others, so a backend going away only moves the circuits it had. */
static struct backend *backend_pick_affinity(struct backend_pool *p, uint32_t circuit_id,
                                             struct backend *const *exclude, size_t n_exclude)
{
    struct backend *best = NULL;
    double best_score = 0;
    for (size_t i = 0; i < p->port.n_backends; i++) {
        struct backend *b = p->backends[i];
        if (!backend_eligible(b, exclude, n_exclude))
            continue;
        uint64_t h = backend_mix64(b->hash_key ^ backend_mix64((uint64_t)circuit_id + 0x9e3779b97f4a7c15ULL));
        double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* 53 bits, never 0 or 1 */
        double score = (double)b->conf.weight / -log(u);
        if (!best || score > best_score) {
            best = b;
            best_score = score;
        }
    }
    return best;
}

struct backend *backend_pool_pick(struct backend_pool *p, uint32_t circuit_id, struct backend *const *exclude,
                                  size_t n_exclude)
{
    switch (p->port.balance) {
    case BALANCE_LEAST_CONN:
        return backend_pick_least_conn(p, exclude, n_exclude);
    case BALANCE_CIRCUIT:
        if (circuit_id != 0)
            return backend_pick_affinity(p, circuit_id, exclude, n_exclude);
        return backend_pick_swrr(p, NULL, exclude, n_exclude);
    case BALANCE_ROUND_ROBIN:
        break;
    }
    return backend_pick_swrr(p, NULL, exclude, n_exclude);
}

void backend_stream_start(struct backend *b)
{
    b->active++;
    b->total_streams++;
}

void backend_stream_end(struct backend *b, uint64_t bytes_in, uint64_t bytes_out)
{
    if (b->active > 0)
        b->active--;
    b->bytes_in += bytes_in;
    b->bytes_out += bytes_out;
    if (b->removed && b->active == 0) {
        struct backend_pool *p = b->pool;
        log_info_f(LOG_BACKEND(backend_pool_service(b->pool), b->conf.name),
                   "backend %s: last stream ended, removed from pool %s:%u", b->conf.name, p->service,
                   (unsigned)p->port.virtual_port);
        backend_unlink_removed(p, b);
        free(b);
    }
}

bool backend_pool_is_up(const struct backend_pool *p)
{
    for (size_t i = 0; i < p->port.n_backends; i++)
        if (p->backends[i]->state == BACKEND_UP)
            return true;
    return false;
}

size_t backend_pool_count(const struct backend_pool *p)
{
    return p->port.n_backends;
}

struct backend *backend_pool_get(struct backend_pool *p, size_t i)
{
    return i < p->port.n_backends ? p->backends[i] : NULL;
}

const struct port_conf *backend_pool_port(const struct backend_pool *p)
{
    return &p->port;
}

const char *backend_pool_service(const struct backend_pool *p)
{
    return p->service;
}

/* ---- status and metrics ------------------------------------------------------------------------ */

static json_t *backend_time_json(int64_t t)
{
    return t ? json_integer((json_int_t)t) : json_null();
}

static json_t *backend_to_json(const struct backend *b)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:s, s:o, s:o}",
                     "name", b->conf.name, "address", b->conf.addr.text, "state", backend_state_str(b->state),
                     "weight", (json_int_t)b->conf.weight, "active", (json_int_t)b->active, "total_streams",
                     (json_int_t)b->total_streams, "failed_connects", (json_int_t)b->failed_connects,
                     "bytes_in", (json_int_t)b->bytes_in, "bytes_out", (json_int_t)b->bytes_out, "checks_ok",
                     (json_int_t)b->checks_ok, "checks_failed", (json_int_t)b->checks_failed, "last_result",
                     b->last_check ? json_string(check_result_str(b->last_result)) : json_null(),
                     "last_detail", b->last_detail, "last_check", backend_time_json(b->last_check),
                     "last_change", backend_time_json(b->last_change));
}

json_t *backend_pool_to_json(const struct backend_pool *p)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < p->port.n_backends; i++) {
        if (json_array_append_new(arr, backend_to_json(p->backends[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return json_pack("{s:s, s:i, s:s, s:s, s:b, s:o}", "service", p->service, "virtual_port",
                     (int)p->port.virtual_port, "balance", balance_policy_str(p->port.balance), "health",
                     health_type_str(p->port.health.type), "up", backend_pool_is_up(p), "backends", arr);
}

enum backend_metric {
    BM_UP,
    BM_ACTIVE,
    BM_STREAMS,
    BM_FAILURES,
    BM_BYTES,
    BM_CHECKS,
};

static const struct {
    const char *name;
    enum metrics_type type;
    const char *help;
} backend_metric_families[] = {
    [BM_UP] = {"onionfront_backend_up", METRICS_GAUGE, "1 if the backend takes new streams (up), else 0."},
    [BM_ACTIVE] = {"onionfront_backend_active_streams", METRICS_GAUGE, "Streams currently proxied to the backend."},
    [BM_STREAMS] = {"onionfront_backend_streams_total", METRICS_COUNTER, "Streams given to the backend."},
    [BM_FAILURES] = {"onionfront_backend_connect_failures_total", METRICS_COUNTER,
                     "Failed connections and resets seen on real streams to the backend."},
    [BM_BYTES] = {"onionfront_backend_bytes_total", METRICS_COUNTER,
                  "Bytes proxied: in = read from the backend, out = written to it."},
    [BM_CHECKS] = {"onionfront_backend_checks_total", METRICS_COUNTER, "Active health checks by result."},
};

int backend_pool_metrics(struct backend_pool *const *pools, size_t n, struct metrics *m)
{
    for (size_t f = 0; f < sizeof(backend_metric_families) / sizeof(backend_metric_families[0]); f++) {
        const char *name = backend_metric_families[f].name;
        if (metrics_family(m, name, backend_metric_families[f].type, backend_metric_families[f].help) != 0)
            return -1;
        for (size_t i = 0; i < n; i++) {
            const struct backend_pool *p = pools[i];
            char port[8];
            snprintf(port, sizeof(port), "%u", (unsigned)p->port.virtual_port);
            for (size_t j = 0; j < p->port.n_backends; j++) {
                const struct backend *b = p->backends[j];
                const char *labels[] = {"service", p->service, "port", port, "backend", b->conf.name,
                                        NULL, NULL, NULL};
                int rc = 0;
                switch ((enum backend_metric)f) {
                case BM_UP:
                    rc = metrics_sample(m, name, labels, b->state == BACKEND_UP ? 1 : 0);
                    break;
                case BM_ACTIVE:
                    rc = metrics_sample(m, name, labels, (double)b->active);
                    break;
                case BM_STREAMS:
                    rc = metrics_sample(m, name, labels, (double)b->total_streams);
                    break;
                case BM_FAILURES:
                    rc = metrics_sample(m, name, labels, (double)b->failed_connects);
                    break;
                case BM_BYTES:
                    labels[6] = "direction";
                    labels[7] = "in";
                    rc = metrics_sample(m, name, labels, (double)b->bytes_in);
                    labels[7] = "out";
                    rc |= metrics_sample(m, name, labels, (double)b->bytes_out);
                    break;
                case BM_CHECKS:
                    labels[6] = "result";
                    labels[7] = "ok";
                    rc = metrics_sample(m, name, labels, (double)b->checks_ok);
                    labels[7] = "failed";
                    rc |= metrics_sample(m, name, labels, (double)b->checks_failed);
                    break;
                }
                if (rc != 0)
                    return -1;
            }
        }
    }
    return 0;
}
