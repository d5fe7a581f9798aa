/* worker.c — one tor and its per-tor state, wired to each control connection (see worker.h). */
#include "sidecar/fleet/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sidecar/publish/circdrain.h"
#include "sidecar/config/config.h"
#include "sidecar/publish/descriptor.h"
#include "sidecar/identity/handover.h"
#include "sidecar/core/log.h"
#include "sidecar/probe/probe.h"
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
    struct descriptor_tracker *descriptors; /* HS_DESC tracking, fetch probe, republishing */
    struct verify *verify;                  /* single-onion verification (CIRC, mode re-checks) */
    struct torscrape *scrape;               /* a spawned tor's MetricsPort, read while it is up */
    struct circdrain *drain;                /* winding the tor down before a planned stop (roll.h) */
    struct event_base *base;
    char problem[200];                      /* why tor was lost or failed, until it bootstraps again */
    bool stopping;                          /* worker_stop called, or failed: hand nothing to tor */
    unsigned instance;                      /* which of tor.instances (instance.h) */
    enum service_mode mode;                 /* the kind of tor: which services it hosts (worker_set_mode) */
};

/* Give the descriptor tracker and the verifier the services' names and addresses and the probe
 * settings: at start-up once the keys are loaded, and after each applied reload. */
size_t worker_service_list(const struct worker *w, const char **names, const char **addrs)
{
    size_t n = 0, all = service_mgr_count(w->services);
    for (size_t i = 0; i < all && n < CONFIG_MAX_SERVICES; i++) {
        if (!service_mgr_hosts(w->services, i))
            continue; /* another kind of tor's: never on this one */
        names[n] = service_mgr_name(w->services, i);
        addrs[n++] = service_mgr_address(w->services, i);
    }
    return n;
}

void worker_sync_services(struct worker *w)
{
    const char *names[CONFIG_MAX_SERVICES], *addrs[CONFIG_MAX_SERVICES];
    size_t n = worker_service_list(w, names, addrs);
    descriptor_tracker_set_probe_conf(w->descriptors, &w->conf->probe);
    if (descriptor_tracker_set_services(w->descriptors, names, addrs, n) < 0 ||
        verify_set_services(w->verify, names, addrs, n) < 0)
        log_error("onionfront: out of memory; descriptor tracking and verification keep the old services");
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
     * must be that user's before the services' SETCONF (known only now, from process/uid). */
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

int worker_renew_descriptors(struct worker *w)
{
    if (!worker_is_up(w))
        return -1;
    circdrain_stop(w->drain); /* publishing again comes before the new descriptors' SETCONF */
    return service_mgr_renew(w->services);
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
    if (service_mgr_reconfigure(w->services, conf, tor_changed, err, errlen) < 0)
        return -1;
    tor_sup_set_config(w->tor, conf);
    w->conf = conf;
    worker_sync_services(w);
    return 0;
}

bool worker_service_reachable(const struct worker *w, const char *address)
{
    /* descriptor.c's verdict (the descriptor clients fetch is on an HSDir, and the last fetch probe got
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

struct tor_sup *worker_tor(const struct worker *w)
{
    return w->tor;
}

struct service_mgr *worker_services(const struct worker *w)
{
    return w->services;
}

struct descriptor_tracker *worker_descriptors(const struct worker *w)
{
    return w->descriptors;
}

struct verify *worker_verify(const struct worker *w)
{
    return w->verify;
}

struct torscrape *worker_scrape(const struct worker *w)
{
    return w->scrape;
}
