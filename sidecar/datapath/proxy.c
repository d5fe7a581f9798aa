/* proxy.c — the data path between tor's HiddenServicePort unix sockets and the backend pools (see
 * proxy.h for the rules): the proxy's life (new, update on reload, free, the test switches) and the
 * per-port counters as JSON and metrics.
 *
 * The files under it, over the private proxy_int.h, each calling only the ones below it: the listeners,
 * the stream cap and tor's PROXY line (proxy_listen.c), a stream's connect, copy and close state machine
 * (proxy_stream.c), the move to splice and back (proxy_splice.c), the circuit records and limits
 * (proxy_circ.c). The pools' choices and health bookkeeping stay in backend.c. */
#include "sidecar/datapath/proxy.h"
#include "sidecar/datapath/proxy_int.h"

#include <event2/dns.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/splice_pump.h"

static struct proxy_port *proxy_find_port(struct proxy *px, const char *service, uint16_t virtual_port)
{
    for (struct proxy_port *pp = px->ports; pp; pp = pp->next)
        if (!pp->removed && pp->virtual_port == virtual_port && strcmp(pp->service, service) == 0)
            return pp;
    return NULL;
}

/* ---- public ---- */

struct proxy *proxy_new(struct event_base *base, const struct config *conf, const struct proxy_hooks *hooks,
                        char *err, size_t errlen)
{
    struct proxy *px = calloc(1, sizeof(*px));
    char dir[CONFIG_RUN_DIR_MAX + 16];
    if (!px) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    px->base = base;
    if (hooks)
        px->hooks = *hooks;
    px->header_timeout_ms = PROXY_HEADER_TIMEOUT_MS;
    px->fin_timeout_ms = PROXY_FIN_TIMEOUT_MS;
    const char *sp = getenv("ONIONFRONT_SPLICE");
    px->splice_on = !(sp && strcmp(sp, "0") == 0) && splice_pump_supported();
    px->splice_min = PROXY_SPLICE_MIN;
    log_debug("proxy: splice %s", px->splice_on ? "on" : sp && strcmp(sp, "0") == 0 ? "off (ONIONFRONT_SPLICE=0)"
                                                                                    : "not supported here");
    proxy_set_stream_cap(px, conf);
    if (strlen(conf->run_dir) > CONFIG_RUN_DIR_MAX) {
        snprintf(err, errlen, "run_dir is longer than %d bytes", CONFIG_RUN_DIR_MAX);
        free(px);
        return NULL;
    }
    snprintf(px->run_dir, sizeof(px->run_dir), "%s", conf->run_dir);
    snprintf(dir, sizeof(dir), "%s/proxy", px->run_dir);
    if (fs_ensure_private_dir(px->run_dir, NULL, err, errlen) < 0 ||
        fs_ensure_private_dir(dir, NULL, err, errlen) < 0) {
        free(px);
        return NULL;
    }
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        for (size_t j = 0; j < svc->n_ports; j++) {
            struct proxy_port *pp = proxy_port_new(px, svc, &svc->ports[j], err, errlen);
            if (!pp) {
                proxy_free(px);
                return NULL;
            }
            pp->next = px->ports;
            px->ports = pp;
            if (px->hooks.pool_added)
                px->hooks.pool_added(pp->pool, px->hooks.arg);
        }
    }
    return px;
}

int proxy_update(struct proxy *px, const struct config *conf, char *err, size_t errlen)
{
    struct proxy_port *fresh = NULL;
    for (struct proxy_port *pp = px->ports; pp; pp = pp->next)
        pp->seen = false;
    /* 1. New listeners, kept aside until everything else worked. */
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        for (size_t j = 0; j < svc->n_ports; j++) {
            struct proxy_port *old = proxy_find_port(px, svc->name, svc->ports[j].virtual_port);
            if (old) {
                old->seen = true;
                continue;
            }
            struct proxy_port *pp = proxy_port_new(px, svc, &svc->ports[j], err, errlen);
            if (!pp)
                goto rollback;
            pp->seen = true;
            pp->next = fresh;
            fresh = pp;
        }
    }
    /* 2. Pools that stay. */
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_conf *svc = &conf->services[i];
        for (size_t j = 0; j < svc->n_ports; j++) {
            struct proxy_port *pp = proxy_find_port(px, svc->name, svc->ports[j].virtual_port);
            char perr[256];
            if (!pp || backend_pool_update(pp->pool, &svc->ports[j], perr, sizeof(perr)) == 0)
                continue;
            snprintf(err, errlen, "service %s: port %u: %s", svc->name, (unsigned)svc->ports[j].virtual_port, perr);
            goto rollback;
        }
    }
    for (struct proxy_port *pp = px->ports; pp; pp = pp->next)
        if (pp->seen && px->hooks.pool_updated)
            px->hooks.pool_updated(pp->pool, px->hooks.arg);
    /* 3. Ports that are gone: stop listening, let their streams finish. */
    for (struct proxy_port *pp = px->ports, *next; pp; pp = next) {
        next = pp->next;
        if (pp->seen || pp->removed)
            continue;
        log_info("proxy %s: port removed; %u open stream%s continue", pp->label, pp->streams_active,
                 pp->streams_active == 1 ? "" : "s");
        pp->removed = true;
        proxy_port_unlisten(pp);
        if (px->hooks.pool_removed)
            px->hooks.pool_removed(pp->pool, px->hooks.arg);
        if (!pp->streams)
            proxy_port_destroy(pp);
    }
    proxy_set_stream_cap(px, conf);
    /* 4. The new ports join. */
    while (fresh) {
        struct proxy_port *pp = fresh;
        fresh = pp->next;
        pp->next = px->ports;
        px->ports = pp;
        log_info("proxy %s: listening on %s", pp->label, pp->path);
        if (px->hooks.pool_added)
            px->hooks.pool_added(pp->pool, px->hooks.arg);
    }
    return 0;
