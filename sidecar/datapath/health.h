/* health.h — active health checks of one backend pool, scheduled on the event loop (relayd's hce.c).
 *
 * Every backend of the pool is checked on its own, every health.interval_ms (between check starts,
 * shortened by a small random jitter so that the checks of many backends do not align), each check with
 * the deadline health.timeout_ms from its start. A check is check_tcp (IP literals, unix sockets) or
 * check_http (http/https, and tcp for host names); each ends in exactly one completion, which goes to
 * backend_health_result. Drained backends (weight 0) are checked too, so that their state is known when
 * they get weight again. Type none: no checks.
 *
 * Owns the per-backend schedules (b->check_state), the running checks and the curl loop they share.
 * Does not own the pool, decide up/down (backend.c does) or log single checks above debug. */
#ifndef ONIONFRONT_HEALTH_H
#define ONIONFRONT_HEALTH_H

#include <stdint.h>

struct event_base;
struct backend_pool;
struct health_checker;

/* Start checking every backend of `pool` on `base` (the first checks within a fraction of the interval),
 * with one warning if they are https checks with tls_verify false. The checker borrows the pool, which
 * must outlive it. Return NULL on OOM. */
struct health_checker *health_new(struct event_base *base, struct backend_pool *pool);

/* Stop all checks (running ones are abandoned without a result) and free the checker. Free it before the
 * pool. NULL is a no-op. */
void health_free(struct health_checker *hc);

/* Catch up with backend_pool_update: start schedules for new or revived backends, restart the check of a
 * backend whose address changed, and move the next checks to the new settings if the health settings
 * changed (type none stops all checks; from none, checks start; a check already running finishes with the
 * old ones). Warn once if https checks have just lost certificate verification (tls_verify false).
 * Removed backends were already detached by the pool. */
void health_update(struct health_checker *hc);

/* Checks completed since health_new (for tests and status). */
uint64_t health_checks_done(const struct health_checker *hc);

#endif
