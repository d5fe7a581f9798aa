/* handover.c — which directories tor's User gets (see handover.h). Measured with tor 0.4.9: tor with
 * User starts as root, reads its torrc, then becomes that user before it opens its DataDirectory,
 * control socket and the services' key directories, and checks as that user that each of those is its
 * own and 0700 (a root-owned 0700 directory is refused; the control socket is created after the
 * switch). It checks no parent directory, so the parents only need to let it pass (search permission):
 * 0710 with tor's group. */
#include "sidecar/identity/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/identity/instance.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/identity/keys.h"

/* Directories tor's User passes through but must not change. */
#define HANDOVER_PASSAGE_MODE 0710

int handover_tor_owner(const struct config *c, long attached_uid, uid_t *uid, gid_t *gid, char *err,
                       size_t errlen)
{
    if (c->tor.mode == TOR_MODE_SPAWN) {
        if (!c->tor.user)
            return 0;
        if (geteuid() != 0) {
            snprintf(err, errlen,
                     "tor.user is \"%s\", but onionfront runs as uid %lu, not root: tor can switch to another "
                     "user only when root starts it. Run onionfront as root, or remove tor.user so that tor runs "
                     "as onionfront's own user",
                     c->tor.user, (unsigned long)geteuid());
            return -1;
        }
        struct passwd *pw = getpwnam(c->tor.user);
        if (!pw) {
            snprintf(err, errlen, "tor.user: there is no user named \"%s\"", c->tor.user);
            return -1;
        }
        *uid = pw->pw_uid;
        *gid = pw->pw_gid;
        return 1;
    }
    /* attach: another user than ours is refused by tor.c unless we are root */
    if (attached_uid <= 0 || geteuid() != 0)
        return 0;
    struct passwd *pw = getpwuid((uid_t)attached_uid);
    *uid = (uid_t)attached_uid;
    *gid = pw ? pw->pw_gid : (gid_t)attached_uid;
    return 1;
}

/* Make `path` a passage: onionfront's, mode 0710 with tor's group. */
static int handover_passage(const char *path, gid_t gid, char *err, size_t errlen)
{
    return fs_ensure_private_dir(path, NULL, err, errlen) < 0 ||
                   fs_set_dir_owner_mode(path, geteuid(), gid, HANDOVER_PASSAGE_MODE, err, errlen) < 0
               ? -1
               : 0;
}

/* Give tor's user the directory `path` (created if missing) with everything in it. */
static int handover_give(const char *path, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    return fs_ensure_private_dir(path, NULL, err, errlen) < 0 || fs_chown_tree(path, uid, gid, err, errlen) < 0 ? -1
                                                                                                                : 0;
}

/* Give tor's user the control directory `control_dir` (created if missing; only the directory: tor
 * creates its socket after switching users) and the DataDirectory `data_dir` with all it holds. */
static int handover_give_tor_dirs(const char *control_dir, const char *data_dir, uid_t uid, gid_t gid, char *err,
                                  size_t errlen)
{
    return fs_ensure_private_dir(control_dir, NULL, err, errlen) < 0 ||
                   fs_set_owner(control_dir, uid, gid, err, errlen) < 0 ||
                   handover_give(data_dir, uid, gid, err, errlen) < 0
               ? -1
               : 0;
}

