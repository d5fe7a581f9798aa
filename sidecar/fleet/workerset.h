/* workerset.h — the daemon's tors: tor.instances workers (worker.h), each hosting every single onion with
 * a copy of the same key, or with tor.tors_per_service only the services placed on it (placement.h), and
 * what happens between them: when one tor is lost while HSDirs serve its descriptors, a live one that
 * hosts the same services uploads new ones at once (so new visitors reach a live tor), then the lost one
 * restarts by itself as a single tor always did.
 *
 * Per-service modes (config.h's enum service_mode): tor fixes single-hop mode for a process's life, so the
 * anonymous services run on one more worker, an ordinary tor (worker_set_mode) that hosts only them, while
 * the single-onion tors host only the single onions. It runs only while at least one anonymous service
 * exists: started at start-up or by the reload that adds the first, stopped by the reload that removes
 * the last (workerset_apply_modes). It is listed after the single-onion tors; failover is only between
 * these, and the probe's repairs of an anonymous service act on it alone.
 *
 * Owns the workers (creation, start, stop, free), the failover rule and the rolling restart over them
 * (roll.h: `onionfront restart-tor`, and by itself when tor.binary is replaced on disk: binwatch.h). Not
 * the tors themselves (worker.c), the data path nor reports (report.c reads workerset_list and asks
 * workerset_served). With one
 * instance it is exactly the one worker of before. */
#ifndef ONIONFRONT_WORKERSET_H
#define ONIONFRONT_WORKERSET_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/publish/served_find.h"

struct config;
struct event_base;
struct proc_mgr;
struct probe;
struct probe_actions;
struct proxy;
struct roll;
struct service_ids;
struct worker;
struct worker_callbacks;
struct workerset;

/* conf->tor.instances workers for `conf` and `ids` (borrowed as by worker_new). `cbs` get every worker's
 * reports, except `stopped`: once, when the last worker stopped after workerset_stop. NULL on OOM. */
struct workerset *workerset_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                                struct service_ids *ids, const struct worker_callbacks *cbs, void *arg);
void workerset_free(struct workerset *ws); /* NULL is a no-op */

/* The workers, instance 0 first, then the anonymous services' tor while it runs; *n set to how many.
 * Borrowed until workerset_free (the list changes with workerset_apply_modes). */
struct worker *const *workerset_list(const struct workerset *ws, size_t *n);

/* Which single-onion tor's descriptor of the service with this address the HSDirs serve, on `basis`
 * (served_find.h: the acceptance record for the failover, the roll and the probe's repairs; the fetched
 * copies for status and metrics), into *out: out->tor is that tor's instance, or -1 while not known.
 * Return false (out->tor -1) if the single-onion tors do not publish the service: an anonymous service
 * (its own tor), an Onionbalance frontend (Onionbalance publishes it), or an address of no service. */
bool workerset_served(const struct workerset *ws, const char *address, enum served_basis basis,
                      struct served_result *out);

/* Has a tor hosting service `i` (index in service_ids) confirmed an upload of it on its current
 * connection? One such tor makes the service published. With tor.tors_per_service or tor.instances, a
 * tor of the same key whose uploads the HSDirs refused (they hold the other tor's descriptor, encoded in a
 * later second) is not missing anything: it stands by, and publishes anew at a failover. */
bool workerset_service_uploaded(const struct workerset *ws, size_t i);

/* After the keys are loaded: each worker's services (worker_sync_services) and its directories'
 * hand-over for `conf` (worker_hand_over), instance 0 first. Return 0, or -1 with a message. */
int workerset_prepare(struct workerset *ws, const struct config *conf, char *err, size_t errlen);

/* A reload, before anything is applied: the listed workers' directories handed over for the new `conf`
 * (worker_hand_over), as workerset_prepare does at start. Return 0, or -1 with a message. */
int workerset_hand_over(const struct workerset *ws, const struct config *conf, char *err, size_t errlen);

