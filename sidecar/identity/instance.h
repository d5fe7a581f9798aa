/* instance.h — where the k-th of several spawned tors (tor.instances) keeps its files, and its private
 * copy of each service's key directory.
 *
 * Instance 0 uses the configured paths exactly as a single tor always did (state_dir/tor, state_dir/torrc,
 * tor.control_socket, each service's key_dir), so `tor.instances: 1` changes nothing on disk. Instance
 * k >= 1 (shown as k+1) lives under state_dir/instances/<k+1>/: its torrc, its DataDirectory tor/ and
 * keys/<service name>/, a copy of the service's one key (copied from key_dir, the key onionfront owns and
 * the address record vouches for: never a second key); its control socket is
 * <dir of tor.control_socket>-<k+1>/<its name>. state_dir/instances, its <k+1> and keys/ stay onionfront's
 * (handover.h's passage directories); tor's user gets the DataDirectory, control directory and copies.
 *
 * Owns the path rule and the copy. Not the keys' format (keys.c), the address record (service_id.c) nor
 * the ownership policy (handover.c). Never logs. */
#ifndef ONIONFRONT_INSTANCE_H
#define ONIONFRONT_INSTANCE_H

#include <limits.h>
#include <stddef.h>

struct config;
struct service_conf;

#define INSTANCE_MAX 4

struct instance_paths {
    char dir[PATH_MAX];            /* state_dir (instance 0) or state_dir/instances/<k+1> */
    char data_dir[PATH_MAX];       /* <dir>/tor */
    char torrc_dir[PATH_MAX];      /* the torrc's directory: <dir> */
    char control_socket[PATH_MAX]; /* tor.control_socket, or its sibling directory's socket */
    char control_dir[PATH_MAX];    /* the control socket's directory */
    char keys_dir[PATH_MAX];       /* instance >= 1: <dir>/keys; instance 0: "" (key_dir is configured) */
};

/* Fill *out for instance `k` of `c`. Return 0, or -1 with a message if a path is too long. */
int instance_paths(const struct config *c, unsigned k, struct instance_paths *out, char *err, size_t errlen);

/* The key directory service `sc` uses on instance `k`: sc->key_dir for 0, else <keys_dir>/<name>.
 * Return 0, or -1 if it does not fit `len`. */
int instance_key_dir(const struct config *c, const struct service_conf *sc, unsigned k, char *out, size_t len);

/* Instance k >= 1: create its directories (0700; handover.c may open the passages to tor's group) and
 * copy service `sc`'s key from sc->key_dir into its key directory (keys_install: 0700 directory, 0600
 * files written atomically, the secret last; a copy holding another key is refused, never overwritten).
 * The caller has checked that key_dir holds the service's recorded key (service_id_prepare_key).
 * Return 0, or -1 with a message naming the path. */
int instance_copy_key(const struct config *c, const struct service_conf *sc, unsigned k, char *err, size_t errlen);

/* The anonymous services' tor (workerset.h; one, never copied): state_dir/anonymous/ holds its torrc and
 * DataDirectory tor/, its control socket is <dir of tor.control_socket>-anonymous/<its name>; it uses each
 * anonymous service's key_dir itself (keys_dir is ""). Fill *out. Return 0, or -1 with a message. */
int instance_anonymous_paths(const struct config *c, struct instance_paths *out, char *err, size_t errlen);

/* Create instance k's own directories (dir, keys_dir; k >= 1). Return 0, or -1 with a message. */
int instance_make_dirs(const struct config *c, unsigned k, char *err, size_t errlen);

#endif
