/* workerset.c — tor.instances workers and the failover between them (see workerset.h).
 *
 * Why a lost tor's descriptors matter: all tors publish the same services with the same key, and HSDirs
 * keep the descriptor with the highest revision counter, which tor sets from the time it encodes one
 * (rend-spec-v3 2.2.4; TOR-FACTS): whichever tor uploaded last is the one HSDirs serve. If that tor dies,
 * new visitors fetch a descriptor whose introduction points are gone. Re-posting a survivor's own
 * (older) descriptor is refused by every HSDir, so the survivor must build new ones (service_mgr_renew:
 * a PoW-parameter change, same introduction points): HSDirs confirm them a fraction of a second later,
 * and status names the survivor served only once they did (workerset_served). If the HSDirs serve a
 * survivor's descriptors already, nothing is sent. */
#include "sidecar/fleet/workerset.h"

#include <event2/event.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/config/config.h"
#include "sidecar/publish/descriptor.h"
#include "sidecar/identity/instance.h"
#include "sidecar/core/log.h"
#include "sidecar/probe/probe.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/core/binwatch.h"
#include "sidecar/core/clock.h"
#include "sidecar/fleet/roll.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/tor/torcaps.h"
#include "sidecar/fleet/worker.h"
#include "sidecar/probe/ladder.h"

#define WORKERSET_STAGGER_MAX_S 30 /* the longest the other tors wait for tor 1's bootstrap at start */

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
    struct roll *roll;       /* restart-tor: the workers one at a time */
    struct proxy *proxy; /* borrowed (workerset_set_proxy): the roll's drain counts streams there */
    struct binwatch *binwatch; /* spawn mode: tor.binary replaced on disk -> a roll */
    bool binary_said;          /* a declined binary change was logged (once until one is taken) */
    struct workerset_anon anon;
    size_t switched; /* workers[0..switched) got the new config in a workerset_reconfigure that failed */
    /* The other tors start once tor 1 bootstrapped (or WORKERSET_STAGGER_MAX_S passed): see workerset_start. */
    bool stagger_pending;
    struct event *stagger_ev;
    /* The probe's repairs: its verdicts (borrowed, workerset_set_probe) and each tor's restart budget
     * (ladder.h), by instance; the anonymous services' tor last. */
    const struct probe *probe;
    struct ladder_tor_budget budget[INSTANCE_MAX + 1];
};

static void workerset_anon_want(struct workerset *ws);
static int workerset_roll_start(struct workerset *ws, const struct config *conf, const char *why, bool command,
                                char *msg, size_t msglen);

/* The first worker other than `lost` whose tor is up, or NULL. */
static struct worker *workerset_survivor(const struct workerset *ws, const struct worker *lost)
{
    for (size_t k = 0; k < ws->n; k++)
        if (ws->workers[k] != lost && worker_is_up(ws->workers[k]))
            return ws->workers[k];
    return NULL;
}

/* Does each single-onion tor publish this service's descriptor? Not an anonymous service (its own tor),
 * nor an Onionbalance frontend (Onionbalance publishes the master descriptor on its own tor). The one
 * place this rule is written. */
static bool workerset_publishes(const struct service_id *id)
{
    return id && id->address[0] && id->conf->mode == SERVICE_MODE_SINGLE &&
           id->conf->onionbalance.role != OB_ROLE_FRONTEND;
}

bool workerset_served(const struct workerset *ws, const char *address, enum served_basis basis,
                      struct served_result *out)
{
    memset(out, 0, sizeof(*out));
    out->tor = -1;
    if (!workerset_publishes(service_ids_find(ws->ids, address)))
        return false;
    /* The single-onion tors are workers[0..n), in instance order: tor k is instance k. */
    workers_served(ws->workers, ws->n, address, basis, out);
    return true;
}

bool workerset_service_uploaded(const struct workerset *ws, size_t i)
{
    size_t n;
    struct worker *const *all = workerset_list(ws, &n);
    for (size_t k = 0; k < n; k++)
        if (worker_hosts(all[k], i) && worker_service_uploaded(all[k], i))
            return true;
    return false;
}

/* The tor whose descriptor of `address` (the one clients fetch) the HSDirs serve by the acceptance
 * record, or NULL if that is not known or the single-onion tors do not publish it. */
static struct worker *workerset_served_worker(const struct workerset *ws, const char *address)
{
    struct served_result sr;
    if (!workerset_served(ws, address, SERVED_BASIS_ACCEPTED, &sr) || sr.tor < 0)
        return NULL;
    return ws->workers[sr.tor];
}

