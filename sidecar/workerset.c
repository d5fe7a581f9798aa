/* workerset.c — tor.instances workers and the failover between them (see workerset.h).
 *
 * Why a lost tor's descriptors matter: all tors publish the same services with the same key, and HSDirs
 * keep the descriptor with the highest revision counter, which tor sets from the time it encodes one
 * (rend-spec-v3 2.2.4; TOR-FACTS): whichever tor uploaded last is the one HSDirs serve. If that tor dies,
 * new visitors fetch a descriptor whose introduction points are gone. Re-posting a survivor's own
 * (older) descriptor is refused by every HSDir, so the survivor must build new ones (service_mgr_renew):
 * they reach the HSDirs about a second later. If the HSDirs serve a survivor's descriptors already, its
 * visitors are not disturbed. */
#include "sidecar/workerset.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "sidecar/config.h"
#include "sidecar/descriptor.h"
#include "sidecar/instance.h"
#include "sidecar/log.h"
#include "sidecar/probe.h"
#include "sidecar/service_id.h"
#include "sidecar/tor.h"
#include "sidecar/worker.h"

/* The anonymous services' tor (see workerset.h): created with the set, started only while wanted. */
struct workerset_anon {
    struct worker *w;
    bool on;          /* wanted and listed at workers[n] */
    bool stopping;    /* worker_stop sent, cbs->stopped not yet seen */
    bool restart;     /* wanted again while stopping: start once stopped */
};

struct workerset {
    struct service_ids *ids;
    struct worker_callbacks cbs; /* the daemon's */
    void *arg;
    struct worker *workers[INSTANCE_MAX + 1]; /* the single-onion tors, then the anonymous one while on */
    size_t n, n_stopped;
    bool stopping;
    unsigned long failovers; /* survivors told to publish anew */
    struct workerset_anon anon;
};

static void workerset_anon_want(struct workerset *ws);
static int workerset_anon_prepare(struct workerset *ws, const struct config *conf, char *err, size_t errlen);

/* The first worker other than `lost` whose tor is up, or NULL. */
static struct worker *workerset_survivor(const struct workerset *ws, const struct worker *lost)
{
    for (size_t k = 0; k < ws->n; k++)
        if (ws->workers[k] != lost && worker_is_up(ws->workers[k]))
            return ws->workers[k];
    return NULL;
}

/* `lost`'s tor is gone: if HSDirs may serve its descriptors of any service (it uploaded after the
 * survivor), make the survivor publish anew. Logged once per loss. */
static void workerset_failover(struct workerset *ws, struct worker *lost, const char *why)
{
    struct worker *s = workerset_survivor(ws, lost);
    unsigned lk = worker_instance(lost) + 1;
    if (!s) {
        log_warnx("failover: tor %u lost (%s) and no other tor is up; its services wait for a tor to restart", lk,
                  why);
        return;
    }
    size_t stale = 0, n = service_ids_count(ws->ids);
    for (size_t i = 0; i < n; i++) {
        const struct service_id *id = service_ids_at(ws->ids, i);
        if (id->address[0] && id->conf->mode == SERVICE_MODE_SINGLE &&
            worker_last_upload_at(lost, id->address) >= worker_last_upload_at(s, id->address))
            stale++;
    }
    unsigned sk = worker_instance(s) + 1;
    if (stale == 0) {
        log_notice("failover: tor %u lost (%s); HSDirs serve tor %u's descriptors, and tor %u is up", lk, why, sk,
                   sk);
    } else if (worker_renew_descriptors(s) == 0) {
        ws->failovers++;
        log_notice("failover: tor %u lost (%s); HSDirs served its descriptors of %zu service%s: tor %u builds and "
                   "uploads new ones now",
                   lk, why, stale, stale == 1 ? "" : "s", sk);
    } else {
        log_warnx("failover: tor %u lost (%s); tor %u cannot publish anew now", lk, why, sk);
    }
}

static void workerset_ready_cb(struct worker *w, void *arg)
{
    struct workerset *ws = arg;
    ws->cbs.ready(w, ws->arg);
}