rollback:
    while (fresh) {
        struct proxy_port *pp = fresh;
        fresh = pp->next;
        proxy_port_unlisten(pp);
        backend_pool_free(pp->pool);
        free(pp);
    }
    return -1;
}

void proxy_free(struct proxy *px)
{
    if (!px)
        return;
    while (px->ports) {
        struct proxy_port *pp = px->ports;
        if (!pp->removed && px->hooks.pool_removed)
            px->hooks.pool_removed(pp->pool, px->hooks.arg);
        proxy_port_destroy(pp); /* unlinks it */
    }
    if (px->dns)
        evdns_base_free(px->dns, 1);
    free(px);
}

void proxy_set_timeouts(struct proxy *px, unsigned header_ms, unsigned fin_ms)
{
    px->header_timeout_ms = header_ms;
    px->fin_timeout_ms = fin_ms;
}

void proxy_set_splice(struct proxy *px, bool on, size_t min_bytes)
{
    px->splice_on = on && splice_pump_supported();
    px->splice_min = min_bytes;
}

struct backend_pool *proxy_find_pool(struct proxy *px, const char *service, uint16_t virtual_port)
{
    struct proxy_port *pp = proxy_find_port(px, service, virtual_port);
    return pp ? pp->pool : NULL;
}

size_t proxy_pools(struct proxy *px, struct backend_pool **out, size_t max)
{
    size_t n = 0;
    for (struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next) {
        if (pp->removed)
            continue;
        if (n < max)
            out[n] = pp->pool;
        n++;
    }
    return n;
}

void proxy_set_stream_end_cb(struct proxy *px, proxy_stream_end_cb cb, void *arg)
{
    px->stream_end_cb = cb;
    px->stream_end_arg = arg;
}

unsigned proxy_streams_from_pid(const struct proxy *px, long pid)
{
    unsigned n = 0;
    if (pid <= 0)
        return 0;
    /* A walk over the open streams (removed ports too): bounded by limits.max_open_streams, and asked
     * only while a rolling restart drains a tor. */
    for (const struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next)
        for (const struct proxy_stream *s = pp->streams; s; s = s->next)
            n += s->peer_pid == pid && s->state != STREAM_CLOSED && !s->eof[SIDE_CLIENT];
    return n;
}


static size_t proxy_port_buffered(const struct proxy_port *pp)
{
    size_t n = 0;
    for (const struct proxy_stream *s = pp->streams; s; s = s->next)
        n += proxy_stream_buffered(s);
    return n;
}

