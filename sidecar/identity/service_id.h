/* service_id.h — the one owner of each onion service's identity: its name and config (borrowed from the
 * current config), its key (checked against the address record, loaded or created, wiped at once: tor
 * reads the key files itself), its address, and whether it is REFUSED (addrbook.h: a known service
 * whose key went missing or changed is never handed to a tor, since tor would create a new key). Everything
 * per tor (service.c's SETCONF state, descriptor.c, verify.c) and the data path (proxy.c and backend.c,
 * by name) refer to these entries instead of keeping their own.
 *
 * Owns the identity list and the address record's rule (addrbook.h, state_dir/addresses.json): a known
 * service never gets a new key by accident. Not the keys' files (keys.c), the record's format
 * (addrbook.c) nor anything a tor does with them. Entries are in config order and may move on
 * service_ids_reconfigure: refer to them by index or address, not by pointer, across a reload. */
#ifndef ONIONFRONT_SERVICE_ID_H
#define ONIONFRONT_SERVICE_ID_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/core/onion_address.h"

struct config;
struct service_conf;
struct service_ids;

struct service_id {
    const struct service_conf *conf; /* name, key_dir, ports: borrowed from the current config */
    char address[ONION_ADDRESS_SIZE]; /* without ".onion"; "" until the key is loaded, and while refused */
    char refused[2048];              /* why the service is not handed to any tor, or "" */
    bool publication_recorded;       /* its first confirmed upload is in the address record */
    bool kept; /* the last service_ids_reconfigure left it as it was (name, key_dir, address, not withdrawn) */
    bool withdrawn; /* refused by service_ids_withdraw: `refused` says why, `address` stays */
};

/* The services of `conf` (borrowed until the next reconfigure), keys not loaded. NULL on OOM. */
struct service_ids *service_ids_new(const struct config *conf);
void service_ids_free(struct service_ids *s); /* NULL is a no-op */

/* Load every service's key, checked against the address record: a service the record knows must have
 * its recorded key — if it is missing or different, that service is REFUSED (logged with what to do)
 * and the others go on; a new service gets its key loaded or created (logged at notice with its
 * address) and recorded. Return 0 (also with refused services), or -1 with a message naming the service
 * and file (a new service's key cannot be made, the record is corrupt or cannot be written). */
int service_ids_load_keys(struct service_ids *s, char *err, size_t errlen);
/* At daemon start: onionfront's state directory and <state_dir>/keys (0700; the default parent of the key
 * directories, tor.c adds the rest), then service_ids_load_keys. */
int service_ids_start(struct service_ids *s, char *err, size_t errlen);

/* Switch to `conf` (reload): check every service's key against the record again (a known service whose
 * key went missing or changed is refused, one refused before whose key is back is accepted, a key
 * replaced on purpose with `onionfront new-key` is taken); set each entry's `kept`. All or nothing: on
 * error return -1 with a message and keep the old list. Logs services that are gone. */
int service_ids_reconfigure(struct service_ids *s, const struct config *conf, char *err, size_t errlen);

/* Just before the i-th service is handed to a tor (again: a restarted tor, a reload): its key directory
 * must still hold the key of the address onionfront publishes, since tor creates a new key where it
 * finds none. Otherwise refuse it (logged) until the next reload checks it against the record again.
 * Return true if it may be handed over. */
bool service_ids_verify_key(struct service_ids *s, size_t i);

/* Like service_ids_verify_key for a tor instance's copy of the i-th service's key directory (instance.h):
 * does `dir` hold the key of the address onionfront publishes? Logs why not; refuses nothing. */
bool service_ids_verify_copy(const struct service_ids *s, size_t i, const char *dir);

/* The end-to-end probe found the service with `address` open to a client without a key: refuse it with
 * `why` (kept with its address, so status still names it) until the next reload checks it again; the
 * caller makes every tor republish without it. Return 0, or -1 if there is no such service. */
int service_ids_withdraw(struct service_ids *s, const char *address, const char *why);
/* Why the service was withdrawn (service_ids_withdraw), or NULL. */
const char *service_id_withdrawn(const struct service_id *id);

/* A tor confirmed an upload of the i-th service: put its address's first publication into the address
 * record (once per address; an error is logged). */
void service_ids_note_published(struct service_ids *s, size_t i);

/* The rule of service_ids_load_keys for one service of `conf`, before its key directory is handed to
 * tor's user (handover.c): return 1 if the directory holds the key the service may use (created for a
 * new service), 0 if the service is refused (nothing created; service_ids reports it), or -1 with a
 * message. */
int service_id_prepare_key(const struct config *conf, const struct service_conf *sc, char *err, size_t errlen);

/* The rule of service_ids_load_keys for one service of `conf`, without acting on it (preflight.h): keys are
 * only looked at; nothing is created, marked, recorded or logged. Return 1 if the service would get its
 * key (found, or made in a missing or empty key directory), 0 if it would be refused (why in `why`: a
 * known service whose key is missing, another one, or of another mode), or -1 if the start would fail
 * (why in `why`: a new service's key directory holds something unusable, the record is unreadable). */
int service_id_check_key(const struct config *conf, const struct service_conf *sc, char *why, size_t whylen);

size_t service_ids_count(const struct service_ids *s);
/* The i-th service (config order), or NULL out of range. Borrowed until the next reconfigure. */
const struct service_id *service_ids_at(const struct service_ids *s, size_t i);
/* The service with this address (onion_address_equal), or NULL. */
const struct service_id *service_ids_find(const struct service_ids *s, const char *address);

/* The name of a service (its config's). */
const char *service_id_name(const struct service_id *id);
/* Why the service is refused (not handed to any tor), or NULL if it is not. */
const char *service_id_refusal(const struct service_id *id);

#endif
