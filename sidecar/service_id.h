/* service_id.h — the one owner of each onion service's identity: its name and config (borrowed from the
 * current config), its key (loaded or created once, wiped at once: tor reads the key files itself) and
 * its address. Everything per tor (service.c's SETCONF state, descriptor.c, verify.c) and the data path
 * (proxy.c and backend.c, by name) refer to these entries instead of keeping their own.
 *
 * Owns the identity list. Not the keys' files (keys.c) nor anything a tor does with them. Entries are
 * in config order and may move on service_ids_reconfigure: refer to them by index or address, not by
 * pointer, across a reload. */
#ifndef ONIONFRONT_SERVICE_ID_H
#define ONIONFRONT_SERVICE_ID_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/keys.h"

struct config;
struct service_conf;
struct service_ids;

struct service_id {
    const struct service_conf *conf; /* name, key_dir, ports: borrowed from the current config */
    char address[KEYS_ADDRESS_SIZE]; /* without ".onion"; "" until the key is loaded */
};

/* The services of `conf` (borrowed until the next reconfigure), keys not loaded. NULL on OOM. */
struct service_ids *service_ids_new(const struct config *conf);
void service_ids_free(struct service_ids *s); /* NULL is a no-op */

/* Load (or create on first run) every service's key. Return 0, or -1 with a message naming the service
 * and file. Logs each service's address. */
int service_ids_load_keys(struct service_ids *s, char *err, size_t errlen);

/* Switch to `conf` (reload): a service that stays (same name and key_dir) keeps its address; others get
 * their key loaded or created. All or nothing: on error return -1 with a message and keep the old list.
 * Logs services that are gone. */
int service_ids_reconfigure(struct service_ids *s, const struct config *conf, char *err, size_t errlen);

size_t service_ids_count(const struct service_ids *s);
/* The i-th service (config order), or NULL out of range. Borrowed until the next reconfigure. */
const struct service_id *service_ids_at(const struct service_ids *s, size_t i);
/* The service with this address (onion_address_equal), or NULL. */
const struct service_id *service_ids_find(const struct service_ids *s, const char *address);

/* The name of a service (its config's). */
const char *service_id_name(const struct service_id *id);

#endif
