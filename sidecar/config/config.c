/* config.c — load and strictly validate onionfront's JSON config into the plain data of config.h.
 *
 * Owns: the schema — parsing with jansson, every key, shape and range of docs/configuration.md, the
 * cross-field checks, the defaults (resolved here, once), config_free and the enum stringers. The rules
 * for single values (names, paths, addresses, torrc lines, keys) are config_value.c's; this file says
 * where each applies and names the field. The lookups and the comparisons reload uses are
 * config_compare.c's; reading the file or buffer and explaining a syntax error, config_load.c's; the
 * list of errors, config_errors.c's. Every error names its field path ("services[1].ports[0].target: port must be
 * 1-65535"); JSON syntax errors name line and column.
 * Does not: create or inspect directories, resolve host names, talk to tor, or log; the only file it
 * looks at besides the config is each health.ca_file (a readable regular file, not parsed here).
 * The schema: one parse function per section over shared field getters that name the path; the
 * cross-field checks need every section's result (the value rules live in config_value.c). */
#include "sidecar/config/config.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sidecar/config/config_value.h"
#include "sidecar/config/placement.h"
#include "sidecar/config/config_hint.h"
#include "sidecar/config/config_errors.h"

#define FIELD_PATH_LEN 256 /* "services[63].ports[63].backends[63].address" and an escaped unknown key */

struct config_ctx {
    struct config_errors *errs; /* every error, in order (config_errors.h) */
};

/* ---- messages ---------------------------------------------------------------------------------- */

static void config_vadd(struct config_ctx *c, const char *path, const char *fmt, va_list ap)
{
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "%s: ", path);
    if (n >= 0 && (size_t)n < sizeof msg)
        vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    config_errors_add(c->errs, msg);
}

static int config_fail(struct config_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int config_bad_value(struct config_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Add "<path>: <message>" to the errors; the parse of this part stops. Always returns -1. */
static int config_fail(struct config_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    config_vadd(c, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* As config_fail for a bad value of an optional or scalar field: the field keeps its default and the
 * parse goes on, so that one run reports every such mistake (the load still fails). Returns 0. */
static int config_bad_value(struct config_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    config_vadd(c, path, fmt, ap);
    va_end(ap);
    return 0;
}

/* Field path of `key` inside the object at `obj` ("" is the top level). */
static void config_sub(char *out, const char *obj, const char *key)
{
    snprintf(out, FIELD_PATH_LEN, obj[0] ? "%s.%s" : "%s%s", obj, key);
}

/* Field path of entry `i` of the array `key` inside the object at `obj`. */
static void config_subi(char *out, const char *obj, const char *key, size_t i)
{
    snprintf(out, FIELD_PATH_LEN, obj[0] ? "%s.%s[%zu]" : "%s%s[%zu]", obj, key, i);
}

static int config_oom(struct config_ctx *c, const char *path)
{
    return config_fail(c, path, "out of memory");
}

/* ---- typed getters: each returns 0 (leaving *out alone when the key is absent) or -1 ----------- */

static int config_check_object(struct config_ctx *c, const char *path, json_t *v)
{
    if (!json_is_object(v))
        return config_fail(c, path, "must be an object");
    return 0;
}

/* Refuse any key of `o` not in the NULL-terminated `allowed`. */
static int config_check_keys(struct config_ctx *c, const char *obj, json_t *o, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i]) {
            char shown[100];
            char p[FIELD_PATH_LEN];
            config_msg_text(shown, sizeof shown, key, strlen(key), 64);
            config_sub(p, obj, shown);
            const char *near = config_hint_nearest(key, allowed);
            char valid[600];
            if (near)
                config_bad_value(c, p, "unknown key; did you mean \"%s\"?", near);
            else
                config_bad_value(c, p, "unknown key; valid here: %s", config_errors_list(allowed, valid, sizeof valid));
        }
    }
    return 0;
}

/* Refuse the first key of the NULL-terminated `keys` present in `o`, saying `why`. */
static int config_refuse_keys(struct config_ctx *c, const char *obj, json_t *o, const char *const *keys,
                              const char *why)
{
    for (size_t i = 0; keys[i]; i++) {
        if (json_object_get(o, keys[i])) {
            char p[FIELD_PATH_LEN];
            config_sub(p, obj, keys[i]);
            return config_fail(c, p, "%s", why);
        }
    }
    return 0;
}

static int config_get_int(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                          long long min, long long max, long long *out)
{
    char p[FIELD_PATH_LEN];
    json_t *v = json_object_get(o, key);
    config_sub(p, obj, key);
    if (!v)
        return required ? config_fail(c, p, "is required") : 0;
    char shown[64];
    if (!json_is_integer(v))
        return config_bad_value(c, p, "must be an integer, not %s", config_errors_shown(v, shown, sizeof shown));
    long long x = json_integer_value(v);
    if (x < min || x > max)
        return config_bad_value(c, p, "invalid %s \"%lld\" (must be %lld-%lld)", config_errors_noun(key), x, min, max);
    *out = x;
    return 0;
}

static int config_get_uint(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                           unsigned min, unsigned max, unsigned *out)
{
    long long x = *out;
    if (config_get_int(c, obj, o, key, required, min, max, &x) < 0)
        return -1;
    *out = (unsigned)x;
    return 0;
}

static int config_get_bool(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool *out)
{
    char p[FIELD_PATH_LEN];
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    config_sub(p, obj, key);
    char shown[64];
    if (!json_is_boolean(v))
        return config_bad_value(c, p, "must be true or false, not %s", config_errors_shown(v, shown, sizeof shown));
    *out = json_is_true(v);
    return 0;
}

/* Borrow the string `key` (NUL-free: jansson refuses \u0000 without JSON_ALLOW_NUL). */
static int config_get_str(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                          const char **out, size_t *len)
{
    char p[FIELD_PATH_LEN];
    json_t *v = json_object_get(o, key);
    config_sub(p, obj, key);
    if (!v)
        return required ? config_fail(c, p, "is required") : 0;
    char shown[64];
    if (!json_is_string(v) && !required)
        return config_bad_value(c, p, "must be a string, not %s", config_errors_shown(v, shown, sizeof shown));
    if (!json_is_string(v))
        return config_fail(c, p, "must be a string, not %s", config_errors_shown(v, shown, sizeof shown));
    *out = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

/* One of the NULL-terminated `names`; its index goes to *out. */
static int config_get_enum(struct config_ctx *c, const char *obj, json_t *o, const char *key,
                           const char *const *names, int *out)
{
    char p[FIELD_PATH_LEN];
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (json_is_string(v)) {
        for (int i = 0; names[i]; i++) {
            if (strcmp(json_string_value(v), names[i]) == 0) {
                *out = i;
                return 0;
            }
        }
    }
    char list[200] = "", shown[64];
    size_t o_len = 0;
    for (int i = 0; names[i] && o_len < sizeof list; i++) {
        int n = snprintf(list + o_len, sizeof list - o_len, "%s\"%s\"", i ? ", " : "", names[i]);
        if (n < 0)
            break;
        o_len += (size_t)n;
    }
    config_sub(p, obj, key);
    return config_bad_value(c, p, "must be one of %s, not %s", list, config_errors_shown(v, shown, sizeof shown));
}

/* An absolute path of at most `max` bytes (after normalisation), as a new string in *out (the old value
 * is freed only on success). `note` follows a too-long message, or is NULL. */
static int config_get_path(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                           size_t max, const char *note, char **out)
{
    char p[FIELD_PATH_LEN];
    const char *s = NULL;
    size_t len = 0;
    if (config_get_str(c, obj, o, key, required, &s, &len) < 0)
        return -1;
    if (!s)
        return 0;
    config_sub(p, obj, key);
    char why[96];
    char *norm = config_norm_path(s, len, max, why, sizeof why);
    if (!norm) {
        if (note && strncmp(why, "must be at most", 15) == 0)
            return config_fail(c, p, "%s %s", why, note);
        return config_fail(c, p, "%s", why);
    }
    free(*out);
    *out = norm;
    return 0;
}

/* A unix socket path: absolute, not the root, at most CONFIG_UNIX_PATH_MAX bytes. */
static int config_get_socket(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                             char **out)
{
    char *tmp = NULL;
    if (config_get_path(c, obj, o, key, required, CONFIG_UNIX_PATH_MAX, "(the limit for unix socket paths)",
                        &tmp) < 0)
        return -1;
    if (!tmp)
        return 0;
    if (strcmp(tmp, "/") == 0) {
        char p[FIELD_PATH_LEN];
        free(tmp);
        config_sub(p, obj, key);
        return config_fail(c, p, "must be an absolute path to a socket");
    }
    free(*out);
    *out = tmp;
    return 0;
}

/* An optional array of at most `max` entries (at least `min` when present). NULL in *out when absent. */
static int config_get_array(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                            size_t min, size_t max, json_t **out)
{
    char p[FIELD_PATH_LEN];
    json_t *v = json_object_get(o, key);
    config_sub(p, obj, key);
    *out = NULL;
    if (!v)
        return required ? config_fail(c, p, "is required") : 0;
    if (!json_is_array(v))
        return config_fail(c, p, "must be an array");
    size_t n = json_array_size(v);
    if (n < min || n > max) {
        if (min == 0)
            return config_fail(c, p, "must have at most %zu entries", max);
        return config_fail(c, p, "must have %zu-%zu entries", min, max);
    }
    *out = v;
    return 0;
}

/* status.allowed_uids/gids are filled through an unsigned array. */
_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned) && (uid_t)-1 > 0,
               "uid_t and gid_t must be unsigned int");