static void workerset_bootstrapped_cb(struct worker *w, void *arg)
{
    struct workerset *ws = arg;
    ws->cbs.bootstrapped(w, ws->arg);
}

static void workerset_lost_cb(struct worker *w, const char *why, void *arg)
{
    struct workerset *ws = arg;
    if (!ws->stopping && ws->n > 1 && w != ws->anon.w)
        workerset_failover(ws, w, why);
    ws->cbs.lost(w, why, ws->arg);
}

static void workerset_failed_cb(struct worker *w, const char *why, void *arg)
{
    struct workerset *ws = arg;
    ws->cbs.failed(w, why, ws->arg);
}

static void workerset_anon_stopped(struct workerset *ws);

static void workerset_stopped_cb(struct worker *w, void *arg)
{
    struct workerset *ws = arg;
    if (w == ws->anon.w && ws->anon.stopping) {
        workerset_anon_stopped(ws); /* the last anonymous service went (a reload), or came back meanwhile */
        return;
    }
    if (++ws->n_stopped == ws->n + ws->anon.on)
        ws->cbs.stopped(w, ws->arg);
}

struct workerset *workerset_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                                struct service_ids *ids, const struct worker_callbacks *cbs, void *arg)
{
    static const struct worker_callbacks wcbs = {
        .ready = workerset_ready_cb,
        .bootstrapped = workerset_bootstrapped_cb,
        .lost = workerset_lost_cb,
        .failed = workerset_failed_cb,
        .stopped = workerset_stopped_cb,
    };
    struct workerset *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    ws->ids = ids;
    ws->cbs = *cbs;
    ws->arg = arg;
    unsigned want = conf->tor.instances >= 1 && conf->tor.instances <= INSTANCE_MAX ? conf->tor.instances : 1;
    for (; ws->n < want; ws->n++) {
        if (!(ws->workers[ws->n] = worker_new(base, procs, conf, ids, &wcbs, ws))) {
            workerset_free(ws);
            return NULL;
        }
        worker_set_instance(ws->workers[ws->n], (unsigned)ws->n);
    }
    /* The anonymous services' tor exists from the start (nothing runs until it is wanted). */
    if (!(ws->anon.w = worker_new(base, procs, conf, ids, &wcbs, ws))) {
        workerset_free(ws);
        return NULL;
    }
    worker_set_mode(ws->anon.w, SERVICE_MODE_ANONYMOUS);
    if (config_count_mode(conf, SERVICE_MODE_ANONYMOUS) > 0)
        workerset_anon_want(ws);
    return ws;
}

void workerset_free(struct workerset *ws)
{
    if (!ws)
        return;
    for (size_t k = 0; k < ws->n; k++)
        worker_free(ws->workers[k]);
    worker_free(ws->anon.w);
    free(ws);
}

struct worker *const *workerset_list(const struct workerset *ws, size_t *n)
{
    *n = ws->n + ws->anon.on;
    return ws->workers;
}

int workerset_prepare(struct workerset *ws, const struct config *conf, char *err, size_t errlen)
{
    for (size_t k = 0; k < ws->n; k++) {
        worker_sync_services(ws->workers[k]);
        if (worker_hand_over(ws->workers[k], conf, err, errlen) < 0)
            return -1;
    }
    return workerset_anon_prepare(ws, conf, err, errlen);
}

int workerset_start(struct workerset *ws, char *err, size_t errlen)
{
    for (size_t k = 0; k < ws->n; k++)
        if (worker_start(ws->workers[k], err, errlen) < 0)
            return -1;
    return ws->anon.on ? worker_start(ws->anon.w, err, errlen) : 0;
}

void workerset_stop(struct workerset *ws)
{
    ws->stopping = true;
    if (ws->anon.stopping)
        ws->anon.on = false; /* stopping already (a reload removed the last anonymous service) */
    for (size_t k = 0; k < ws->n + ws->anon.on; k++)
        worker_stop(ws->workers[k]); /* removes the services from its tor, then stops it */
}

/* ---- the end-to-end probe's repairs --------------------------------------------------------------- */