/* Does `w` host this service (a restart of its tor sets it back)? Its mode and, with
 * tor.tors_per_service, its place (placement.h). */
static bool workerset_hosts(const struct workerset *ws, const struct worker *w, const struct service_id *id)
{
    if (!id->address[0] || service_id_refusal(id) || id->conf->onionbalance.role == OB_ROLE_FRONTEND)
        return false;
    return worker_hosts(w, (size_t)(id - service_ids_at(ws->ids, 0)));
}

/* The first tor other than `lost` that is up and hosts this service (any service for NULL), or NULL. */
static struct worker *workerset_survivor_for(const struct workerset *ws, const struct worker *lost,
                                             const struct service_id *id)
{
    for (size_t k = 0; k < ws->n; k++)
        if (ws->workers[k] != lost && worker_is_up(ws->workers[k]) && (!id || workerset_hosts(ws, ws->workers[k], id)))
            return ws->workers[k];
    return NULL;
}

/* Does a single-onion tor other than `w` host this service? */
static bool workerset_hosted_elsewhere(const struct workerset *ws, const struct worker *w,
                                       const struct service_id *id)
{
    for (size_t k = 0; k < ws->n; k++)
        if (ws->workers[k] != w && workerset_hosts(ws, ws->workers[k], id))
            return true;
    return false;
}

/* Hand the services of `gone` (a lost tor, or the roll's next) whose descriptors HSDirs may serve from it
 * (workerset_served names no other tor that is up) to other tors: for each, `prefer` if it hosts the
 * service and is up, else the first other tor up that hosts it, publishes anew
 * (worker_renew_descriptors: all of that tor's services, same introduction points), each tor once. With
 * every tor hosting every service that is `prefer` alone. *stale gets how many services HSDirs may serve
 * from `gone`, *orphans how many of those no other tor up hosts (they wait for `gone`). Set bit k of
 * *told for each tor k told. Return 0, or -1 if a tor chosen could not publish anew. */
static int workerset_take_over(const struct workerset *ws, const struct worker *gone, const struct worker *prefer,
                               size_t *stale, size_t *orphans, unsigned *told)
{
    int rc = 0;
    *stale = *orphans = 0;
    *told = 0;
    unsigned want = 0;
    for (size_t i = 0; i < service_ids_count(ws->ids); i++) {
        const struct service_id *id = service_ids_at(ws->ids, i);
        if (!workerset_publishes(id) || !workerset_hosts(ws, gone, id))
            continue;
        const struct worker *served = workerset_served_worker(ws, id->address);
        if (served && served != gone && worker_is_up(served))
            continue;
        (*stale)++;
        size_t pick = ws->n;
        for (size_t k = 0; k < ws->n; k++) {
            const struct worker *w = ws->workers[k];
            if (w == gone || !worker_is_up(w) || !workerset_hosts(ws, w, id))
                continue;
            if (w == prefer || pick == ws->n)
                pick = k;
        }
        if (pick == ws->n)
            (*orphans)++;
        else
            want |= 1u << pick;
    }
    for (size_t k = 0; k < ws->n; k++) {
        if (!(want >> k & 1u))
            continue;
        if (worker_renew_descriptors(ws->workers[k]) < 0)
            rc = -1;
        else
            *told |= 1u << k;
    }
    return rc;
}

/* "tor 2" or "tors 2 and 3" for the tors of `mask` (bit k: tor k+1), into `out`. */
static void workerset_tors_text(unsigned mask, char *out, size_t len)
{
    size_t used = 0, n = 0, total = 0;
    for (unsigned m = mask; m; m &= m - 1)
        total++;
    out[0] = 0;
    for (unsigned k = 0; k < INSTANCE_MAX && used < len; k++) {
        if (!(mask >> k & 1u))
            continue;
        const char *before = n == 0 ? (total > 1 ? "tors " : "tor ") : n + 1 == total ? " and " : ", ";
        int w = snprintf(out + used, len - used, "%s%u", before, k + 1);
        used += w > 0 ? (size_t)w : 0;
        n++;
    }
}

/* `lost`'s tor is gone: the services whose descriptors HSDirs may serve from it (workerset_served is not
 * a survivor) are published anew by a survivor hosting each (workerset_take_over). Logged once per loss. */