/* A reload, after the identities were switched (service_ids_reconfigure): switch each listed worker to
 * `conf` (worker_reconfigure: one SETCONF if tor's view changed), setting *tor_changed if any tor's view
 * changed (left as it is otherwise). On the first failure (out of memory) return -1 with a message: the
 * workers before it run `conf`, the rest the old config, until workerset_rollback. */
int workerset_reconfigure(struct workerset *ws, const struct config *conf, bool *tor_changed, char *err,
                          size_t errlen);

/* After a failed workerset_reconfigure and the identities restored: put the workers it switched back on
 * the running `conf` (a failure is logged). Nothing after a successful one. */
void workerset_rollback(struct workerset *ws, const struct config *conf);

/* Start every worker's tor. Return 0, or -1 with a message. */
int workerset_start(struct workerset *ws, char *err, size_t errlen);

/* The end-to-end probe's repairs (probe.h) on these workers, for the set's life: published = an upload
 * was confirmed through any tor hosting it that is up; repost = each tor that is up re-posts its
 * descriptor; republish = the tor whose descriptor HSDirs serve (else each that is up) builds new
 * descriptors of that service alone; restart_tor = with one tor, restart it; with several, restart only
 * the tor whose descriptor HSDirs serve (the last to upload), so that the failover rule moves visitors to
 * a survivor hosting the service instead of all its tors going down at once (a tor that does not host it
 * is never restarted for it) — each only if most of the services it hosts are
 * down end to end (workerset_set_probe's verdicts) and at most once per probe_restart_gap per tor
 * (ladder_restart_decide), logged with the services that caused it. */
struct probe_actions workerset_probe_actions(struct workerset *ws);

/* The probe whose verdicts the restart step counts (borrowed until called again; NULL: none, no service
 * counts as down). */
void workerset_set_probe(struct workerset *ws, const struct probe *p);

/* After a reload applied `conf` to the listed workers (worker_reconfigure): start the anonymous services'
 * tor if `conf` has the first anonymous service (its directories handed over, then started; once an old
 * one being stopped is gone), stop it if `conf` has none left. Return 1 if it was started or stopped, 0
 * if nothing changed, or -1 with a message (out of memory, a hand-over that failed; it is then not
 * started). A tor that cannot be started is logged. */
int workerset_apply_modes(struct workerset *ws, const struct config *conf, char *err, size_t errlen);

/* restart-tor: start a rolling restart of the workers (roll.h), `why` shown. Refused while stopping, in
 * attach mode (`conf`, the running config: onionfront does not own that tor), while a roll runs or a tor
 * is down, or within ROLL_COMMAND_INTERVAL_S of the last restart-tor (roll_start_command). Return 0 with
 * what started in `msg`, or -1 with why not. */
int workerset_restart_tor(struct workerset *ws, const struct config *conf, const char *why, char *msg,
                          size_t msglen);

/* A reload changed tor.binary (`conf`, the new config): watch the new path (binwatch.h; the watcher also
 * rolls by itself when the file on disk is replaced) and start a roll onto it, as workerset_restart_tor
 * but without its minimum interval. */
int workerset_binary_reloaded(struct workerset *ws, const struct config *conf, char *msg, size_t msglen);

/* The data path (borrowed until workerset_free, NULL: none yet): a roll drains each tor before ending it
 * (roll.h): it counts the visitors' streams through it (proxy_streams_from_pid) and hears of each
 * stream's end (proxy_set_stream_end_cb), to close that circuit of a draining tor at once. */
void workerset_set_proxy(struct workerset *ws, struct proxy *px);

/* The rolling restart's state, for reports (NULL for a NULL set). Borrowed until workerset_free. */
const struct roll *workerset_roll(const struct workerset *ws);

/* Stop every worker (worker_stop); cbs->stopped follows once all are gone. */
void workerset_stop(struct workerset *ws);

#endif
