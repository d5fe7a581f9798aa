/* report.c — the status socket's documents and the metrics text, from borrowed handles (see report.h). */
#include "sidecar/ops/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/config/config.h"
#include "sidecar/publish/descriptor.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/ops/metrics_http.h"
#include "sidecar/balance/ob_frontend.h"
#include "sidecar/ops/onionloc.h"
#include "sidecar/probe/probe.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/fleet/roll.h"
#include "sidecar/publish/served.h"
#include "sidecar/publish/service.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/ops/status.h"
#include "sidecar/tor/tor.h"
#include "sidecar/tor/torscrape.h"
#include "sidecar/publish/verify.h"
#include "sidecar/core/version.h"
#include "sidecar/fleet/worker.h"

static bool report_tor_usable(enum tor_state ts)
{
    return ts == TOR_CONFIGURING || ts == TOR_BOOTSTRAPPING || ts == TOR_RUNNING;
}

/* Append one formatted problem to the "problems" array of "status". */
static void report_problem(json_t *problems, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report_problem(json_t *problems, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    json_array_append_new(problems, json_string(text));
}

/* The worker that hosts the i-th service: the first listed tor of its mode (for single onions instance 1,
 * the tor "status" always showed), else workers[0]. */
static const struct worker *report_host(const struct report_src *r, size_t i)
{
    const struct service_id *id = service_ids_at(r->ids, i);
    for (size_t k = 0; id && k < r->n_workers; k++)
        if (worker_mode(r->workers[k]) == id->conf->mode)
            return r->workers[k];
    return r->workers[0];
}

/* Which single-onion tor's descriptor of service `id` the HSDirs serve (served.h), into *out; false if
 * those tors do not publish it (an anonymous service, an Onionbalance frontend). The single-onion tors
 * are listed first, in instance order, so tracker k is instance k's. */
static bool report_served(const struct report_src *r, const struct service_id *id, struct served_result *out)
{
    const struct descriptor_tracker *ts[SERVED_TORS_MAX];
    size_t n = 0;
    if (!id || !id->address[0] || id->conf->mode != SERVICE_MODE_SINGLE ||
        id->conf->onionbalance.role == OB_ROLE_FRONTEND)
        return false;
    for (size_t k = 0; k < r->n_workers && n < SERVED_TORS_MAX; k++)
        if (worker_mode(r->workers[k]) == SERVICE_MODE_SINGLE)
            ts[n++] = worker_descriptors(r->workers[k]);
    served_find(ts, n, id->address, out);
    return true;
}

/* onionfront_descriptor_served_by{service,instance}: 1 for the tor whose descriptor HSDirs serve. */
static int report_served_metrics(const struct report_src *r, struct metrics *m)
{
    struct served_result sr;
    if (metrics_family(m, "onionfront_descriptor_served_by", METRICS_GAUGE,
                       "1 for the tor (instance) whose descriptor of the service the HSDirs serve, else 0; all 0 "
                       "while unknown."))
        return -1;
    for (size_t i = 0; i < service_ids_count(r->ids); i++) {
        const struct service_id *id = service_ids_at(r->ids, i);
        if (!report_served(r, id, &sr))
            continue;
        for (size_t k = 0; k < r->n_workers; k++) {
            char inst[16];
            if (worker_mode(r->workers[k]) != SERVICE_MODE_SINGLE)
                continue;
            snprintf(inst, sizeof(inst), "%u", worker_instance(r->workers[k]) + 1);
            if (metrics_sample(m, "onionfront_descriptor_served_by",
                               (const char *const[]){"service", service_id_name(id), "instance", inst, NULL},
                               sr.tor == (int)worker_instance(r->workers[k]) ? 1 : 0))
                return -1;
        }
    }
    return 0;
}

/* How "status" names a worker's tor in a problem: "tor" as always, "anonymous tor" for that one. */
static const char *report_tor_name(const struct worker *w)
{
    return worker_mode(w) == SERVICE_MODE_ANONYMOUS ? "anonymous tor" : "tor";
}

/* The problems of one worker: its tor's state and mode, and each service's upload, HSDirs, probe and
 * verdict through it (a refused service is reported once, by report_status_json). Counts the services with a confirmed upload in *uploaded (if not NULL). */
static void report_worker_problems(const struct report_src *r, const struct worker *w, json_t *problems,
                                   size_t *uploaded)
{
    struct tor_sup *tor = worker_tor(w);
    const struct service_mgr *services = worker_services(w);
    const struct descriptor_tracker *descriptors = worker_descriptors(w);
    const struct verify *verify = worker_verify(w);
    enum tor_state ts = tor_sup_state(tor);
    int boot = tor_sup_bootstrap_progress(tor);
    /* while shutting down, report_status_json says so once instead */
    if (!r->shutting_down && ts == TOR_BOOTSTRAPPING && boot >= 0)
        report_problem(problems, "%s is bootstrapping (%d %%)", report_tor_name(w), boot);
    else if (!r->shutting_down && ts != TOR_RUNNING)
        report_problem(problems, "%s is %s", report_tor_name(w), tor_state_str(ts));
    if (verify_mode_state(verify) == VERIFY_MODE_VIOLATION)
        report_problem(problems, "%s", verify_mode_problem(verify));
    for (size_t i = 0; i < service_mgr_count(services); i++) {
        const char *name = service_mgr_name(services, i), *address = service_mgr_address(services, i);
        struct descriptor_counts dc;
        if (service_id_refusal(service_ids_at(r->ids, i)) || !service_mgr_hosts(services, i))
            continue;
        if (service_ids_at(r->ids, i)->conf->onionbalance.role == OB_ROLE_FRONTEND)
            continue; /* not on the tors: Onionbalance publishes it (ob_frontend_problems) */
        if (!service_mgr_uploaded(services, i)) {
            report_problem(problems, "service %s: no descriptor upload confirmed yet", name);
        } else {
            if (uploaded)
                (*uploaded)++;
            if (descriptor_service_counts(descriptors, address, &dc) == 0 && dc.hsdirs_failed > 0)
                report_problem(problems, "service %s: descriptor upload failed on %u of %u HSDirs", name,
                               dc.hsdirs_failed, dc.hsdirs_total);
            if (descriptor_service_counts(descriptors, address, &dc) == 0 && dc.probe_served == 0)
                report_problem(problems, "service %s: the last fetch probe found its descriptor on no HSDir", name);
        }
        enum verify_verdict v = address[0] ? verify_service_verdict(verify, address) : VERIFY_UNVERIFIED;
        if (verify_verdict_is_violation(v))
            report_problem(problems, "service %s: %s", name, verify_verdict_problem(v));
    }
}

/* The pools without a backend up. */
static void report_pool_problems(const struct report_src *r, json_t *problems)
{
    size_t n_pools = proxy_pools(r->proxy, NULL, 0);
    struct backend_pool **pools = calloc(n_pools ? n_pools : 1, sizeof(*pools));
    if (pools)
        proxy_pools(r->proxy, pools, n_pools);
    for (size_t i = 0; pools && i < n_pools; i++) {
        if (backend_pool_is_up(pools[i]))
            continue;
        report_problem(problems, "service %s port %u: no backend is up", backend_pool_service(pools[i]),
                       (unsigned)backend_pool_port(pools[i])->virtual_port);
    }
    free(pools);
}

/* The services the end-to-end probe finds degraded or down, with the repairs tried. Return whether one
 * is down. */
static bool report_probe_problems(const struct report_src *r, json_t *problems)
{
    bool down = false;
    for (size_t i = 0; r->probe && i < service_ids_count(r->ids); i++) {
        const struct service_id *id = service_ids_at(r->ids, i);
        enum ladder_state st;
        if (!probe_verdict(r->probe, id->address, &st) || st == LADDER_REACHABLE)
            continue;
        json_t *j = probe_service_to_json(r->probe, id->address);
        json_t *last = json_object_get(j, "last"), *repairs = json_object_get(j, "repairs"), *rep;
        char tried[256] = "";
        size_t k, used = 0;
        json_array_foreach(repairs, k, rep) {
            int w = snprintf(tried + used, sizeof(tried) - used, "%s%s at %s", k ? ", " : "; tried ",
                             json_string_value(json_object_get(rep, "step")),
                             json_string_value(json_object_get(rep, "time")));
            if (w < 0 || (size_t)w >= sizeof(tried) - used)
                break;
            used += (size_t)w;
        }
        report_problem(problems, "service %s: %s end to end (last probe: %s: %s)%s", service_id_name(id),
                       ladder_state_str(st), json_string_value(json_object_get(last, "stage")),
                       json_string_value(json_object_get(last, "detail")), tried);
        json_decref(j);
        down = down || st == LADDER_DOWN;
    }
    return down;
}

/* One tor's row: {"instance", "state", "bootstrap_progress", "version", "pid", "restarts",
 * "uptime_seconds", "verdict" ("up", or why not)}. Returns a new reference. */
static json_t *report_tor_json(const struct worker *w)
{
    struct tor_sup *tor = worker_tor(w);
    int boot = tor_sup_bootstrap_progress(tor);
    const char *version = tor_sup_version(tor), *problem = worker_problem(w);
    long pid = tor_sup_pid(tor);
    double up = tor_sup_uptime(tor);
    return json_pack("{s:I, s:s, s:s, s:o, s:o, s:o, s:I, s:o, s:s}", "instance", (json_int_t)worker_instance(w) + 1,
                     "kind", service_mode_str(worker_mode(w)), "state", tor_state_str(tor_sup_state(tor)), "bootstrap_progress",
                     boot >= 0 ? json_integer(boot) : json_null(), "version",
                     version[0] ? json_string(version) : json_null(), "pid", pid > 0 ? json_integer(pid) : json_null(),
                     "restarts", (json_int_t)tor_sup_restarts(tor), "uptime_seconds",
                     up >= 0 ? json_integer((json_int_t)up) : json_null(), "verdict",
                     worker_is_up(w) ? "up" : problem[0] ? problem : tor_state_str(tor_sup_state(tor)));
}

json_t *report_status_json(const struct report_src *r)
{
    const struct worker *w0 = r->workers[0];
    size_t n = service_mgr_count(worker_services(w0)), uploaded = 0;
    bool usable = false;
    json_t *problems = json_array(), *tors = json_array();
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (r->shutting_down)
        report_problem(problems, "onionfront is shutting down");
    for (size_t i = 0; i < service_ids_count(r->ids); i++) {
        const char *refusal = service_id_refusal(service_ids_at(r->ids, i));
        if (refusal) /* whole: it says what to do */
            json_array_append_new(problems, json_string(refusal));
    }
    for (size_t k = 0; k < r->n_workers; k++) {
        bool counts = k == 0 || worker_mode(r->workers[k]) == SERVICE_MODE_ANONYMOUS; /* each service once */
        report_worker_problems(r, r->workers[k], problems, counts ? &uploaded : NULL);
        usable = usable || report_tor_usable(tor_sup_state(worker_tor(r->workers[k])));
        json_array_append_new(tors, report_tor_json(r->workers[k]));
    }
    report_pool_problems(r, problems);
    ob_frontend_problems(r->ob, problems);
    bool probe_down = report_probe_problems(r, problems);
    const char *state = r->shutting_down || !usable || probe_down ? "down"
                        : json_array_size(problems) ? "degraded"
                                                    : "ok";
    /* "tor": the first tor's row (as with one tor), "tors": every tor's. */
    json_t *tor = report_tor_json(w0);
    json_object_del(tor, "instance");
    json_object_del(tor, "kind");
    json_object_del(tor, "uptime_seconds");
    json_object_del(tor, "verdict");
    json_object_set_new(tor, "mode", json_string(tor_mode_str(r->conf->tor.mode)));
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:{s:I, s:I}}", "state", state, "version",
                     ONIONFRONT_VERSION, "pid", (json_int_t)getpid(), "started", (json_int_t)r->started_wall,
                     "uptime_seconds", (json_int_t)(now.tv_sec - r->started.tv_sec), "problems", problems, "tor",
                     tor, "tors", tors, "roll", r->roll ? roll_to_json(r->roll) : json_null(), "services", "total",
                     (json_int_t)n, "uploaded", (json_int_t)uploaded);
}

