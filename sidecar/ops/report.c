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
#include "sidecar/identity/service_id.h"
#include "sidecar/ops/status.h"
#include "sidecar/tor/tor.h"
#include "sidecar/core/version.h"
#include "sidecar/fleet/worker.h"
#include "sidecar/fleet/workerset.h"
#include "sidecar/identity/instance.h"

/* A tor on its way up: started, being configured, or bootstrapping. */
static bool report_tor_coming_up(enum tor_state ts)
{
    return ts == TOR_STARTING || ts == TOR_CONFIGURING || ts == TOR_BOOTSTRAPPING;
}

/* Start-up is not an alarm, and a tor that never bootstraps is: within tor.bootstrap_timeout of
 * onionfront's start (`late` false) a tor coming up is usable and only "starting"; past it only a
 * bootstrapped tor serves anything (tor.c gives up on a bootstrap at that deadline and starts tor
 * again, so a tor that cannot bootstrap would otherwise look merely degraded for ever). */
static bool report_tor_usable(enum tor_state ts, bool late)
{
    return ts == TOR_RUNNING || (!late && report_tor_coming_up(ts));
}

/* Is onionfront past its start-up window (tor.bootstrap_timeout since it started)? */
static bool report_past_startup(const struct report_src *r, const struct timespec *now)
{
    return now->tv_sec - r->started.tv_sec >= (time_t)r->conf->tor.bootstrap_timeout;
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

/* The worker that hosts the i-th service: the first listed tor that hosts it (for single onions on every
 * tor instance 1, the tor "status" always showed; with tor.tors_per_service the first of its tors), else
 * the first of its mode, else workers[0]. */
static const struct worker *report_host(const struct report_src *r, size_t i)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    const struct service_id *id = service_ids_at(r->ids, i);
    const struct worker *of_mode = NULL;
    for (size_t k = 0; id && k < n_workers; k++) {
        if (worker_mode(workers[k]) != id->conf->mode)
            continue;
        if (worker_hosts(workers[k], i))
            return workers[k];
        if (!of_mode)
            of_mode = workers[k];
    }
    return of_mode ? of_mode : workers[0];
}

/* Which single-onion tor's descriptor of service `id` the HSDirs serve, as the copies they hand out say
 * (workerset_served), into *out; false if those tors do not publish it. */
static bool report_served(const struct report_src *r, const struct service_id *id, struct served_result *out)
{
    return id && workerset_served(r->workerset, id->address, SERVED_BASIS_FETCHED, out);
}

/* onionfront_descriptor_served_by{service,instance}: 1 for the tor whose descriptor HSDirs serve. */
static int report_served_metrics(const struct report_src *r, struct metrics *m)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    struct served_result sr;
    if (metrics_family(m, "onionfront_descriptor_served_by", METRICS_GAUGE,
                       "1 for the tor (instance) whose descriptor of the service the HSDirs serve, else 0; all 0 "
                       "while unknown."))
        return -1;
    for (size_t i = 0; i < service_ids_count(r->ids); i++) {
        const struct service_id *id = service_ids_at(r->ids, i);
        if (!report_served(r, id, &sr))
            continue;
        for (size_t k = 0; k < n_workers; k++) {
            char inst[16];
            if (worker_mode(workers[k]) != SERVICE_MODE_SINGLE || !worker_hosts(workers[k], i))
                continue; /* not its tor (tor.tors_per_service) */
            snprintf(inst, sizeof(inst), "%u", worker_instance(workers[k]) + 1);
            if (metrics_sample(m, "onionfront_descriptor_served_by",
                               (const char *const[]){"service", service_id_name(id), "instance", inst, NULL},
                               sr.tor == (int)worker_instance(workers[k]) ? 1 : 0))
                return -1;
        }
    }
    return 0;
}

/* A worker's tor as the instance label and status rows name it: "1", "2", ... or "anonymous". */
static const char *report_instance_label(const struct worker *w, char *buf, size_t len)
{
    if (worker_mode(w) == SERVICE_MODE_ANONYMOUS)
        return "anonymous";
    snprintf(buf, len, "%u", worker_instance(w) + 1);
    return buf;
}

/* How "status" names a worker's tor in a problem: "tor" as always, "anonymous tor" for that one. */
static const char *report_tor_name(const struct worker *w)
{
    return worker_mode(w) == SERVICE_MODE_ANONYMOUS ? "anonymous tor" : "tor";
}

