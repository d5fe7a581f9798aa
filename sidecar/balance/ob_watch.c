/* ob_watch.c — a live instance left out of Onionbalance's master, read from its status (see ob_watch.h). */
#include "sidecar/balance/ob_watch.h"

#include <stdio.h>
#include <string.h>

/* Onionbalance 0.2.2, hs_v3/params.py and common/instance.py (the NEWNYM pause before each fetch). */
#define OB_TOO_OLD_S 3600
#define OB_TOO_OLD_TESTNET_S 20
#define OB_FETCH_S 600
#define OB_FETCH_TESTNET_S 20
#define OB_NEWNYM_PAUSE_S 5

struct ob_watch_params ob_watch_params_for(bool testnet)
{
    unsigned fetch = testnet ? OB_FETCH_TESTNET_S : OB_FETCH_S;
    return (struct ob_watch_params){.too_old_s = testnet ? OB_TOO_OLD_TESTNET_S : OB_TOO_OLD_S,
                                    .bound_s = OB_WATCH_ROUNDS * (fetch + OB_NEWNYM_PAUSE_S)};
}

const char *ob_left_out_str(enum ob_left_out r)
{
    switch (r) {
    case OB_LEFT_IN: return "in the master";
    case OB_LEFT_OUT_NO_DESCRIPTOR: return "Onionbalance holds no descriptor of it";
    case OB_LEFT_OUT_NO_INTRO: return "its descriptor lists no introduction points";
    case OB_LEFT_OUT_NONE_AT_PUBLISH:
        return "Onionbalance last published before it held a descriptor of it and has not published since";
    case OB_LEFT_OUT_OLD_AT_PUBLISH:
        return "Onionbalance last published when its descriptor of it was older than its limit (left out)";
    }
    return "?";
}

/* Onionbalance's "YYYY-MM-DD HH:MM:SS" (strftime of utcnow()) as seconds since 1970, or -1. The days come
 * from the civil-date formula, so no time zone is involved. */
static int64_t ob_stamp_seconds(const char *s)
{
    int y, mo, d, h, mi, se, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || s[n] != '\0' ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60 ||
        y < 1970)
        return -1;
    y -= mo <= 2;
    int64_t era = y / 400, yoe = y - era * 400;
    int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return days * 86400 + h * 3600 + mi * 60 + se;
}

static struct ob_watch_instance *ob_watch_slot(struct ob_watch *w, const char *address)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->instances[i].address, address) == 0)
            return &w->instances[i];
    if (w->n == sizeof(w->instances) / sizeof(w->instances[0]))
        return NULL;
    struct ob_watch_instance *s = &w->instances[w->n++];
    memset(s, 0, sizeof(*s));
    snprintf(s->address, sizeof(s->address), "%s", address);
    s->received = s->previous = s->publish[0] = s->publish[1] = -1;
    return s;
}

/* Was the instance in the publish at `publish` (seconds)? Onionbalance took the descriptor it held then:
 * the newest stamp at or before it. */
static enum ob_left_out ob_left_out_at(const struct ob_watch_instance *s, int64_t publish, unsigned too_old_s)
{
    int64_t held = s->received >= 0 && s->received <= publish ? s->received
                   : s->previous >= 0 && s->previous <= publish ? s->previous
                                                                : -1;
    if (held == 0)
        return OB_LEFT_OUT_NONE_AT_PUBLISH;
    if (held > 0 && publish - held > (int64_t)too_old_s)
        return OB_LEFT_OUT_OLD_AT_PUBLISH;
    return OB_LEFT_IN; /* or not known: the stamps seen do not reach back to that publish */
}

/* Record what `si` (NULL: not listed) says and tell whether the instance is left out of the master. */
static enum ob_left_out ob_left_out(struct ob_watch_instance *s, const struct ob_status *st,
                                    const struct ob_status_instance *si, unsigned too_old_s)
{
    int64_t now = si && si->received ? ob_stamp_seconds(si->received_at) : 0;
    if (now >= 0 && now != s->received) {
        s->previous = s->received;
        s->received = now;
    }
    if (!si || !si->received)
        return OB_LEFT_OUT_NO_DESCRIPTOR;
    if (si->intro_points == 0)
        return OB_LEFT_OUT_NO_INTRO;
    /* Each descriptor (this time period's and the next one's) is published on its own. */
    const char *attempts[] = {st->attempt_first, st->attempt_second};
    enum ob_left_out r = OB_LEFT_IN;
    for (size_t i = 0; i < 2; i++) {
        int64_t publish = ob_stamp_seconds(attempts[i]);
        if (publish != s->publish[i]) {
            s->publish[i] = publish;
            s->at_publish[i] = publish > 0 ? ob_left_out_at(s, publish, too_old_s) : OB_LEFT_IN;
        }
        if (r == OB_LEFT_IN)
            r = s->at_publish[i];
    }
    return r;
}

void ob_watch_reset(struct ob_watch *w)
{
    memset(w, 0, sizeof(*w));
}

bool ob_watch_check(struct ob_watch *w, const struct ob_status *st, const char *address, bool live,
                    uint64_t now_ms, const struct ob_watch_params *p, char *why, size_t len)
{
    struct ob_watch_instance *s = ob_watch_slot(w, address);
    const struct ob_status_instance *si = NULL;
    if (!s)
        return false;
    for (size_t i = 0; i < st->n_instances && !si; i++)
        if (strcmp(st->instances[i].address, address) == 0)
            si = &st->instances[i];
    enum ob_left_out r = ob_left_out(s, st, si, p->too_old_s);
    if (!live || r == OB_LEFT_IN) {
        s->left_out_since_ms = 0;
        return false;
    }
    if (!s->left_out_since_ms)
        s->left_out_since_ms = now_ms;
    uint64_t for_ms = now_ms - s->left_out_since_ms;
    if (for_ms <= (uint64_t)p->bound_s * 1000)
        return false;
    snprintf(why, len, "the live instance %s.onion has been left out of the master for %llu s (bound %u s): %s",
             address, (unsigned long long)(for_ms / 1000), p->bound_s, ob_left_out_str(r));
    s->left_out_since_ms = 0;
    return true;
}
