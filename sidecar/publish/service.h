/* service.h — the onion services onionfront publishes on one tor: their HiddenService* lines in tor,
 * applied with one SETCONF of the complete group so adding or removing one service never disturbs the
 * others (TOR-FACTS: SETCONF replaces the whole group), and handed back when a reload of tor drops them.
 *
 * Owns per-tor service state (the SETCONF, uploads on this connection, re-applications). Not the
 * services' identity (names, keys, addresses, refusals and the address record: service_id.c), the tor
 * process (tor.c) nor descriptor health (descriptor.c). In attach mode it keeps the attached tor's own
 * services (HiddenService* lines for directories that are not ours) in every SETCONF it sends. */
#ifndef ONIONFRONT_SERVICE_H
#define ONIONFRONT_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sidecar/config/config.h"

struct config;
struct cp_conn;
struct metrics;
struct service_conf;
struct service_ids;
struct service_mgr;

/* `conf` and `ids` (the identities of conf's services, in the same order) are borrowed: replace them
 * together with service_ids_reconfigure and service_mgr_reconfigure. A refused identity is never handed
 * to tor; service_ids_verify_key is asked before every SETCONF, and a tor's confirmed upload is noted
 * there (service_ids_note_published). */
struct service_mgr *service_mgr_new(const struct config *conf, struct service_ids *ids);
/* Free. The connection given to service_mgr_attach must be gone already (free the tor supervisor
 * first): it holds subscriptions that point here. NULL is a no-op. */
void service_mgr_free(struct service_mgr *m);

/* Switch to `conf` (reload), after the identities were switched to it (service_ids_reconfigure): keep
 * the runtime state of services whose identity stayed (service_id.kept), and if what tor sees changed
 * (a service added, removed, refused or accepted, its ports, key directory or address), send one SETCONF
 * of the complete group; unchanged services get no new descriptor. On error (out of memory) return -1
 * with a message and keep the old state. `conf` must outlive the manager or the next reconfigure; the
 * old config may be freed after a successful return. Sets *tor_changed (if not NULL) to whether a
 * SETCONF was needed. */
int service_mgr_reconfigure(struct service_mgr *m, const struct config *conf, bool *tor_changed, char *err,
                            size_t errlen);

/* A new verified control connection: subscribe to HS_DESC, CONF_CHANGED and SIGNAL, and publish every
 * service that is not refused (service_ids_verify_key before every SETCONF); many services go to a new
 * tor in steps, at most 16 at a time whose first uploads tor has not answered (service.c,
 * SERVICE_ADMIT_WINDOW), since tor drops uploads when too many start at once. From then on, whenever
 * tor's HiddenService* group loses one of our services (a reload re-reads the torrc and drops every
 * SETCONF'd service), the complete group is sent again (same keys, so the same addresses), with the tor's
 * own services as tor lists them at that moment. tor.c must subscribe to those events with SETEVENTS. */
void service_mgr_attach(struct service_mgr *m, struct cp_conn *conn);

/* The connection given to service_mgr_attach is gone. */
void service_mgr_detach(struct service_mgr *m);

/* Remove our services from tor (keeping foreign ones), then call done(arg) — also on failure, or at
 * once when there is no connection or tor's own services are not known yet (nothing of ours was handed
 * to this tor then, and a SETCONF would remove its services). */
void service_mgr_unpublish(struct service_mgr *m, void (*done)(void *arg), void *arg);

/* Hand this tor instance `instance`'s copies of the key directories (instance.h; 0: key_dir itself).
 * Before service_mgr_attach. A copy that does not hold the service's key leaves that service out (logged). */
void service_mgr_set_instance(struct service_mgr *m, unsigned instance);

/* Make this manager's tor host only the services of `mode` (workerset.h: the single-onion tors host the
 * single ones, the anonymous services' tor the anonymous ones; SERVICE_MODE_SINGLE by default). Before
 * service_mgr_attach. The others stay in the list (indices follow service_ids) but are never handed over. */