/* The problems of one worker: its tor's state and mode, and each service's upload, HSDirs, probe and
 * verdict through it (a refused service is reported once, by report_status_json). A service another of
 * its tors has uploaded is not missing an upload here: this tor stands by (workerset_service_uploaded).
 * Counts in *startup the problems that only say it is still starting (its tor coming up, a service's first
 * upload not confirmed yet). `late`: past the start-up window, where a tor that is not bootstrapped says so. */
static void report_worker_problems(const struct report_src *r, const struct worker *w, bool late,
                                   json_t *problems, size_t *startup)
{
    enum tor_state ts = worker_tor_state(w);
    int boot = worker_bootstrap_progress(w);
    const char *violation = worker_mode_violation(w);
    bool coming_up = report_tor_coming_up(ts);
    /* while shutting down, report_status_json says so once instead */
    char pct[16] = "";
    if (boot >= 0)
        snprintf(pct, sizeof(pct), " (%d %%)", boot);
    if (!r->shutting_down && coming_up && late)
        report_problem(problems, "%s is %s%s, not bootstrapped within tor.bootstrap_timeout (%u s) of the start",
                       report_tor_name(w), tor_state_str(ts), pct, r->conf->tor.bootstrap_timeout);
    else if (!r->shutting_down && ts == TOR_BOOTSTRAPPING && boot >= 0)
        report_problem(problems, "%s is bootstrapping%s", report_tor_name(w), pct);
    else if (!r->shutting_down && ts != TOR_RUNNING)
        report_problem(problems, "%s is %s", report_tor_name(w), tor_state_str(ts));
    if (!r->shutting_down && coming_up)
        (*startup)++;
    if (violation)
        report_problem(problems, "%s", violation);
    for (size_t i = 0; i < worker_service_count(w); i++) {
        const char *name = worker_service_name(w, i), *address = worker_service_address(w, i);
        struct descriptor_counts dc;
        if (service_id_refusal(service_ids_at(r->ids, i)) || !worker_hosts(w, i))
            continue;
        if (service_ids_at(r->ids, i)->conf->onionbalance.role == OB_ROLE_FRONTEND)
            continue; /* not on the tors: Onionbalance publishes it (ob_frontend_problems) */
        if (!worker_service_uploaded(w, i)) {
            if (!workerset_service_uploaded(r->workerset, i)) {
                report_problem(problems, "service %s: no descriptor upload confirmed yet", name);
                (*startup)++;
            }
        } else {
            if (worker_service_counts(w, address, &dc) == 0 && dc.hsdirs_failed > 0)
                report_problem(problems, "service %s: descriptor upload failed on %u of %u HSDirs", name,
                               dc.hsdirs_failed, dc.hsdirs_total);
            if (worker_service_counts(w, address, &dc) == 0 && dc.probe_served == 0)
                report_problem(problems, "service %s: the last fetch probe found its descriptor on no HSDir", name);
        }
        const char *bad = worker_service_violation(w, address);
        if (bad)
            report_problem(problems, "service %s: %s", name, bad);
    }
}

/* Into `out`: the backends of `pool` that are down, each with its last result ("web2 (connect refused:
 * Connection refused), web3 (HTTP status: HTTP 503)"); drained ones are not down, they were taken out
 * on purpose. Return how many are down; *up how many are up. */
static size_t report_pool_down(struct backend_pool *pool, size_t *up, char *out, size_t outlen)
{
    size_t down = 0, used = 0;
    *up = 0;
    out[0] = '\0';
    for (size_t k = 0; k < backend_pool_count(pool); k++) {
        const struct backend *b = backend_pool_get(pool, k);
        *up += b->state == BACKEND_UP;
        if (b->state != BACKEND_DOWN)
            continue;
        bool ok = b->last_result == CHECK_OK; /* down, the last check passed: not yet `rise` in a row */
        int w = snprintf(out + used, outlen - used, "%s%s (%s%s%s)", down ? ", " : "", b->conf.name,
                         ok ? "recovering" : check_result_str(b->last_result),
                         !ok && b->last_detail[0] ? ": " : "", ok ? "" : b->last_detail);
        down++;
        if (w > 0)
            used = (size_t)w < outlen - used ? used + (size_t)w : outlen - 1;
    }
    return down;
}

/* The pools without a backend up, and those with some backends down (degraded: fewer backends carry
 * the load, and one more failure is an outage), naming them. */
