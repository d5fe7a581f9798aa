/* clientauth.h — v3 client authorization ("restricted discovery") files of one service:
 * <key_dir>/authorized_clients/<name>.auth, one line "descriptor:x25519:<base32 public key>".
 *
 * tor reads that directory whenever its configuration is set (any successful SETCONF), silently
 * ignores a malformed file and enforces authorization only if at least one file loads: a typo would
 * make a private service public. So onionfront owns the directory: it writes each configured client's
 * file (0600, atomically), removes the files of clients it wrote before and the config no longer lists
 * (its list: <key_dir>/onionfront-clients; tor ignores it there but warns about any file in
 * authorized_clients that does not end in ".auth"), and refuses
 * the service, naming the file, when anything else is there or a file is not exactly what it wrote.
 * Every open is relative to a directory descriptor with O_NOFOLLOW: tor's user may write key_dir.
 *
 * Owns nothing beyond one call. Does not log; errors name the file. */
#ifndef ONIONFRONT_CLIENTAUTH_H
#define ONIONFRONT_CLIENTAUTH_H

#include <stddef.h>

struct client_auth_conf;
struct service_conf;

#define CLIENTAUTH_DIR "authorized_clients"
#define CLIENTAUTH_LIST "onionfront-clients" /* in key_dir: tor warns about any non-.auth file in the dir */
#define CLIENTAUTH_OLD_LIST ".onionfront-clients" /* where it was until 2026-12: read once, then removed */

/* Bring <sc->key_dir>/authorized_clients in line with sc->clients (see above), then check every entry.
 * A service without clients needs no directory; one that exists must then hold nothing but onionfront's
 * list (an .auth file would make tor enforce a client the config does not name).
 * Never fail open: a config without clients for a service whose list still names clients (it was
 * restricted) is refused unless sc->drop_client_auth says to make it public; then the files go.
 * Return 0, 1 when it removed the last clients on purpose (the service is public now), or -1 with why
 * in `err` (naming the file: "unknown file", "not what onionfront wrote", "drop_client_auth", ...). */
int clientauth_sync(const struct service_conf *sc, char *err, size_t errlen);

/* Only check, writing nothing (before each SETCONF: a file planted since the last sync). Return 0 or -1
 * as clientauth_sync. */
int clientauth_check(const struct service_conf *sc, char *err, size_t errlen);

/* As clientauth_sync / clientauth_check for the key directory `key_dir`: sc->key_dir itself or a tor's
 * own copy of it (instance.h: each tor that hosts the service reads its own authorized_clients, so each
 * copy must hold exactly the same clients). `probe`, if not NULL, is onionfront's own probe client
 * (probeauth.h), added after the configured clients of a service that has any (never to a public one).
 * Files are written only when they differ and are owned as the directory is (tor reads them as that
 * user); a file owned otherwise is refused, since tor would silently skip it. */
int clientauth_sync_dir(const struct service_conf *sc, const char *key_dir, const struct client_auth_conf *probe,
                        char *err, size_t errlen);
int clientauth_check_dir(const struct service_conf *sc, const char *key_dir, const struct client_auth_conf *probe,
                         char *err, size_t errlen);

/* Make an x25519 key pair: `pub` and `priv` get base32 (upper case, 52 characters + NUL). Return 0 or -1
 * (OpenSSL failed). The caller wipes `priv`. */
int clientauth_keypair(char pub[53], char priv[53]);

#endif
