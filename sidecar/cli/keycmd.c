/* keycmd.c — `onionfront new-key`, `export-key` and `import-key` (see keycmd.h). */
#include "sidecar/cli/keycmd.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "sidecar/identity/addrbook.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/proc.h"
#include "sidecar/identity/keys.h"
#include "sidecar/cli/torrc_cmd.h"

/* What every key command starts with: the config, the service in it, the address record, and the
 * state directory with its keys/ (a fresh state directory for import-key). */
struct keycmd {
    const char *name; /* the command, for messages */
    struct config *conf;
    const struct service_conf *sc;
    struct addrbook *book;
};

/* The shipped systemd unit (systemd/onionfront.service): StateDirectory=onionfront (mode 0700) and
 * User=/Group=onionfront. Before the first start the key commands make that directory as systemd would. */
#define KEYCMD_UNIT_STATE_DIR "/var/lib/onionfront"
#define KEYCMD_UNIT_USER "onionfront"

static void keycmd_done(struct keycmd *k)
{
    addrbook_free(k->book);
    config_free(k->conf);
}

/* Load the config and find SERVICE. Return 0, or -1 with the reason printed on `errf` (`k` freed). */
static int keycmd_begin(struct keycmd *k, const char *name, const char *config_path, const char *service,
                        FILE *errf)
{
    char err[2048];
    memset(k, 0, sizeof(*k));
    k->name = name;
    if (!(k->conf = config_load_file(config_path, err, sizeof(err)))) {
        fprintf(errf, "%s: %s: %s\n", name, config_path, err);
        return -1;
    }
    if (!(k->sc = config_find_service(k->conf, service))) {
        fprintf(errf, "%s: no service named \"%s\" in %s\n", name, service, config_path);
        keycmd_done(k);
        return -1;
    }
    /* Every key command is about to hold a secret key in memory: no core file, no ptrace, as the daemon. */
    if (proc_protect_secrets() < 0) {
        fprintf(errf, "%s: cannot keep core dumps and ptrace away from the key (prctl, setrlimit): %s\n", name,
                strerror(errno));
        keycmd_done(k);
        return -1;
    }
    return 0;
}

/* As root: who the daemon will be to its state directory. Its owner if it exists; if not, the unit's
 * user for the unit's StateDirectory (systemd gives it to User=; tor.user means onionfront runs as root),
 * else root. */
static int keycmd_state_owner(const struct config *c, uid_t *uid, gid_t *gid, bool *exists)
{
    struct stat st;
    *uid = 0;
    *gid = 0;
    *exists = stat(c->state_dir, &st) == 0;
    if (*exists) {
        *uid = st.st_uid;
        *gid = st.st_gid;
        return 0;
    }
    if (errno != ENOENT)
        return -1;
    const struct passwd *pw = NULL;
    if (!c->tor.user && strcmp(c->state_dir, KEYCMD_UNIT_STATE_DIR) == 0 && (pw = getpwnam(KEYCMD_UNIT_USER))) {
        *uid = pw->pw_uid;
        *gid = pw->pw_gid;
    }
    return 0;
}

/* As root: make a missing state directory 0700 for its owner-to-be (through a descriptor, as systemd
 * would), then become that owner for good, so that every key file and the record land as the daemon
 * will find them and nothing is written as root in a directory another user owns. Return 0, or -1 with
 * the reason printed. */