static void report_pool_problems(const struct report_src *r, json_t *problems)
{
    size_t n_pools = proxy_pools(r->proxy, NULL, 0);
    struct backend_pool **pools = calloc(n_pools ? n_pools : 1, sizeof(*pools));
    if (pools)
        proxy_pools(r->proxy, pools, n_pools);
    for (size_t i = 0; pools && i < n_pools; i++) {
        const char *svc = backend_pool_service(pools[i]);
        unsigned vport = (unsigned)backend_pool_port(pools[i])->virtual_port;
        char down[400];
        size_t up, n_down = report_pool_down(pools[i], &up, down, sizeof(down));
        if (!backend_pool_is_up(pools[i]))
            report_problem(problems, "service %s port %u: no backend is up", svc, vport);
        else if (n_down > 0)
            report_problem(problems, "service %s port %u: %zu of %zu backends up; down: %s", svc, vport, up,
                           backend_pool_count(pools[i]), down);
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

json_t *report_status_json(const struct report_src *r)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    const struct worker *w0 = workers[0];
    size_t n = worker_service_count(w0), uploaded = 0, startup = 0;
    bool usable = false;
    json_t *problems = json_array(), *tors = json_array();
    const struct roll *roll = workerset_roll(r->workerset);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    bool late = report_past_startup(r, &now);
    if (r->shutting_down)
        report_problem(problems, "onionfront is shutting down");
    for (size_t i = 0; i < service_ids_count(r->ids); i++) {
        const char *refusal = service_id_refusal(service_ids_at(r->ids, i));
        if (refusal) /* whole: it says what to do */
            json_array_append_new(problems, json_string(refusal));
    }
    for (size_t i = 0; i < service_ids_count(r->ids); i++) {
        const struct service_id *id = service_ids_at(r->ids, i);
        if (!service_id_refusal(id) && id->conf->onionbalance.role != OB_ROLE_FRONTEND &&
            workerset_service_uploaded(r->workerset, i))
            uploaded++; /* once each, whichever of its tors uploaded it */
    }
    for (size_t k = 0; k < n_workers; k++) {
        report_worker_problems(r, workers[k], late, problems, &startup);
        usable = usable || report_tor_usable(worker_tor_state(workers[k]), late);
        json_array_append_new(tors, worker_tor_to_json(workers[k]));
    }
    report_pool_problems(r, problems);
    ob_frontend_problems(r->ob, problems);
    bool probe_down = report_probe_problems(r, problems);
    static const char *const tls_levels[] = {"ok", "warning", "critical"};
    int tls = r->probe ? probe_tls_problems(r->probe, problems) : 0; /* the check's TLS verdict (certwatch.h) */
    /* "starting" when every problem is one of start-up, within its window (report_tor_usable). */
    const char *state = r->shutting_down || !usable || probe_down     ? "down"
                        : json_array_size(problems) == 0               ? "ok"
                        : !late && json_array_size(problems) == startup ? "starting"
                                                                        : "degraded";
    /* "tor": the first tor's row (as with one tor), "tors": every tor's. */
    json_t *tor = worker_tor_to_json(w0);
    json_object_del(tor, "instance");
    json_object_del(tor, "kind");
    json_object_del(tor, "uptime_seconds");
    json_object_del(tor, "verdict");
    json_object_set_new(tor, "mode", json_string(tor_mode_str(r->conf->tor.mode)));
    json_t *st = json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:{s:I, s:I}}", "state", state, "version",
                     ONIONFRONT_VERSION, "pid", (json_int_t)getpid(), "started", (json_int_t)r->started_wall,
                     "uptime_seconds", (json_int_t)(now.tv_sec - r->started.tv_sec), "problems", problems, "tor",
                     tor, "tors", tors, "roll", roll ? roll_to_json(roll) : json_null(), "services", "total",
                     (json_int_t)n, "uploaded", (json_int_t)uploaded);
    json_object_set_new(st, "certificates", json_string(tls_levels[tls >= 0 && tls <= 2 ? tls : 0]));
    return st;
}

/* The services; without `detail`, each descriptor's and the served copies' per-HSDir lists are left
 * out (their counts stay): they grow with HSDirs x services. */
