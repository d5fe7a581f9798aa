/* config_errors.h — every mistake of one config file, for `onionfront check-config` (haproxy -c style:
 * all of them in one run, not three runs for three mistakes).
 *
 * The parser (config.c) adds each field's error here and goes on past value errors; a structural error
 * (not JSON, a section that is not an object, a required field missing) still ends the parse. Owns the
 * copies of its messages; knows nothing of the schema. */
#ifndef ONIONFRONT_CONFIG_ERRORS_H
#define ONIONFRONT_CONFIG_ERRORS_H

#include <jansson.h>
#include <stddef.h>

#define CONFIG_ERRORS_MAX 64 /* kept; beyond, only counted */

struct config_errors {
    char *msg[CONFIG_ERRORS_MAX]; /* "<field path>: <what is wrong>", in the file's order */
    size_t n;                     /* kept in msg */
    size_t dropped;               /* beyond CONFIG_ERRORS_MAX (or out of memory): counted only */
};

/* Add a copy of `msg`. */
void config_errors_add(struct config_errors *e, const char *msg);

/* How many errors there were, kept or not. */
size_t config_errors_count(const struct config_errors *e);

/* The first error, then " (and N more errors: onionfront check-config lists them all)" if there were
 * more, into `out` (`len` bytes; nothing when len is 0). The one-line form for a reload's log and reply. */
void config_errors_summary(const struct config_errors *e, char *out, size_t len);

/* The helpers of a message that shows what was wrong. Each writes into `out` (`len` > 0 bytes) and
 * returns it. */
/* A JSON value as the file had it, short: 70000, "250", true, 1.5 (cut with "..." past `len`); an
 * object or array only as "an object" / "an array". Borrows `v`. */
const char *config_errors_shown(const json_t *v, char *out, size_t len);
/* The NULL-terminated `keys` as "a, b, c" (the valid keys at a place, for an unknown one). */
const char *config_errors_list(const char *const *keys, char *out, size_t len);
/* What a number field holds, for "invalid port ...": "port" for virtual, port and *_port, else "value". */
const char *config_errors_noun(const char *key);

/* Free the messages; `e` is empty again. */
void config_errors_clear(struct config_errors *e);

#endif