json_t *report_services_json(const struct report_src *r)
{
    /* Each service as the tor that hosts it sees it (report_host): the first tor of its mode. */
    json_t *arr = service_mgr_to_json(worker_services(r->workers[0])), *svc;
    size_t i;
    for (size_t k = 1; arr && k < r->n_workers; k++) {
        if (worker_mode(r->workers[k]) == worker_mode(r->workers[0]))
            continue;
        json_t *other = service_mgr_to_json(worker_services(r->workers[k]));
        json_array_foreach(other, i, svc)
            if (report_host(r, i) == r->workers[k])
                json_array_set(arr, i, svc);
        json_decref(other);
    }
    json_array_foreach(arr, i, svc) {
        const struct worker *w = report_host(r, i);
        const char *address = service_mgr_address(worker_services(w), i);
        json_t *desc = address[0] ? descriptor_service_to_json(worker_descriptors(w), address) : NULL;
        json_t *ver = address[0] ? verify_service_to_json(worker_verify(w), address) : NULL;
        json_t *probe = address[0] && r->probe ? probe_service_to_json(r->probe, address) : NULL;
        if (desc)
            json_object_set_new(svc, "descriptor", desc);
        /* Whose descriptor the HSDirs serve, with several tors of the same key (served.h). */
        struct served_result sr;
        json_t *served = report_served(r, service_ids_at(r->ids, i), &sr) ? served_to_json(&sr) : NULL;
        json_object_set(svc, "served_by", served ? json_object_get(served, "served_by") : json_null());
        json_object_set_new(svc, "served", served ? served : json_null());
        json_object_set_new(svc, "probe", probe ? probe : json_null());
        json_t *ob = ob_frontend_service_json(r->ob, r->conf, service_mgr_name(worker_services(w), i), address);
        if (ob)
            json_object_set_new(svc, "onionbalance", ob);
        /* tor's own per-service counters (MetricsPort, spawn mode): only what tor exported, else null */
        json_t *tm = address[0] ? torscrape_service_to_json(worker_scrape(w), address) : NULL;
        const struct service_conf *sc = config_find_service(r->conf, service_mgr_name(worker_services(w), i));
        json_object_set_new(svc, "tor_metrics", tm ? tm : json_null());
        json_object_set_new(svc, "pow_enabled", json_boolean(sc && sc->dos.pow_enabled));
        if (ver) {
            json_object_set(svc, "verdict", json_object_get(ver, "verdict"));
            json_object_set_new(svc, "verify", ver);
        }
    }
    return arr;
}