/* A list of uids or gids (0-4294967294; -1 means "no id" to chown and friends), without duplicates. */
static int config_get_ids(struct config_ctx *c, const char *obj, json_t *o, const char *key, const char *what,
                          unsigned **out, size_t *n_out)
{
    json_t *arr;
    if (config_get_array(c, obj, o, key, false, 0, CONFIG_MAX_LIST, &arr) < 0)
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return 0;
    size_t n = json_array_size(arr);
    unsigned *ids = calloc(n, sizeof *ids);
    char p[FIELD_PATH_LEN];
    if (!ids) {
        config_sub(p, obj, key);
        return config_oom(c, p);
    }
    *out = ids;
    *n_out = n;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        config_subi(p, obj, key, i);
        if (!json_is_integer(v))
            return config_fail(c, p, "must be an integer");
        long long x = json_integer_value(v);
        if (x < 0 || x > 4294967294LL)
            return config_fail(c, p, "must be 0-4294967294");
        ids[i] = (unsigned)x;
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                return config_fail(c, p, "duplicate %s %u", what, ids[i]);
    }
    return 0;
}

/* ---- tor ----------------------------------------------------------------------------------------- */

/* The config file's names of each enum, in the enum's order: the parse tables (config_get_enum) and the
 * stringers (config_name) both read these. */
static const char *const config_tor_modes[] = {"spawn", "attach", NULL};
static const char *const config_health_types[] = {"tcp", "http", "https", "none", NULL};
static const char *const config_health_methods[] = {"GET", "HEAD", "OPTIONS", NULL};
static const char *const config_balance_names[] = {"round_robin", "least_conn", "circuit", NULL};
static const char *const config_log_level_names[] = {"debug", "info", "notice", "warn", "error", NULL};
static const char *const config_log_format_names[] = {"text", "json", NULL};
static const char *const config_probe_types[] = {"http", "connect", NULL};
static const char *const config_addr_kinds[] = {"inet", "unix", NULL};
static const char *const config_service_modes[] = {"single", "anonymous", NULL};
static const char *const config_tor_renewals[] = {"pow", "readd", NULL};

static int config_parse_tor(struct config_ctx *c, json_t *o, struct config *cfg)
{
    static const char *const keys[] = {"mode", "binary", "control_socket", "user", "bootstrap_timeout",
                                       "command_timeout", "restart_backoff_max", "extra_torrc", "instances",
                                       "drain_timeout", "tors_per_service", "renewal", NULL};
    struct tor_conf *t = &cfg->tor;
    json_t *empty = NULL;
    int rc = -1;

    t->mode = TOR_MODE_SPAWN;
    t->bootstrap_timeout = 300;
    t->command_timeout = 30;
    t->restart_backoff_max = 60;
    t->instances = 1;
    t->drain_timeout = 120; /* roll.h's ROLL_DRAIN_DEFAULT_S: browsers' idle keep-alive ends within 115 s */
    if (!o) {
        o = empty = json_object();
        if (!empty)
            return config_oom(c, "tor");
    }
    if (config_check_object(c, "tor", o) < 0 || config_check_keys(c, "tor", o, keys) < 0)
        goto out;
    int mode = TOR_MODE_SPAWN;
    if (config_get_enum(c, "tor", o, "mode", config_tor_modes, &mode) < 0)
        goto out;
    t->mode = (enum tor_mode)mode;
    int renewal = TOR_RENEWAL_POW;
    if (config_get_enum(c, "tor", o, "renewal", config_tor_renewals, &renewal) < 0)
        goto out;
    t->renewal = (enum tor_renewal)renewal;
    bool spawn = t->mode == TOR_MODE_SPAWN;

    static const char *const spawn_only[] = {"binary", "user", "extra_torrc", NULL};
    if (!spawn && config_refuse_keys(c, "tor", o, spawn_only, "only allowed in spawn mode") < 0)
        goto out;

    if (spawn) {
        /* tor_process.c writes these into the torrc unquoted (DataDirectory, ControlPort unix:...). */
        static const char *const dirs[] = {"state_dir", "run_dir"};
        const char *vals[] = {cfg->state_dir, cfg->run_dir};
        for (size_t i = 0; i < 2; i++) {
            if (!config_is_torrc_safe_path(vals[i])) {
                config_fail(c, dirs[i], "must be printable ASCII without spaces, '\"', '\\' or '#' in "
                                        "spawn mode (it goes into tor's torrc)");
                goto out;
            }
        }
        t->binary = strdup(CONFIG_DEFAULT_TOR_BINARY);
        if (!t->binary) {
            config_oom(c, "tor.binary");
            goto out;
        }
        if (config_get_path(c, "tor", o, "binary", false, CONFIG_PATH_MAX, NULL, &t->binary) < 0)
            goto out;
    }

    if (spawn) {
        t->control_socket = config_path_join(cfg->run_dir, "control/control.sock");
        if (!t->control_socket) {
            config_oom(c, "tor.control_socket");
            goto out;
        }
        if (json_object_get(o, "control_socket")) {
            config_fail(c, "tor.control_socket", "not allowed in spawn mode (onionfront uses %s)",
                        t->control_socket);
            goto out;
        }
    } else {
        if (!json_object_get(o, "control_socket")) {
            config_fail(c, "tor.control_socket", "is required in attach mode");
            goto out;
        }
        if (config_get_socket(c, "tor", o, "control_socket", true, &t->control_socket) < 0)
            goto out;
    }

    const char *user = NULL;
    size_t user_len = 0;
    if (config_get_str(c, "tor", o, "user", false, &user, &user_len) < 0)
        goto out;
    if (user) {
        if (!config_is_user_name(user, user_len)) {
            config_fail(c, "tor.user", "must be a user name: %s", CONFIG_USER_NAME_RULE);
            goto out;
        }
        t->user = strdup(user);
        if (!t->user) {
            config_oom(c, "tor.user");
            goto out;
        }
    }

    if (config_get_uint(c, "tor", o, "bootstrap_timeout", false, 10, 3600, &t->bootstrap_timeout) < 0 ||
        config_get_uint(c, "tor", o, "command_timeout", false, 1, 600, &t->command_timeout) < 0 ||
        config_get_uint(c, "tor", o, "restart_backoff_max", false, 1, 3600, &t->restart_backoff_max) < 0 ||
        config_get_uint(c, "tor", o, "instances", false, 1, 4, &t->instances) < 0 ||
        config_get_uint(c, "tor", o, "drain_timeout", false, 0, 3600, &t->drain_timeout) < 0)
        goto out;
    if (!spawn && t->instances > 1) {
        config_fail(c, "tor.instances", "must be 1 in attach mode (onionfront runs several tors only in spawn mode)");
        goto out;
    }
    /* Absent: every tor hosts every service (placement.h). Set: that many of them, at most all. */
    t->tors_per_service = t->instances;
    if (config_get_uint(c, "tor", o, "tors_per_service", false, 1, 4, &t->tors_per_service) < 0)
        goto out;
    if (t->tors_per_service > t->instances) {
        config_fail(c, "tor.tors_per_service", "must be at most tor.instances (%u): each service is hosted by that "
                    "many of the tors", t->instances);
        goto out;
    }

    json_t *lines;
    if (config_get_array(c, "tor", o, "extra_torrc", false, 0, CONFIG_MAX_LIST, &lines) < 0)
        goto out;
    if (lines && json_array_size(lines) > 0) {
        size_t n = json_array_size(lines);
        t->extra_torrc = calloc(n, sizeof *t->extra_torrc);
        if (!t->extra_torrc) {
            config_oom(c, "tor.extra_torrc");
            goto out;
        }
        t->n_extra_torrc = n;
        for (size_t i = 0; i < n; i++) {
            char p[FIELD_PATH_LEN];
            char why[160];
            json_t *v = json_array_get(lines, i);
            config_subi(p, "tor", "extra_torrc", i);
            if (!json_is_string(v)) {
                config_fail(c, p, "must be a string");
                goto out;
            }
            const char *s = json_string_value(v);
            size_t len = json_string_length(v);
            if (strlen(s) != len) {
                config_fail(c, p, "must not contain CR, LF or other control characters");
                goto out;
            }
            if (config_check_torrc_line(s, len, why, sizeof why) < 0) {
                config_fail(c, p, "%s", why);
                goto out;
            }
            t->extra_torrc[i] = strdup(s);
            if (!t->extra_torrc[i]) {
                config_oom(c, p);
                goto out;
            }
        }
    }
    rc = 0;
out:
    json_decref(empty);
    return rc;
}

