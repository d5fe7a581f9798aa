/* worker.c — one tor and its per-tor state, wired to each control connection (see worker.h). */
#include "sidecar/fleet/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sidecar/publish/circdrain.h"
#include "sidecar/config/config.h"
#include "sidecar/publish/descriptor.h"
#include "sidecar/identity/handover.h"
#include "sidecar/identity/instance.h"
#include "sidecar/core/log.h"
#include "sidecar/publish/service.h"
#include "sidecar/tor/tor.h"
#include "sidecar/tor/torcaps.h"
#include "sidecar/tor/torscrape.h"
#include "sidecar/publish/verify.h"

struct worker {
    const struct config *conf; /* borrowed; replaced by worker_reconfigure */
    struct worker_callbacks cbs;
    void *arg;
    struct tor_sup *tor;
    struct service_mgr *services;
    struct descriptor_tracker *descriptors; /* HS_DESC tracking, hsfetch, republishing */
    struct verify *verify;                  /* single-onion verification (CIRC, mode re-checks) */
    struct torscrape *scrape;               /* a spawned tor's MetricsPort, read while it is up */
    struct circdrain *drain;                /* winding the tor down before a planned stop (roll.h) */
    struct event_base *base;
    char problem[200];                      /* why tor was lost or failed, until it bootstraps again */
    bool stopping;                          /* worker_stop called, or failed: hand nothing to tor */
    unsigned instance;                      /* which of tor.instances (instance.h) */
    enum service_mode mode;                 /* the kind of tor: which services it hosts (worker_set_mode) */
};

/* Give the descriptor tracker and the verifier the names and addresses ("" if none yet) of the services
 * this tor hosts, in service_mgr order, and the probe settings: at start-up once the keys are loaded,
 * and after each applied reload. */
void worker_sync_services(struct worker *w)
{
    size_t n = 0, all = service_mgr_count(w->services);
    const char **names = calloc(all ? all : 1, sizeof(*names)), **addrs = calloc(all ? all : 1, sizeof(*addrs));
    descriptor_tracker_set_probe_conf(w->descriptors, &w->conf->probe);
    for (size_t i = 0; names && addrs && i < all; i++) {
        if (!service_mgr_hosts(w->services, i))
            continue; /* another kind of tor's: never on this one */
        names[n] = service_mgr_name(w->services, i);
        addrs[n++] = service_mgr_address(w->services, i);
    }
    if (!names || !addrs || descriptor_tracker_set_services(w->descriptors, names, addrs, n) < 0 ||
        verify_set_services(w->verify, names, addrs, n) < 0)
        log_error("onionfront: out of memory; descriptor tracking and verification keep the old services");
    free(names);
    free(addrs);
}

static void worker_fail(struct worker *w, const char *why)
{
    w->stopping = true;
    snprintf(w->problem, sizeof(w->problem), "%.*s", (int)sizeof(w->problem) - 1, why);
    w->cbs.failed(w, why, w->arg);
}

static void worker_tor_ready_cb(struct tor_sup *t, struct cp_conn *conn, void *arg)
{
    struct worker *w = arg;
    /* Attach mode, onionfront as root, the attached tor another user: its key and proxy directories
     * must be that user's before the services' SETCONF (known only now, from the control socket's peer
     * credentials: tor.c). */
    char err[1024];
    /* A second tor's key copies are made again for each of its tors: from the one key, checked anew. */
    bool again = (w->conf->tor.mode != TOR_MODE_SPAWN || w->instance > 0) && w->mode == SERVICE_MODE_SINGLE;
    if (!w->stopping && again && worker_hand_over(w, w->conf, err, sizeof(err)) < 0) {
        worker_fail(w, err);
        return;
    }
    if (w->conf->tor.mode != TOR_MODE_SPAWN && tor_sup_uid(t) > 0 && (uid_t)tor_sup_uid(t) != geteuid())
        log_info("tor: the attached tor runs as uid %ld; its key and proxy directories are handed to that user",
                 tor_sup_uid(t));
    if (!w->stopping) {
        service_mgr_attach(w->services, conn);
        descriptor_tracker_attach(w->descriptors, conn);
        verify_attach(w->verify, conn);
        circdrain_attach(w->drain, conn);
        torscrape_set_port(w->scrape, tor_sup_metrics_port(t));
    }
    w->cbs.ready(w, w->arg);
}

