/* config_load.h — inside the config wing: the schema's entry point for the loaders (config_load.c).
 * config.h has the public loaders; this header is for config.c and config_load.c only. */
#ifndef ONIONFRONT_CONFIG_LOAD_H
#define ONIONFRONT_CONFIG_LOAD_H

#include <jansson.h>

struct config;
struct config_errors;

/* Build a config from the parsed document `root` (borrowed): a new config, or NULL with every error in
 * `errs` (a bad value does not stop the parse; a structural error does). */
struct config *config_from_json(json_t *root, struct config_errors *errs);

#endif