/* ---- services ------------------------------------------------------------------------------------ */


/* health.tls_verify and health.ca_file of an https check. */
static int config_parse_health_tls(struct config_ctx *c, const char *obj, json_t *o, struct health_conf *h)
{
    char p[FIELD_PATH_LEN];
    char why[320];
    char *path = NULL;
    if (config_get_bool(c, obj, o, "tls_verify", &h->tls_verify) < 0 ||
        config_get_path(c, obj, o, "ca_file", false, CONFIG_CA_FILE_MAX, NULL, &path) < 0)
        return -1;
    if (!path)
        return 0;
    config_sub(p, obj, "ca_file");
    int rc = 0;
    if (!h->tls_verify)
        rc = config_fail(c, p, "not allowed with tls_verify false (no certificate is checked)");
    else if (config_check_readable_file(path, why, sizeof why) < 0)
        rc = config_fail(c, p, "%s", why);
    else
        memcpy(h->ca_file, path, strlen(path) + 1);
    free(path);
    return rc;
}

/* "path" of an HTTP check or probe: starts with "/", printable ASCII; into `out` (CONFIG_HTTP_PATH_MAX + 1
 * bytes) if present. */
static int config_get_http_path(struct config_ctx *c, const char *obj, json_t *o, char *out)
{
    char p[FIELD_PATH_LEN];
    const char *s = NULL;
    size_t len = 0;
    if (config_get_str(c, obj, o, "path", false, &s, &len) < 0)
        return -1;
    if (!s)
        return 0;
    config_sub(p, obj, "path");
    if (len == 0 || s[0] != '/')
        return config_fail(c, p, "must start with \"/\"");
    if (len > CONFIG_HTTP_PATH_MAX)
        return config_fail(c, p, "must be at most %d bytes", CONFIG_HTTP_PATH_MAX);
    if (!config_is_visible_ascii(s, len))
        return config_fail(c, p, "must be printable ASCII without spaces");
    memcpy(out, s, len + 1);
    return 0;
}

