/* clientauth.c — a service's authorized_clients directory, owned and checked (see clientauth.h). */
#include "sidecar/identity/clientauth.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/onion_address.h"

#define CLIENTAUTH_FILE_MAX 256
#define CLIENTAUTH_LIST_MAX (CONFIG_MAX_CLIENTS * (CONFIG_SERVICE_NAME_MAX + 1) + 1)

/* "descriptor:x25519:<key>\n" */
static void clientauth_line(const struct client_auth_conf *cl, char *out, size_t len)
{
    snprintf(out, len, "descriptor:x25519:%s\n", cl->public_key);
}

/* The configured client whose file is `fname` ("<name>.auth"), or NULL. */
static const struct client_auth_conf *clientauth_find(const struct service_conf *sc, const char *fname)
{
    size_t n = strlen(fname);
    if (n < 6 || strcmp(fname + n - 5, ".auth") != 0)
        return NULL;
    for (size_t i = 0; i < sc->n_clients; i++)
        if (strlen(sc->clients[i].name) == n - 5 && strncmp(sc->clients[i].name, fname, n - 5) == 0)
            return &sc->clients[i];
    return NULL;
}

/* Is `name` a line of onionfront's list `list`? */
static bool clientauth_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (e ? 1 : 0);
    }
    return false;
}

/* Check every entry of the open directory `dfd` (named `dir`); with `fix`, first remove the .auth files
 * of clients in `list` (written by onionfront before) that the config no longer names. */
