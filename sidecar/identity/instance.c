/* instance.c — per-instance paths and key copies for several spawned tors (see instance.h). */
#include "sidecar/identity/instance.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sidecar/identity/clientauth.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/identity/keys.h"
#include "sidecar/identity/probeauth.h"

/* printf into `out`; a result that does not fit is an error naming `what`. */
__attribute__((format(printf, 6, 7))) static int instance_fmt(char *out, size_t len, const char *what, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, errlen, "%s: the path is too long", what);
        return -1;
    }
    return 0;
}

int instance_paths(const struct config *c, unsigned k, struct instance_paths *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *sock = c->tor.control_socket;
    const char *slash = strrchr(sock, '/');
    int dlen = slash ? (int)(slash - sock) : 0;
    const char *base = slash ? slash + 1 : sock;
    if (k == 0) {
        if (instance_fmt(out->dir, sizeof(out->dir), "state_dir", err, errlen, "%s", c->state_dir) < 0 ||
            instance_fmt(out->control_socket, sizeof(out->control_socket), "tor.control_socket", err, errlen,
                         "%s", sock) < 0 ||
            instance_fmt(out->control_dir, sizeof(out->control_dir), "tor.control_socket", err, errlen, "%.*s",
                         dlen, sock) < 0)
            return -1;
    } else if (instance_fmt(out->dir, sizeof(out->dir), "state_dir", err, errlen, "%s/instances/%u", c->state_dir,
                            k + 1) < 0 ||
               instance_fmt(out->control_dir, sizeof(out->control_dir), "tor.control_socket", err, errlen,
                            "%.*s-%u", dlen, sock, k + 1) < 0 ||
               instance_fmt(out->control_socket, sizeof(out->control_socket), "tor.control_socket", err, errlen,
                            "%s/%s", out->control_dir, base) < 0 ||
               instance_fmt(out->keys_dir, sizeof(out->keys_dir), "state_dir", err, errlen, "%s/keys", out->dir) < 0)
        return -1;
    return instance_fmt(out->data_dir, sizeof(out->data_dir), "state_dir", err, errlen, "%s/tor", out->dir) < 0 ||
                   instance_fmt(out->torrc_dir, sizeof(out->torrc_dir), "state_dir", err, errlen, "%s", out->dir) < 0
               ? -1
               : 0;
}

int instance_anonymous_paths(const struct config *c, struct instance_paths *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *sock = c->tor.control_socket;
    const char *slash = strrchr(sock, '/');
    int dlen = slash ? (int)(slash - sock) : 0;
    return instance_fmt(out->dir, sizeof(out->dir), "state_dir", err, errlen, "%s/anonymous", c->state_dir) < 0 ||
                   instance_fmt(out->data_dir, sizeof(out->data_dir), "state_dir", err, errlen, "%s/tor", out->dir) < 0 ||
                   instance_fmt(out->torrc_dir, sizeof(out->torrc_dir), "state_dir", err, errlen, "%s", out->dir) < 0 ||
                   instance_fmt(out->control_dir, sizeof(out->control_dir), "tor.control_socket", err, errlen,
                                "%.*s-anonymous", dlen, sock) < 0 ||
                   instance_fmt(out->control_socket, sizeof(out->control_socket), "tor.control_socket", err, errlen,
                                "%s/%s", out->control_dir, slash ? slash + 1 : sock) < 0
               ? -1
               : 0;
}

int instance_key_dir(const struct config *c, const struct service_conf *sc, unsigned k, char *out, size_t len)
{
    int n = k == 0 ? snprintf(out, len, "%s", sc->key_dir)
                   : snprintf(out, len, "%s/instances/%u/keys/%s", c->state_dir, k + 1, sc->name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int instance_make_dirs(const struct config *c, unsigned k, char *err, size_t errlen)
{
    struct instance_paths p;
    char top[PATH_MAX];
    if (k == 0)
        return 0;
    snprintf(top, sizeof(top), "%s/instances", c->state_dir);
    if (instance_paths(c, k, &p, err, errlen) < 0)
        return -1;
    return fs_ensure_private_dir(top, NULL, err, errlen) < 0 || fs_ensure_private_dir(p.dir, NULL, err, errlen) < 0 ||
                   fs_ensure_private_dir(p.keys_dir, NULL, err, errlen) < 0
               ? -1
               : 0;
}

int instance_copy_key(const struct config *c, const struct service_conf *sc, unsigned k, char *err, size_t errlen)
{
    char dst[PATH_MAX];
    struct onion_key key;
    if (k == 0)
        return 0;
    if (instance_key_dir(c, sc, k, dst, sizeof(dst)) < 0) {
        snprintf(err, errlen, "%s/instances/%u/keys/%s: the path is too long", c->state_dir, k + 1, sc->name);
        return -1;
    }
    if (instance_make_dirs(c, k, err, errlen) < 0 || keys_load(sc->key_dir, &key, err, errlen) < 0)
        return -1;
    int rc = keys_install(&key, dst, err, errlen); /* the same key, or nothing: never a second key */
    onion_key_clear(&key);
    /* This tor enforces its copy's authorized_clients, not key_dir's: the same clients, or it would publish
     * the service open (issue 25). */
    struct client_auth_conf pbuf;
    const struct client_auth_conf *probe = NULL;
    if (rc == 0)
        rc = probeauth_for_service(c, sc, true, &pbuf, &probe, err, errlen);
    if (rc == 0 && clientauth_sync_dir(sc, dst, probe, err, errlen) < 0)
        rc = -1;
    return rc;
}