static json_t *report_services(const struct report_src *r, bool detail)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    /* Each service as the tor that hosts it sees it (report_host): the first tor of its mode that hosts
     * it. */
    json_t *arr = worker_services_to_json(workers[0]), *svc;
    size_t i;
    for (size_t k = 1; arr && k < n_workers; k++) {
        bool hosts_some = false;
        for (i = 0; i < service_ids_count(r->ids) && !hosts_some; i++)
            hosts_some = report_host(r, i) == workers[k];
        if (!hosts_some)
            continue; /* every tor hosts every service: tor 1 shows them all */
        json_t *other = worker_services_to_json(workers[k]);
        json_array_foreach(other, i, svc)
            if (report_host(r, i) == workers[k])
                json_array_set(arr, i, svc);
        json_decref(other);
    }
    json_array_foreach(arr, i, svc) {
        const struct worker *w = report_host(r, i);
        const char *address = worker_service_address(w, i);
        json_t *desc = address[0] ? worker_service_descriptor_json(w, address) : NULL;
        json_t *ver = address[0] ? worker_service_verify_json(w, address) : NULL;
        json_t *probe = address[0] && r->probe ? probe_service_to_json(r->probe, address) : NULL;
        size_t k;
        json_t *d;
        json_array_foreach(detail ? NULL : json_object_get(desc, "descriptors"), k, d)
            json_object_del(d, "hsdirs");
        if (desc)
            json_object_set_new(svc, "descriptor", desc);
        /* Whose descriptor the HSDirs serve, with several tors of the same key (served.h). */
        struct served_result sr;
        json_t *served = report_served(r, service_ids_at(r->ids, i), &sr) ? served_to_json(&sr) : NULL;
        if (served && !detail)
            json_object_del(served, "hsdirs");
        json_object_set(svc, "served_by", served ? json_object_get(served, "served_by") : json_null());
        json_object_set_new(svc, "served", served ? served : json_null());
        json_object_set_new(svc, "probe", probe ? probe : json_null());
        json_t *ob = ob_frontend_service_json(r->ob, r->conf, worker_service_name(w, i), address);
        if (ob)
            json_object_set_new(svc, "onionbalance", ob);
        /* tor's own per-service counters (MetricsPort, spawn mode): only what tor exported, else null;
         * "tor_metrics" over every tor of the service's kind (summed), "tor_metrics_by_tor" each one's. */
        const struct worker *kind[INSTANCE_MAX + 1];
        size_t n_kind = 0;
        json_t *by_tor = json_array();
        for (size_t t = 0; address[0] && t < n_workers && n_kind < INSTANCE_MAX + 1; t++) {
            if (worker_mode(workers[t]) != worker_mode(w))
                continue;
            kind[n_kind++] = workers[t];
            json_t *one = worker_tor_service_json(workers[t], address);
            if (one) /* the tor's number as in "tors" */
                json_object_set_new(one, "instance", json_integer(worker_instance(workers[t]) + 1));
            if (one)
                json_array_append_new(by_tor, one);
        }
        json_t *tm = n_kind ? workers_tor_service_sum_json(kind, n_kind, address) : NULL;
        json_object_set_new(svc, "tor_metrics_by_tor", by_tor ? by_tor : json_null());
        const struct service_conf *sc = config_find_service(r->conf, worker_service_name(w, i));
        json_object_set_new(svc, "tor_metrics", tm ? tm : json_null());
        json_object_set_new(svc, "pow_enabled", json_boolean(sc && sc->dos.pow_enabled));
        if (ver) {
            json_object_set(svc, "verdict", json_object_get(ver, "verdict"));
            json_object_set_new(svc, "verify", ver);
        }
    }
    return arr;
}

json_t *report_services_json(const struct report_src *r)
{
    return report_services(r, false);
}

json_t *report_services_detail_json(const struct report_src *r)
{
    return report_services(r, true);
}

json_t *report_circuits_json(const struct report_src *r)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    /* The first tor's, and the anonymous services' tor's under "anonymous" while it runs. */
    json_t *o = worker_circuits_to_json(workers[0]);
    for (size_t k = 1; o && k < n_workers; k++)
        if (worker_mode(workers[k]) == SERVICE_MODE_ANONYMOUS)
            json_object_set_new(o, "anonymous", worker_circuits_to_json(workers[k]));
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

/* The tor_hs values of every tor (torscrape.h), labelled by instance, for the services each one lists. */
static int report_tor_hs_metrics(const struct report_src *r, struct metrics *m)
{
    size_t n_workers, all = service_ids_count(r->ids);
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    const char **names = calloc(all ? all : 1, sizeof(*names)), **addrs = calloc(all ? all : 1, sizeof(*addrs));
    const char *inst[INSTANCE_MAX + 1];
    const struct worker *tors[INSTANCE_MAX + 1];
    char bufs[INSTANCE_MAX + 1][16];
    size_t n = 0, n_tors = 0;
    int rc = -1;
    if (!names || !addrs)
        goto out;
    for (size_t i = 0; i < all; i++) {
        const struct service_id *id = service_ids_at(r->ids, i);
        if (!id->address[0])
            continue;
        names[n] = service_id_name(id);
        addrs[n++] = id->address;
    }
    for (size_t k = 0; k < n_workers && n_tors < INSTANCE_MAX + 1; k++, n_tors++) {
        tors[n_tors] = workers[k];
        inst[n_tors] = report_instance_label(workers[k], bufs[n_tors], sizeof(bufs[n_tors]));
    }
    rc = workers_tor_hs_metrics(tors, inst, n_tors, names, addrs, n, m);
out:
    free(names);
    free(addrs);
    return rc;
}