void service_mgr_set_mode(struct service_mgr *m, enum service_mode mode);

/* Does this manager's tor host the i-th service (its mode)? */
bool service_mgr_hosts(const struct service_mgr *m, size_t i);

/* Is every service `conf` gives this tor public: single onions (not location-hidden) without client
 * authorization, whose addresses are no secret? False for the anonymous services' tor. */
bool service_mgr_all_public(const struct service_mgr *m, const struct config *conf);

/* Make tor build and upload new descriptors of our services now, keeping their introduction points and
 * circuits (a standby taking over: rend-spec-v3's revision counter comes from the time a descriptor is
 * built, and HSDirs keep the highest, so re-posting the old one would be refused — TOR-FACTS). tor uploads
 * anew when a service's PoW parameters change, and a SETCONF re-seeds every PoW service's puzzle: so one
 * SETCONF of the complete group (through the same key checks as every SETCONF) with PoW on also for the
 * services configured without it; once tor reported the upload (HS_DESC UPLOAD) of each of those, the
 * configured group again, which makes tor clear their PoW parameters and upload once more. A service
 * with PoW on thus gets one new descriptor, one without gets two and ends as configured. Without
 * `pow_safe` (the tor's version is unknown or older than TORCAPS_POW_MIN_VERSION, whose PoW code could
 * crash), or when tor refuses PoW (built without the pow module), the services are removed and re-added
 * instead (new introduction points, their circuits rebuilt); so too with tor.renewal "readd" in the
 * config. Return 0, or -1 if nothing was sent (no connection yet). */
int service_mgr_renew(struct service_mgr *m, bool pow_safe);
/* Send the HiddenService* group again as the identities say now (a service refused or withdrawn since is
 * left out, so tor stops publishing it; the others keep their descriptors). Return 0, or -1 if this tor
 * cannot take a SETCONF now (it gets the current set when it can). */
int service_mgr_republish(struct service_mgr *m);

/* Make tor build new descriptors of the service with this address alone (the probe's repair, ladder.h):
 * one SETCONF without it, then one with it (its introduction circuits on this tor are rebuilt; the other
 * services keep theirs and their descriptors); for a service with PoW on, one SETCONF of the unchanged
 * group, which re-uploads it with the same introduction points (and re-seeds every PoW service here).
 * Return 0, or -1 if nothing was sent (not ours, left out, no connection yet). */
int service_mgr_renew_one(struct service_mgr *m, const char *address);

size_t service_mgr_count(const struct service_mgr *m);
/* The i-th service's onion address without ".onion" ("" until keys are loaded). */
const char *service_mgr_address(const struct service_mgr *m, size_t i);
const char *service_mgr_name(const struct service_mgr *m, size_t i);
/* True once tor confirmed at least one descriptor upload for the i-th service. */
bool service_mgr_uploaded(const struct service_mgr *m, size_t i);

/* The services for the status socket, in config order. Returns a new reference (NULL on OOM):
 * [{"name", "mode" ("single" or "anonymous"), "address" ("<56 chars>.onion", null before the key is loaded or while refused), "ports":
 *   [{"virtual", "targets": [address as written in the config ...]}], "uploaded" (bool), "uploads"
 *   (confirmed HS_DESC UPLOADED events), "reapplied" (times tor dropped the service, e.g. on a reload, and
 *   it was handed back), "handed" (for a service this tor is to run: false while it waits for its turn,
 *   service.c's SERVICE_ADMIT_WINDOW), "refused" (why, only for a refused service)}]. */
json_t *service_mgr_to_json(const struct service_mgr *m);

/* Append onionfront_services{state="uploaded|pending"}, onionfront_service_up{service} (1 once an
 * upload was confirmed) and onionfront_service_reapplied_total{service} to `out` (descriptor.c counts uploads per HSDir). Returns 0, or -1 if a family
 * was already present or memory ran out. */
int service_mgr_metrics(const struct service_mgr *m, struct metrics *out);

#endif