static bool workerset_published_cb(void *arg, const char *address)
{
    const struct workerset *ws = arg;
    struct descriptor_counts dc;
    for (size_t k = 0; k < ws->n + ws->anon.on; k++)
        if (descriptor_service_counts(worker_descriptors(ws->workers[k]), address, &dc) == 0 &&
            dc.uploads_confirmed > 0)
            return true;
    return false;
}

static int workerset_repost_cb(void *arg, const char *address)
{
    const struct workerset *ws = arg;
    int rc = -1;
    for (size_t k = 0; !ws->stopping && k < ws->n + ws->anon.on; k++)
        if (worker_is_up(ws->workers[k]) && descriptor_repost(worker_descriptors(ws->workers[k]), address) == 0)
            rc = 0;
    return rc;
}

static void workerset_restart_tor_cb(void *arg, const char *address, const char *why)
{
    const struct workerset *ws = arg;
    if (ws->stopping)
        return;
    const struct service_id *id = service_ids_find(ws->ids, address);
    if (id && id->conf->mode == SERVICE_MODE_ANONYMOUS) {
        if (ws->anon.on)
            tor_sup_restart(worker_tor(ws->anon.w), why); /* its only tor */
        return;
    }
    struct worker *newest = NULL;
    for (size_t k = 0; ws->n > 1 && k < ws->n; k++)
        if (worker_is_up(ws->workers[k]) &&
            (!newest || worker_last_upload_at(ws->workers[k], address) > worker_last_upload_at(newest, address)))
            newest = ws->workers[k];
    if (newest && workerset_survivor(ws, newest)) {
        tor_sup_restart(worker_tor(newest), why); /* its loss makes a survivor publish anew */
        return;
    }
    for (size_t k = 0; k < ws->n; k++)
        tor_sup_restart(worker_tor(ws->workers[k]), why);
}

struct probe_actions workerset_probe_actions(struct workerset *ws)
{
    return (struct probe_actions){workerset_published_cb, workerset_repost_cb, workerset_restart_tor_cb, ws};
}

/* ---- the anonymous services' tor ------------------------------------------------------------------ */

/* The anonymous services' tor is wanted: list it after the single-onion tors. */
static void workerset_anon_want(struct workerset *ws)
{
    ws->anon.on = true;
    ws->workers[ws->n] = ws->anon.w;
}

static int workerset_anon_prepare(struct workerset *ws, const struct config *conf, char *err, size_t errlen)
{
    if (!ws->anon.on)
        return 0;
    worker_sync_services(ws->anon.w);
    return worker_hand_over(ws->anon.w, conf, err, errlen);
}

/* Start the anonymous services' tor (logged). */
static void workerset_anon_start(struct workerset *ws)
{
    char err[1024];
    ws->anon.restart = false;
    if (worker_start(ws->anon.w, err, sizeof(err)) < 0)
        log_error("anonymous tor: %s; the anonymous services wait for the next reload", err);
    else
        log_info("anonymous tor: started for the anonymous services");
}

static void workerset_anon_stopped(struct workerset *ws)
{
    ws->anon.stopping = false;
    log_info("anonymous tor: stopped (no anonymous service left)");
    if (ws->anon.restart && ws->anon.on && !ws->stopping)
        workerset_anon_start(ws);
}

int workerset_apply_modes(struct workerset *ws, const struct config *conf, char *err, size_t errlen)
{
    bool want = config_count_mode(conf, SERVICE_MODE_ANONYMOUS) > 0, was = ws->anon.on;
    if (!was && worker_reconfigure(ws->anon.w, conf, NULL, err, errlen) < 0)
        return -1; /* not listed, so the reload did not switch it; it borrows the config */
    if (ws->stopping || want == was)
        return 0;
    if (!want) {
        ws->anon.on = false;
        ws->anon.stopping = true;
        ws->anon.restart = false;
        worker_stop(ws->anon.w); /* removes its services from its tor, then stops it */
        return 1;
    }
    workerset_anon_want(ws);
    if (workerset_anon_prepare(ws, conf, err, errlen) < 0) {
        ws->anon.on = false;
        return -1;
    }
    if (ws->anon.stopping)
        ws->anon.restart = true; /* never two tors on its DataDirectory: start once the old one is gone */
    else
        workerset_anon_start(ws);
    return 1;
}
