/* service_id.c — each service's name, key and address, kept once (see service_id.h). */
#include "sidecar/service_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/config.h"
#include "sidecar/log.h"

struct service_ids {
    struct service_id *ids;
    size_t n;
};

/* Fill `ids` from `conf`, addresses empty. */
static struct service_id *service_ids_of(const struct config *conf)
{
    struct service_id *ids = calloc(conf->n_services ? conf->n_services : 1, sizeof(*ids));
    for (size_t i = 0; ids && i < conf->n_services; i++)
        ids[i].conf = &conf->services[i];
    return ids;
}

struct service_ids *service_ids_new(const struct config *conf)
{
    struct service_ids *s = calloc(1, sizeof(*s));
    if (!s || !(s->ids = service_ids_of(conf))) {
        free(s);
        return NULL;
    }
    s->n = conf->n_services;
    return s;
}

void service_ids_free(struct service_ids *s)
{
    if (!s)
        return;
    free(s->ids);
    free(s);
}

/* Load or create the key of `id` and set its address. The secret is wiped at once: tor reads the key
 * files itself, onionfront only needs the address. */
static int service_id_load_key(struct service_id *id, char *err, size_t errlen)
{
    struct onion_key key;
    bool created = false;
    char kerr[512];
    if (keys_load_or_create(id->conf->key_dir, &key, &created, kerr, sizeof(kerr)) < 0) {
        snprintf(err, errlen, "service %s: %s", id->conf->name, kerr);
        return -1;
    }
    snprintf(id->address, sizeof(id->address), "%s", key.address);
    onion_key_clear(&key);
    log_info("service %s: %s key, address %s.onion", id->conf->name, created ? "created a new" : "loaded its",
             id->address);
    return 0;
}

int service_ids_load_keys(struct service_ids *s, char *err, size_t errlen)
{
    for (size_t i = 0; i < s->n; i++)
        if (service_id_load_key(&s->ids[i], err, errlen) < 0)
            return -1;
    return 0;
}

int service_ids_reconfigure(struct service_ids *s, const struct config *conf, char *err, size_t errlen)
{
    struct service_id *next = service_ids_of(conf);
    if (!next) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < conf->n_services; i++) {
        const struct service_id *old = NULL;
        for (size_t j = 0; j < s->n; j++)
            if (strcmp(s->ids[j].conf->name, next[i].conf->name) == 0)
                old = &s->ids[j];
        if (old && strcmp(old->conf->key_dir, next[i].conf->key_dir) == 0)
            memcpy(next[i].address, old->address, sizeof(next[i].address));
        else if (service_id_load_key(&next[i], err, errlen) < 0) {
            free(next);
            return -1;
        }
    }
    for (size_t j = 0; j < s->n; j++)
        if (!config_find_service(conf, s->ids[j].conf->name))
            log_info("service %s: removed (%s.onion)", s->ids[j].conf->name, s->ids[j].address);
    free(s->ids);
    s->ids = next;
    s->n = conf->n_services;
    return 0;
}

size_t service_ids_count(const struct service_ids *s)
{
    return s->n;
}

const struct service_id *service_ids_at(const struct service_ids *s, size_t i)
{
    return i < s->n ? &s->ids[i] : NULL;
}

const struct service_id *service_ids_find(const struct service_ids *s, const char *address)
{
    for (size_t i = 0; i < s->n; i++)
        if (onion_address_equal(s->ids[i].address, address))
            return &s->ids[i];
    return NULL;
}

const char *service_id_name(const struct service_id *id)
{
    return id->conf->name;
}
