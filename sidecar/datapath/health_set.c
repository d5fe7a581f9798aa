/* health_set.c — a health checker per live backend pool, driven by the proxy's pool hooks (see
 * health_set.h). */
#include "sidecar/datapath/health_set.h"

#include <stdlib.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/health.h"
#include "sidecar/core/log.h"

struct health_set {
    struct event_base *base;
    struct health_entry {
        struct backend_pool *pool;
        struct health_checker *hc;
    } *entries;
    size_t n;
};

struct health_set *health_set_new(struct event_base *base)
{
    struct health_set *s = calloc(1, sizeof(*s));
    if (s)
        s->base = base;
    return s;
}

void health_set_free(struct health_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        health_free(s->entries[i].hc);
    free(s->entries);
    free(s);
}

void health_set_pool_added(struct backend_pool *pool, void *set)
{
    struct health_set *s = set;
    struct health_entry *ne = realloc(s->entries, (s->n + 1) * sizeof(*ne));
    struct health_checker *hc = ne ? health_new(s->base, pool) : NULL;
    if (ne)
        s->entries = ne;
    if (!hc) {
        /* The pool still works, only without active checks: passive failures then keep a backend out. */
        log_error("backends %s:%u: out of memory; no active health checks for this pool", backend_pool_service(pool),
                  (unsigned)backend_pool_port(pool)->virtual_port);
        return;
    }
    s->entries[s->n++] = (struct health_entry){pool, hc};
}

void health_set_pool_updated(struct backend_pool *pool, void *set)
{
    struct health_set *s = set;
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].pool == pool)
            health_update(s->entries[i].hc);
}

void health_set_pool_removed(struct backend_pool *pool, void *set)
{
    struct health_set *s = set;
    for (size_t i = 0; i < s->n; i++) {
        if (s->entries[i].pool != pool)
            continue;
        health_free(s->entries[i].hc); /* before the pool, which proxy.c frees once its streams end */
        s->entries[i] = s->entries[--s->n];
        return;
    }
}

size_t health_set_count(const struct health_set *s)
{
    return s->n;
}