json_t *report_circuits_json(const struct report_src *r)
{
    /* The first tor's, and the anonymous services' tor's under "anonymous" while it runs. */
    json_t *o = verify_to_json(worker_verify(r->workers[0]));
    for (size_t k = 1; o && k < r->n_workers; k++)
        if (worker_mode(r->workers[k]) == SERVICE_MODE_ANONYMOUS)
            json_object_set_new(o, "anonymous", verify_to_json(worker_verify(r->workers[k])));
    return o;
}

json_t *report_backends_json(const struct report_src *r)
{
    json_t *arr = json_array(), *ports = proxy_to_json(r->proxy);
    size_t n = proxy_pools(r->proxy, NULL, 0);
    struct backend_pool **all = calloc(n ? n : 1, sizeof(*all));
    if (!arr || !ports || !all)
        goto fail;
    proxy_pools(r->proxy, all, n);
    for (size_t i = 0; i < n; i++) {
        json_t *o = backend_pool_to_json(all[i]);
        if (!o || json_array_append_new(arr, o) < 0)
            goto fail;
        size_t k;
        json_t *p;
        json_array_foreach(ports, k, p) {
            if (json_is_true(json_object_get(p, "listening")) &&
                strcmp(json_string_value(json_object_get(p, "service")), backend_pool_service(all[i])) == 0 &&
                json_integer_value(json_object_get(p, "virtual_port")) == backend_pool_port(all[i])->virtual_port)
                json_object_set(o, "streams", p);
        }
    }
    free(all);
    json_decref(ports);
    return arr;
fail:
    free(all);
    json_decref(ports);
    json_decref(arr);
    return NULL;
}