static void worker_tor_bootstrapped_cb(struct tor_sup *t, void *arg)
{
    struct worker *w = arg;
    (void)t;
    w->problem[0] = '\0';
    w->cbs.bootstrapped(w, w->arg);
}

static void worker_tor_lost_cb(struct tor_sup *t, const char *why, void *arg)
{
    struct worker *w = arg;
    (void)t;
    service_mgr_detach(w->services);
    descriptor_tracker_detach(w->descriptors);
    verify_detach(w->verify);
    circdrain_detach(w->drain);
    torscrape_set_port(w->scrape, 0);
    snprintf(w->problem, sizeof(w->problem), "%s", why ? why : "lost");
    w->cbs.lost(w, w->problem, w->arg);
}

static void worker_tor_failed_cb(struct tor_sup *t, const char *why, void *arg)
{
    (void)t;
    worker_fail(arg, why);
}

static void worker_tor_stopped_cb(struct tor_sup *t, void *arg)
{
    struct worker *w = arg;
    (void)t;
    w->cbs.stopped(w, w->arg);
}

struct worker *worker_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                          struct service_ids *ids, const struct worker_callbacks *cbs, void *arg)
{
    struct worker *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->conf = conf;
    w->cbs = *cbs;
    w->arg = arg;
    static const struct tor_callbacks tor_cbs = {
        .ready = worker_tor_ready_cb,
        .lost = worker_tor_lost_cb,
        .failed = worker_tor_failed_cb,
        .stopped = worker_tor_stopped_cb,
        .bootstrapped = worker_tor_bootstrapped_cb,
    };
    w->services = service_mgr_new(conf, ids);
    w->descriptors = descriptor_tracker_new(base, &conf->probe);
    w->verify = verify_new(base);
    w->drain = circdrain_new(base);
    w->base = base;
    w->scrape = torscrape_new(base, "tor");
    w->tor = tor_sup_new(base, procs, conf, &tor_cbs, w);
    if (!w->services || !w->descriptors || !w->verify || !w->drain || !w->scrape || !w->tor) {
        worker_free(w);
        return NULL;
    }
    /* Several tors with one key: which one's descriptor the HSDirs serve is compared with its own. */
    descriptor_tracker_set_read_own(w->descriptors, conf->tor.instances > 1);
    return w;
}

void worker_free(struct worker *w)
{
    if (!w)
        return;
    /* The tor supervisor (and its connection) goes before the services that subscribed to that
     * connection; the verifier and tracker after it: its pending commands complete into them. */
    tor_sup_free(w->tor);
    torscrape_free(w->scrape);
    circdrain_free(w->drain);
    verify_free(w->verify);
    descriptor_tracker_free(w->descriptors);
    service_mgr_free(w->services);
    free(w);
}

int worker_hand_over(const struct worker *w, const struct config *conf, char *err, size_t errlen)
{
    if (w->mode == SERVICE_MODE_ANONYMOUS)
        return handover_apply_anonymous(conf, err, errlen);
    if (w->instance > 0)
        return handover_apply_instance(conf, w->instance, err, errlen);
    return handover_apply(conf, tor_sup_uid(w->tor), err, errlen);
}

void worker_set_instance(struct worker *w, unsigned instance)
{
    char label[16];
    w->instance = instance;
    tor_sup_set_instance(w->tor, instance);
    /* Its log lines name the instance as tor.c's do ("tor 2"); nothing is scraped before the start. */
    snprintf(label, sizeof(label), "tor %u", instance + 1);
    struct torscrape *s = instance > 0 ? torscrape_new(w->base, label) : NULL;
    if (s) {
        torscrape_free(w->scrape);
        w->scrape = s;
    }
    service_mgr_set_instance(w->services, instance);
}