/* "expect_status": 1-CONFIG_MAX_EXPECT_STATUS distinct codes 100-599, if present (else *n unchanged). */
static int config_get_statuses(struct config_ctx *c, const char *obj, json_t *o, uint16_t *out, size_t *n_out)
{
    char p[FIELD_PATH_LEN];
    json_t *arr;
    if (config_get_array(c, obj, o, "expect_status", false, 1, CONFIG_MAX_EXPECT_STATUS, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    size_t n = json_array_size(arr);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        config_subi(p, obj, "expect_status", i);
        if (!json_is_integer(v))
            return config_fail(c, p, "must be an integer");
        long long x = json_integer_value(v);
        if (x < 100 || x > 599)
            return config_fail(c, p, "must be 100-599");
        out[i] = (uint16_t)x;
        for (size_t j = 0; j < i; j++)
            if (out[j] == out[i])
                return config_fail(c, p, "duplicate status %lld", x);
    }
    *n_out = n;
    return 0;
}

static int config_parse_health(struct config_ctx *c, const char *port_path, json_t *o, struct health_conf *h)
{
    static const char *const keys[] = {"type", "interval_ms", "timeout_ms", "rise", "fall", "method", "path",
                                       "host", "expect_status", "ca_file", "tls_verify", NULL};
    static const char *const http_only[] = {"method", "path", "host", "expect_status", NULL};
    static const char *const https_only[] = {"ca_file", "tls_verify", NULL};
    char obj[FIELD_PATH_LEN];
    char p[FIELD_PATH_LEN];

    h->type = HEALTH_TCP;
    h->interval_ms = 2000;
    h->timeout_ms = 1000;
    h->rise = 2;
    h->fall = 3;
    h->method = HEALTH_METHOD_GET;
    memcpy(h->path, "/", 2);
    h->host[0] = '\0';
    h->expect_status[0] = 200;
    h->n_expect_status = 1;
    h->ca_file[0] = '\0';
    h->tls_verify = true;
    if (!o)
        return 0;
    config_sub(obj, port_path, "health");
    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    int type = HEALTH_TCP;
    if (config_get_enum(c, obj, o, "type", config_health_types, &type) < 0)
        return -1;
    h->type = (enum health_type)type;
    if (config_get_uint(c, obj, o, "interval_ms", false, 100, 3600000, &h->interval_ms) < 0 ||
        config_get_uint(c, obj, o, "timeout_ms", false, 50, 60000, &h->timeout_ms) < 0)
        return -1;
    if (h->timeout_ms >= h->interval_ms) {
        /* Blame the field the operator wrote: a default timeout_ms is not their doing. */
        if (json_object_get(o, "timeout_ms")) {
            config_sub(p, obj, "timeout_ms");
            return config_fail(c, p, "must be less than interval_ms (%u)", h->interval_ms);
        }
        config_sub(p, obj, "interval_ms");
        return config_fail(c, p, "must be greater than timeout_ms (%u)", h->timeout_ms);
    }
    if (config_get_uint(c, obj, o, "rise", false, 1, 100, &h->rise) < 0 ||
        config_get_uint(c, obj, o, "fall", false, 1, 100, &h->fall) < 0)
        return -1;

    if (h->type != HEALTH_HTTPS && config_refuse_keys(c, obj, o, https_only, "only allowed for https checks") < 0)
        return -1;
    if (h->type != HEALTH_HTTP && h->type != HEALTH_HTTPS)
        return config_refuse_keys(c, obj, o, http_only, "only allowed for http and https checks");

    int method = HEALTH_METHOD_GET;
    if (config_get_enum(c, obj, o, "method", config_health_methods, &method) < 0)
        return -1;
    h->method = (enum health_method)method;

    if (config_get_http_path(c, obj, o, h->path) < 0)
        return -1;
    const char *s = NULL;
    size_t len = 0;

    json_t *hv = json_object_get(o, "host");
    if (hv && !json_is_null(hv)) {
        config_sub(p, obj, "host");
        if (!json_is_string(hv))
            return config_fail(c, p, "must be a string or null");
        s = json_string_value(hv);
        len = json_string_length(hv);
        if (len == 0)
            return config_fail(c, p, "must not be empty (use null for the default)");
        if (len > CONFIG_HTTP_HOST_MAX)
            return config_fail(c, p, "must be at most %d bytes", CONFIG_HTTP_HOST_MAX);
        if (!config_is_visible_ascii(s, len))
            return config_fail(c, p, "must be printable ASCII without spaces");
        memcpy(h->host, s, len + 1);
    }

    if (config_get_statuses(c, obj, o, h->expect_status, &h->n_expect_status) < 0)
        return -1;
    return h->type == HEALTH_HTTPS ? config_parse_health_tls(c, obj, o, h) : 0;
}

static int config_parse_backend(struct config_ctx *c, const char *obj, json_t *o, const struct service_conf *svc,
                                struct port_conf *pc, size_t idx)
{
    static const char *const keys[] = {"name", "address", "weight", NULL};
    struct backend_conf *b = &pc->backends[idx];
    char p[FIELD_PATH_LEN];
    char why[160];
    const char *s = NULL;
    size_t len = 0;

    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    if (config_get_str(c, obj, o, "name", false, &s, &len) < 0)
        return -1;
    bool named = s != NULL;
    if (named) {
        config_sub(p, obj, "name");
        if (!config_is_backend_name(s, len))
            return config_fail(c, p, "must be %s", CONFIG_BACKEND_NAME_RULE);
        memcpy(b->name, s, len + 1);
    } else {
        snprintf(b->name, sizeof b->name, "%s-%u-%zu", svc->name, (unsigned)pc->virtual_port, idx);
    }
    for (size_t j = 0; j < idx; j++) {
        if (strcmp(pc->backends[j].name, b->name) == 0) {
            if (named)
                return config_fail(c, p, "duplicate backend name \"%s\"", b->name);
            return config_fail(c, obj, "default name \"%s\" is already used by backends[%zu]", b->name, j);
        }
    }

    s = NULL;
    if (config_get_str(c, obj, o, "address", true, &s, &len) < 0)
        return -1;
    config_sub(p, obj, "address");
    if (config_parse_addr(s, len, &b->addr, why, sizeof why) < 0)
        return config_fail(c, p, "%s", why);
    for (size_t j = 0; j < idx; j++) {
        if (config_addr_same(&pc->backends[j].addr, &b->addr)) {
            char shown[100];
            config_msg_text(shown, sizeof shown, s, len, 80);
            return config_fail(c, p, "\"%s\" is already used by backends[%zu]", shown, j);
        }
    }

    b->weight = 1;
    return config_get_uint(c, obj, o, "weight", false, 0, 256, &b->weight);
}

static int config_parse_port(struct config_ctx *c, const char *obj, json_t *o, struct service_conf *svc, size_t idx)
{
    static const char *const keys[] = {"virtual", "target", "backends", "balance", "connect_timeout_ms",
                                       "max_streams_per_circuit", "circuit_stream_rate", "circuit_stream_burst",
                                       "idle_timeout", "proxy_protocol", "tls", "health", NULL};
    struct port_conf *pc = &svc->ports[idx];
    char p[FIELD_PATH_LEN];

    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    unsigned virt = 0;
    if (config_get_uint(c, obj, o, "virtual", true, 1, 65535, &virt) < 0)
        return -1;
    pc->virtual_port = (uint16_t)virt;
    for (size_t j = 0; j < idx && virt; j++) { /* 0: its error is reported already */
        if (svc->ports[j].virtual_port == pc->virtual_port) {
            config_sub(p, obj, "virtual");
            return config_fail(c, p, "duplicate virtual port %u", virt);
        }
    }

    json_t *target = json_object_get(o, "target");
    json_t *backends = json_object_get(o, "backends");
    if (target && backends)
        return config_fail(c, obj, "must have either \"target\" or \"backends\", not both");
    if (!target && !backends)
        return config_fail(c, obj, "must have \"target\" or \"backends\"");
    if (target) {
        const char *s = NULL;
        size_t len = 0;
        char why[160];
        if (config_get_str(c, obj, o, "target", true, &s, &len) < 0)
            return -1;
        pc->backends = calloc(1, sizeof *pc->backends);
        config_sub(p, obj, "target");
        if (!pc->backends)
            return config_oom(c, p);
        pc->n_backends = 1;
        pc->from_target = true;
        if (config_parse_addr(s, len, &pc->backends[0].addr, why, sizeof why) < 0)
            return config_fail(c, p, "%s", why);
        snprintf(pc->backends[0].name, sizeof pc->backends[0].name, "%s-%u-0", svc->name, virt);
        pc->backends[0].weight = 1;
    } else {
        json_t *arr;
        if (config_get_array(c, obj, o, "backends", true, 1, CONFIG_MAX_BACKENDS, &arr) < 0)
            return -1;
        size_t n = json_array_size(arr);
        pc->backends = calloc(n, sizeof *pc->backends);
        if (!pc->backends) {
            config_sub(p, obj, "backends");
            return config_oom(c, p);
        }
        pc->n_backends = n;
        for (size_t i = 0; i < n; i++) {
            config_subi(p, obj, "backends", i);
            if (config_parse_backend(c, p, json_array_get(arr, i), svc, pc, i) < 0)
                return -1;
        }
    }

    int balance = BALANCE_ROUND_ROBIN;
    if (config_get_enum(c, obj, o, "balance", config_balance_names, &balance) < 0)
        return -1;
    pc->balance = (enum balance_policy)balance;
    pc->connect_timeout_ms = 3000;
    pc->max_streams_per_circuit = CONFIG_DEFAULT_MAX_STREAMS_PER_CIRCUIT;
    pc->idle_timeout_s = CONFIG_DEFAULT_IDLE_TIMEOUT_S;
    pc->proxy_protocol = false;
    pc->tls = false;
    if (config_get_uint(c, obj, o, "connect_timeout_ms", false, 100, 60000, &pc->connect_timeout_ms) < 0 ||
        config_get_uint(c, obj, o, "max_streams_per_circuit", false, 0, 65535, &pc->max_streams_per_circuit) < 0 ||
        config_get_uint(c, obj, o, "circuit_stream_rate", false, 0, 65535, &pc->circuit_stream_rate) < 0 ||
        config_get_uint(c, obj, o, "idle_timeout", false, 0, 86400, &pc->idle_timeout_s) < 0 ||
        config_get_bool(c, obj, o, "proxy_protocol", &pc->proxy_protocol) < 0 ||
        config_get_bool(c, obj, o, "tls", &pc->tls) < 0)
        return -1;
    pc->circuit_stream_burst = pc->circuit_stream_rate * 2 > 10 ? pc->circuit_stream_rate * 2 : 10;
    if (config_get_uint(c, obj, o, "circuit_stream_burst", false, 1, 131070, &pc->circuit_stream_burst) < 0)
        return -1;
    if (json_object_get(o, "circuit_stream_burst") && pc->circuit_stream_rate == 0) {
        config_sub(p, obj, "circuit_stream_burst");
        return config_fail(c, p, "needs circuit_stream_rate > 0");
    }
    return config_parse_health(c, obj, json_object_get(o, "health"), &pc->health);
}

/* key_dir must not share files with a directory of onionfront's tors or Onionbalance under state_dir (so
 * it can be neither state_dir nor contain it), run_dir or another service. */
static int config_check_key_dir(struct config_ctx *c, const char *path, const struct config *cfg, size_t idx)
{
    const char *kd = cfg->services[idx].key_dir;
    char shown[220], other[220];
    config_msg_text(shown, sizeof shown, kd, strlen(kd), 200);
    /* Every directory onionfront writes under state_dir besides keys/, whether or not this config uses it
     * (a reload may start using it): what a tor or Onionbalance writes there must not land among keys. */
    static const char *const tors[][2] = {
        {"tor", "tor's DataDirectory"},
        {"instances", "the other tors' directory"},
        {"anonymous", "the anonymous services' tor directory"},
        {"probe-tor", "the probe's tor DataDirectory"},
        {"ob-tor", "Onionbalance's tor DataDirectory"},
        {"ob", "Onionbalance's directory"},
    };
    for (size_t t = 0; t < sizeof(tors) / sizeof(tors[0]); t++) {
        char *tor_dir = config_path_join(cfg->state_dir, tors[t][0]);
        if (!tor_dir)
            return config_oom(c, path);
        bool bad = config_path_within(kd, tor_dir) || config_path_within(tor_dir, kd);
        if (bad) {
            config_msg_text(other, sizeof other, tor_dir, strlen(tor_dir), 200);
            free(tor_dir);
            return config_fail(c, path, "\"%s\" overlaps %s \"%s\"", shown, tors[t][1], other);
        }
        free(tor_dir);
    }
    if (config_path_within(kd, cfg->run_dir) || config_path_within(cfg->run_dir, kd)) {
        config_msg_text(other, sizeof other, cfg->run_dir, strlen(cfg->run_dir), 200);
        return config_fail(c, path, "\"%s\" overlaps run_dir \"%s\"", shown, other);
    }
    for (size_t j = 0; j < idx; j++) {
        const char *okd = cfg->services[j].key_dir;
        if (strcmp(okd, kd) == 0)
            return config_fail(c, path, "\"%s\" is already used by services[%zu]", shown, j);
        if (config_path_within(kd, okd) || config_path_within(okd, kd)) {
            config_msg_text(other, sizeof other, okd, strlen(okd), 200);
            return config_fail(c, path, "\"%s\" overlaps services[%zu].key_dir \"%s\"", shown, j, other);
        }
    }
    return 0;
}

/* A rate/burst pair of one defence: both within tor's bounds (the rate from `rate_min`), burst >= rate
 * (tor refuses a smaller burst once the defence is on; we refuse it always, so turning the defence on
 * later cannot fail at tor). */
static int config_parse_rate_burst(struct config_ctx *c, const char *obj, json_t *o, const char *rate_key,
                                   const char *burst_key, unsigned rate_min, unsigned *rate, unsigned *burst)
{
    char p[FIELD_PATH_LEN];
    if (config_get_uint(c, obj, o, rate_key, false, rate_min, CONFIG_DOS_RATE_MAX, rate) < 0 ||
        config_get_uint(c, obj, o, burst_key, false, rate_min, CONFIG_DOS_RATE_MAX, burst) < 0)
        return -1;
    config_sub(p, obj, burst_key);
    if (*burst < *rate)
        return config_fail(c, p, "must be at least %s (%u); tor refuses a smaller burst", rate_key, *rate);
    return 0;
}

/* One defence object of "dos": {"enabled", rate, burst}. */
struct config_defence {
    const char *key;
    const char *const *keys;
    const char *rate_key, *burst_key;
    unsigned rate_min;
};

/* services[i].dos: proof-of-work, intro-point rate limits, stream limits (tor's per-service options). */
static int config_parse_dos(struct config_ctx *c, const char *svc_obj, json_t *svc_o, struct service_conf *svc)
{
    static const char *const keys[] = {"pow", "intro", "max_streams", "max_streams_close_circuit",
                                       "num_intro_points", NULL};
    static const char *const pow_keys[] = {"enabled", "queue_rate", "queue_burst", NULL};
    static const char *const intro_keys[] = {"enabled", "rate_per_sec", "burst_per_sec", NULL};
    struct dos_conf *d = &svc->dos;
    char obj[FIELD_PATH_LEN], p[FIELD_PATH_LEN];
    *d = (struct dos_conf){.pow_queue_rate = 250, .pow_queue_burst = 2500, .intro_rate_per_sec = 25,
                           .intro_burst_per_sec = 200, .num_intro_points = 3};
    json_t *o = json_object_get(svc_o, "dos");
    if (!o)
        return 0;
    config_sub(obj, svc_obj, "dos");
    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    if (json_object_get(o, "max_streams") && json_object_get(svc_o, "max_streams")) {
        config_sub(p, obj, "max_streams");
        return config_fail(c, p, "set it here or as %s.max_streams, not both", svc_obj);
    }
    if (config_get_uint(c, obj, o, "max_streams", false, 0, 65535, &svc->max_streams) < 0 ||
        config_get_bool(c, obj, o, "max_streams_close_circuit", &d->max_streams_close_circuit) < 0 ||
        config_get_uint(c, obj, o, "num_intro_points", false, 1, CONFIG_MAX_INTRO_POINTS, &d->num_intro_points) < 0)
        return -1;
    if (d->max_streams_close_circuit && svc->max_streams == 0) {
        config_sub(p, obj, "max_streams_close_circuit");
        return config_fail(c, p, "needs a max_streams above 0 (0 = unlimited, nothing to exceed)");
    }
    /* An intro rate of 0 means "infinite" to tor, which silently turns an enabled defence off: refused. */
    static const struct config_defence defences[] = {
        {"pow", pow_keys, "queue_rate", "queue_burst", 0},
        {"intro", intro_keys, "rate_per_sec", "burst_per_sec", 1},
    };
    bool *enabled[] = {&d->pow_enabled, &d->intro_enabled};
    unsigned *rates[] = {&d->pow_queue_rate, &d->intro_rate_per_sec};
    unsigned *bursts[] = {&d->pow_queue_burst, &d->intro_burst_per_sec};
    for (size_t i = 0; i < 2; i++) {
        const struct config_defence *df = &defences[i];
        json_t *v = json_object_get(o, df->key);
        if (!v)
            continue;
        config_sub(p, obj, df->key);
        if (config_check_object(c, p, v) < 0 || config_check_keys(c, p, v, df->keys) < 0 ||
            config_get_bool(c, p, v, "enabled", enabled[i]) < 0 ||
            config_parse_rate_burst(c, p, v, df->rate_key, df->burst_key, df->rate_min, rates[i], bursts[i]) < 0)
            return -1;
    }
    return 0;
}

/* services[i].client_auth: [{name, public_key}], names unique, keys valid x25519 base32. */
static int config_parse_clients(struct config_ctx *c, const char *obj, json_t *o, struct service_conf *svc)
{
    static const char *const keys[] = {"name", "public_key", NULL};
    char p[FIELD_PATH_LEN], q[FIELD_PATH_LEN];
    json_t *arr = NULL;
    if (config_get_array(c, obj, o, "client_auth", false, 1, CONFIG_MAX_CLIENTS, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    size_t n = json_array_size(arr);
    if (!(svc->clients = calloc(n, sizeof(*svc->clients)))) {
        config_sub(p, obj, "client_auth");
        return config_oom(c, p);
    }
    svc->n_clients = n;
    for (size_t i = 0; i < n; i++) {
        struct client_auth_conf *cl = &svc->clients[i];
        json_t *e = json_array_get(arr, i);
        const char *s = NULL;
        size_t len = 0;
        config_subi(p, obj, "client_auth", i);
        if (config_check_object(c, p, e) < 0 || config_check_keys(c, p, e, keys) < 0 ||
            config_get_str(c, p, e, "name", true, &s, &len) < 0)
            return -1;
        config_sub(q, p, "name");
        if (!config_is_service_name(s, len))
            return config_fail(c, q, "must be %s", CONFIG_SERVICE_NAME_RULE);
        memcpy(cl->name, s, len + 1);
        if (strcmp(cl->name, CONFIG_PROBE_CLIENT_NAME) == 0)
            return config_fail(c, q, "\"%s\" is onionfront's own probe client (it proves the service refuses a "
                               "client without a key): choose another name", cl->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(svc->clients[j].name, cl->name) == 0)
                return config_fail(c, q, "duplicate client name \"%s\"", cl->name);
        if (config_get_str(c, p, e, "public_key", true, &s, &len) < 0)
            return -1;
        config_sub(q, p, "public_key");
        /* tor's own "descriptor:x25519:" prefix is accepted, so a line from a .auth file can be pasted. */
        if (len > strlen("descriptor:x25519:") && strncmp(s, "descriptor:x25519:", strlen("descriptor:x25519:")) == 0) {
            s += strlen("descriptor:x25519:");
            len -= strlen("descriptor:x25519:");
        }
        if (config_x25519_b32_decode(s, len, NULL) < 0)
            return config_fail(c, q, "must be an x25519 public key in base32 (52 characters A-Z 2-7)");
        for (size_t k = 0; k < len; k++)
            cl->public_key[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 'a' + 'A' : s[k]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(svc->clients[j].public_key, cl->public_key) == 0)
                return config_fail(c, q, "the same key as client \"%s\"", svc->clients[j].name);
    }
    return 0;
}

/* "services[i].probe": what the end-to-end probe fetches (struct probe_target_conf); defaults when absent. */
static int config_parse_probe_target(struct config_ctx *c, const char *obj, json_t *o, struct service_conf *svc)
{
    static const char *const keys[] = {"port", "type", "path", "expect_status", "body_contains", NULL};
    static const char *const http_only[] = {"path", "expect_status", "body_contains", NULL};
    struct probe_target_conf *pt = &svc->probe;
    char p[FIELD_PATH_LEN];
    pt->port = service_conf_find_port(svc, 80) ? 80 : svc->ports[0].virtual_port;
    for (size_t i = 0; i < svc->n_ports; i++) /* the certificate a visitor gets is watched on the first TLS port */
        if (svc->ports[i].tls) {
            pt->port = svc->ports[i].virtual_port;
            break;
        }
    snprintf(pt->path, sizeof pt->path, "/");
    if (o && (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0))
        return -1;
    unsigned port = pt->port;
    if (o && config_get_uint(c, obj, o, "port", false, 1, 65535, &port) < 0)
        return -1;
    pt->port = (uint16_t)port;
    if (!service_conf_find_port(svc, pt->port)) {
        config_sub(p, obj, "port");
        return config_fail(c, p, "must be one of the service's virtual ports");
    }
    const struct port_conf *target = service_conf_find_port(svc, pt->port);
    int type = pt->port == 80 || target->tls ? PROBE_TARGET_HTTP : PROBE_TARGET_CONNECT;
    if (o && config_get_enum(c, obj, o, "type", config_probe_types, &type) < 0)
        return -1;
    pt->type = (enum probe_target_type)type;
    if (!o)
        return 0;
    if (pt->type != PROBE_TARGET_HTTP)
        return config_refuse_keys(c, obj, o, http_only, "only allowed for http probes");
    if (config_get_http_path(c, obj, o, pt->path) < 0 ||
        config_get_statuses(c, obj, o, pt->expect_status, &pt->n_expect_status) < 0)
        return -1;
    const char *s = NULL;
    size_t len = 0;
    if (config_get_str(c, obj, o, "body_contains", false, &s, &len) < 0)
        return -1;
    if (s) {
        config_sub(p, obj, "body_contains");
        if (len == 0 || len > CONFIG_PROBE_BODY_MAX)
            return config_fail(c, p, "must be 1-%d bytes", CONFIG_PROBE_BODY_MAX);
        memcpy(pt->body_contains, s, len + 1);
    }
    return 0;
}

/* "mode" and "onion_location" of a service. An anonymous service runs on a tor onionfront spawns
 * (workerset.h), so attach mode has none: the attached tor is the single-onion one. Onion-Location is
 * on by default only for a single onion without client_auth (config_parse_service; docs/configuration.md
 * says why). */
static int config_parse_service_mode(struct config_ctx *c, const char *obj, json_t *o, const struct config *cfg,
                                     struct service_conf *svc)
{
    char p[FIELD_PATH_LEN];
    int mode = SERVICE_MODE_SINGLE;
    if (config_get_enum(c, obj, o, "mode", config_service_modes, &mode) < 0)
        return -1;
    svc->mode = (enum service_mode)mode;
    config_sub(p, obj, "mode");
    if (svc->mode == SERVICE_MODE_ANONYMOUS && cfg->tor.mode != TOR_MODE_SPAWN)
        return config_fail(c, p, "\"anonymous\" needs tor.mode \"spawn\": onionfront runs the anonymous services' "
                                 "tor itself, and an attached tor is a single-onion tor");
    svc->onion_location = svc->mode == SERVICE_MODE_SINGLE;
    return config_get_bool(c, obj, o, "onion_location", &svc->onion_location);
}

static int config_parse_service(struct config_ctx *c, const char *obj, json_t *o, struct config *cfg, size_t idx)
{
    static const char *const keys[] = {"name",        "mode",  "onion_location",   "key_dir", "max_streams", "dos",
                                       "client_auth", "drop_client_auth", "ports", "probe",       "onionbalance",
                                       NULL};
    struct service_conf *svc = &cfg->services[idx];
    char p[FIELD_PATH_LEN];
    const char *s = NULL;
    size_t len = 0;

    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    if (config_get_str(c, obj, o, "name", true, &s, &len) < 0)
        return -1;
    config_sub(p, obj, "name");
    if (!config_is_service_name(s, len))
        return config_fail(c, p, "must be %s", CONFIG_SERVICE_NAME_RULE);
    memcpy(svc->name, s, len + 1);
    for (size_t j = 0; j < idx; j++)
        if (strcmp(cfg->services[j].name, svc->name) == 0)
            return config_fail(c, p, "duplicate service name \"%s\"", svc->name);
    if (config_parse_service_mode(c, obj, o, cfg, svc) < 0)
        return -1;

    if (config_get_path(c, obj, o, "key_dir", false, CONFIG_PATH_MAX, NULL, &svc->key_dir) < 0)
        return -1;
    config_sub(p, obj, "key_dir");
    if (!svc->key_dir) {
        char rel[sizeof "keys/" + CONFIG_SERVICE_NAME_MAX];
        snprintf(rel, sizeof rel, "keys/%s", svc->name);
        svc->key_dir = config_path_join(cfg->state_dir, rel);
        if (!svc->key_dir)
            return config_oom(c, p);
    }
    if (config_check_key_dir(c, p, cfg, idx) < 0)
        return -1;

    if (config_get_uint(c, obj, o, "max_streams", false, 0, 65535, &svc->max_streams) < 0 ||
        config_parse_dos(c, obj, o, svc) < 0 || config_parse_clients(c, obj, o, svc) < 0 ||
        config_get_bool(c, obj, o, "drop_client_auth", &svc->drop_client_auth) < 0)
        return -1;
    if (svc->drop_client_auth && svc->n_clients > 0) {
        config_sub(p, obj, "drop_client_auth");
        return config_fail(c, p, "cannot be set with client_auth (it removes every client, on purpose)");
    }
    /* A private service's address is for its clients only: Onion-Location would hand it to every visitor
     * of the clearnet site. Off by default there, and refused when asked for. */
    if (svc->n_clients > 0 && svc->onion_location) {
        if (json_object_get(o, "onion_location")) {
            config_sub(p, obj, "onion_location");
            return config_fail(c, p, "cannot be true with client_auth: Onion-Location would advertise a private "
                                     "service's address to every visitor of the clearnet site");
        }
        svc->onion_location = false;
    }
    config_sub(p, obj, "onionbalance");
    char oberr[1024];
    if (ob_conf_parse(json_object_get(o, "onionbalance"), p, svc->dos.pow_enabled, &svc->onionbalance, oberr,
                      sizeof oberr) < 0) {
        config_errors_add(c->errs, oberr); /* it names the field path itself */
        return -1;
    }
    /* Instances run on the single-onion tors (their keys are copied per tor, ob_config beside them). */
    if (svc->onionbalance.role != OB_ROLE_NONE && svc->mode != SERVICE_MODE_SINGLE)
        return config_fail(c, p, "only for a service with mode \"single\": onionfront runs Onionbalance instances "
                                 "on its single-onion tors");
    /* Onionbalance publishes a frontend's address; visitors reach the instances' ports, not this machine. */
    if (svc->onionbalance.role == OB_ROLE_FRONTEND)
        return config_refuse_keys(c, obj, o,
                                  (const char *const[]){"ports", "probe", "client_auth", "drop_client_auth", NULL},
                                  "not for an Onionbalance frontend: visitors of the master address reach the "
                                  "instances, whose own services set it");

    json_t *arr;
    if (config_get_array(c, obj, o, "ports", true, 1, CONFIG_MAX_PORTS, &arr) < 0)
        return -1;
    size_t n = json_array_size(arr);
    svc->ports = calloc(n, sizeof *svc->ports);
    if (!svc->ports) {
        config_sub(p, obj, "ports");
        return config_oom(c, p);
    }
    svc->n_ports = n;
    for (size_t i = 0; i < n; i++) {
        config_subi(p, obj, "ports", i);
        if (config_parse_port(c, p, json_array_get(arr, i), svc, i) < 0)
            return -1;
    }
    config_sub(p, obj, "probe");
    return config_parse_probe_target(c, p, json_object_get(o, "probe"), svc);
}

/* ---- status, metrics, probe, onion_location ------------------------------------------------------ */

static int config_parse_status(struct config_ctx *c, json_t *o, struct config *cfg)
{
    static const char *const keys[] = {"socket", "allowed_uids", "allowed_gids", "admin_uids", "admin_gids", NULL};
    struct status_conf *st = &cfg->status;
    st->socket = config_path_join(cfg->run_dir, "status.sock");
    if (!st->socket)
        return config_oom(c, "status.socket");
    if (!o)
        return 0;
    if (config_check_object(c, "status", o) < 0 || config_check_keys(c, "status", o, keys) < 0)
        return -1;
    if (config_get_socket(c, "status", o, "socket", false, &st->socket) < 0)
        return -1;
    if (strcmp(st->socket, cfg->tor.control_socket) == 0)
        return config_fail(c, "status.socket", "must differ from tor's control socket");
    unsigned *ids = NULL;
    size_t n = 0;
    int rc = config_get_ids(c, "status", o, "allowed_uids", "uid", &ids, &n);
    st->allowed_uids = (uid_t *)ids;
    st->n_allowed_uids = n;
    if (rc < 0)
        return -1;
    ids = NULL;
    n = 0;
    rc = config_get_ids(c, "status", o, "allowed_gids", "gid", &ids, &n);
    st->allowed_gids = (gid_t *)ids;
    st->n_allowed_gids = n;
    if (rc < 0)
        return -1;
    /* Admins may read too: no need to list them in allowed_* as well (and it is not refused). */
    ids = NULL;
    n = 0;
    rc = config_get_ids(c, "status", o, "admin_uids", "uid", &ids, &n);
    st->admin_uids = (uid_t *)ids;
    st->n_admin_uids = n;
    if (rc < 0)
        return -1;
    ids = NULL;
    n = 0;
    rc = config_get_ids(c, "status", o, "admin_gids", "gid", &ids, &n);
    st->admin_gids = (gid_t *)ids;
    st->n_admin_gids = n;
    return rc;
}

/* obj.listen: an IP literal and port (loopback only if `loopback_only`), or null/absent (disabled). */
static int config_parse_listen(struct config_ctx *c, const char *obj, json_t *o, bool loopback_only,
                               struct metrics_conf *m)
{
    char p[FIELD_PATH_LEN];
    config_sub(p, obj, "listen");
    json_t *v = json_object_get(o, "listen");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return config_fail(c, p, "must be a string or null");
    struct backend_addr a;
    char why[160];
    int rc = config_parse_addr(json_string_value(v), json_string_length(v), &a, why, sizeof why);
    if (rc == -2)
        return config_fail(c, p, "%s", why);
    if (!loopback_only) {
        if (rc != 0 || a.kind != BACKEND_ADDR_INET || a.family == AF_UNSPEC || strlen(a.text) >= sizeof m->listen)
            return config_fail(c, p, "must be an IP address and port, e.g. \"10.0.0.5:8081\" or \"[::1]:8081\"");
        goto take;
    }
    bool loopback = false;
    if (rc == 0 && a.family == AF_INET) {
        struct in_addr in4;
        loopback = inet_pton(AF_INET, a.host, &in4) == 1 && (ntohl(in4.s_addr) >> 24) == 127;
    } else if (rc == 0 && a.family == AF_INET6) {
        struct in6_addr in6;
        loopback = inet_pton(AF_INET6, a.host, &in6) == 1 && IN6_IS_ADDR_LOOPBACK(&in6);
    }
    if (!loopback || a.kind != BACKEND_ADDR_INET || strlen(a.text) >= sizeof m->listen)
        return config_fail(c, p, "must be a loopback address and port: 127.0.0.0/8 or [::1], e.g. \"127.0.0.1:9464\"");
take:
    m->enabled = true;
    memcpy(m->listen, a.text, strlen(a.text) + 1);
    memcpy(m->host, a.host, strlen(a.host) + 1);
    m->family = a.family;
    m->port = a.port;
    return 0;
}

static int config_parse_metrics(struct config_ctx *c, json_t *o, struct metrics_conf *m)
{
    static const char *const keys[] = {"listen", NULL};
    if (!o)
        return 0;
    if (config_check_object(c, "metrics", o) < 0 || config_check_keys(c, "metrics", o, keys) < 0)
        return -1;
    /* The metrics endpoint has no authentication: it must not be reachable from other hosts. */
    return config_parse_listen(c, "metrics", o, true, m);
}

static int config_parse_limits(struct config_ctx *c, json_t *o, struct limits_conf *l)
{
    static const char *const keys[] = {"max_open_streams", NULL};
    l->max_open_streams = 0;
    if (!o)
        return 0;
    if (config_check_object(c, "limits", o) < 0 || config_check_keys(c, "limits", o, keys) < 0)
        return -1;
    return config_get_uint(c, "limits", o, "max_open_streams", false, 0, CONFIG_MAX_OPEN_STREAMS_MAX,
                           &l->max_open_streams);
}

static int config_parse_probe(struct config_ctx *c, json_t *o, struct probe_conf *pr, enum tor_mode mode)
{
    static const char *const keys[] = {"hsfetch_interval", "republish_deadline", "client_tor", "interval",
                                       "timeout", "window", "down_after", NULL};
    pr->hsfetch_interval = 300;
    pr->republish_deadline = 120;
    pr->client_tor = mode == TOR_MODE_SPAWN;
    pr->interval = 60;
    pr->timeout = 60;
    pr->window = 5;
    pr->down_after = 2;
    if (!o)
        return 0;
    if (config_check_object(c, "probe", o) < 0 || config_check_keys(c, "probe", o, keys) < 0)
        return -1;
    if (config_get_uint(c, "probe", o, "hsfetch_interval", false, 10, 86400, &pr->hsfetch_interval) < 0 ||
        config_get_uint(c, "probe", o, "republish_deadline", false, 10, 3600, &pr->republish_deadline) < 0 ||
        config_get_bool(c, "probe", o, "client_tor", &pr->client_tor) < 0 ||
        config_get_uint(c, "probe", o, "interval", false, 5, 86400, &pr->interval) < 0 ||
        config_get_uint(c, "probe", o, "timeout", false, 5, 600, &pr->timeout) < 0 ||
        config_get_uint(c, "probe", o, "window", false, 1, 100, &pr->window) < 0)
        return -1;
    if (pr->down_after > pr->window)
        pr->down_after = pr->window;
    return config_get_uint(c, "probe", o, "down_after", false, 1, pr->window, &pr->down_after);
}

/* onion_location.allow against the listen address `m`: each entry of listen's family (another could never
 * match); absent, the loopback network of that family, which only a loopback listen address may rely on:
 * a farm-facing one must name its web servers. */
static int config_parse_onion_location_allow(struct config_ctx *c, json_t *o, struct onion_location_conf *ol)
{
    char p[FIELD_PATH_LEN], why[160];
    json_t *arr;
    if (config_get_array(c, "onion_location", o, "allow", false, 1, CONFIG_MAX_LIST, &arr) < 0)
        return -1;
    config_sub(p, "onion_location", "allow");
    if (arr && !ol->listen.enabled)
        return config_fail(c, p, "needs listen: it says who may connect to it");
    if (!ol->listen.enabled)
        return 0;
    const struct metrics_conf *m = &ol->listen;
    if (!arr) {
        const char *lo = m->family == AF_INET6 ? "::1" : "127.0.0.0/8";
        struct in6_addr a6;
        struct in_addr a4;
        bool loopback = m->family == AF_INET6
                            ? inet_pton(AF_INET6, m->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)
                            : inet_pton(AF_INET, m->host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
        if (!loopback)
            return config_fail(c, p, "is required when listen (%s) is not a loopback address: list the web servers' "
                                     "addresses or networks, e.g. [\"10.0.0.0/24\"]", m->listen);
        config_parse_cidr(lo, strlen(lo), &ol->allow[0], why, sizeof why);
        ol->n_allow = 1;
        return 0;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *v = json_array_get(arr, i);
        config_subi(p, "onion_location", "allow", i);
        if (!json_is_string(v))
            return config_fail(c, p, "must be a string");
        struct config_cidr *net = &ol->allow[i];
        if (config_parse_cidr(json_string_value(v), json_string_length(v), net, why, sizeof why) < 0)
            return config_fail(c, p, "%s", why);
        if (net->family != m->family)
            return config_fail(c, p, "%s can never match: listen (%s) is %s", net->text, m->listen,
                               m->family == AF_INET6 ? "IPv6" : "IPv4");
        ol->n_allow = i + 1;
    }
    return 0;
}

static int config_parse_onion_location(struct config_ctx *c, json_t *o, struct onion_location_conf *ol)
{
    static const char *const keys[] = {"dir", "on_change", "listen", "allow", NULL};
    if (!o)
        return 0;
    if (config_check_object(c, "onion_location", o) < 0 || config_check_keys(c, "onion_location", o, keys) < 0)
        return -1;
    ol->enabled = true;
    /* Serves only public data (the onion addresses): a farm-facing address is allowed, for the peers in
     * allow. */
    if (config_parse_listen(c, "onion_location", o, false, &ol->listen) < 0 ||
        config_parse_onion_location_allow(c, o, ol) < 0)
        return -1;
    if (config_get_path(c, "onion_location", o, "dir", true, CONFIG_PATH_MAX, NULL, &ol->dir) < 0)
        return -1;
    json_t *arr;
    if (config_get_array(c, "onion_location", o, "on_change", false, 0, CONFIG_MAX_LIST, &arr) < 0)
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return 0; /* [] = no command, like an absent key */
    size_t n = json_array_size(arr);
    ol->on_change = calloc(n + 1, sizeof *ol->on_change);
    if (!ol->on_change)
        return config_oom(c, "onion_location.on_change");
    ol->n_on_change = n;
    for (size_t i = 0; i < n; i++) {
        char p[FIELD_PATH_LEN];
        json_t *v = json_array_get(arr, i);
        config_subi(p, "onion_location", "on_change", i);
        if (!json_is_string(v))
            return config_fail(c, p, "must be a string");
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (i == 0) {
            /* Run with execv: no shell, no PATH search. */
            char why[96];
            char *norm = config_norm_path(s, len, CONFIG_PATH_MAX, why, sizeof why);
            if (!norm)
                return config_fail(c, p, "%s (the command is run without a shell or PATH search)", why);
            ol->on_change[0] = norm;
            continue;
        }
        if (strlen(s) != len)
            return config_fail(c, p, "must not contain NUL");
        ol->on_change[i] = strdup(s);
        if (!ol->on_change[i])
            return config_oom(c, p);
    }
    return 0;
}

/* ---- top level ----------------------------------------------------------------------------------- */

static int config_parse_root(struct config_ctx *c, json_t *root, struct config *cfg)
{
    static const char *const keys[] = {"state_dir", "run_dir", "log_level", "log_format", "tor", "services",
                                       "status", "metrics", "limits", "probe", "onion_location", NULL};
    if (!json_is_object(root))
        return config_fail(c, "config", "must be a JSON object");
    if (config_check_keys(c, "", root, keys) < 0)
        return -1;
    if (config_get_path(c, "", root, "state_dir", true, CONFIG_PATH_MAX, NULL, &cfg->state_dir) < 0 ||
        config_get_path(c, "", root, "run_dir", true, CONFIG_RUN_DIR_MAX,
                        "(unix socket paths under it are limited to 107 bytes)", &cfg->run_dir) < 0)
        return -1;
    /* In both modes: the data-path sockets under run_dir go into tor's HiddenServicePort lines. */
    if (!config_is_plain_path(cfg->run_dir))
        return config_fail(c, "run_dir", "may only contain A-Z a-z 0-9 / . _ - + (tor's HiddenServicePort "
                                         "lines name the data-path sockets under it)");
    int level = CONFIG_LOG_INFO;
    if (config_get_enum(c, "", root, "log_level", config_log_level_names, &level) < 0)
        return -1;
    cfg->log_level = (enum config_log_level)level;
    int format = CONFIG_LOG_FORMAT_TEXT;
    if (config_get_enum(c, "", root, "log_format", config_log_format_names, &format) < 0)
        return -1;
    cfg->log_format = (enum config_log_format)format;
    if (config_parse_tor(c, json_object_get(root, "tor"), cfg) < 0)
        return -1;

    json_t *arr;
    if (config_get_array(c, "", root, "services", true, 1, CONFIG_MAX_SERVICES, &arr) < 0)
        return -1;
    size_t n = json_array_size(arr);
    cfg->services = calloc(n, sizeof *cfg->services);
    if (!cfg->services)
        return config_oom(c, "services");
    cfg->n_services = n;
    for (size_t i = 0; i < n; i++) {
        char p[FIELD_PATH_LEN];
        config_subi(p, "", "services", i);
        if (config_parse_service(c, p, json_array_get(arr, i), cfg, i) < 0)
            return -1;
        cfg->services[i].tor_mask = placement_mask(cfg->services[i].name, cfg->tor.instances,
                                                   cfg->tor.tors_per_service);
        for (size_t j = 0; j < i && cfg->services[i].onionbalance.role == OB_ROLE_FRONTEND; j++)
            if (cfg->services[j].onionbalance.role == OB_ROLE_FRONTEND)
                return config_fail(c, p, "a second Onionbalance frontend (services[%zu] is one): onionfront runs "
                                         "one Onionbalance, for one master address", j);
    }

    if (config_parse_status(c, json_object_get(root, "status"), cfg) < 0 ||
        config_parse_metrics(c, json_object_get(root, "metrics"), &cfg->metrics) < 0 ||
        config_parse_limits(c, json_object_get(root, "limits"), &cfg->limits) < 0 ||
        config_parse_probe(c, json_object_get(root, "probe"), &cfg->probe, cfg->tor.mode) < 0 ||
        config_parse_onion_location(c, json_object_get(root, "onion_location"), &cfg->onion_location) < 0)
        return -1;
    return 0;
}

struct config *config_from_json(json_t *root, struct config_errors *errs)
{
    struct config_ctx c = {errs};
    struct config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        config_oom(&c, "config");
        return NULL;
    }
    if (config_parse_root(&c, root, cfg) < 0 || config_errors_count(errs) > 0) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

static void config_free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void config_free(struct config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_services; i++) {
        struct service_conf *svc = &cfg->services[i];
        for (size_t j = 0; j < svc->n_ports; j++)
            free(svc->ports[j].backends);
        free(svc->ports);
        free(svc->clients);
        free(svc->key_dir);
    }
    free(cfg->services);
    free(cfg->tor.binary);
    free(cfg->tor.control_socket);
    free(cfg->tor.user);
    config_free_strv(cfg->tor.extra_torrc, cfg->tor.n_extra_torrc);
    free(cfg->status.socket);
    free(cfg->status.allowed_uids);
    free(cfg->status.allowed_gids);
    free(cfg->status.admin_uids);
    free(cfg->status.admin_gids);
    free(cfg->onion_location.dir);
    config_free_strv(cfg->onion_location.on_change, cfg->onion_location.n_on_change);
    free(cfg->state_dir);
    free(cfg->run_dir);
    free(cfg);
}

/* ---- stringers ----------------------------------------------------------------------------------- */

/* The name of value `v` in a NULL-terminated table, or "unknown". */
static const char *config_name(const char *const *table, unsigned v)
{
    for (unsigned i = 0; table[i]; i++)
        if (i == v)
            return table[i];
    return "unknown";
}

const char *balance_policy_str(enum balance_policy p)
{
    return config_name(config_balance_names, p);
}

const char *health_type_str(enum health_type t)
{
    return config_name(config_health_types, t);
}

const char *health_method_str(enum health_method m)
{
    return config_name(config_health_methods, m);
}

const char *tor_mode_str(enum tor_mode m)
{
    return config_name(config_tor_modes, m);
}

const char *config_log_level_str(enum config_log_level l)
{
    return config_name(config_log_level_names, l);
}

const char *config_log_format_str(enum config_log_format f)
{
    return config_name(config_log_format_names, f);
}

const char *backend_addr_kind_str(enum backend_addr_kind k)
{
    return config_name(config_addr_kinds, k);
}

const char *probe_target_type_str(enum probe_target_type t)
{
    return config_name(config_probe_types, t);
}

const char *service_mode_str(enum service_mode m)
{
    return config_name(config_service_modes, m);
}
