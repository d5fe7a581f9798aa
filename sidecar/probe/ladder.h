/* ladder.h — one service's end-to-end verdict and repair ladder, fed with the probe's results (probe.h),
 * and the rule that decides whether a service's ladder may restart the tor it shares with others.
 *
 * The verdict comes from the last `window` probes: down when the last `down_after` all failed, reachable
 * when every one in the window succeeded, degraded otherwise; `starting` before the first probe (the
 * service is within its first publication: tor is still building introduction points and uploading,
 * which takes minutes for many services, and is not judged). On each probe that finds the service down
 * the ladder climbs one step and tells the caller what to do now, from the smallest repair to the
 * largest: re-post the descriptor, re-publish the service alone on its tor, restart the tor, then only
 * alert (the last step stays until a good probe). A good probe resets the ladder. Every step is taken
 * once per outage, so each is logged once.
 *
 * A tor hosts many services, and a restart sets every one of them back to the start of its publication
 * (minutes for many services). So the restart step is a request, granted by ladder_restart_decide only
 * when most of the tor's services are down end to end, and at most once per budget gap per tor; a tor
 * that stops answering its control port is restarted by its supervisor (tor.h), not here.
 *
 * Pure: no I/O, no clock (the caller passes `now`, seconds on the monotonic clock) and no logging. */
#ifndef ONIONFRONT_LADDER_H
#define ONIONFRONT_LADDER_H

#include <stdbool.h>
#include <stdint.h>

enum ladder_state {
    LADDER_STARTING, /* no probe yet: within its first publication (again after its tor restarted) */
    LADDER_REACHABLE,
    LADDER_DEGRADED,
    LADDER_DOWN,
};
const char *ladder_state_str(enum ladder_state s);

enum ladder_step {
    LADDER_STEP_NONE,        /* nothing tried (not down) */
    LADDER_STEP_REPOST,      /* re-post the service's descriptor */
    LADDER_STEP_REPUBLISH,   /* re-publish the service alone on its tor (new descriptors, others untouched) */
    LADDER_STEP_RESTART_TOR, /* ask to restart the tor the service runs on (ladder_restart_decide) */
    LADDER_STEP_ALERT,       /* nothing left to try: keep alerting */
};
#define LADDER_N_STEPS 5
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

/* Start with no history (starting). `window` is cut to 64, `down_after` to 1-window. */
void ladder_init(struct ladder *l, unsigned window, unsigned down_after);

/* Take new settings, keeping the history that fits. */
void ladder_configure(struct ladder *l, unsigned window, unsigned down_after);

/* The service is being published from the start again (its tor restarted): forget the history and the
 * current outage, so that it is starting, not down, until its next probe. Settings and recovered_at stay. */
void ladder_start_over(struct ladder *l);

/* Feed one probe result at `now`. Return the repair step to take now (LADDER_STEP_NONE: none). */
enum ladder_step ladder_feed(struct ladder *l, bool ok, double now);

/* Probes in the window that failed. */
unsigned ladder_failures(const struct ladder *l);

/* ---- may a service's ladder restart its tor? ---------------------------------------------------- */

enum ladder_restart {
    LADDER_RESTART_YES,      /* restart it (then ladder_restart_taken) */
    LADDER_RESTART_FEW_DOWN, /* no: at most half of its services are down; the others keep running */
    LADDER_RESTART_BUDGET,   /* no: it was restarted by a ladder less than the budget gap ago */
};
const char *ladder_restart_str(enum ladder_restart r);

/* One tor's restart budget: when a ladder last restarted it. */
struct ladder_tor_budget {
    double last_restart; /* 0: never */
};

/* The budget gap: one probe window (`interval` seconds between probes of a service times `window`
 * probes), so that every service's verdict rests on probes of the restarted tor before another restart.
 * At least one second. */
double ladder_restart_gap(unsigned interval, unsigned window);

/* Should a ladder restart a tor that hosts `hosted` services (those its restart sets back), `down` of
 * them down end to end, at `now`? Yes only if most are down (down > hosted / 2) and the last restart
 * was `gap` seconds ago or more. */
enum ladder_restart ladder_restart_decide(const struct ladder_tor_budget *b, unsigned down, unsigned hosted,
                                          double now, double gap);

/* A restart was done at `now`. */
void ladder_restart_taken(struct ladder_tor_budget *b, double now);

#endif
