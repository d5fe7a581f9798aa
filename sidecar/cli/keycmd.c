/* keycmd.c — `onionfront new-key`, `export-key` and `import-key` (see keycmd.h). */
#include "sidecar/cli/keycmd.h"

#include <errno.h>
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
#include "sidecar/identity/keys.h"

/* What every key command starts with: the config, the service in it, the address record, and the
 * state directory with its keys/ (a fresh state directory for import-key). */
struct keycmd {
    const char *name; /* the command, for messages */
    struct config *conf;
    const struct service_conf *sc;
    struct addrbook *book;
};

static void keycmd_done(struct keycmd *k)
{
    addrbook_free(k->book);
    config_free(k->conf);
}

/* Return 0, or -1 with the reason printed on `errf` (and `k` freed). The state directory and its keys/
 * are made only if `make_dirs` (a command that writes a key). */
static int keycmd_begin(struct keycmd *k, const char *name, const char *config_path, const char *service,
                        bool make_dirs, FILE *errf)
{
    char err[2048], keys_dir[PATH_MAX];
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
    snprintf(keys_dir, sizeof(keys_dir), "%s/keys", k->conf->state_dir);
    if ((make_dirs && (fs_ensure_private_dir(k->conf->state_dir, NULL, err, sizeof(err)) < 0 ||
                       fs_ensure_private_dir(keys_dir, NULL, err, sizeof(err)) < 0)) ||
        !(k->book = addrbook_load(k->conf->state_dir, err, sizeof(err)))) {
        fprintf(errf, "%s: %s\n", name, err);
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
    if (keycmd_begin(&k, "new-key", config_path, service, true, errf) < 0)
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
    if (keycmd_begin(&k, "export-key", config_path, service, false, errf) < 0)
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

/* Read the single secret key file `src` and install it in key_dir for a service of `mode`; its address
 * into `address`. */
static int keycmd_import_file(const char *src, const char *key_dir, enum service_mode mode, char *address, char *err,
                              size_t errlen)
{
    unsigned char buf[KEYS_SECRET_FILE_LEN + 1];
    struct onion_key key;
    size_t len = 0;
    int rc = fs_read_small(src, buf, sizeof(buf), &len, NULL, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "%s: no such file", src);
    if (rc == 0) {
        rc = keys_secret_file_decode(buf, len, src, &key, err, errlen);
        if (rc == 0 && (rc = keys_install_mode(&key, key_dir, mode, err, errlen)) == 0)
            snprintf(address, ONION_ADDRESS_SIZE, "%s", key.address);
        onion_key_clear(&key);
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc == 0 ? 0 : -1;
}

int keycmd_import_key(const char *config_path, const char *service, const char *src, FILE *out, FILE *errf)
{
    struct keycmd k;
    struct stat st;
    char err[1024], address[ONION_ADDRESS_SIZE];
    if (keycmd_begin(&k, "import-key", config_path, service, true, errf) < 0)
        return 1;
    int rc;
    if (stat(src, &st) < 0) {
        fprintf(errf, "import-key: %s: %s\n", src, strerror(errno));
        rc = -1;
    } else {
        rc = S_ISDIR(st.st_mode) ? keys_import_mode(src, k.sc->key_dir, k.sc->mode, address, err, sizeof(err))
                                 : keycmd_import_file(src, k.sc->key_dir, k.sc->mode, address, err, sizeof(err));
        if (rc < 0)
            fprintf(errf, "import-key: %s\n", err);
    }
    if (rc == 0 && (rc = keycmd_record(&k, address, ADDRBOOK_IMPORTED, out, errf)) == 0) {
        fprintf(out, "imported %s into %s: %s.onion\n", src, k.sc->key_dir, address);
        keycmd_reload_hint(out);
    }
    keycmd_done(&k);
    return rc < 0 ? 1 : 0;
}
