/* pace.c — spreading a periodic check over many services (see pace.h). */
#include "sidecar/core/pace.h"

void pace_init(struct pace *p, unsigned max_in_flight)
{
    p->max_in_flight = max_in_flight ? max_in_flight : 1;
    p->last_start = -1;
}

double pace_gap(double interval, size_t n, double cap)
{
    if (n == 0 || interval <= 0)
        return 0;
    double g = interval / (double)n;
    return g > cap ? cap : g;
}

size_t pace_pick(const struct pace *p, const double *due, size_t n, size_t in_flight, double gap, double now)
{
    if (in_flight >= p->max_in_flight || (p->last_start >= 0 && now - p->last_start < gap))
        return n;
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (due[i] >= 0 && due[i] <= now && (best == n || due[i] < due[best]))
            best = i;
    return best;
}

void pace_started(struct pace *p, double now)
{
    p->last_start = now;
}
