/* probeauth.h — onionfront's own client of its private services, so that the end-to-end probe can prove
 * both halves of client authorization without trusting the files: a client WITHOUT a key is refused
 * (tor's SOCKS extended error F4, or a descriptor it cannot decrypt), and a client WITH a key onionfront
 * holds for the purpose is admitted. The key pair lives in <state_dir>/probe-client-auth (the x25519
 * private key in base32, 0600, written atomically, never logged); its public half is one more entry in
 * each private service's authorized_clients (clientauth.h), named PROBEAUTH_CLIENT_NAME, which the config
 * may not use and `client-auth list` never shows as a user's client. A public service never gets it.
 *
 * Owns the key file's format. Not the authorized_clients files (clientauth.c) nor the probe (probe.c).
 * Never logs. */
#ifndef ONIONFRONT_PROBEAUTH_H
#define ONIONFRONT_PROBEAUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/config/config.h"

#define PROBEAUTH_CLIENT_NAME CONFIG_PROBE_CLIENT_NAME
#define PROBEAUTH_FILE "probe-client-auth"

struct probeauth {
    struct client_auth_conf entry; /* PROBEAUTH_CLIENT_NAME and the public key (base32, upper case) */
    char private_b64[48];          /* the private key in base64, as ONION_CLIENT_AUTH_ADD takes it */
};

/* Does config `c` add the probe's client to its private services? Only when the probe's client tor runs. */
bool probeauth_wanted(const struct config *c);

/* Load the key pair from <state_dir>/PROBEAUTH_FILE into *out; with `create`, make a new one there first
 * if there is none. Return 0, 1 if there is none (and not `create`), or -1 with a message naming the file. */
int probeauth_load(const char *state_dir, bool create, struct probeauth *out, char *err, size_t errlen);

/* The entry clientauth_sync_dir/check_dir take for `c` (probeauth_wanted): into *entry, setting *have; with
 * `create` the key pair is made if missing (at daemon start and reload; never by check-config). Return 0
 * (also when not wanted or, without `create`, missing: *have false), or -1 with a message. */
int probeauth_entry(const struct config *c, bool create, struct client_auth_conf *entry, bool *have, char *err,
                    size_t errlen);

/* The entry for service `sc` of `c` as clientauth_sync_dir/check_dir take it: *out = `buf` filled
 * (probeauth_entry) for a service with clients, NULL for a public one or when not wanted. Return 0, or -1
 * with a message. */
int probeauth_for_service(const struct config *c, const struct service_conf *sc, bool create,
                          struct client_auth_conf *buf, const struct client_auth_conf **out, char *err,
                          size_t errlen);

/* Wipe the private key in *a. */
void probeauth_clear(struct probeauth *a);

#endif
