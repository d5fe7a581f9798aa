/* config_errors.c — the list of a config file's mistakes (see config_errors.h). */
#include "sidecar/config/config_errors.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void config_errors_add(struct config_errors *e, const char *msg)
{
    char *copy = e->n < CONFIG_ERRORS_MAX ? strdup(msg) : NULL;
    if (copy)
        e->msg[e->n++] = copy;
    else
        e->dropped++;
}

size_t config_errors_count(const struct config_errors *e)
{
    return e->n + e->dropped;
}

void config_errors_summary(const struct config_errors *e, char *out, size_t len)
{
    if (len == 0)
        return;
    size_t total = config_errors_count(e);
    if (total <= 1 || e->n == 0) {
        snprintf(out, len, "%s", e->n ? e->msg[0] : "out of memory");
        return;
    }
    snprintf(out, len, "%s (and %zu more error%s: onionfront check-config lists them all)", e->msg[0], total - 1,
             total == 2 ? "" : "s");
}

void config_errors_clear(struct config_errors *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->msg[i]);
    memset(e, 0, sizeof(*e));
}

const char *config_errors_shown(const json_t *v, char *out, size_t len)
{
    if (json_is_object(v) || json_is_array(v)) {
        snprintf(out, len, "%s", json_is_object(v) ? "an object" : "an array");
        return out;
    }
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!text) {
        snprintf(out, len, "that value");
        return out;
    }
    if (strlen(text) < len || len < 4)
        snprintf(out, len, "%s", text);
    else
        snprintf(out, len, "%.*s...", (int)(len - 4), text);
    free(text);
    return out;
}

const char *config_errors_list(const char *const *keys, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; keys[i] && used < len; i++) {
        int n = snprintf(out + used, len - used, "%s%s", i ? ", " : "", keys[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return out;
}

const char *config_errors_noun(const char *key)
{
    size_t n = strlen(key);
    bool port = strcmp(key, "virtual") == 0 || strcmp(key, "port") == 0 || (n > 5 && strcmp(key + n - 5, "_port") == 0);
    return port ? "port" : "value";
}
