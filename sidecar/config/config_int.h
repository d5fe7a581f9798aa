/* config_int.h — the schema parser's shared insides, private to sidecar/config/config.c (the top level,
 * the tor, status, metrics, probe and onion_location sections, config_free, the stringers),
 * config_service.c (the services section) and config_field.c (the error messages, the field paths, the
 * typed field getters and the enums' names). Calls run one way: config.c -> config_service.c ->
 * config_field.c. Nothing else includes it: the rest of onionfront sees config.h. It needs none of
 * config.h's types, so that config_field.c stays below config.c. */
#ifndef ONIONFRONT_CONFIG_INT_H
#define ONIONFRONT_CONFIG_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct config_errors;

#define FIELD_PATH_LEN 256 /* "services[63].ports[63].backends[63].address" and an escaped unknown key */

struct config_ctx {
    struct config_errors *errs; /* every error, in order (config_errors.h) */
};

/* The config file's names of each enum, in the enum's order: the parse tables (config_get_enum) and the
 * stringers (config_name) both read these. */
extern const char *const config_tor_modes[];
extern const char *const config_health_types[];
extern const char *const config_health_methods[];
extern const char *const config_balance_names[];
extern const char *const config_log_level_names[];
extern const char *const config_log_format_names[];
extern const char *const config_probe_types[];
extern const char *const config_addr_kinds[];
extern const char *const config_service_modes[];
extern const char *const config_tor_renewals[];

/* Add "<path>: <message>" to the errors; the parse of this part stops. Always returns -1. */
int config_fail(struct config_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As config_fail for a bad value of an optional or scalar field: the field keeps its default and the
 * parse goes on, so that one run reports every such mistake (the load still fails). Returns 0. */
int config_bad_value(struct config_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Field path of `key` inside the object at `obj` ("" is the top level). */
void config_sub(char *out, const char *obj, const char *key);

/* Field path of entry `i` of the array `key` inside the object at `obj`. */
void config_subi(char *out, const char *obj, const char *key, size_t i);

int config_oom(struct config_ctx *c, const char *path);

/* The typed getters: each returns 0 (leaving *out alone when the key is absent) or -1. */

int config_check_object(struct config_ctx *c, const char *path, json_t *v);

/* Refuse any key of `o` not in the NULL-terminated `allowed`. */
int config_check_keys(struct config_ctx *c, const char *obj, json_t *o, const char *const *allowed);

/* Refuse the first key of the NULL-terminated `keys` present in `o`, saying `why`. */
int config_refuse_keys(struct config_ctx *c, const char *obj, json_t *o, const char *const *keys,
                       const char *why);

int config_get_int(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                   long long min, long long max, long long *out);

int config_get_uint(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                    unsigned min, unsigned max, unsigned *out);

int config_get_bool(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool *out);

/* Borrow the string `key` (NUL-free: jansson refuses \u0000 without JSON_ALLOW_NUL). */
int config_get_str(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                   const char **out, size_t *len);

/* One of the NULL-terminated `names`; its index goes to *out. */
int config_get_enum(struct config_ctx *c, const char *obj, json_t *o, const char *key,
                    const char *const *names, int *out);

/* An absolute path of at most `max` bytes (after normalisation), as a new string in *out (the old value
 * is freed only on success). `note` follows a too-long message, or is NULL. */
int config_get_path(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                    size_t max, const char *note, char **out);

/* A unix socket path: absolute, not the root, at most CONFIG_UNIX_PATH_MAX bytes. */
int config_get_socket(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                      char **out);

/* An optional array of at most `max` entries (at least `min` when present). NULL in *out when absent. */
int config_get_array(struct config_ctx *c, const char *obj, json_t *o, const char *key, bool required,
                     size_t min, size_t max, json_t **out);

/* Parse services[idx] (at field path `obj`) into cfg->services[idx]. Return 0 or -1 (errors added). */
int config_parse_service(struct config_ctx *c, const char *obj, json_t *o, struct config *cfg, size_t idx);

#endif
