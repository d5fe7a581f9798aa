/* config_field.c — what every section parser of the config schema stands on (see config_int.h): the
 * error messages with their field paths, the typed field getters (each names the path of what it
 * refuses) and the config file's name of each enum value.
 *
 * Knows no section and no field of the schema: config.c and config_service.c say which fields exist and
 * where they land; this file only reads one value of a given shape. Calls nothing above it. */
#include "sidecar/config/config_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/config/config_errors.h"
#include "sidecar/config/config_hint.h"
#include "sidecar/config/config_value.h"

/* The config file's names of each enum, in the enum's order: the parse tables (config_get_enum) and the
 * stringers (config_name) both read these. */
const char *const config_tor_modes[] = {"spawn", "attach", NULL};
const char *const config_health_types[] = {"tcp", "http", "https", "none", NULL};
const char *const config_health_methods[] = {"GET", "HEAD", "OPTIONS", NULL};
const char *const config_balance_names[] = {"round_robin", "least_conn", "circuit", NULL};
const char *const config_log_level_names[] = {"debug", "info", "notice", "warn", "error", NULL};
const char *const config_log_format_names[] = {"text", "json", NULL};
const char *const config_probe_types[] = {"http", "connect", NULL};
const char *const config_addr_kinds[] = {"inet", "unix", NULL};
const char *const config_service_modes[] = {"single", "anonymous", NULL};
const char *const config_tor_renewals[] = {"pow", "readd", NULL};

/* ---- messages ---------------------------------------------------------------------------------- */

static void config_vadd(struct config_ctx *c, const char *path, const char *fmt, va_list ap)
{
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "%s: ", path);
    if (n >= 0 && (size_t)n < sizeof msg)
        vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    config_errors_add(c->errs, msg);
}


/* Add "<path>: <message>" to the errors; the parse of this part stops. Always returns -1. */
int config_fail(struct config_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    config_vadd(c, path, fmt, ap);
    va_end(ap);
    return -1;
}

/* As config_fail for a bad value of an optional or scalar field: the field keeps its default and the
 * parse goes on, so that one run reports every such mistake (the load still fails). Returns 0. */
int config_bad_value(struct config_ctx *c, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    config_vadd(c, path, fmt, ap);
    va_end(ap);
    return 0;
}

/* Field path of `key` inside the object at `obj` ("" is the top level). */
void config_sub(char *out, const char *obj, const char *key)
{
    snprintf(out, FIELD_PATH_LEN, obj[0] ? "%s.%s" : "%s%s", obj, key);
}

/* Field path of entry `i` of the array `key` inside the object at `obj`. */
void config_subi(char *out, const char *obj, const char *key, size_t i)
{
    snprintf(out, FIELD_PATH_LEN, obj[0] ? "%s.%s[%zu]" : "%s%s[%zu]", obj, key, i);
}

int config_oom(struct config_ctx *c, const char *path)
{
    return config_fail(c, path, "out of memory");
}

/* ---- typed getters: each returns 0 (leaving *out alone when the key is absent) or -1 ----------- */

int config_check_object(struct config_ctx *c, const char *path, json_t *v)
{
    if (!json_is_object(v))
        return config_fail(c, path, "must be an object");
    return 0;
}

/* Refuse any key of `o` not in the NULL-terminated `allowed`. */
int config_check_keys(struct config_ctx *c, const char *obj, json_t *o, const char *const *allowed)
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
int config_refuse_keys(struct config_ctx *c, const char *obj, json_t *o, const char *const *keys,
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

int config_get_int(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
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

int config_get_uint(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                    unsigned min, unsigned max, unsigned *out)
{
    long long x = *out;
    if (config_get_int(c, obj, o, key, required, min, max, &x) < 0)
        return -1;
    *out = (unsigned)x;
    return 0;
}

int config_get_bool(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool *out)
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
int config_get_str(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
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
int config_get_enum(struct config_ctx *c, const char *obj, json_t *o, const char *key,
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
int config_get_path(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
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
int config_get_socket(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
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
int config_get_array(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
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