static int keycmd_become_owner(struct keycmd *k, FILE *out, FILE *errf)
{
    char err[1024];
    uid_t uid;
    gid_t gid;
    bool exists;
    if (keycmd_state_owner(k->conf, &uid, &gid, &exists) < 0) {
        fprintf(errf, "%s: %s: %s\n", k->name, k->conf->state_dir, strerror(errno));
        return -1;
    }
    if (!exists) {
        if (mkdir(k->conf->state_dir, 0700) < 0 && errno != EEXIST) {
            fprintf(errf, "%s: %s: cannot create directory: %s\n", k->name, k->conf->state_dir, strerror(errno));
            return -1;
        }
        if (fs_set_dir_owner_mode(k->conf->state_dir, uid, gid, 0700, err, sizeof(err)) < 0) {
            fprintf(errf, "%s: %s\n", k->name, err);
            return -1;
        }
        const struct passwd *pw = getpwuid(uid);
        fprintf(out, "%s: made %s (owner %s, mode 0700%s)\n", k->name, k->conf->state_dir, pw ? pw->pw_name : "root",
                uid != 0 ? ", as the systemd unit's StateDirectory= would" : "");
    }
    if (uid == 0)
        return 0;
    if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
        fprintf(errf, "%s: cannot switch to uid %u gid %u, the owner of %s: %s\n", k->name, (unsigned)uid,
                (unsigned)gid, k->conf->state_dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Not root, before the first start: a state directory this user cannot make (systemd makes it when the
 * unit starts) gets the one command that makes it, instead of "Permission denied". Return 0 if there is
 * nothing to say, -1 with it printed. */
static int keycmd_state_hint(const struct keycmd *k, FILE *errf)
{
    struct stat st;
    char parent[PATH_MAX];
    if (stat(k->conf->state_dir, &st) == 0 || errno != ENOENT)
        return 0;
    snprintf(parent, sizeof(parent), "%s", k->conf->state_dir);
    char *slash = strrchr(parent, '/');
    if (slash)
        *(slash == parent ? slash + 1 : slash) = '\0';
    if (access(parent, W_OK | X_OK) == 0)
        return 0;
    const struct passwd *pw = getpwuid(geteuid());
    const struct group *gr = getgrgid(getegid());
    char user[64], group[64];
    snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "?");
    snprintf(group, sizeof(group), "%s", gr ? gr->gr_name : "?");
    fprintf(errf,
            "%s: %s does not exist yet (systemd makes it when onionfront first starts), and user %s cannot create "
            "it in %s. Make it once as systemd would, as root:\n  install -d -o %s -g %s -m 0700 %s\n"
            "(or run this command as root: it does that itself)\n",
            k->name, k->conf->state_dir, user, parent, user, group, k->conf->state_dir);
    return -1;
}

/* Open the state directory and the address record; with `make_dirs` (a command that writes a key) make
 * the state directory and its keys/ first, as root becoming their owner (keycmd_become_owner). Return 0,
 * or -1 with the reason printed on `errf` (and `k` freed). */
static int keycmd_open_state(struct keycmd *k, bool make_dirs, FILE *out, FILE *errf)
{
    char err[2048], keys_dir[PATH_MAX];
    snprintf(keys_dir, sizeof(keys_dir), "%s/keys", k->conf->state_dir);
    if (make_dirs && (geteuid() == 0 ? keycmd_become_owner(k, out, errf) : keycmd_state_hint(k, errf)) < 0) {
        keycmd_done(k);
        return -1;
    }
    if ((make_dirs && (fs_ensure_private_dir(k->conf->state_dir, NULL, err, sizeof(err)) < 0 ||
                       fs_ensure_private_dir(keys_dir, NULL, err, sizeof(err)) < 0)) ||
        !(k->book = addrbook_load(k->conf->state_dir, err, sizeof(err)))) {
        fprintf(errf, "%s: %s\n", k->name, err);
        keycmd_done(k);
        return -1;
    }
    return 0;
}

/* Put `address` into the record as SERVICE's, got `how`, and save; print what changed on `out`.
 * Return 0, or -1 with the reason printed. */
static int keycmd_record(struct keycmd *k, const char *address, enum addrbook_how how, FILE *out, FILE *errf)
{
    char err[1024], old[ONION_ADDRESS_SIZE] = "";
    const char *was = addrbook_address(k->book, k->sc->name);
    if (was)
        snprintf(old, sizeof(old), "%s", was);
    int rc = addrbook_note_key(k->book, k->sc->name, address, how, k->sc->mode, time(NULL), err, sizeof(err));
    if (rc == 1 && addrbook_save(k->book, err, sizeof(err)) < 0)
        rc = -1;
    if (rc < 0) {
        fprintf(errf,
                "%s: %s\n%s: the key of %s.onion is in %s, but the address record does not say so: a running "
                "onionfront will refuse service %s until it does; fix the cause and run the command again\n",
                k->name, err, k->name, address, k->sc->key_dir, k->sc->name);
        return -1;
    }
    if (rc == 1 && old[0])
        fprintf(out, "%s: service %s changed address on purpose: %s.onion -> %s.onion (recorded in %s)\n", k->name,
                k->sc->name, old, address, addrbook_path(k->book));
    else if (rc == 1)
        fprintf(out, "%s: service %s: %s.onion recorded in %s\n", k->name, k->sc->name, address,
                addrbook_path(k->book));
    return 0;
}

static void keycmd_reload_hint(FILE *out)
{
    fprintf(out, "A running onionfront publishes it at its next reload (SIGHUP, or: onionfront status reload).\n");
}

int keycmd_new_key(const char *config_path, const char *service, FILE *out, FILE *errf)
{
    struct keycmd k;
    struct onion_key key;
    char err[1024], aside[PATH_MAX + 64], when[32];
    bool created = false;
    if (keycmd_begin(&k, "new-key", config_path, service, errf) < 0 ||
        keycmd_open_state(&k, true, out, errf) < 0)
        return 1;
    /* Keep the old key: an address given up by mistake can be brought back with import-key. */
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
    snprintf(aside, sizeof(aside), "%s.replaced-%s", k.sc->key_dir, when);
    bool moved = rename(k.sc->key_dir, aside) == 0;
    if (!moved && errno != ENOENT) {
        fprintf(errf, "new-key: cannot move %s aside to %s: %s\n", k.sc->key_dir, aside, strerror(errno));
        keycmd_done(&k);
        return 1;
    }
    int krc = keys_load_or_create_mode(k.sc->key_dir, k.sc->mode, &key, &created, err, sizeof(err));
    if (krc == 0 && !created) { /* something put a key there meanwhile: not ours to judge */
        snprintf(err, sizeof(err), "%s: holds a key again after it was moved aside; not touching it", k.sc->key_dir);
        onion_key_clear(&key);
        krc = -1;
    }
    if (krc < 0) {
        fprintf(errf, "new-key: %s\n", err);
        if (moved && rename(aside, k.sc->key_dir) < 0)
            fprintf(errf, "new-key: the old key is in %s\n", aside);
        keycmd_done(&k);
        return 1;
    }
    onion_key_forget_secret(&key);
    int rc = keycmd_record(&k, key.address, ADDRBOOK_NEW_KEY, out, errf);
    if (rc == 0) {
        fprintf(out, "service %s: new key in %s, address %s.onion\n", k.sc->name, k.sc->key_dir, key.address);
        if (moved)
            fprintf(out, "The old key is kept in %s (onionfront import-key %s %s brings it back).\n", aside,
                    k.sc->name, aside);
        keycmd_reload_hint(out);
    }
    onion_key_clear(&key);
    keycmd_done(&k);
    return rc < 0 ? 1 : 0;
}

/* Split `file` into its directory and name (in `dir`, which gets the NUL). Return the name, or NULL. */
static const char *keycmd_split(const char *file, char *dir, size_t cap)
{
    const char *slash = strrchr(file, '/');
    if (!slash) {
        snprintf(dir, cap, ".");
        return *file ? file : NULL;
    }
    if (!slash[1] || (size_t)(slash - file) >= cap)
        return NULL;
    if (slash == file)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - file), file);
    return slash + 1;
}

