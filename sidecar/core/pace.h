/* pace.h — spreading one periodic check of many services over its interval: the end-to-end probe
 * (probe.h) and the periodic HSFETCH (hsfetch, descriptor.h) each check every service once per interval,
 * and N services must not all be checked in the same second (N probes at once overran the probe tor's
 * pending circuits and loaded the service tor). A check starts only while fewer than `max_in_flight`
 * are in flight and at least `gap` seconds after the previous start; of those due, the most overdue
 * goes first, so a service waits for its turn but is never starved.
 *
 * Pure: no clock (the caller passes `now` and its due times, seconds on the monotonic clock), no I/O. */
#ifndef ONIONFRONT_PACE_H
#define ONIONFRONT_PACE_H

#include <stddef.h>

/* One check's pacing. */
struct pace {
    unsigned max_in_flight; /* at least 1 */
    double last_start;      /* the previous start (< 0: none yet) */
};

/* Start with nothing started. */
void pace_init(struct pace *p, unsigned max_in_flight);

/* The spacing that spreads `n` services' checks evenly over `interval` seconds, at most `cap` (so a few
 * services are not held apart for long): interval / n, or 0 for n 0. */
double pace_gap(double interval, size_t n, double cap);

/* Of `n` services whose next checks are due at due[i] (< 0: not to be checked now: not ready, or one in
 * flight), which starts now, with `in_flight` checks running? The index of the most overdue service
 * (the lowest due; the first of equals), or n if none is due, `max_in_flight` run, or `gap` has not
 * passed since the last start. */
size_t pace_pick(const struct pace *p, const double *due, size_t n, size_t in_flight, double gap, double now);

/* A check started at `now`. */
void pace_started(struct pace *p, double now);

#endif
