/* config_load.c — the loaders of config.h: read a file or a buffer with jansson, explain a syntax error
 * (config_hint.h), hand the document to the schema (config.c, config_from_json) and give the caller
 * every error (config_errors.h) or the one-line summary. Not the schema itself. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "sidecar/config/config.h"
#include "sidecar/config/config_errors.h"
#include "sidecar/config/config_hint.h"

/* A JSON syntax error, with its likely cause (config_hint.h) when `text` (the file's bytes) is known. */
static void config_json_error(const json_error_t *je, const char *text, size_t len, struct config_errors *errs)
{
    char msg[1024];
    config_hint_json_error(text, len, je->text, je->line, je->column, (size_t)je->position, msg, sizeof msg);
    config_errors_add(errs, msg);
}

/* The bytes of `path` again, to explain a syntax error (NULL if it cannot be read; free it). */
static char *config_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rbe");
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (*len == cap) {
            char *nb = cap < (64u << 20) ? realloc(buf, cap ? cap * 2 : 65536) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = cap ? cap * 2 : 65536;
        }
        size_t n = fread(buf + *len, 1, cap - *len, f);
        *len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    return buf;
}

struct config *config_load_file_errors(const char *path, struct config_errors *errs)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        /* jansson's own text for a file it cannot open; the cause for one it cannot parse */
        size_t len = 0;
        char *text = json_error_code(&je) != json_error_cannot_open_file ? config_slurp(path, &len) : NULL;
        config_json_error(&je, text, len, errs);
        free(text);
        return NULL;
    }
    struct config *cfg = config_from_json(root, errs);
    json_decref(root);
    return cfg;
}

struct config *config_load_string_errors(const char *json, size_t len, struct config_errors *errs)
{
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        config_json_error(&je, json, len, errs);
        return NULL;
    }
    struct config *cfg = config_from_json(root, errs);
    json_decref(root);
    return cfg;
}

/* The one-line forms: the first error and how many more (config_errors_summary). */
struct config *config_load_file(const char *path, char *err, size_t errlen)
{
    struct config_errors errs = {0};
    struct config *cfg = config_load_file_errors(path, &errs);
    if (!cfg && err)
        config_errors_summary(&errs, err, errlen);
    config_errors_clear(&errs);
    return cfg;
}

struct config *config_load_string(const char *json, size_t len, char *err, size_t errlen)
{
    struct config_errors errs = {0};
    struct config *cfg = config_load_string_errors(json, len, &errs);
    if (!cfg && err)
        config_errors_summary(&errs, err, errlen);
    config_errors_clear(&errs);
    return cfg;
}