unsigned worker_instance(const struct worker *w)
{
    return w->instance;
}

void worker_set_mode(struct worker *w, enum service_mode mode)
{
    w->mode = mode;
    tor_sup_set_role(w->tor, mode == SERVICE_MODE_ANONYMOUS ? TOR_ROLE_ANONYMOUS : TOR_ROLE_SERVICE);
    service_mgr_set_mode(w->services, mode);
    verify_set_mode(w->verify, mode);
}

enum service_mode worker_mode(const struct worker *w)
{
    return w->mode;
}

bool worker_is_up(const struct worker *w)
{
    return !w->stopping && tor_sup_state(w->tor) == TOR_RUNNING;
}

/* May this tor have PoW turned on for a moment (service_mgr_renew)? Only a known version from
 * TORCAPS_POW_MIN_VERSION on: older PoW code can crash (TROVE-2026-020). */
static bool worker_pow_safe(const struct worker *w)
{
    struct torcaps have = {0}, min = {0};
    char text[96], err[64];
    snprintf(text, sizeof(text), "Tor version %s.\n", tor_sup_version(w->tor));
    return torcaps_parse_version(text, &have, err, sizeof(err)) == 0 &&
           torcaps_parse_version("Tor version " TORCAPS_POW_MIN_VERSION ".\n", &min, err, sizeof(err)) == 0 &&
           torcaps_version_cmp(have.version, min.version) >= 0;
}

int worker_renew_descriptors(struct worker *w)
{
    if (!worker_is_up(w))
        return -1;
    circdrain_stop(w->drain); /* publishing again comes before the new descriptors' SETCONF */
    return service_mgr_renew(w->services, worker_pow_safe(w));
}

int worker_republish(struct worker *w)
{
    return service_mgr_republish(w->services);
}

int worker_renew_service(struct worker *w, const char *address)
{
    return worker_is_up(w) ? service_mgr_renew_one(w->services, address) : -1;
}

int worker_drain_start(struct worker *w)
{
    return worker_is_up(w) ? circdrain_start(w->drain) : -1;
}

void worker_drain_stop(struct worker *w)
{
    circdrain_stop(w->drain);
}

void worker_stream_ended(struct worker *w, unsigned long circuit_id)
{
    circdrain_stream_ended(w->drain, circuit_id);
}

bool worker_drain_done(const struct worker *w)
{
    return circdrain_is_drained(w->drain);
}

long worker_drain_rend_circuits(const struct worker *w)
{
    return circdrain_rend_circuits(w->drain);
}

double worker_last_upload_at(const struct worker *w, const char *address)
{
    bool complete;
    return descriptor_service_fetched_round_at(w->descriptors, address, &complete, NULL);
}

int worker_start(struct worker *w, char *err, size_t errlen)
{
    char terr[900];
    /* A spawned tor that cannot run the configured PoW defence is refused before it starts. */
    if (torcaps_check_config(w->conf, terr, sizeof(terr)) < 0) {
        snprintf(err, errlen, "%s", terr);
        return -1;
    }
    w->stopping = false; /* a worker may be started again after worker_stop (the anonymous services' tor) */
    tor_sup_allow_metrics_port(w->tor, service_mgr_all_public(w->services, w->conf));
    if (tor_sup_start(w->tor, terr, sizeof(terr)) < 0) {
        snprintf(err, errlen, "cannot start tor: %s", terr);
        return -1;
    }
    return 0;
}

static void worker_unpublished_cb(void *arg)
{
    struct worker *w = arg;
    tor_sup_stop(w->tor);
}

void worker_stop(struct worker *w)
{
    w->stopping = true;
    service_mgr_unpublish(w->services, worker_unpublished_cb, w);
}