static int clientauth_scan(const struct service_conf *sc, int dfd, const char *dir, const char *list, bool fix,
                           uid_t owner, char *err, size_t errlen)
{
    int dup_fd = dup(dfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    int rc = 0;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        snprintf(err, errlen, "%s: cannot list: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    size_t found = 0;
    while (rc == 0 && (de = readdir(d))) {
        const char *f = de->d_name;
        if (strcmp(f, ".") == 0 || strcmp(f, "..") == 0 || strcmp(f, CLIENTAUTH_OLD_LIST) == 0)
            continue;
        const struct client_auth_conf *cl = clientauth_find(sc, f);
        size_t n = strlen(f);
        if (!cl && fix && n > 5 && strcmp(f + n - 5, ".auth") == 0) {
            char name[CONFIG_SERVICE_NAME_MAX + 2];
            snprintf(name, sizeof(name), "%.*s", (int)(n - 5 < sizeof(name) - 1 ? n - 5 : sizeof(name) - 1), f);
            if (clientauth_listed(list, name)) {
                if (unlinkat(dfd, f, 0) < 0) {
                    snprintf(err, errlen, "%s/%s: cannot remove a client no longer configured: %s", dir, f,
                             strerror(errno));
                    rc = -1;
                }
                continue;
            }
        }
        if (!cl) {
            snprintf(err, errlen, "%s/%s: unknown file (not a client in services.client_auth); tor would read "
                     "it: remove it, or add the client to the config", dir, f);
            rc = -1;
            break;
        }
        char buf[CLIENTAUTH_FILE_MAX], want[CLIENTAUTH_FILE_MAX], rerr[512];
        size_t len = 0;
        struct stat st;
        int r = fs_read_small_at(dfd, dir, f, buf, sizeof(buf) - 1, &len, &st, rerr, sizeof(rerr));
        if (r != 0) {
            snprintf(err, errlen, "%s", r > 0 ? "vanished while checked" : rerr);
            rc = -1;
            break;
        }
        buf[len] = '\0';
        clientauth_line(cl, want, sizeof(want));
        if (strcmp(buf, want) != 0) {
            snprintf(err, errlen, "%s/%s: malformed or not the configured key (tor would silently ignore a "
                     "malformed file)", dir, f);
            rc = -1;
        } else if ((st.st_mode & 077) != 0) {
            snprintf(err, errlen, "%s/%s: readable or writable by others (mode %o)", dir, f, st.st_mode & 0777);
            rc = -1;
        } else if (st.st_uid != owner) {
            /* mode 0600: only its owner reads it, and tor reads it as the directory's owner */
            snprintf(err, errlen, "%s/%s: owned by uid %lu, not by the directory's owner (uid %lu): tor could not "
                     "read it and would silently leave the client out", dir, f, (unsigned long)st.st_uid,
                     (unsigned long)owner);
            rc = -1;
        } else {
            found++;
        }
    }
    closedir(d);
    /* Exactly the configured clients: one whose file is missing would be left out by this tor. */
    for (size_t i = 0; rc == 0 && found < sc->n_clients && i < sc->n_clients; i++) {
        char fname[CONFIG_SERVICE_NAME_MAX + 8];
        struct stat fst;
        snprintf(fname, sizeof(fname), "%s.auth", sc->clients[i].name);
        if (fstatat(dfd, fname, &fst, AT_SYMLINK_NOFOLLOW) < 0) {
            snprintf(err, errlen, "%s/%s: missing (client \"%s\" is configured)", dir, fname, sc->clients[i].name);
            rc = -1;
        }
    }
    return rc;
}

/* The error for a config that lists no clients for a service onionfront restricted before (the names in
 * its `list`, one a line; the probe's own entry is not the operator's client and is left out): never fail
 * open. */
static void clientauth_refuse_drop(const char *dir, const char *list, char *err, size_t errlen)
{
    char names[256] = "";
    size_t o = 0;
    for (const char *p = list; *p && o + 1 < sizeof(names);) {
        size_t n = strcspn(p, "\n");
        if (n && !(n == strlen(CONFIG_PROBE_CLIENT_NAME) && strncmp(p, CONFIG_PROBE_CLIENT_NAME, n) == 0)) {
            int w = snprintf(names + o, sizeof(names) - o, "%s%.*s", o ? "," : "", (int)n, p);
            o = w > 0 && (size_t)w < sizeof(names) - o ? o + (size_t)w : sizeof(names) - 1;
        }
        p += n + (p[n] == '\n');
    }
    snprintf(err, errlen, "%s: the service was restricted to clients (%s) and the config lists none: tor would "
             "publish it for everyone. To make it public on purpose set \"drop_client_auth\": true for the "
             "service; to keep it restricted put services.client_auth back", dir, names);
}

/* Read onionfront's list of the clients it wrote: <key_dir>/onionfront-clients (`kfd`), or, from before
 * it moved there, authorized_clients/.onionfront-clients (`dfd`, may be -1). Return 0, or -1 with err. */
static int clientauth_read_list(int kfd, int dfd, const char *key_dir, const char *dir, char *list, size_t cap,
                                char *err, size_t errlen)
{
    size_t len = 0;
    int r = fs_read_small_at(kfd, key_dir, CLIENTAUTH_LIST, list, cap - 1, &len, NULL, err, errlen);
    if (r == 1 && dfd >= 0)
        r = fs_read_small_at(dfd, dir, CLIENTAUTH_OLD_LIST, list, cap - 1, &len, NULL, err, errlen);
    if (r < 0)
        return -1;
    list[r == 0 ? len : 0] = '\0';
    return 0;
}

/* Write the files of sc's clients into `dfd` (the list in `kfd` first, with old and new names: a crash
 * between the steps leaves files it may remove), remove the files of clients no longer configured,
 * check the rest, then list only the configured clients. */
static int clientauth_fix(const struct service_conf *sc, const char *key_dir, int kfd, int dfd, const char *dir,
                          const char *list, const struct stat *dst, char *err, size_t errlen)
{
    char *next = malloc(CLIENTAUTH_LIST_MAX * 2);
    size_t o = 0;
    if (!next) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    o += (size_t)snprintf(next, CLIENTAUTH_LIST_MAX * 2, "%s", list);
    for (size_t i = 0; i < sc->n_clients; i++)
        if (!clientauth_listed(list, sc->clients[i].name))
            o += (size_t)snprintf(next + o, CLIENTAUTH_LIST_MAX * 2 - o, "%s\n", sc->clients[i].name);
    int rc = fs_write_at(kfd, key_dir, CLIENTAUTH_LIST, next, o, err, errlen);
    for (size_t i = 0; rc == 0 && i < sc->n_clients; i++) {
        char fname[CONFIG_SERVICE_NAME_MAX + 8], line[CLIENTAUTH_FILE_MAX], have[CLIENTAUTH_FILE_MAX], rerr[512];
        size_t len = 0;
        struct stat st;
        snprintf(fname, sizeof(fname), "%s.auth", sc->clients[i].name);
        clientauth_line(&sc->clients[i], line, sizeof(line));
        /* Rewritten only when it is not already exactly this, owned as the directory (tor reads it as that
         * user: a reload as root must not leave it a file tor cannot open). */
        int r = fs_read_small_at(dfd, dir, fname, have, sizeof(have) - 1, &len, &st, rerr, sizeof(rerr));
        if (r == 0 && len == strlen(line) && memcmp(have, line, len) == 0 && st.st_uid == dst->st_uid &&
            (st.st_mode & 077) == 0)
            continue;
        rc = fs_write_at_owned(dfd, dir, fname, line, strlen(line), geteuid() == 0 ? dst->st_uid : (uid_t)-1,
                               geteuid() == 0 ? dst->st_gid : (gid_t)-1, err, errlen);
    }
    if (rc == 0)
        rc = clientauth_scan(sc, dfd, dir, next, true, dst->st_uid, err, errlen);
    /* Now only the configured clients remain: the list says so. */
    o = 0;
    for (size_t i = 0; rc == 0 && i < sc->n_clients; i++)
        o += (size_t)snprintf(next + o, CLIENTAUTH_LIST_MAX * 2 - o, "%s\n", sc->clients[i].name);
    if (rc == 0)
        rc = fs_write_at(kfd, key_dir, CLIENTAUTH_LIST, next, o, err, errlen);
    /* tor warns about every file in authorized_clients not ending in .auth: the old list goes */
    if (rc == 0 && unlinkat(dfd, CLIENTAUTH_OLD_LIST, 0) == 0)
        fsync(dfd);
    free(next);
    return rc;
}

static int clientauth_run(const struct service_conf *sc, const char *key_dir, bool fix, char *err, size_t errlen)
{
    char dir[CONFIG_PATH_MAX + sizeof(CLIENTAUTH_DIR) + 2];
    char oerr[512], list[CLIENTAUTH_LIST_MAX];
    snprintf(dir, sizeof(dir), "%s/%s", key_dir, CLIENTAUTH_DIR);
    int kfd = fs_open_dir(key_dir, false, oerr, sizeof(oerr)), dfd = -1, rc = -1;
    bool dropping = false;
    struct stat kst, st;
    if (kfd < 0) {
        snprintf(err, errlen, "%s", oerr);
        return -1;
    }
    if (fstat(kfd, &kst) < 0) {
        snprintf(err, errlen, "%s: %s", key_dir, strerror(errno));
        goto done;
    }
    if (fix && sc->n_clients > 0 && mkdirat(kfd, CLIENTAUTH_DIR, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
        goto done;
    }
    dfd = openat(kfd, CLIENTAUTH_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 && !(errno == ENOENT && sc->n_clients == 0)) {
        snprintf(err, errlen, "%s: cannot open (a symlink is refused): %s", dir, strerror(errno));
        goto done;
    }
    /* tor reads the directory as the key directory's owner (its User): a directory root just made is
     * given to that owner through its descriptor. */
    if (dfd >= 0 && fix && geteuid() == 0 && fstat(dfd, &st) == 0 && st.st_uid != kst.st_uid &&
        fchown(dfd, kst.st_uid, kst.st_gid) < 0) {
        snprintf(err, errlen, "%s: cannot give it to the key directory's owner: %s", dir, strerror(errno));
        goto done;
    }
    if (dfd >= 0 && (fstat(dfd, &st) < 0 || (st.st_mode & 077) != 0 || (st.st_uid != geteuid() && geteuid() != 0))) {
        snprintf(err, errlen, "%s: must be a directory private to its owner (mode 0700)", dir);
        goto done;
    }
    if (dfd >= 0 && st.st_uid != kst.st_uid) {
        snprintf(err, errlen, "%s: owned by uid %lu, not by the key directory's owner (uid %lu): tor could not "
                 "read it", dir, (unsigned long)st.st_uid, (unsigned long)kst.st_uid);
        goto done;
    }
    if (clientauth_read_list(kfd, dfd, key_dir, dir, list, sizeof(list), oerr, sizeof(oerr)) < 0) {
        snprintf(err, errlen, "%s", oerr);
        goto done;
    }
    /* Never fail open: the list names clients (also when someone removed authorized_clients itself). */
    dropping = sc->n_clients == 0 && list[0] != '\0';
    if (dropping && !sc->drop_client_auth) {
        clientauth_refuse_drop(dir, list, err, errlen);
        goto done;
    }
    if (dfd < 0) /* no clients, none before, and no directory: nothing for tor to read */
        rc = 0;
    else if (fix && (sc->n_clients > 0 || dropping))
        rc = clientauth_fix(sc, key_dir, kfd, dfd, dir, list, &st, err, errlen);
    else
        rc = clientauth_scan(sc, dfd, dir, list, false, st.st_uid, err, errlen);
    if (rc == 0 && fix && dropping && dfd < 0) /* the directory went with its files: only the list is left */
        rc = fs_write_at(kfd, key_dir, CLIENTAUTH_LIST, "", 0, err, errlen);
done:
    if (dfd >= 0)
        close(dfd);
    close(kfd);
    return rc == 0 && fix && dropping ? 1 : rc;
}

/* `sc` with the probe's entry after its own clients (a service without clients gets none), in `*tmp`,
 * whose clients array is `*owned` (free it). Return the service to use, or NULL out of memory. */
static const struct service_conf *clientauth_with_probe(const struct service_conf *sc,
                                                         const struct client_auth_conf *probe,
                                                         struct service_conf *tmp, struct client_auth_conf **owned)
{
    *owned = NULL;
    if (!probe || sc->n_clients == 0)
        return sc;
    if (!(*owned = calloc(sc->n_clients + 1, sizeof(**owned))))
        return NULL;
    memcpy(*owned, sc->clients, sc->n_clients * sizeof(**owned));
    (*owned)[sc->n_clients] = *probe;
    *tmp = *sc;
    tmp->clients = *owned;
    tmp->n_clients = sc->n_clients + 1;
    return tmp;
}

static int clientauth_run_with(const struct service_conf *sc, const char *key_dir,
                               const struct client_auth_conf *probe, bool fix, char *err, size_t errlen)
{
    struct service_conf tmp;
    struct client_auth_conf *owned;
    const struct service_conf *eff = clientauth_with_probe(sc, probe, &tmp, &owned);
    if (!eff) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = clientauth_run(eff, key_dir, fix, err, errlen);
    free(owned);
    return rc;
}

int clientauth_sync(const struct service_conf *sc, char *err, size_t errlen)
{
    return clientauth_run(sc, sc->key_dir, true, err, errlen);
}

int clientauth_check(const struct service_conf *sc, char *err, size_t errlen)
{
    return clientauth_run(sc, sc->key_dir, false, err, errlen);
}

int clientauth_sync_dir(const struct service_conf *sc, const char *key_dir, const struct client_auth_conf *probe,
                        char *err, size_t errlen)
{
    return clientauth_run_with(sc, key_dir, probe, true, err, errlen);
}

int clientauth_check_dir(const struct service_conf *sc, const char *key_dir, const struct client_auth_conf *probe,
                         char *err, size_t errlen)
{
    return clientauth_run_with(sc, key_dir, probe, false, err, errlen);
}

static void clientauth_upper(char *s)
{
    for (; *s; s++)
        if (*s >= 'a' && *s <= 'z')
            *s = (char)(*s - 'a' + 'A');
}

int clientauth_keypair(char pub[53], char priv[53])
{
    unsigned char raw_pub[32], raw_priv[32];
    size_t pub_len = sizeof(raw_pub), priv_len = sizeof(raw_priv);
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, NULL);
    int ok = ctx && EVP_PKEY_keygen_init(ctx) == 1 && EVP_PKEY_keygen(ctx, &key) == 1 &&
             EVP_PKEY_get_raw_public_key(key, raw_pub, &pub_len) == 1 &&
             EVP_PKEY_get_raw_private_key(key, raw_priv, &priv_len) == 1 && pub_len == 32 && priv_len == 32;
    if (ok) {
        onion_address_base32(raw_pub, sizeof(raw_pub), pub);
        onion_address_base32(raw_priv, sizeof(raw_priv), priv);
        clientauth_upper(pub);
        clientauth_upper(priv);
    }
    OPENSSL_cleanse(raw_priv, sizeof(raw_priv));
    EVP_PKEY_free(key); /* OpenSSL wipes the key's secret on free */
    EVP_PKEY_CTX_free(ctx);
    return ok ? 0 : -1;
}
