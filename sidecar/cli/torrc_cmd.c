/* torrc_cmd.c — `onionfront import-torrc` (see torrc_cmd.h). */
#include "sidecar/cli/torrc_cmd.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sidecar/cli/torrc_import.h"
#include "sidecar/core/fsutil.h"

#define TORRC_CMD_AUTH_PREFIX "descriptor:x25519:"
#define TORRC_CMD_AUTH_KEY_LEN 52 /* a 32-byte x25519 key in base32, no padding */
#define TORRC_CMD_MAX_CLIENTS 256 /* config.h's CONFIG_MAX_CLIENTS */

/* Is `buf` (`len` bytes) one v3 client line as tor reads it ("descriptor:x25519:<52 base32>", an
 * optional newline)? The key, upper case, into `key`. */
static bool torrc_cmd_auth_line(const char *buf, size_t len, char key[TORRC_CMD_AUTH_KEY_LEN + 1])
{
    size_t pl = strlen(TORRC_CMD_AUTH_PREFIX);
    if (len && buf[len - 1] == '\n')
        len--;
    if (len != pl + TORRC_CMD_AUTH_KEY_LEN || strncasecmp(buf, TORRC_CMD_AUTH_PREFIX, pl) != 0)
        return false;
    for (size_t i = 0; i < TORRC_CMD_AUTH_KEY_LEN; i++) {
        char c = (char)toupper((unsigned char)buf[pl + i]);
        if (!((c >= 'A' && c <= 'Z') || (c >= '2' && c <= '7')))
            return false;
        key[i] = c;
    }
    key[TORRC_CMD_AUTH_KEY_LEN] = '\0';
    return true;
}

/* Add the clients in `dir`/authorized_clients/ to the service object `svc` as "client_auth". The
 * directory is tor's user's: opened through descriptors, no link followed, no FIFO waited on
 * (fs_read_small_at). Files tor ignores are named on `errf`. Return 0, or -1 with the reason on `errf`. */