int worker_reconfigure(struct worker *w, const struct config *conf, bool *tor_changed, char *err, size_t errlen)
{
    /* Closed before the services' SETCONF: a service whose address is secret never shows on a MetricsPort.
     * Allowed again only once the new services are taken (from this tor's next start). */
    bool all_public = service_mgr_all_public(w->services, conf);
    if (!all_public) {
        tor_sup_allow_metrics_port(w->tor, false);
        torscrape_set_port(w->scrape, 0);
    }
    if (service_mgr_reconfigure(w->services, conf, tor_changed, err, errlen) < 0)
        return -1;
    if (all_public)
        tor_sup_allow_metrics_port(w->tor, true);
    tor_sup_set_config(w->tor, conf);
    w->conf = conf;
    worker_sync_services(w);
    return 0;
}

bool worker_service_reachable(const struct worker *w, const char *address)
{
    /* descriptor.c's verdict (the descriptor clients fetch is on an HSDir, and the last hsfetch got
     * it), on a tor that is up now. */
    return worker_is_up(w) && address[0] && descriptor_service_reachable(w->descriptors, address);
}

bool workers_service_reachable(struct worker *const *ws, size_t n, const char *address)
{
    for (size_t k = 0; k < n; k++)
        if (worker_service_reachable(ws[k], address))
            return true;
    return false;
}

const char *worker_problem(const struct worker *w)
{
    return w->problem;
}

/* ---- questions about the parts (worker.h) --------------------------------------------------------- */

enum tor_state worker_tor_state(const struct worker *w)
{
    return tor_sup_state(w->tor);
}

int worker_bootstrap_progress(const struct worker *w)
{
    return tor_sup_bootstrap_progress(w->tor);
}

const char *worker_tor_version(const struct worker *w)
{
    return tor_sup_version(w->tor);
}

unsigned worker_restarts(const struct worker *w)
{
    return tor_sup_restarts(w->tor);
}

long worker_tor_pid(const struct worker *w)
{
    return tor_sup_pid(w->tor);
}

json_t *worker_tor_to_json(const struct worker *w)
{
    const struct tor_sup *tor = w->tor;
    int boot = tor_sup_bootstrap_progress(tor);
    const char *version = tor_sup_version(tor), *problem = worker_problem(w);
    long pid = tor_sup_pid(tor);
    double up = tor_sup_uptime(tor);
    size_t hosted = 0;
    for (size_t i = 0; i < service_mgr_count(w->services); i++)
        hosted += service_mgr_hosts(w->services, i);
    return json_pack("{s:I, s:s, s:s, s:o, s:o, s:o, s:I, s:o, s:s, s:I}", "instance", (json_int_t)worker_instance(w) + 1,
                     "kind", service_mode_str(worker_mode(w)), "state", tor_state_str(tor_sup_state(tor)),
                     "bootstrap_progress", boot >= 0 ? json_integer(boot) : json_null(), "version",
                     version[0] ? json_string(version) : json_null(), "pid", pid > 0 ? json_integer(pid) : json_null(),
                     "restarts", (json_int_t)tor_sup_restarts(tor), "uptime_seconds",
                     up >= 0 ? json_integer((json_int_t)up) : json_null(), "verdict",
                     worker_is_up(w) ? "up" : problem[0] ? problem : tor_state_str(tor_sup_state(tor)), "services",
                     (json_int_t)hosted);
}

void worker_restart(struct worker *w, const char *why)
{
    tor_sup_restart(w->tor, why);
}

void worker_restart_planned(struct worker *w, const char *why)
{
    tor_sup_restart_planned(w->tor, why);
}

size_t worker_service_count(const struct worker *w)
{
    return service_mgr_count(w->services);
}

const char *worker_service_name(const struct worker *w, size_t i)
{
    return service_mgr_name(w->services, i);
}

