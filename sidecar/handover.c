/* handover.c — which directories onionfront (as root) hands to tor's user, and to whom (see handover.h). */
#include "sidecar/handover.h"

#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/config.h"
#include "sidecar/fsutil.h"
#include "sidecar/keys.h"

/* Which user tor runs as, when onionfront (as root) must hand its directories over: tor.user in spawn
 * mode; in attach mode the uid the attached tor reported (process/uid), once connected, when it is not
 * root. Return 1 with uid/gid, 0 if there is nothing to hand over, -1 with a message. */
int handover_tor_owner(const struct config *c, long tor_uid, uid_t *uid, gid_t *gid, char *err, size_t errlen)
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
    if (tor_uid <= 0 || geteuid() != 0)
        return 0;
    struct passwd *pw = getpwuid((uid_t)tor_uid);
    *uid = (uid_t)tor_uid;
    *gid = pw ? pw->pw_gid : (gid_t)tor_uid;
    return 1;
}

/* tor.user (spawn mode): tor starts as root and becomes that user before it opens its DataDirectory,
 * control socket and the services' key directories, and checks as that user that each is its own
 * (measured with tor 0.4.9: a root-owned 0700 directory is refused, and the control socket is created
 * after the switch). onionfront, which must then run as root, hands them over: the state and run
 * directories themselves (tor must pass through them), tor's DataDirectory with all it holds (one a
 * root tor used before included), the key, control and proxy directories, and every service's key
 * directory with its files — creating a key that does not exist yet, so a service added by a reload is
 * handed over before tor is told about it. The torrc stays root's: tor reads it before switching.
 * Attach mode with a tor of another user (onionfront as root): the same for the directories tor uses,
 * i.e. all but a DataDirectory and control directory, which are that tor's own.
 * Return 0 (also when there is nothing to hand over), or -1 with a message. */
int handover_give_to_tor_user(const struct config *c, long tor_uid, char *err, size_t errlen)
{
    uid_t uid;
    gid_t gid;
    int owner = handover_tor_owner(c, tor_uid, &uid, &gid, err, errlen);
    if (owner <= 0)
        return owner;
    bool spawn = c->tor.mode == TOR_MODE_SPAWN;
    char control_dir[PATH_MAX], path[PATH_MAX];
    snprintf(control_dir, sizeof(control_dir), "%s", c->tor.control_socket);
    char *slash = strrchr(control_dir, '/');
    if (slash && slash != control_dir)
        *slash = '\0';
    const char *const dirs[][2] = {{c->state_dir, ""}, {c->state_dir, "/keys"}, {c->run_dir, ""},
                                   {c->run_dir, "/proxy"}, {control_dir, ""}, {c->state_dir, "/tor"}};
    /* attach: only the first four; the control directory and DataDirectory are the attached tor's own */
    size_t n_dirs = spawn ? sizeof(dirs) / sizeof(dirs[0]) : 4;
    for (size_t i = 0; i < n_dirs; i++) {
        snprintf(path, sizeof(path), "%s%s", dirs[i][0], dirs[i][1]);
        bool tree = strcmp(dirs[i][1], "/tor") == 0;
        if (fs_ensure_private_dir(path, NULL, err, errlen) < 0 ||
            (tree ? fs_chown_tree(path, uid, gid, err, errlen) : fs_set_owner(path, uid, gid, err, errlen)) < 0)
            return -1;
    }
    for (size_t i = 0; i < c->n_services; i++) {
        const struct service_conf *sc = &c->services[i];
        struct onion_key k;
        char kerr[768];
        int rc = keys_load_or_create(sc->key_dir, &k, NULL, kerr, sizeof(kerr));
        onion_key_clear(&k);
        if (rc == 0)
            rc = fs_chown_tree(sc->key_dir, uid, gid, kerr, sizeof(kerr));
        if (rc < 0) {
            snprintf(err, errlen, "service %s: %s", sc->name, kerr);
            return -1;
        }
    }
    return 0;
}