json_t *proxy_to_json(const struct proxy *px)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (const struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next) {
        size_t buffered = proxy_port_buffered(pp);
        json_t *o = json_pack("{s:s, s:i, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                              "service",
                              pp->service, "virtual_port", (int)pp->virtual_port, "socket", pp->path, "listening",
                              !pp->removed, "streams_active", (json_int_t)pp->streams_active, "streams_total",
                              (json_int_t)pp->streams_total, "circuits_active", (json_int_t)pp->circuits,
                              "rejected_header", (json_int_t)pp->rejected_header, "rejected_circuit_limit",
                              (json_int_t)pp->rejected_circuit_limit, "rejected_no_backend",
                              (json_int_t)pp->rejected_no_backend, "rejected_stream_limit",
                              (json_int_t)pp->rejected_stream_limit, "rejected_circuit_rate",
                              (json_int_t)pp->rejected_circuit_rate, "closed_idle", (json_int_t)pp->closed_idle,
                              "connect_failures", (json_int_t)pp->connect_failures,
                              "bytes_to_backend", (json_int_t)pp->bytes_to_backend, "bytes_to_tor",
                              (json_int_t)pp->bytes_to_tor, "buffered_bytes", (json_int_t)buffered, "streams_spliced",
                              (json_int_t)pp->streams_spliced);
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

enum proxy_metric {
    PM_STREAMS,
    PM_ACTIVE,
    PM_CIRCUITS,
    PM_REJECTED,
    PM_FAILURES,
    PM_BYTES,
    PM_BUFFERED,
    PM_IDLE,
};

static const struct {
    const char *name;
    enum metrics_type type;
    const char *help;
} proxy_metric_families[] = {
    [PM_STREAMS] = {"onionfront_proxy_streams_total", METRICS_COUNTER,
                    "Streams tor handed to the port, including those rejected."},
    [PM_ACTIVE] = {"onionfront_proxy_active_streams", METRICS_GAUGE,
                   "Streams open on the port (reading tor's PROXY line, connecting or copying)."},
    [PM_CIRCUITS] = {"onionfront_proxy_active_circuits", METRICS_GAUGE,
                     "Circuits with at least one stream open on the port."},
    [PM_REJECTED] = {"onionfront_proxy_rejected_streams_total", METRICS_COUNTER,
                     "Streams closed before any backend was tried: header = no valid PROXY line in time, "
                     "circuit_limit = max_streams_per_circuit reached, circuit_rate = the circuit opened "
                     "streams faster than circuit_stream_rate, no_backend = no backend up, "
                     "stream_limit = limits.max_open_streams reached (over all ports)."},
    [PM_FAILURES] = {"onionfront_proxy_connect_failures_total", METRICS_COUNTER,
                     "Failed connection attempts to backends; each is retried on another usable backend, "
                     "and a stream with none left is closed."},
    [PM_BYTES] = {"onionfront_proxy_bytes_total", METRICS_COUNTER,
                  "Bytes read from one side to be copied to the other, counted while streams run."},
    [PM_BUFFERED] = {"onionfront_proxy_buffered_bytes", METRICS_GAUGE,
                     "Bytes held in the port's stream buffers, both directions."},
    [PM_IDLE] = {"onionfront_proxy_idle_closed_total", METRICS_COUNTER,
                 "Streams closed after idle_timeout without a byte either way."},
};

/* One sample with the port's labels and, when `key` is not NULL, one more label. */
static int proxy_metric_sample(struct metrics *m, const char *name, const char **labels, const char *key,
                               const char *value, double v)
{
    labels[4] = key;
    labels[5] = value;
    return metrics_sample(m, name, labels, v);
}

int proxy_metrics(const struct proxy *px, struct metrics *m)
{
    for (size_t f = 0; f < sizeof(proxy_metric_families) / sizeof(proxy_metric_families[0]); f++) {
        const char *name = proxy_metric_families[f].name;
        if (metrics_family(m, name, proxy_metric_families[f].type, proxy_metric_families[f].help) != 0)
            return -1;
        /* Live ports only: a removed port that still drains may share its service and port with a port
         * added again since, and a series must not appear twice. */
        for (const struct proxy_port *pp = px ? px->ports : NULL; pp; pp = pp->next) {
            if (pp->removed)
                continue;
            char port[8];
            snprintf(port, sizeof(port), "%u", (unsigned)pp->virtual_port);
            const char *labels[] = {"service", pp->service, "port", port, NULL, NULL, NULL};
            int rc = 0;
            switch ((enum proxy_metric)f) {
            case PM_STREAMS:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->streams_total);
                break;
            case PM_ACTIVE:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->streams_active);
                break;
            case PM_CIRCUITS:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->circuits);
                break;
            case PM_REJECTED:
                rc = proxy_metric_sample(m, name, labels, "reason", "header", (double)pp->rejected_header) ||
                     proxy_metric_sample(m, name, labels, "reason", "circuit_limit",
                                         (double)pp->rejected_circuit_limit) ||
                     proxy_metric_sample(m, name, labels, "reason", "no_backend", (double)pp->rejected_no_backend) ||
                     proxy_metric_sample(m, name, labels, "reason", "stream_limit", (double)pp->rejected_stream_limit) ||
                     proxy_metric_sample(m, name, labels, "reason", "circuit_rate", (double)pp->rejected_circuit_rate);
                break;
            case PM_IDLE:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->closed_idle);
                break;
            case PM_FAILURES:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)pp->connect_failures);
                break;
            case PM_BYTES:
                rc = proxy_metric_sample(m, name, labels, "direction", "to_backend", (double)pp->bytes_to_backend) ||
                     proxy_metric_sample(m, name, labels, "direction", "to_tor", (double)pp->bytes_to_tor);
                break;
            case PM_BUFFERED:
                rc = proxy_metric_sample(m, name, labels, NULL, NULL, (double)proxy_port_buffered(pp));
                break;
            }
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}