int handover_apply_instance(const struct config *c, unsigned k, char *err, size_t errlen)
{
    struct instance_paths p;
    char path[PATH_MAX], kerr[768];
    if (k == 0 || c->tor.mode != TOR_MODE_SPAWN)
        return 0;
    if (instance_paths(c, k, &p, err, errlen) < 0 || instance_make_dirs(c, k, err, errlen) < 0)
        return -1;
    /* The copies first, as onionfront's user, from the one key the address record vouches for. */
    for (size_t i = 0; i < c->n_services; i++) {
        const struct service_conf *sc = &c->services[i];
        if (sc->mode != SERVICE_MODE_SINGLE)
            continue; /* the anonymous services' tor uses key_dir itself; no copy of their keys anywhere */
        if (sc->onionbalance.role == OB_ROLE_FRONTEND)
            continue; /* the master key: Onionbalance's, never a tor's (ob_frontend.h) */
        if (!(sc->tor_mask >> k & 1u))
            continue; /* placed on other tors (tor.tors_per_service): no copy here */
        int rc = service_id_prepare_key(c, sc, kerr, sizeof(kerr));
        if (rc == 1)
            rc = instance_copy_key(c, sc, k, kerr, sizeof(kerr));
        if (rc < 0) {
            snprintf(err, errlen, "service %s: tor %u's copy of its key: %s", sc->name, k + 1, kerr);
            return -1;
        }
    }
    uid_t uid;
    gid_t gid;
    int owner = handover_tor_owner(c, -1, &uid, &gid, err, errlen);
    if (owner <= 0)
        return owner;
    snprintf(path, sizeof(path), "%s/instances", c->state_dir);
    if (handover_passage(path, gid, err, errlen) < 0 || handover_passage(p.dir, gid, err, errlen) < 0 ||
        handover_passage(p.keys_dir, gid, err, errlen) < 0 ||
        handover_give_tor_dirs(p.control_dir, p.data_dir, uid, gid, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < c->n_services; i++) {
        if (c->services[i].mode != SERVICE_MODE_SINGLE)
            continue;
        if (instance_key_dir(c, &c->services[i], k, path, sizeof(path)) < 0)
            return -1;
        if (access(path, F_OK) == 0 && fs_chown_tree(path, uid, gid, err, errlen) < 0)
            return -1; /* a refused service has no copy */
    }
    return 0;
}

int handover_apply_client(const struct config *c, const char *control_dir, const char *data_dir, char *err,
                          size_t errlen)
{
    uid_t uid;
    gid_t gid;
    int owner = handover_tor_owner(c, -1, &uid, &gid, err, errlen);
    if (owner <= 0)
        return owner;
    return handover_passage(c->state_dir, gid, err, errlen) < 0 || handover_passage(c->run_dir, gid, err, errlen) < 0
               ? -1
               : handover_give_tor_dirs(control_dir, data_dir, uid, gid, err, errlen);
}

int handover_apply_onionbalance(const struct config *c, const struct service_conf *sc, const char *ob_dir,
                                struct handover_ob *out, char *err, size_t errlen)
{
    char kerr[768];
    memset(out, 0, sizeof(*out));
    int owner = handover_tor_owner(c, -1, &out->uid, &out->gid, err, errlen);
    if (owner < 0 || fs_ensure_private_dir(ob_dir, NULL, err, errlen) < 0)
        return -1;
    if (owner == 0) {
        /* Onionbalance runs as onionfront's user and reads the key where it is: no copy anywhere. */
        out->uid = geteuid();
        out->gid = getegid();
        if (fs_set_dir_owner_mode(ob_dir, out->uid, out->gid, 0700, err, errlen) < 0)
            return -1;
        int dfd = fs_open_dir(ob_dir, true, err, errlen);
        if (dfd < 0)
            return -1;
        int rc = unlinkat(dfd, HANDOVER_OB_KEY_FILE, 0);
        int e = errno;
        close(dfd);
        if (rc < 0 && e != ENOENT) {
            snprintf(err, errlen, "%s/%s: cannot remove the master key's old copy: %s", ob_dir, HANDOVER_OB_KEY_FILE,
                     strerror(e));
            return -1;
        }
        if (snprintf(out->key_path, sizeof(out->key_path), "%s/%s", sc->key_dir, KEYS_SECRET_FILE) >=
            (int)sizeof(out->key_path)) {
            snprintf(err, errlen, "%s: the key path is too long", sc->key_dir);
            return -1;
        }
        return 0;
    }
    out->as_tor_user = true;
    if (handover_passage(c->state_dir, out->gid, err, errlen) < 0 || handover_passage(ob_dir, out->gid, err, errlen) < 0)
        return -1;
    if (snprintf(out->key_path, sizeof(out->key_path), "%s/%s", ob_dir, HANDOVER_OB_KEY_FILE) >=
        (int)sizeof(out->key_path)) {
        snprintf(err, errlen, "%s: the path is too long", ob_dir);
        return -1;
    }
    /* The copy from the one key the address record vouches for (service_id_prepare_key loaded it), by
     * content: never a link to, or a path into, the key directory. */
    struct onion_key key;
    unsigned char file[KEYS_SECRET_FILE_LEN];
    if (keys_load_mode(sc->key_dir, sc->mode, &key, kerr, sizeof(kerr)) < 0) {
        snprintf(err, errlen, "service %s: the master key: %s", sc->name, kerr);
        return -1;
    }
    int rc = keys_secret_file_encode(&key, file);
    onion_key_clear(&key);
    if (rc == 0)
        rc = fs_write_atomic_owned(ob_dir, HANDOVER_OB_KEY_FILE, file, sizeof(file), 0600, out->uid, out->gid, err,
                                   errlen);
    else
        snprintf(err, errlen, "service %s: the master key has no secret part", sc->name);
    OPENSSL_cleanse(file, sizeof(file));
    return rc;
}

int handover_apply_anonymous(const struct config *c, char *err, size_t errlen)
{
    struct instance_paths p;
    uid_t uid;
    gid_t gid;
    int owner = handover_tor_owner(c, -1, &uid, &gid, err, errlen);
    if (owner <= 0)
        return owner;
    if (instance_anonymous_paths(c, &p, err, errlen) < 0 || handover_passage(p.dir, gid, err, errlen) < 0)
        return -1;
    return handover_give_tor_dirs(p.control_dir, p.data_dir, uid, gid, err, errlen);
}

int handover_apply(const struct config *c, long attached_uid, char *err, size_t errlen)
{
    uid_t uid;
    gid_t gid;
    int owner = handover_tor_owner(c, attached_uid, &uid, &gid, err, errlen);
    if (owner <= 0)
        return owner;
    bool spawn = c->tor.mode == TOR_MODE_SPAWN;
    char path[PATH_MAX];

    /* Outermost first: once state_dir is ours again, nothing below it can be swapped by tor's User. */
    const char *const passage[][2] = {{c->state_dir, ""}, {c->state_dir, "/keys"}, {c->run_dir, ""},
                                      {c->run_dir, "/proxy"}};
    for (size_t i = 0; i < sizeof(passage) / sizeof(passage[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", passage[i][0], passage[i][1]);
        if (handover_passage(path, gid, err, errlen) < 0)
            return -1;
    }
    /* tor's own in spawn mode (attach: the DataDirectory and control directory are the attached tor's). */
    if (spawn) {
        char control_dir[PATH_MAX];
        snprintf(control_dir, sizeof(control_dir), "%s", c->tor.control_socket);
        char *slash = strrchr(control_dir, '/');
        if (slash && slash != control_dir)
            *slash = '\0';
        snprintf(path, sizeof(path), "%s/tor", c->state_dir);
        if (handover_give_tor_dirs(control_dir, path, uid, gid, err, errlen) < 0)
            return -1;
    }
    for (size_t i = 0; i < c->n_services; i++) {
        const struct service_conf *sc = &c->services[i];
        char kerr[768];
        /* A key is created only for a service the address record does not know; a known service whose
         * key is missing or different is refused (0) and not handed over: service_ids says why. */
        int rc = service_id_prepare_key(c, sc, kerr, sizeof(kerr));
        /* An Onionbalance frontend's key is the master key: no tor gets it, so its directory stays
         * onionfront's; Onionbalance reads a copy (handover_apply_onionbalance). */
        if (rc == 1 && sc->onionbalance.role != OB_ROLE_FRONTEND)
            rc = fs_chown_tree(sc->key_dir, uid, gid, kerr, sizeof(kerr));
        if (rc < 0) {
            snprintf(err, errlen, "service %s: %s", sc->name, kerr);
            return -1;
        }
    }
    return 0;
}
