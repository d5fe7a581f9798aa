/* ob_frontend.h — the frontend role of Onionbalance: onionfront supervises Debian's /usr/sbin/onionbalance
 * (0.2.2) for the one service with "onionbalance": {"frontend": true} (ob_config.h).
 *
 * Onionbalance drives a tor of onionfront's own: a dedicated client tor (tor.h's TOR_ROLE_OB_CLIENT, no
 * SocksPort), not a single-onion service tor and not the probe's client tor, because
 *   - Onionbalance needs an ordinary client tor that can HSFETCH the instances and HSPOST the master;
 *   - it sends NEWNYM every fetch round, which purges a tor's client descriptor cache and circuits (the
 *     probe's measurements would suffer);
 *   - it hangs for good when its tor restarts (TOR-FACTS): a tor that only it uses restarts only when
 *     that tor fails, and onionfront then kills and restarts Onionbalance itself.
 *
 * Owns that tor's supervisor, the Onionbalance child (argv, config.yaml under <state_dir>/ob/ naming the
 * master key's path; the key is never logged), its restarts and the confirmation of its work:
 *   - when onionfront is root with tor.user, Onionbalance runs as tor's user (set in the child before
 *     exec), its tor too, and reads a copy of the master key that user owns (handover.h says why and how);
 *     otherwise it runs as onionfront's user and reads the master key in the service's key directory;
 *   - started once its tor has bootstrapped; killed (SIGKILL: it ignores SIGTERM when hung) when that tor
 *     is lost, and started again when it is back;
 *   - restarted with backoff (1, 2, 4 ... tor.restart_backoff_max seconds) when it exits;
 *   - a publish is CONFIRMED when its tor reports `HS_DESC UPLOADED <master>` (an HSDir accepted the
 *     HSPOST; Onionbalance itself only records attempts). No confirmed upload within publish_deadline
 *     seconds of its start or of the last confirmed one is a stall: the state says so (status degraded)
 *     and the child is SIGKILLed and restarted;
 *   - 10 s after a confirmed upload its tor HSFETCHes the master: the descriptor is served, not only
 *     accepted (counted in status);
 *   - its status socket (ONIONBALANCE_STATUS_SOCKET_LOCATION, <run_dir>/ob/status.sock) is read every
 *     OB_FRONTEND_TICK_S seconds: instances with a descriptor, their intro points — only when the peer
 *     (SO_PEERCRED) is the Onionbalance child itself, since that directory is its user's;
 *   - a live local instance (the caller says which: ob_frontend_set_instance_live) that the status shows
 *     left out of the master for longer than a few of Onionbalance's fetch rounds (ob_watch.h) makes
 *     onionfront restart Onionbalance (counted as a repair; the instances' tors are left alone).
 * Not the instances' side (ob_instance.h), not the master key (service_id.c records it like any key). */
#ifndef ONIONFRONT_OB_FRONTEND_H
#define ONIONFRONT_OB_FRONTEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct config;
struct event_base;
struct metrics;
struct proc_mgr;
struct service_ids;
struct ob_frontend;

#define OB_FRONTEND_BINARY "/usr/sbin/onionbalance"
#define OB_FRONTEND_TICK_S 5

enum ob_frontend_state {
    OB_FE_OFF,        /* no frontend service in the config */
    OB_FE_WAITING,    /* its tor is not bootstrapped yet */
    OB_FE_STARTED,    /* Onionbalance runs; no upload of the master confirmed since it started */
    OB_FE_PUBLISHING, /* runs, and an upload was confirmed within the deadline */
    OB_FE_STALLED,    /* no confirmed upload within the deadline (killed, restarting) */
    OB_FE_BACKOFF,    /* exited; waiting before the next start */
    OB_FE_FAILED,     /* cannot run: a config problem (logged), until the next reload */
};
const char *ob_frontend_state_str(enum ob_frontend_state s);

/* Create (nothing starts). `conf` and `ids` are borrowed until ob_frontend_set_config. NULL on OOM. */
struct ob_frontend *ob_frontend_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                                    const struct service_ids *ids);

/* Start its tor if the config has a frontend service (after the keys are loaded). Return 0, or -1 with a
 * message. */
int ob_frontend_start(struct ob_frontend *f, char *err, size_t errlen);

/* A reloaded config: a changed instance list or setting rewrites config.yaml and restarts Onionbalance.
 * A frontend added by a reload starts; one removed stops. */
void ob_frontend_set_config(struct ob_frontend *f, const struct config *conf);

/* Check the limit on Onionbalance's instances against identities `ids` (keys loaded): the frontend's
 * remote instances and its master's local instance services together at most OB_MAX_INSTANCES (its
 * address is known only once the keys are loaded, so config load can check the remote list only). A
 * reload runs this before applying anything, so a bad one leaves Onionbalance running. Return 0 (also
 * without a frontend), or -1 with a message naming the service. */
int ob_frontend_check(const struct service_ids *ids, char *err, size_t errlen);

/* Tell which instances are live: `live(address, arg)` (no ".onion") is true when a tor of this onionfront
 * hosts that instance service, is up and confirmed an upload of it. Without it no instance is watched. */
void ob_frontend_set_instance_live(struct ob_frontend *f, bool (*live)(const char *address, void *arg), void *arg);

/* Free: the child and its tor are killed. NULL is a no-op. */
void ob_frontend_free(struct ob_frontend *f);

enum ob_frontend_state ob_frontend_state(const struct ob_frontend *f);

/* Add the frontend's problems (not confirmed within the deadline, not running, too many instances) to
 * the status's "problems" array. */
void ob_frontend_problems(const struct ob_frontend *f, json_t *problems);

/* The service `name`'s "onionbalance" object for status: its role, and for the frontend the state,
 * restarts, repairs (restarts for a live instance left out), confirmed uploads, the last one, instances and intro points from the status socket; for an
 * instance its master. Returns a new reference, or NULL if the service has no role. */
json_t *ob_frontend_service_json(const struct ob_frontend *f, const struct config *conf, const char *name,
                                 const char *address);

/* Its metrics families. Return 0 or -1. */
int ob_frontend_metrics(const struct ob_frontend *f, struct metrics *m);

#endif
