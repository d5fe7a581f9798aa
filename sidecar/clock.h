/* clock.h — the monotonic clock in milliseconds, for deadlines and intervals that must not jump with the
 * wall clock (health checks and their schedule). Owns nothing. */
#ifndef ONIONFRONT_CLOCK_H
#define ONIONFRONT_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC (an arbitrary origin; only differences mean anything). */
uint64_t clock_now_ms(void);

#endif