static int torrc_cmd_clients(const char *dir, json_t *svc, FILE *errf)
{
    char err[1024], path[4200];
    int dfd = fs_open_dir(dir, false, err, sizeof(err));
    if (dfd < 0) {
        fprintf(errf, "import-torrc: %s\nimport-torrc: each HiddenServiceDir's authorized_clients/ must be read "
                "(a private service must not become public): run import-torrc as root on the machine where "
                "this tor ran\n", err);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/authorized_clients", dir);
    int afd = openat(dfd, "authorized_clients", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dfd);
    if (afd < 0 && errno == ENOENT)
        return 0; /* tor never loaded it, or it was removed: no clients */
    if (afd < 0) {
        fprintf(errf, "import-torrc: %s: %s (run import-torrc as root: a private service must not become "
                "public)\n", path, strerror(errno));
        return -1;
    }
    DIR *d = fdopendir(afd);
    if (!d) {
        fprintf(errf, "import-torrc: %s: %s\n", path, strerror(errno));
        close(afd);
        return -1;
    }
    json_t *clients = json_array();
    struct dirent *e;
    int rc = clients ? 0 : -1;
    while (rc == 0 && (e = readdir(d))) {
        char buf[256], key[TORRC_CMD_AUTH_KEY_LEN + 1], name[TORRC_IMPORT_NAME_MAX + 1], base[256];
        size_t len = 0, nl = strlen(e->d_name);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (nl <= 5 || strcmp(e->d_name + nl - 5, ".auth") != 0) {
            fprintf(errf, "# %s/%s: not a .auth file, tor ignores it: not carried over\n", path, e->d_name);
            continue;
        }
        int r = fs_read_small_at(dirfd(d), path, e->d_name, buf, sizeof(buf), &len, NULL, err, sizeof(err));
        if (r != 0 || !torrc_cmd_auth_line(buf, len, key)) {
            fprintf(errf, "# %s/%s: %s: not carried over\n", path, e->d_name,
                    r < 0 ? err : "not one \"descriptor:x25519:<key>\" line, tor ignores it");
            continue;
        }
        snprintf(base, sizeof(base), "%.*s", (int)(nl - 5), e->d_name);
        torrc_import_make_name(base, name);
        /* the names must be unique in the service; onionfront-probe is the probe's (config.h) */
        bool taken = strcmp(name, "onionfront-probe") == 0;
        size_t k;
        json_t *c;
        json_array_foreach(clients, k, c) taken = taken || strcmp(json_string_value(json_object_get(c, "name")),
                                                                  name) == 0;
        if (taken) {
            char alt[TORRC_IMPORT_NAME_MAX + 1];
            snprintf(alt, sizeof(alt), "%.*s-%zu", TORRC_IMPORT_NAME_MAX - 6, name, json_array_size(clients) + 1);
            snprintf(name, sizeof(name), "%s", alt);
        }
        if (json_array_size(clients) >= TORRC_CMD_MAX_CLIENTS) {
            fprintf(errf, "import-torrc: %s: more than %d clients, onionfront's limit\n", path,
                    TORRC_CMD_MAX_CLIENTS);
            rc = -1;
        } else if (json_array_append_new(clients, json_pack("{s:s, s:s}", "name", name, "public_key", key)) < 0) {
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && json_array_size(clients) > 0) {
        json_object_set_new(svc, "client_auth", clients);
        return 0;
    }
    json_decref(clients);
    return rc;
}

struct torrc_import *torrc_cmd_read(const char *torrc_path, const char *who, FILE *errf)
{
    char err[1024];
    size_t len = 0;
    char *buf = malloc(TORRC_IMPORT_MAX_BYTES + 1);
    if (!buf) {
        fprintf(errf, "%s: out of memory\n", who);
        return NULL;
    }
    int r = fs_read_small(torrc_path, buf, TORRC_IMPORT_MAX_BYTES + 1, &len, NULL, err, sizeof(err));
    if (r != 0) {
        if (r == 1)
            fprintf(errf, "%s: %s: no such file (give the torrc your tor runs with)\n", who, torrc_path);
        else
            fprintf(errf, "%s: %s\n", who, err);
        free(buf);
        return NULL;
    }
    struct torrc_import *t = torrc_import_parse(buf, len, torrc_path);
    free(buf);
    if (!t)
        fprintf(errf, "%s: %s: out of memory (or over %d bytes)\n", who, torrc_path, TORRC_IMPORT_MAX_BYTES);
    return t;
}

int torrc_cmd_import(const char *torrc_path, FILE *out, FILE *errf)
{
    struct torrc_import *t = torrc_cmd_read(torrc_path, "import-torrc", errf);
    if (!t)
        return 1;
    size_t n = torrc_import_n_services(t);
    bool single = torrc_import_is_single(t);
    for (size_t i = 0; i < torrc_import_n_notes(t); i++)
        fprintf(errf, "# %s %s\n", torrc_path, torrc_import_note(t, i));
    if (n == 0) {
        fprintf(errf, "import-torrc: %s: no onion service (a HiddenServiceDir with a HiddenServicePort) to carry "
                "over\n", torrc_path);
        torrc_import_free(t);
        return 1;
    }
    json_t *c = torrc_import_config(t);
    int rc = c ? 0 : 1;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (torrc_cmd_clients(torrc_import_service_dir(t, i), torrc_import_config_service(c, i), errf) < 0)
            rc = 1;
    char *text = rc == 0 ? json_dumps(c, JSON_INDENT(2)) : NULL;
    if (rc == 0 && !text)
        rc = 1;
    if (rc == 0) {
        fprintf(out, "%s\n", text);
        fprintf(errf,
                "# %s ran %zu onion service%s %s.\n"
                "# Next: stop that tor first (two tors with one key take turns on the HSDirs), e.g.\n"
                "#   systemctl stop tor@default && systemctl disable tor@default\n"
                "# then, with this config as /etc/onionfront/onionfront.json, move each key in (as root):\n",
                torrc_path, n, n == 1 ? "" : "s",
                single ? "as single onion services (HiddenServiceNonAnonymousMode 1, HiddenServiceSingleHopMode 1)"
                       : "as ordinary (anonymous) hidden services: they stay anonymous (\"mode\": \"anonymous\")");
        for (size_t i = 0; i < n; i++)
            fprintf(errf, "#   onionfront import-key %s %s --torrc %s\n", torrc_import_service_name(t, i),
                    torrc_import_service_dir(t, i), torrc_path);
        fprintf(errf, "# then: onionfront check-config && systemctl start onionfront && onionfront status\n"
                "# Keep the old directories: they are the backup of the keys.\n");
    }
    free(text);
    json_decref(c);
    torrc_import_free(t);
    return rc;
}