char *report_metrics_text(const struct report_src *r)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    /* The per-tor families are the first worker's: its families carry no worker label yet. */
    const struct worker *w = workers[0];
    struct metrics *m = metrics_new();
    const struct roll *roll = workerset_roll(r->workerset);
    struct status_stats st = {0};
    enum tor_state ts = worker_tor_state(w);
    int boot = worker_bootstrap_progress(w);
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
             metrics_sample(m, "onionfront_tor_restarts_total", NULL, worker_restarts(w)) ||
             worker_services_metrics(w, m) ||
             metrics_family(m, "onionfront_status_connections_total", METRICS_COUNTER,
                            "Connections to the status socket by outcome.") ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "accepted", NULL}, (double)st.accepted) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "rejected", NULL}, (double)st.rejected) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "over_limit", NULL}, (double)st.over_limit) ||
             metrics_sample(m, "onionfront_status_connections_total",
                            (const char *const[]){"result", "over_uid_limit", NULL}, (double)st.over_uid_limit) ||
             metrics_family(m, "onionfront_status_denied_total", METRICS_COUNTER,
                            "Status requests refused to a connected user: reload, restart-tor or log-level from a "
                            "read-only one (status.allowed_uids/gids).") ||
             metrics_sample(m, "onionfront_status_denied_total", NULL, (double)st.denied);
    if (!rc) {
        size_t n = proxy_pools(r->proxy, NULL, 0);
        struct backend_pool **pools = calloc(n ? n : 1, sizeof(*pools));
        if (pools)
            proxy_pools(r->proxy, pools, n);
        rc = !pools || backend_pool_metrics(pools, n, m) < 0;
        free(pools);
    }
    rc = rc || proxy_metrics(r->proxy, m) < 0 || metrics_http_metrics(r->metrics_http, m) < 0 ||
         worker_descriptor_metrics(w, m) < 0 || report_tor_hs_metrics(r, m) < 0 ||
         worker_verify_metrics(w, m) < 0 || (r->probe && probe_metrics(r->probe, m) < 0) ||
         (roll && roll_metrics(roll, m) < 0) || ob_frontend_metrics(r->ob, m) < 0 ||
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
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    size_t n = 0;
    *reachable = 0;
    for (const struct service_id *id; n < cap && (id = service_ids_at(r->ids, n)); n++) {
        /* The end-to-end probe's verdict once it has one (advertised unless down), else the descriptor's;
         * never for a service whose single-onion verdict failed. */
        enum ladder_state st;
        bool running = false;
        for (size_t k = 0; k < n_workers; k++)
            running = running || worker_tor_state(workers[k]) == TOR_RUNNING;
        /* An Onionbalance frontend is on no tor: its master descriptor is published while Onionbalance's
         * uploads are confirmed within the deadline (ob_frontend.h). */
        bool published = id->conf->onionbalance.role == OB_ROLE_FRONTEND
                             ? ob_frontend_state(r->ob) == OB_FE_PUBLISHING
                             : workers_service_reachable(workers, n_workers, id->address);
        bool up = r->probe && probe_verdict(r->probe, id->address, &st)
                      ? st != LADDER_DOWN && running /* a lost tor withdraws it before the probe's next verdict */
                      : published;
        up = up && !r->shutting_down && id->address[0] && !worker_service_violation(report_host(r, n), id->address);
        /* Advertised only where the service asks for it (services[].onion_location). */
        out[n] = (struct onionloc_entry){id->conf, id->address, up && id->conf->onion_location};
        *reachable += up;
    }
    return n;
}

void report_status_line(const struct report_src *r, size_t reachable, char *out, size_t len)
{
    size_t n_workers;
    struct worker *const *workers = workerset_list(r->workerset, &n_workers);
    const struct worker *w = workers[0];
    enum tor_state ts = worker_tor_state(w);
    int boot = worker_bootstrap_progress(w);
    if (r->shutting_down)
        snprintf(out, len, "stopping: removing the services from tor");
    else if (ts == TOR_RUNNING)
        snprintf(out, len, "running: %zu of %zu services reachable", reachable,
                 worker_service_count(w));
    else if (ts == TOR_BOOTSTRAPPING)
        snprintf(out, len, "tor bootstrapping (%d%%); services handed to tor", boot < 0 ? 0 : boot);
    else if (worker_problem(w)[0])
        snprintf(out, len, "tor %s: %s", tor_state_str(ts), worker_problem(w));
    else
        snprintf(out, len, "tor %s", tor_state_str(ts));
}
