/* config_hint.h — the likely cause behind a config file's mistake, for people: why jansson could not
 * parse the file (comments, '#' ones included, a trailing comma, single quotes, an empty file, a UTF-8 byte order mark),
 * and which valid key an unknown one was probably meant to be.
 *
 * Exists so that config.c's messages say what to do, not only where the parser stopped (jansson gives
 * the position after the token it choked on, and prints a BOM as an invisible character). Pure: no
 * file system, no logging, no jansson objects; works on the file's bytes and jansson's error fields. */
#ifndef ONIONFRONT_CONFIG_HINT_H
#define ONIONFRONT_CONFIG_HINT_H

#include <stddef.h>

/* Explain a JSON syntax error in the `len` bytes of `text` that jansson reported as `jtext` at `line`,
 * `column` (1-based line; 0 when unknown) and byte offset `position`, into `err`: the cause named where
 * one is recognised ("line 3, column 5: JSON has no comments ..."), at the cause's own position, else
 * jansson's text with its position. `text` may be NULL (the file could not be read again): jansson's. */
void config_hint_json_error(const char *text, size_t len, const char *jtext, int line, int column, size_t position,
                            char *err, size_t errlen);

/* The key of the NULL-terminated `allowed` nearest to `key` (Levenshtein distance, letters compared
 * without case), or NULL if none is close enough to be the one meant (at most 2 edits, and fewer than
 * half of the key's length). */
const char *config_hint_nearest(const char *key, const char *const *allowed);

#endif