/* The tor_hs values of worker `w`'s tor (torscrape.h), for the services it runs. */
static int report_tor_hs_metrics(const struct worker *w, struct metrics *m)
{
    const char *names[CONFIG_MAX_SERVICES], *addrs[CONFIG_MAX_SERVICES];
    size_t n = worker_service_list(w, names, addrs);
    return torscrape_metrics(worker_scrape(w), names, addrs, n, m);
}

char *report_metrics_text(const struct report_src *r)
{
    /* The per-tor families are the first worker's: its families carry no worker label yet. */
    const struct worker *w = r->workers[0];
    struct metrics *m = metrics_new();
    struct status_stats st = {0};
    enum tor_state ts = tor_sup_state(worker_tor(w));
    int boot = tor_sup_bootstrap_progress(worker_tor(w));
    if (r->status)
        status_server_stats(r->status, &st);
    int rc = !m ||
             metrics_family(m, "onionfront_build_info", METRICS_GAUGE, "Always 1; the version in a label.") ||
             metrics_sample(m, "onionfront_build_info", (const char *const[]){"version", ONIONFRONT_VERSION, NULL},
                            1) ||
             metrics_family(m, "onionfront_start_time_seconds", METRICS_GAUGE,
                            "Unix time onionfront started, in seconds.") ||
             metrics_sample(m, "onionfront_start_time_seconds", NULL, (double)r->started_wall) ||
             metrics_family(m, "onionfront_tor_up", METRICS_GAUGE,
                            "1 while onionfront's tor is connected, verified and bootstrapped, else 0.") ||
             metrics_sample(m, "onionfront_tor_up", NULL, ts == TOR_RUNNING ? 1 : 0) ||
             metrics_family(m, "onionfront_tor_bootstrap_progress", METRICS_GAUGE,
                            "tor's bootstrap progress in percent (0-100); no sample while unknown.") ||
             (boot >= 0 && metrics_sample(m, "onionfront_tor_bootstrap_progress", NULL, boot)) ||
             metrics_family(m, "onionfront_tor_restarts_total", METRICS_COUNTER,
                            "Times onionfront restarted its tor or reconnected to it.") ||
             metrics_sample(m, "onionfront_tor_restarts_total", NULL, tor_sup_restarts(worker_tor(w))) ||
             service_mgr_metrics(worker_services(w), m) ||
             metrics_family(m, "onionfront_status_connections_total", METRICS_COUNTER,
                            "Connections to the status socket by outcome.") ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "accepted", NULL}, (double)st.accepted) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "rejected", NULL}, (double)st.rejected) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "over_limit", NULL}, (double)st.over_limit) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "over_uid_limit", NULL}, (double)st.over_uid_limit);
    if (!rc) {
        size_t n = proxy_pools(r->proxy, NULL, 0);
        struct backend_pool **pools = calloc(n ? n : 1, sizeof(*pools));
        if (pools)
            proxy_pools(r->proxy, pools, n);
        rc = !pools || backend_pool_metrics(pools, n, m) < 0;
        free(pools);
    }
    rc = rc || proxy_metrics(r->proxy, m) < 0 || metrics_http_metrics(r->metrics_http, m) < 0 ||
         descriptor_metrics(worker_descriptors(w), m) < 0 || report_tor_hs_metrics(w, m) < 0 ||
         verify_metrics(worker_verify(w), m) < 0 || (r->probe && probe_metrics(r->probe, m) < 0) ||
         (r->roll && roll_metrics(r->roll, m) < 0) || ob_frontend_metrics(r->ob, m) < 0 ||
         report_served_metrics(r, m) < 0;
    /* A module with families of its own adds its *_metrics call here. */
    char *text = rc ? NULL : strdup(metrics_text(m, NULL));
    if (!text)
        log_error("metrics: cannot build the metrics text (a family twice, or out of memory)");
    metrics_free(m);
    return text;
}