const char *worker_service_address(const struct worker *w, size_t i)
{
    return service_mgr_address(w->services, i);
}

bool worker_hosts(const struct worker *w, size_t i)
{
    return service_mgr_hosts(w->services, i);
}

bool worker_service_uploaded(const struct worker *w, size_t i)
{
    return service_mgr_uploaded(w->services, i);
}

json_t *worker_services_to_json(const struct worker *w)
{
    return service_mgr_to_json(w->services);
}

int worker_service_counts(const struct worker *w, const char *address, struct descriptor_counts *out)
{
    return descriptor_service_counts(w->descriptors, address, out);
}

double worker_service_fetched_round_at(const struct worker *w, const char *address, bool *complete, bool *rejected)
{
    return descriptor_service_fetched_round_at(w->descriptors, address, complete, rejected);
}

double worker_service_round_answered_at(const struct worker *w, const char *address, bool *answered)
{
    return descriptor_service_round_answered_at(w->descriptors, address, answered);
}

json_t *worker_service_descriptor_json(const struct worker *w, const char *address)
{
    return descriptor_service_to_json(w->descriptors, address);
}

int worker_repost(struct worker *w, const char *address)
{
    return descriptor_repost(w->descriptors, address);
}

void workers_served(struct worker *const *ws, size_t n, const char *address, enum served_basis basis,
                    struct served_result *out)
{
    const struct descriptor_tracker *ts[SERVED_TORS_MAX];
    if (n > SERVED_TORS_MAX)
        n = SERVED_TORS_MAX;
    for (size_t k = 0; k < n; k++)
        ts[k] = ws[k]->descriptors;
    served_find(ts, n, address, basis, out);
}

const char *worker_mode_violation(const struct worker *w)
{
    return verify_mode_state(w->verify) == VERIFY_MODE_VIOLATION ? verify_mode_problem(w->verify) : NULL;
}

const char *worker_service_violation(const struct worker *w, const char *address)
{
    enum verify_verdict v = address[0] ? verify_service_verdict(w->verify, address) : VERIFY_UNVERIFIED;
    return verify_verdict_is_violation(v) ? verify_verdict_problem(v) : NULL;
}

json_t *worker_service_verify_json(const struct worker *w, const char *address)
{
    return verify_service_to_json(w->verify, address);
}

json_t *worker_circuits_to_json(const struct worker *w)
{
    return verify_to_json(w->verify);
}

json_t *worker_tor_service_json(const struct worker *w, const char *address)
{
    return torscrape_service_to_json(w->scrape, address);
}

json_t *workers_tor_service_sum_json(const struct worker *const *ws, size_t n, const char *address)
{
    const struct torscrape *scrapes[INSTANCE_MAX + 1];
    if (n > INSTANCE_MAX + 1)
        n = INSTANCE_MAX + 1;
    for (size_t k = 0; k < n; k++)
        scrapes[k] = ws[k]->scrape;
    return torscrape_sum_to_json(scrapes, n, address);
}

int worker_services_metrics(const struct worker *w, struct metrics *m)
{
    return service_mgr_metrics(w->services, m);
}

int worker_descriptor_metrics(const struct worker *w, struct metrics *m)
{
    return descriptor_metrics(w->descriptors, m);
}

int worker_verify_metrics(const struct worker *w, struct metrics *m)
{
    return verify_metrics(w->verify, m);
}

int workers_tor_hs_metrics(const struct worker *const *ws, const char *const *instances, size_t n_tors,
                           const char *const *names, const char *const *addresses, size_t n, struct metrics *m)
{
    const struct torscrape *scrapes[INSTANCE_MAX + 1];
    if (n_tors > INSTANCE_MAX + 1)
        n_tors = INSTANCE_MAX + 1;
    for (size_t k = 0; k < n_tors; k++)
        scrapes[k] = ws[k]->scrape;
    return torscrape_metrics(scrapes, instances, n_tors, names, addresses, n, m);
}
