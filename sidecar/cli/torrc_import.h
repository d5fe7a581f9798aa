/* torrc_import.h — read an operator's existing torrc (tor's own HiddenServiceDir services) and turn its
 * onion services into onionfront's JSON config (`onionfront import-torrc`, torrc_cmd.h).
 *
 * Owns tor's config-line syntax as far as an import needs it (comments, quoted values, backslash
 * continuations, case-insensitive option names), the map from HiddenService* options to config fields
 * (one table, torrc_import.c), the services' names and modes, and the list of lines it did not carry
 * over, each with the reason. Pure: no file system (client authorization files and the key copies are
 * torrc_cmd.c's), never logs, and parses outside input: every line it cannot use is named in a note,
 * never dropped silently. */
#ifndef ONIONFRONT_TORRC_IMPORT_H
#define ONIONFRONT_TORRC_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define TORRC_IMPORT_MAX_BYTES (1024 * 1024) /* a torrc is a few kB; refuse anything absurd */
#define TORRC_IMPORT_NAME_MAX 32 /* a service or client name: ^[a-z0-9][a-z0-9_-]{0,31}$ (config.h) */

struct torrc_import;

/* Parse `len` bytes of torrc text (named `path` in notes). Never fails on content: what it cannot use
 * becomes a note. Return the result (torrc_import_free), or NULL when out of memory or `len` is over
 * TORRC_IMPORT_MAX_BYTES. */
struct torrc_import *torrc_import_parse(const char *text, size_t len, const char *path);

void torrc_import_free(struct torrc_import *t);

/* Whether the torrc put tor in single onion mode: HiddenServiceNonAnonymousMode 1 and
 * HiddenServiceSingleHopMode 1, as tor reads them (the last line of each wins). */
bool torrc_import_is_single(const struct torrc_import *t);

/* The services carried over, in the torrc's order (each with at least one HiddenServicePort). */
size_t torrc_import_n_services(const struct torrc_import *t);
/* Its HiddenServiceDir as written (trailing '/' removed), and the config name chosen for it (the
 * directory's last component, made a valid service name and unique). Borrowed. */
const char *torrc_import_service_dir(const struct torrc_import *t, size_t i);
const char *torrc_import_service_name(const struct torrc_import *t, size_t i);

/* Every HiddenServiceDir line (also the ones not carried over), for import-key's question "did this
 * torrc run DIR, and how": the directory as written, trailing '/' removed. */
size_t torrc_import_n_dirs(const struct torrc_import *t);
const char *torrc_import_dir(const struct torrc_import *t, size_t i);

/* The lines not carried over: "line N: <line as written>: <why>". Borrowed. */
size_t torrc_import_n_notes(const struct torrc_import *t);
const char *torrc_import_note(const struct torrc_import *t, size_t i);

/* The onionfront config for the services: state_dir and run_dir as the shipped systemd unit makes them,
 * and "services" (each with "name", "mode", "ports", and "max_streams"/"dos" where the torrc set them).
 * Returns a new reference, or NULL when out of memory. */
json_t *torrc_import_config(const struct torrc_import *t);

/* Make a service or client name from `from` (a directory's or a file's name): lower case, other
 * characters than [a-z0-9_-] as '-', leading ones dropped until a letter or digit, at most 32; "service"
 * if nothing is left. */
void torrc_import_make_name(const char *from, char out[TORRC_IMPORT_NAME_MAX + 1]);

/* Service `i`'s object inside `config` (from torrc_import_config), to add client_auth to. Borrowed. */
json_t *torrc_import_config_service(json_t *config, size_t i);

#endif
