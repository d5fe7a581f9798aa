/* ladder.h — one service's end-to-end verdict and repair ladder, fed with the probe's results (probe.h).
 *
 * The verdict comes from the last `window` probes: down when the last `down_after` all failed, reachable
 * when every one in the window succeeded, degraded otherwise (unknown before the first). On each probe
 * that finds the service down the ladder climbs one step and tells the caller what to do now: re-post the
 * descriptor, then restart the worker's tor, then only alert (the last step stays until a good probe).
 * A good probe resets the ladder. Every step is taken once per outage, so each is logged once.
 *
 * Pure: no I/O, no clock (the caller passes `now`, seconds on the monotonic clock) and no logging. */
#ifndef ONIONFRONT_LADDER_H
#define ONIONFRONT_LADDER_H

#include <stdbool.h>
#include <stdint.h>

enum ladder_state {
    LADDER_UNKNOWN, /* no probe yet */
    LADDER_REACHABLE,
    LADDER_DEGRADED,
    LADDER_DOWN,
};
const char *ladder_state_str(enum ladder_state s);

enum ladder_step {
    LADDER_STEP_NONE,        /* nothing tried (not down) */
    LADDER_STEP_REPOST,      /* re-post the service's descriptor */
    LADDER_STEP_RESTART_TOR, /* restart the tor the service runs on */
    LADDER_STEP_ALERT,       /* nothing left to try: keep alerting */
};
#define LADDER_N_STEPS 4
const char *ladder_step_str(enum ladder_step s);

struct ladder {
    unsigned window, down_after; /* 1-64; down_after <= window */
    uint64_t history;            /* bit i: the i-th latest probe succeeded */
    unsigned n;                  /* probes in history (<= window) */
    enum ladder_state state;
    enum ladder_step step;              /* the highest step taken in this outage */
    double tried_at[LADDER_N_STEPS];    /* when each step was taken in this outage (0: not taken) */
    double down_since;                  /* when the current outage began (0: not down) */
    double recovered_at;                /* the good probe that ended the last outage (0: none yet) */
};

/* Start with no history. `window` is cut to 64, `down_after` to 1-window. */
void ladder_init(struct ladder *l, unsigned window, unsigned down_after);

/* Take new settings, keeping the history that fits. */
void ladder_configure(struct ladder *l, unsigned window, unsigned down_after);

/* Feed one probe result at `now`. Return the repair step to take now (LADDER_STEP_NONE: none). */
enum ladder_step ladder_feed(struct ladder *l, bool ok, double now);

/* Probes in the window that failed. */
unsigned ladder_failures(const struct ladder *l);

#endif