static void workerset_failover(struct workerset *ws, struct worker *lost, const char *why)
{
    struct worker *s = workerset_survivor(ws, lost);
    unsigned lk = worker_instance(lost) + 1, told;
    size_t stale, orphans;
    char tors[64];
    if (!s) {
        log_warnx("failover: tor %u lost (%s) and no other tor is up; its services wait for a tor to restart", lk,
                  why);
        return;
    }
    int rc = workerset_take_over(ws, lost, s, &stale, &orphans, &told);
    workerset_tors_text(told, tors, sizeof(tors));
    if (stale == 0) {
        unsigned sk = worker_instance(s) + 1;
        log_notice("failover: tor %u lost (%s); HSDirs serve tor %u's descriptors, and tor %u is up", lk, why, sk,
                   sk);
        return;
    }
    if (told) {
        ws->failovers++;
        log_notice("failover: tor %u lost (%s); HSDirs served its descriptors of %zu service%s: %s upload%s "
                   "new ones now (same introduction points)",
                   lk, why, stale, stale == 1 ? "" : "s", tors, told & (told - 1) ? "" : "s");
    }
    if (rc < 0)
        log_warnx("failover: tor %u lost (%s); a tor hosting its services cannot publish anew now", lk, why);
    if (orphans)
        log_warnx("failover: tor %u lost (%s); %zu of its services %s hosted by no other tor that is up: they "
                  "wait for it to restart", lk, why, orphans, orphans == 1 ? "is" : "are");
}

static void workerset_ready_cb(struct worker *w, void *arg)
{
    struct workerset *ws = arg;
    ws->cbs.ready(w, ws->arg);
}

static void workerset_start_rest(struct workerset *ws);
static void workerset_stagger_cb(evutil_socket_t fd, short what, void *arg);

static void workerset_bootstrapped_cb(struct worker *w, void *arg)
{
    struct workerset *ws = arg;
    if (ws->stagger_pending && w == ws->workers[0])
        workerset_start_rest(ws);
    ws->cbs.bootstrapped(w, ws->arg);
}

