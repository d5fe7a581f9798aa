/* ladder.c — the end-to-end verdict and the repair ladder (see ladder.h). */
#include "sidecar/probe/ladder.h"

#include <string.h>

static const char *const ladder_state_names[] = {"unknown", "reachable", "degraded", "down"};
static const char *const ladder_step_names[] = {"none", "repost_descriptor", "restart_tor", "alert"};

const char *ladder_state_str(enum ladder_state s)
{
    return (unsigned)s < sizeof(ladder_state_names) / sizeof(ladder_state_names[0]) ? ladder_state_names[s]
                                                                                    : "unknown";
}

const char *ladder_step_str(enum ladder_step s)
{
    return (unsigned)s < LADDER_N_STEPS ? ladder_step_names[s] : "unknown";
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

unsigned ladder_failures(const struct ladder *l)
{
    return l->n - (unsigned)__builtin_popcountll(l->history & ladder_mask(l->n));
}

static enum ladder_state ladder_judge(const struct ladder *l)
{
    if (l->n == 0)
        return LADDER_UNKNOWN;
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