size_t report_reachability(const struct report_src *r, struct onionloc_entry *out, size_t cap, size_t *reachable)
{
    size_t n = 0;
    *reachable = 0;
    for (const struct service_id *id; n < cap && (id = service_ids_at(r->ids, n)); n++) {
        /* The end-to-end probe's verdict once it has one (advertised unless down), else the descriptor's;
         * never for a service whose single-onion verdict failed. */
        enum ladder_state st;
        bool running = false;
        for (size_t k = 0; k < r->n_workers; k++)
            running = running || tor_sup_state(worker_tor(r->workers[k])) == TOR_RUNNING;
        /* An Onionbalance frontend is on no tor: its master descriptor is published while Onionbalance's
         * uploads are confirmed within the deadline (ob_frontend.h). */
        bool published = id->conf->onionbalance.role == OB_ROLE_FRONTEND
                             ? ob_frontend_state(r->ob) == OB_FE_PUBLISHING
                             : workers_service_reachable(r->workers, r->n_workers, id->address);
        bool up = r->probe && probe_verdict(r->probe, id->address, &st)
                      ? st != LADDER_DOWN && running /* a lost tor withdraws it at once, as before */
                      : published;
        up = up && !r->shutting_down && id->address[0] &&
             !verify_verdict_is_violation(verify_service_verdict(worker_verify(report_host(r, n)), id->address));
        /* Advertised only where the service asks for it (services[].onion_location). */
        out[n] = (struct onionloc_entry){id->conf, id->address, up && id->conf->onion_location};
        *reachable += up;
    }
    return n;
}

void report_status_line(const struct report_src *r, size_t reachable, char *out, size_t len)
{
    const struct worker *w = r->workers[0];
    enum tor_state ts = tor_sup_state(worker_tor(w));
    int boot = tor_sup_bootstrap_progress(worker_tor(w));
    if (r->shutting_down)
        snprintf(out, len, "stopping: removing the services from tor");
    else if (ts == TOR_RUNNING)
        snprintf(out, len, "running: %zu of %zu services reachable", reachable,
                 service_mgr_count(worker_services(w)));
    else if (ts == TOR_BOOTSTRAPPING)
        snprintf(out, len, "tor bootstrapping (%d%%); services handed to tor", boot < 0 ? 0 : boot);
    else if (worker_problem(w)[0])
        snprintf(out, len, "tor %s: %s", tor_state_str(ts), worker_problem(w));
    else
        snprintf(out, len, "tor %s", tor_state_str(ts));
}
