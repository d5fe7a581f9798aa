/* health_set.h — one active health checker (health.c) for each live backend pool. proxy.c owns the
 * pools and reports their comings and goings through its hooks (struct proxy_hooks); these functions
 * are those hooks.
 *
 * Owns the checkers, not the pools. */
#ifndef ONIONFRONT_HEALTH_SET_H
#define ONIONFRONT_HEALTH_SET_H

#include <stddef.h>

struct backend_pool;
struct event_base;
struct health_set;

/* An empty set whose checkers run on `base`. NULL on OOM. */
struct health_set *health_set_new(struct event_base *base);

/* Free the set and any checker left (free the proxy first: it removes every pool). NULL is a no-op. */
void health_set_free(struct health_set *s);

/* The proxy hooks; `set` is the struct health_set. A pool added without memory for its checker still
 * works, only without active checks (logged). */
void health_set_pool_added(struct backend_pool *pool, void *set);
void health_set_pool_updated(struct backend_pool *pool, void *set);
void health_set_pool_removed(struct backend_pool *pool, void *set);

/* Checkers running now. */
size_t health_set_count(const struct health_set *s);

#endif
