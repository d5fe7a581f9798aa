/* ladder.c — the end-to-end verdict, the repair ladder and the tor restart rule (see ladder.h). */
#include "sidecar/probe/ladder.h"

#include <string.h>

static const char *const ladder_state_names[] = {"starting", "reachable", "degraded", "down"};
static const char *const ladder_step_names[] = {"none", "repost_descriptor", "republish", "restart_tor", "alert"};
static const char *const ladder_restart_names[] = {"restart", "few_down", "budget"};

const char *ladder_state_str(enum ladder_state s)
{
    return (unsigned)s < sizeof(ladder_state_names) / sizeof(ladder_state_names[0]) ? ladder_state_names[s]
                                                                                    : "unknown";
}

const char *ladder_step_str(enum ladder_step s)
{
    return (unsigned)s < LADDER_N_STEPS ? ladder_step_names[s] : "unknown";
}

const char *ladder_restart_str(enum ladder_restart r)
{
    return (unsigned)r < sizeof(ladder_restart_names) / sizeof(ladder_restart_names[0]) ? ladder_restart_names[r]
                                                                                        : "unknown";
}

static uint64_t ladder_mask(unsigned n)
{
    return n >= 64 ? UINT64_MAX : (((uint64_t)1 << n) - 1);
}

void ladder_configure(struct ladder *l, unsigned window, unsigned down_after)
{
    l->window = window < 1 ? 1 : window > 64 ? 64 : window;
    l->down_after = down_after < 1 ? 1 : down_after > l->window ? l->window : down_after;
    if (l->n > l->window)
        l->n = l->window;
    l->history &= ladder_mask(l->n);
}

void ladder_init(struct ladder *l, unsigned window, unsigned down_after)
{
    memset(l, 0, sizeof(*l));
    ladder_configure(l, window, down_after);
}

void ladder_start_over(struct ladder *l)
{
    double recovered = l->recovered_at;
    if (l->down_since > 0)
        recovered = 0; /* the outage did not end with a good probe */
    ladder_init(l, l->window, l->down_after);
    l->recovered_at = recovered;
}

unsigned ladder_failures(const struct ladder *l)
{
    return l->n - (unsigned)__builtin_popcountll(l->history & ladder_mask(l->n));
}

static enum ladder_state ladder_judge(const struct ladder *l)
{
    if (l->n == 0)
        return LADDER_STARTING;
    uint64_t last = ladder_mask(l->down_after);
    if (l->n >= l->down_after && (l->history & last) == 0)
        return LADDER_DOWN;
    return ladder_failures(l) == 0 ? LADDER_REACHABLE : LADDER_DEGRADED;
}

enum ladder_step ladder_feed(struct ladder *l, bool ok, double now)
{
    l->history = ((l->history << 1) | (ok ? 1u : 0u)) & ladder_mask(l->window);
    if (l->n < l->window)
        l->n++;
    l->state = ladder_judge(l);
    if (ok) {
        if (l->down_since > 0)
            l->recovered_at = now;
        l->step = LADDER_STEP_NONE;
        l->down_since = 0;
        memset(l->tried_at, 0, sizeof(l->tried_at));
        return LADDER_STEP_NONE;
    }
    if (l->state != LADDER_DOWN)
        return LADDER_STEP_NONE;
    if (l->down_since == 0)
        l->down_since = now;
    if (l->step == LADDER_STEP_ALERT)
        return LADDER_STEP_NONE; /* the last step stays: alerting goes on through status and metrics */
    l->step = (enum ladder_step)(l->step + 1);
    l->tried_at[l->step] = now;
    return l->step;
}

double ladder_restart_gap(unsigned interval, unsigned window)
{
    double gap = (double)interval * (double)(window ? window : 1);
    return gap < 1 ? 1 : gap;
}

enum ladder_restart ladder_restart_decide(const struct ladder_tor_budget *b, unsigned down, unsigned hosted,
                                          double now, double gap)
{
    /* Most, not all: a tor whose network is gone fails every probe, but the services' probes are spread
     * over the interval, so the restart comes once more than half have found it; fewer down is a fault
     * of those services (a backend, a descriptor), which a restart of the others would not repair. */
    if ((unsigned long)down * 2 <= hosted)
        return LADDER_RESTART_FEW_DOWN;
    if (b->last_restart > 0 && now - b->last_restart < gap)
        return LADDER_RESTART_BUDGET;
    return LADDER_RESTART_YES;
}

void ladder_restart_taken(struct ladder_tor_budget *b, double now)
{
    b->last_restart = now > 0 ? now : 1e-9;
}
