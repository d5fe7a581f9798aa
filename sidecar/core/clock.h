/* clock.h — the monotonic clock in milliseconds, for deadlines and intervals that must not jump with the
 * wall clock (health checks and their schedule, descriptor deadlines and backoffs). Owns nothing.
 *
 * Why a deadline is kept here and not only in a libevent timer: libevent measures a relative timeout from
 * its own clock, which is the loop's cached time (taken when the loop woke, possibly long before the
 * callback that arms the timer runs) on CLOCK_MONOTONIC_COARSE (a few ms behind CLOCK_MONOTONIC). A
 * timer armed for "150 ms from now" can therefore fire before 150 ms have passed since the real start.
 * So a deadline is a clock_now_ms() value taken at the real start; its timer is only a wake-up, and the
 * callback compares clock_now_ms() with the deadline and re-arms for what is left if it woke early. */
#ifndef ONIONFRONT_CLOCK_H
#define ONIONFRONT_CLOCK_H

#include <stdint.h>
#include <sys/time.h>

/* Milliseconds of CLOCK_MONOTONIC (an arbitrary origin; only differences mean anything). */
uint64_t clock_now_ms(void);

/* The relative time from now (clock_now_ms) until `deadline_ms`, for event_add: zero if it has passed. */
struct timeval clock_until(uint64_t deadline_ms);

/* `ms` as a relative timeval for event_add. */
struct timeval clock_tv_ms(uint64_t ms);

#endif