static void workerset_lost_cb(struct worker *w, const char *why, void *arg)
{
    struct workerset *ws = arg;
    if (!ws->stopping && ws->n > 1 && w != ws->anon.w)
        workerset_failover(ws, w, why);
    if (w != ws->anon.w) /* the roll is over the single-onion tors */
        roll_worker_lost(ws->roll, worker_instance(w), why);
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

/* ---- the rolling restart's view of the workers (roll.h) ------------------------------------------ */

static size_t workerset_roll_count(void *arg)
{
    return ((const struct workerset *)arg)->n;
}

static bool workerset_roll_is_up(void *arg, size_t k)
{
    return worker_is_up(((const struct workerset *)arg)->workers[k]);
}

static unsigned workerset_roll_restarts(void *arg, size_t k)
{
    return worker_restarts(((const struct workerset *)arg)->workers[k]);
}

/* Roll: for every service tor k hosts that another tor hosts too (one on tor k alone has nothing to
 * serve it meanwhile), HSDirs serve tor s's descriptor clients fetch (workerset_served), or for a
 * service that s does not host, another tor's that is up. */
static bool workerset_roll_serves(void *arg, size_t s, size_t k)
{
    const struct workerset *ws = arg;
    const struct worker *wk = ws->workers[k], *survivor = ws->workers[s];
    for (size_t i = 0; i < service_ids_count(ws->ids); i++) {
        const struct service_id *id = service_ids_at(ws->ids, i);
        if (!workerset_publishes(id) || !workerset_hosts(ws, wk, id) || !workerset_hosted_elsewhere(ws, wk, id))
            continue; /* not published by the single-onion tors rolled, not k's, or k's alone */
        const struct worker *served = workerset_served_worker(ws, id->address);
        if (!served || served == wk || !worker_is_up(served) ||
            (workerset_hosts(ws, survivor, id) && served != survivor))
            return false;
    }
    return true;
}

/* Roll: for every service tor k hosts, its latest upload started at or after `since` and every
 * responsible HSDir answered it. Accepted everywhere is not required: another tor of the same key that
 * encoded the same revision (the same second, as at a time-period rotation) may have been first, and
 * no later upload of tor k comes for an hour. Which tor HSDirs serve is the next hand-over's question
 * (roll_handover_tick), which has the survivor publish anew when it is not the one served. */
static bool workerset_roll_published_since(void *arg, size_t k, double since)
{
    const struct workerset *ws = arg;
    bool answered;
    for (size_t i = 0; i < service_ids_count(ws->ids); i++) {
        const struct service_id *id = service_ids_at(ws->ids, i);
        if (!workerset_publishes(id) || !workerset_hosts(ws, ws->workers[k], id))
            continue;
        double at = worker_service_round_answered_at(ws->workers[k], id->address, &answered);
        if (!answered || at < (since < 0 ? 0 : since))
            return false;
    }
    return true;
}

static int workerset_roll_renew(void *arg, size_t s, size_t k)
{
    const struct workerset *ws = arg;
    size_t stale, orphans;
    unsigned told;
    if (ws->stopping)
        return -1;
    if (workerset_take_over(ws, ws->workers[k], ws->workers[s], &stale, &orphans, &told) < 0)
        return -1;
    /* s publishes anew in any case, as the roll expects: a service of k that s hosts may be served by a
     * third tor, or s's latest round may tie with k's (roll.h). */
    return told >> s & 1u ? 0 : worker_renew_descriptors(ws->workers[s]);
}

/* Visitors' streams through tor k: the data path's streams whose peer is k's tor process. */
static unsigned workerset_roll_open_streams(void *arg, size_t k)
{
    const struct workerset *ws = arg;
    return proxy_streams_from_pid(ws->proxy, worker_tor_pid(ws->workers[k]));
}

static int workerset_roll_drain_start(void *arg, size_t k)
{
    return worker_drain_start(((const struct workerset *)arg)->workers[k]);
}

static void workerset_roll_drain_stop(void *arg, size_t k)
{
    worker_drain_stop(((const struct workerset *)arg)->workers[k]);
}

static long workerset_roll_rend_circuits(void *arg, size_t k)
{
    return worker_drain_rend_circuits(((const struct workerset *)arg)->workers[k]);
}

static bool workerset_roll_drained(void *arg, size_t k)
{
    return worker_drain_done(((const struct workerset *)arg)->workers[k]);
}

static void workerset_roll_restart(void *arg, size_t k, const char *why)
{
    worker_restart_planned(((const struct workerset *)arg)->workers[k], why);
}

static double workerset_roll_now(void *arg)
{
    (void)arg;
    return (double)clock_now_ms() / 1e3;
}

/* ---- a new tor binary --------------------------------------------------------------------------- */

/* binwatch: tor.binary was replaced. Roll onto the new file if it runs (`--version`: a half-installed
 * upgrade must not take the tors down) and no roll is running; else decline, to be asked again. */
static int workerset_binary_changed_cb(void *arg, const char *path)
{
    struct workerset *ws = arg;
    struct torcaps caps;
    char err[256], why[128], msg[300];
    const char *old = worker_tor_version(ws->workers[0]);
    if (ws->stopping)
        return -1;
    if (torcaps_probe(path, &caps, err, sizeof(err)) < 0) {
        if (!ws->binary_said)
            log_warnx("tor.binary %s changed, but the new file does not run (%s); the tors keep the old one", path,
                      err);
        ws->binary_said = true;
        return -1;
    }
    snprintf(why, sizeof(why), "tor.binary changed: %s -> %s", old[0] ? old : "unknown", caps.version_text);
    if (roll_start(ws->roll, why, msg, sizeof(msg)) < 0) {
        if (!ws->binary_said)
            log_notice("tor.binary %s changed (tor %s -> %s), but %s; trying again every %d s", path,
                       old[0] ? old : "unknown", caps.version_text, msg, BINWATCH_INTERVAL_S);
        ws->binary_said = true;
        return -1;
    }
    ws->binary_said = false;
    log_notice("tor.binary %s changed (running tor %s, the file now %s): rolling restart", path,
               old[0] ? old : "unknown", caps.version_text);
    return 0;
}

int workerset_binary_reloaded(struct workerset *ws, const struct config *conf, char *msg, size_t msglen)
{
    char why[PATH_MAX + 64];
    if (binwatch_set_path(ws->binwatch, conf->tor.binary) < 0) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    snprintf(why, sizeof(why), "tor.binary is now %s", conf->tor.binary);
    return workerset_roll_start(ws, conf, why, false, msg, msglen);
}

/* With tor.tors_per_service below tor.instances: say how many single onions each tor hosts, and warn if
 * each is on one tor only (no failover: its tor's crash or restart takes it down until the tor is back). */
static void workerset_log_placement(const struct config *conf)
{
    char line[160];
    size_t used = 0;
    if (conf->tor.tors_per_service >= conf->tor.instances)
        return;
    for (unsigned k = 0; k < conf->tor.instances && k < INSTANCE_MAX; k++) {
        size_t hosted = 0;
        for (size_t i = 0; i < conf->n_services; i++)
            hosted += conf->services[i].mode == SERVICE_MODE_SINGLE && (conf->services[i].tor_mask >> k & 1u);
        int w = snprintf(line + used, sizeof(line) - used, "%stor %u: %zu", k ? ", " : "", k + 1, hosted);
        used += w > 0 && (size_t)w < sizeof(line) - used ? (size_t)w : 0;
    }
    log_notice("tors: each single onion is hosted by %u of the %u tors (tor.tors_per_service); services per tor: %s",
               conf->tor.tors_per_service, conf->tor.instances, line);
    if (conf->tor.tors_per_service == 1)
        log_warnx("tor.tors_per_service is 1: each service runs on one tor only, so a crash or restart of that tor "
                  "(restart-tor too) takes its services down until it is back");
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
    const struct roll_ops ops = {.arg = ws,
                                 .count = workerset_roll_count,
                                 .is_up = workerset_roll_is_up,
                                 .restarts = workerset_roll_restarts,
                                 .serves = workerset_roll_serves,
                                 .published_since = workerset_roll_published_since,
                                 .renew = workerset_roll_renew,
                                 .open_streams = workerset_roll_open_streams,
                                 .drain_start = workerset_roll_drain_start,
                                 .drain_stop = workerset_roll_drain_stop,
                                 .rend_circuits = workerset_roll_rend_circuits,
                                 .drained = workerset_roll_drained,
                                 .restart = workerset_roll_restart,
                                 .now = workerset_roll_now};
    ws->ids = ids;
    ws->cbs = *cbs;
    ws->arg = arg;
    if (!(ws->roll = roll_new(base, &ops)) ||
        (base && !(ws->stagger_ev = event_new(base, -1, 0, workerset_stagger_cb, ws))) ||
        !(ws->binwatch = binwatch_new(base, workerset_binary_changed_cb, ws)) ||
        (conf->tor.mode == TOR_MODE_SPAWN && binwatch_set_path(ws->binwatch, conf->tor.binary) < 0)) {
        workerset_free(ws);
        return NULL;
    }
    roll_set_drain_limit(ws->roll, conf->tor.drain_timeout);
    workerset_log_placement(conf);
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
    if (ws->proxy) /* the proxy may outlive the set: its streams' ends must not reach it */
        proxy_set_stream_end_cb(ws->proxy, NULL, NULL);
    if (ws->stagger_ev)
        event_free(ws->stagger_ev);
    for (size_t k = 0; k < ws->n; k++)
        worker_free(ws->workers[k]);
    worker_free(ws->anon.w);
    binwatch_free(ws->binwatch);
    roll_free(ws->roll);
    free(ws);
}

struct worker *const *workerset_list(const struct workerset *ws, size_t *n)
{
    *n = ws->n + ws->anon.on;
    return ws->workers;
}

/* The listed workers' directories handed over for `conf` (worker_hand_over), instance 0 first, the
 * anonymous services' tor last while it runs; at start-up (`sync`) each is given its services first.
 * Return 0, or -1 with a message at the first that fails. */
static int workerset_hand_over_each(const struct workerset *ws, const struct config *conf, bool sync, char *err,
                                    size_t errlen)
{
    for (size_t k = 0; k < ws->n + ws->anon.on; k++) {
        if (sync)
            worker_sync_services(ws->workers[k]);
        if (worker_hand_over(ws->workers[k], conf, err, errlen) < 0)
            return -1;
    }
    return 0;
}

int workerset_prepare(struct workerset *ws, const struct config *conf, char *err, size_t errlen)
{
    return workerset_hand_over_each(ws, conf, true, err, errlen);
}

int workerset_hand_over(const struct workerset *ws, const struct config *conf, char *err, size_t errlen)
{
    return workerset_hand_over_each(ws, conf, false, err, errlen);
}

int workerset_reconfigure(struct workerset *ws, const struct config *conf, bool *tor_changed, char *err,
                          size_t errlen)
{
    bool changed;
    ws->switched = 0;
    for (size_t k = 0; k < ws->n + ws->anon.on; k++) {
        if (worker_reconfigure(ws->workers[k], conf, &changed, err, errlen) < 0)
            return -1; /* workers[0..switched) run `conf` now: workerset_rollback */
        *tor_changed = *tor_changed || changed;
        ws->switched = k + 1;
    }
    ws->switched = 0; /* all switched: nothing to undo */
    return 0;
}

void workerset_rollback(struct workerset *ws, const struct config *conf)
{
    char err[512];
    for (size_t k = 0; k < ws->switched; k++)
        if (worker_reconfigure(ws->workers[k], conf, NULL, err, sizeof(err)) < 0)
            log_error("reload: cannot restore the services of the running config: %s", err);
    ws->switched = 0;
}

/* Start the tors after the first (see workerset_start). A failure is logged: the first tor runs. */
static void workerset_start_rest(struct workerset *ws)
{
    char err[1024];
    ws->stagger_pending = false;
    if (ws->stagger_ev)
        event_del(ws->stagger_ev);
    if (ws->stopping)
        return;
    for (size_t k = 1; k < ws->n; k++)
        if (worker_start(ws->workers[k], err, sizeof(err)) < 0)
            log_error("tor %zu: %s", k + 1, err);
}

static void workerset_stagger_cb(evutil_socket_t fd, short what, void *arg)
{
    struct workerset *ws = arg;
    (void)fd;
    (void)what;
    log_notice("tor 1 did not bootstrap within %d s; starting the other tors anyway", WORKERSET_STAGGER_MAX_S);
    workerset_start_rest(ws);
}

/* The first tor now, the others once it bootstrapped: started together, the tors upload their first
 * descriptors in the same second, their revision counters tie (tor counts seconds), and each HSDir keeps
 * whichever arrived first — a mix, so no tor is served everywhere and the first roll must make a
 * survivor publish anew (which cuts its visitors' circuits). Started after, the others' descriptors are
 * newer and every HSDir serves the same tor. */
int workerset_start(struct workerset *ws, char *err, size_t errlen)
{
    if (ws->n > 0 && worker_start(ws->workers[0], err, errlen) < 0)
        return -1;
    if (ws->n > 1) {
        ws->stagger_pending = true;
        if (ws->stagger_ev) {
            struct timeval tv = clock_tv_ms(WORKERSET_STAGGER_MAX_S * 1000);
            event_add(ws->stagger_ev, &tv);
        } else {
            workerset_start_rest(ws);
        }
    }
    return ws->anon.on ? worker_start(ws->anon.w, err, errlen) : 0;
}

/* A roll of the workers, by `start` (roll_start, or roll_start_command for the operator's restart-tor). */
static int workerset_roll_start(struct workerset *ws, const struct config *conf, const char *why, bool command,
                                char *msg, size_t msglen)
{
    if (ws->stopping) {
        snprintf(msg, msglen, "onionfront is shutting down");
        return -1;
    }
    if (conf->tor.mode != TOR_MODE_SPAWN) {
        snprintf(msg, msglen, "tor.mode is attach: onionfront does not start or stop that tor");
        return -1;
    }
    roll_set_drain_limit(ws->roll, conf->tor.drain_timeout);
    return command ? roll_start_command(ws->roll, why, msg, msglen) : roll_start(ws->roll, why, msg, msglen);
}

int workerset_restart_tor(struct workerset *ws, const struct config *conf, const char *why, char *msg,
                          size_t msglen)
{
    return workerset_roll_start(ws, conf, why, true, msg, msglen);
}

/* The data path saw a visitor's stream end: the tor it came through, if draining, may close its
 * circuit now (circdrain_stream_ended). */
static void workerset_stream_end_cb(long pid, uint32_t circuit_id, void *arg)
{
    struct workerset *ws = arg;
    for (size_t k = 0; k < ws->n; k++)
        if (worker_tor_pid(ws->workers[k]) == pid) {
            worker_stream_ended(ws->workers[k], circuit_id);
            return;
        }
}

void workerset_set_proxy(struct workerset *ws, struct proxy *px)
{
    if (ws->proxy)
        proxy_set_stream_end_cb(ws->proxy, NULL, NULL);
    ws->proxy = px;
    if (px)
        proxy_set_stream_end_cb(px, workerset_stream_end_cb, ws);
}

const struct roll *workerset_roll(const struct workerset *ws)
{
    return ws ? ws->roll : NULL;
}

void workerset_stop(struct workerset *ws)
{
    ws->stopping = true;
    ws->stagger_pending = false;
    if (ws->stagger_ev)
        event_del(ws->stagger_ev);
    roll_abort(ws->roll, "onionfront is shutting down");
    if (ws->anon.stopping)
        ws->anon.on = false; /* stopping already (a reload removed the last anonymous service) */
    for (size_t k = 0; k < ws->n + ws->anon.on; k++)
        worker_stop(ws->workers[k]); /* removes the services from its tor, then stops it */
}

/* ---- the end-to-end probe's repairs --------------------------------------------------------------- */

/* ALL once some tor's descriptor that clients fetch, in an upload round begun at or after `since`, is on
 * every responsible HSDir; SOME once any HSDir confirmed such a round; NO_TOR while no tor hosting the
 * service is up. */
static enum probe_published workerset_published_cb(void *arg, const char *address, double since)
{
    const struct workerset *ws = arg;
    const struct service_id *id = service_ids_find(ws->ids, address);
    struct descriptor_counts dc;
    enum probe_published best = PROBE_PUBLISHED_NO_TOR;
    bool complete;
    for (size_t k = 0; k < ws->n + ws->anon.on; k++) {
        struct worker *w = ws->workers[k];
        if (!id || !workerset_hosts(ws, w, id) || !worker_is_up(w))
            continue;
        if (best == PROBE_PUBLISHED_NO_TOR)
            best = PROBE_PUBLISHED_NONE;
        if (worker_service_counts(w, address, &dc) < 0 || dc.uploads_confirmed == 0 ||
            worker_service_fetched_round_at(w, address, &complete, NULL) < since)
            continue;
        if (dc.hsdirs_total > 0 && dc.hsdirs_confirmed >= dc.hsdirs_total)
            return PROBE_PUBLISHED_ALL;
        if (dc.hsdirs_confirmed > 0)
            best = PROBE_PUBLISHED_SOME;
    }
    return best;
}

static int workerset_repost_cb(void *arg, const char *address)
{
    const struct workerset *ws = arg;
    int rc = -1;
    for (size_t k = 0; !ws->stopping && k < ws->n + ws->anon.on; k++)
        if (worker_is_up(ws->workers[k]) && worker_repost(ws->workers[k], address) == 0)
            rc = 0;
    return rc;
}

/* Re-publish the service alone: on the anonymous services' tor for an anonymous one; with several tors,
 * on the one whose descriptor the HSDirs serve if it is up (its fresh descriptors replace the broken
 * ones), else on every tor that is up. */
static int workerset_republish_cb(void *arg, const char *address)
{
    const struct workerset *ws = arg;
    const struct service_id *id = service_ids_find(ws->ids, address);
    if (ws->stopping || !id)
        return -1;
    if (id->conf->mode == SERVICE_MODE_ANONYMOUS)
        return ws->anon.on ? worker_renew_service(ws->anon.w, address) : -1;
    struct worker *served = ws->n > 1 ? workerset_served_worker(ws, address) : NULL;
    if (served && worker_is_up(served))
        return worker_renew_service(served, address);
    int rc = -1;
    for (size_t k = 0; k < ws->n; k++)
        if (worker_renew_service(ws->workers[k], address) == 0)
            rc = 0;
    return rc;
}

/* The budget of `w`'s tor. */
static struct ladder_tor_budget *workerset_budget(struct workerset *ws, const struct worker *w)
{
    return w == ws->anon.w ? &ws->budget[INSTANCE_MAX] : &ws->budget[worker_instance(w) % INSTANCE_MAX];
}

/* A ladder asks to restart `w`'s tor: do it if most of the services it hosts are down end to end and its
 * budget allows (ladder_restart_decide). Say what was done, or why not, in `msg`. Return 1 if restarted. */
static int workerset_try_restart(struct workerset *ws, struct worker *w, const char *why, char *msg, size_t msglen)
{
    char tor[24], names[200] = "";
    unsigned hosted = 0, down = 0, listed = 0;
    size_t used = 0;
    for (size_t i = 0; i < service_ids_count(ws->ids); i++) {
        const struct service_id *id = service_ids_at(ws->ids, i);
        enum ladder_state st;
        if (!workerset_hosts(ws, w, id))
            continue;
        hosted++;
        if (!ws->probe || !probe_verdict(ws->probe, id->address, &st) || st != LADDER_DOWN)
            continue;
        down++;
        int n = listed < 5 ? snprintf(names + used, sizeof(names) - used, "%s%s", listed ? ", " : "",
                                      service_id_name(id))
                           : -1;
        if (n >= 0 && (size_t)n < sizeof(names) - used) {
            used += (size_t)n;
            listed++;
        }
    }
    if (down > listed)
        snprintf(names + used, sizeof(names) - used, " and %u more", down - listed);
    if (w == ws->anon.w)
        snprintf(tor, sizeof(tor), "anonymous tor");
    else
        snprintf(tor, sizeof(tor), "tor %u", worker_instance(w) + 1);
    struct ladder_tor_budget *b = workerset_budget(ws, w);
    double now = (double)clock_now_ms() / 1e3, gap = ws->probe ? probe_restart_gap(ws->probe) : 1;
    switch (ladder_restart_decide(b, down, hosted, now, gap)) {
    case LADDER_RESTART_FEW_DOWN:
        snprintf(msg, msglen, "%s hosts %u service%s and %u %s down end to end (%s); a restart needs most of them "
                 "down", tor, hosted, hosted == 1 ? "" : "s", down, down == 1 ? "is" : "are", names);
        return 0;
    case LADDER_RESTART_BUDGET:
        snprintf(msg, msglen, "%s was restarted by a repair %.0f s ago; at most one per %.0f s", tor,
                 now - b->last_restart, gap);
        return 0;
    case LADDER_RESTART_YES:
        break;
    }
    ladder_restart_taken(b, now);
    snprintf(msg, msglen, "%s: %u of its %u services down end to end (%s)", tor, down, hosted, names);
    char reason[900];
    snprintf(reason, sizeof(reason), "%s; %s", why, msg);
    worker_restart(w, reason);
    return 1;
}

/* The restart step: the anonymous services' tor for an anonymous service; with one tor, that one; with
 * several, only the tor whose descriptor HSDirs serve (the last to upload) while another is up, so that
 * the failover rule moves visitors to a survivor instead of all tors going down at once; else each. Every
 * restart is subject to workerset_try_restart. */
static int workerset_restart_tor_cb(void *arg, const char *address, const char *why, char *msg, size_t msglen)
{
    struct workerset *ws = arg;
    snprintf(msg, msglen, "onionfront is stopping");
    if (ws->stopping)
        return 0;
    const struct service_id *id = service_ids_find(ws->ids, address);
    if (id && id->conf->mode == SERVICE_MODE_ANONYMOUS) {
        snprintf(msg, msglen, "the anonymous services' tor is not running");
        return ws->anon.on ? workerset_try_restart(ws, ws->anon.w, why, msg, msglen) : 0; /* its only tor */
    }
    struct worker *newest = ws->n > 1 ? workerset_served_worker(ws, address) : NULL;
    for (size_t k = 0; id && ws->n > 1 && !newest && k < ws->n; k++)
        if (worker_is_up(ws->workers[k]) && workerset_hosts(ws, ws->workers[k], id) &&
            (!newest || worker_last_upload_at(ws->workers[k], address) > worker_last_upload_at(newest, address)))
            newest = ws->workers[k];
    if (newest && !worker_is_up(newest))
        newest = NULL;
    if (newest && workerset_survivor_for(ws, newest, id))
        return workerset_try_restart(ws, newest, why, msg, msglen); /* its loss makes a survivor publish anew */
    int done = 0;
    size_t used = 0;
    for (size_t k = 0; k < ws->n && used < msglen; k++) {
        char one[600];
        if (id && !workerset_hosts(ws, ws->workers[k], id))
            continue; /* placed on other tors (tor.tors_per_service) */
        done |= workerset_try_restart(ws, ws->workers[k], why, one, sizeof(one));
        int n = snprintf(msg + used, msglen - used, "%s%s", used ? "; " : "", one);
        used += n > 0 ? (size_t)n : 0;
    }
    return done;
}

void workerset_set_probe(struct workerset *ws, const struct probe *p)
{
    ws->probe = p;
}

/* A private service open to a client without a key: off every tor until a reload checks it again (every
 * tor, the standbys and the anonymous one too: whichever upload an HSDir holds decides who gets in). */
static void workerset_withdraw_cb(void *arg, const char *address, const char *why)
{
    struct workerset *ws = arg;
    if (service_ids_withdraw(ws->ids, address, why) < 0)
        return;
    for (size_t k = 0; k < ws->n + ws->anon.on; k++)
        worker_republish(ws->workers[k]); /* a tor that cannot take it now gets the set when it can */
}

struct probe_actions workerset_probe_actions(struct workerset *ws)
{
    return (struct probe_actions){.published = workerset_published_cb,
                                  .repost = workerset_repost_cb,
                                  .republish = workerset_republish_cb,
                                  .restart_tor = workerset_restart_tor_cb,
                                  .withdraw = workerset_withdraw_cb,
                                  .arg = ws};
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
    roll_set_drain_limit(ws->roll, conf->tor.drain_timeout); /* for the next roll (binwatch's too) */
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