int keycmd_export_key(const char *config_path, const char *service, const char *file, FILE *out, FILE *errf)
{
    struct keycmd k;
    struct onion_key key;
    unsigned char buf[KEYS_SECRET_FILE_LEN];
    char err[1024], dir[PATH_MAX];
    const char *name = NULL;
    int rc = -1;
    bool to_out = strcmp(file, "-") == 0;
    if (to_out && isatty(fileno(out))) {
        fprintf(errf, "export-key: refusing to write a secret key to a terminal; give a file name, or redirect\n");
        return 1;
    }
    if (!to_out && !(name = keycmd_split(file, dir, sizeof(dir)))) {
        fprintf(errf, "export-key: %s: not a file name\n", file);
        return 1;
    }
    if (keycmd_begin(&k, "export-key", config_path, service, errf) < 0 ||
        keycmd_open_state(&k, false, out, errf) < 0)
        return 1;
    char address[ONION_ADDRESS_SIZE];
    if (keys_inspect_mode(k.sc->key_dir, k.sc->mode, address, err, sizeof(err)) == 0) {
        /* before the first start: say what to do, as client-auth add does */
        fprintf(errf, "export-key: service %s has no key yet (%s): start onionfront with it once, or give it one "
                "with onionfront new-key %s (or import-key %s FILE), then export it\n", k.sc->name, err, k.sc->name,
                k.sc->name);
        keycmd_done(&k);
        return 1;
    }
    if (keys_load_mode(k.sc->key_dir, k.sc->mode, &key, err, sizeof(err)) < 0) {
        fprintf(errf, "export-key: service %s: %s\n", k.sc->name, err);
        keycmd_done(&k);
        return 1;
    }
    const char *recorded = addrbook_address(k.book, k.sc->name);
    if (recorded && strcmp(recorded, key.address) != 0)
        fprintf(errf, "export-key: note: service %s is recorded as %s.onion, its key directory holds %s.onion\n",
                k.sc->name, recorded, key.address);
    if (keys_secret_file_encode(&key, buf) < 0) {
        fprintf(errf, "export-key: service %s: no secret key loaded\n", k.sc->name);
    } else if (to_out) {
        rc = fwrite(buf, 1, sizeof(buf), out) == sizeof(buf) && fflush(out) == 0 ? 0 : -1;
        if (rc < 0)
            fprintf(errf, "export-key: writing to standard output failed: %s\n", strerror(errno));
    } else if ((rc = fs_write_new(dir, name, buf, sizeof(buf), 0600, err, sizeof(err))) < 0) {
        fprintf(errf, "export-key: %s\n", err);
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    if (rc == 0)
        fprintf(to_out ? errf : out,
                "export-key: the secret key of service %s (%s.onion) written to %s in tor's %s format%s; whoever "
                "has it can run this address: keep it as secret as the key directory\n",
                k.sc->name, key.address, to_out ? "standard output" : file, KEYS_SECRET_FILE,
                to_out ? "" : ", mode 0600");
    onion_key_clear(&key);
    keycmd_done(&k);
    return rc < 0 ? 1 : 0;
}

/* Read the single secret key file `src` into `key`. A bare file carries no history: whoever imports it
 * vouches for its past (keys.h, keys_secret_file_decode). Return 0, or -1 with the reason in `err`. */
static int keycmd_read_file(const char *src, struct onion_key *key, char *err, size_t errlen)
{
    unsigned char buf[KEYS_SECRET_FILE_LEN + 1];
    size_t len = 0;
    int rc = fs_read_small(src, buf, sizeof(buf), &len, NULL, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "%s: no such file", src);
    if (rc == 0)
        rc = keys_secret_file_decode(buf, len, src, key, err, errlen);
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc == 0 ? 0 : -1;
}

/* Do `a` and `b` name one directory: the same text (trailing '/' aside) or the same inode? */
static bool keycmd_same_dir(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/')
        la--;
    while (lb > 1 && b[lb - 1] == '/')
        lb--;
    struct stat sa, sb;
    return (la == lb && memcmp(a, b, la) == 0) ||
           (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

/* The torrc `torrc` as evidence of how `src` ran (keys.h, enum keys_evidence): it must list `src` as a
 * HiddenServiceDir. Return 0, or -1 with the reason printed. */
static int keycmd_torrc_evidence(const char *torrc, const char *src, enum keys_evidence *ev, FILE *errf)
{
    struct torrc_import *t = torrc_cmd_read(torrc, "import-key: --torrc", errf);
    if (!t)
        return -1;
    bool listed = false;
    for (size_t i = 0; i < torrc_import_n_dirs(t) && !listed; i++)
        listed = keycmd_same_dir(torrc_import_dir(t, i), src);
    if (listed)
        *ev = torrc_import_is_single(t) ? KEYS_EVIDENCE_SINGLE : KEYS_EVIDENCE_ANONYMOUS;
    else
        fprintf(errf, "import-key: --torrc %s has no HiddenServiceDir %s: it is not the torrc that directory ran "
                "under, so it shows nothing about it\n", torrc, src);
    torrc_import_free(t);
    return listed ? 0 : -1;
}

int keycmd_import_key(const char *config_path, const char *service, const char *src, FILE *out, FILE *errf)
{
    return keycmd_import_key_opts(config_path, service, src, &(struct keycmd_import_opts){0}, out, errf);
}

int keycmd_import_key_opts(const char *config_path, const char *service, const char *src,
                           const struct keycmd_import_opts *o, FILE *out, FILE *errf)
{
    struct keycmd k;
    struct onion_key key;
    struct stat st;
    char err[2048];
    enum keys_evidence ev = o->vouch_single ? KEYS_EVIDENCE_SINGLE : KEYS_EVIDENCE_NONE;
    if (keycmd_begin(&k, "import-key", config_path, service, errf) < 0)
        return 1;
    /* The source first, as whoever runs this (root reads tor's directory); the copy after
     * keycmd_open_state, as the state directory's owner. The source is only read. */
    int rc = 0;
    if (stat(src, &st) < 0) {
        fprintf(errf, "import-key: %s: %s%s\n", src, strerror(errno),
                errno == EACCES ? " (tor's directory is its user's: run import-key as root)" : "");
        rc = -1;
    } else if (S_ISDIR(st.st_mode)) {
        if (o->torrc && keycmd_torrc_evidence(o->torrc, src, &ev, errf) < 0)
            rc = -1;
        else if (keys_import_read(src, k.sc->mode, ev, &key, err, sizeof(err)) < 0) {
            fprintf(errf, "import-key: service %s: %s\n", k.sc->name, err);
            if (geteuid() != 0 && access(src, R_OK | X_OK) < 0)
                fprintf(errf, "import-key: (tor's directory is its user's, mode 0700: run import-key as root; "
                        "the copy is written as the owner of %s)\n", k.conf->state_dir);
            rc = -1;
        }
    } else if (o->torrc) {
        fprintf(errf, "import-key: --torrc goes with a HiddenServiceDir; %s is a single key file\n", src);
        rc = -1;
    } else if (keycmd_read_file(src, &key, err, sizeof(err)) < 0) {
        fprintf(errf, "import-key: %s\n", err);
        rc = -1;
    }
    if (rc < 0) {
        keycmd_done(&k);
        return 1;
    }
    if (keycmd_open_state(&k, true, out, errf) < 0) {
        onion_key_clear(&key);
        return 1;
    }
    if (keys_install_mode(&key, k.sc->key_dir, k.sc->mode, err, sizeof(err)) < 0) {
        fprintf(errf, "import-key: %s\n", err);
        rc = -1;
    }
    if (rc == 0 && o->vouch_single && !o->torrc && k.sc->mode == SERVICE_MODE_SINGLE)
        fprintf(errf, "import-key: on your word (--i-know-it-was-a-single-onion), %s.onion is now a single onion "
                "service: if it was ever an ordinary hidden service, its server's location shows from its first "
                "publication\n", key.address);
    if (rc == 0 && (rc = keycmd_record(&k, key.address, ADDRBOOK_IMPORTED, out, errf)) == 0) {
        fprintf(out, "imported %s into %s: %s.onion (%s service; %s left as it was)\n", src, k.sc->key_dir,
                key.address, service_mode_str(k.sc->mode), src);
        keycmd_reload_hint(out);
    }
    onion_key_clear(&key);
    keycmd_done(&k);
    return rc < 0 ? 1 : 0;
}
