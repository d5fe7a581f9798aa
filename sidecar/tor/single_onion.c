/* single_onion.c — the single-onion rule and its start-up warning (see single_onion.h). */
#include "sidecar/tor/single_onion.h"

#include <stdio.h>
#include <string.h>

#include "controlproto/cp_event.h"
#include "sidecar/config/config.h"
#include "sidecar/core/log.h"

const char *const single_onion_conf_keys[SINGLE_ONION_N_CONF] = {"HiddenServiceSingleHopMode",
                                                                 "HiddenServiceNonAnonymousMode"};
const char *const single_onion_listener_keys[SINGLE_ONION_N_LISTENERS] = {
    "net/listeners/socks", "net/listeners/trans", "net/listeners/natd", "net/listeners/dns",
    "net/listeners/httptunnel"};

/* Both rules: every conf key is `want`, no client listener is open. */
static bool single_onion_mode_is(const struct cp_info *conf, const struct cp_info *listeners, const char *want,
                                 struct single_onion_problem *p)
{
    for (size_t i = 0; i < SINGLE_ONION_N_CONF; i++) {
        const char *v = cp_info_get(conf, single_onion_conf_keys[i]);
        if (!v || strcmp(v, want) != 0) {
            *p = (struct single_onion_problem){false, single_onion_conf_keys[i], v, want};
            return false;
        }
    }
    for (size_t i = 0; i < SINGLE_ONION_N_LISTENERS; i++) {
        const char *v = cp_info_get(listeners, single_onion_listener_keys[i]);
        if (v && v[0]) {
            *p = (struct single_onion_problem){true, single_onion_listener_keys[i], v, ""};
            return false;
        }
    }
    return true;
}

bool single_onion_check(const struct cp_info *conf, const struct cp_info *listeners, struct single_onion_problem *p)
{
    return single_onion_mode_is(conf, listeners, "1", p);
}

bool anonymous_tor_check(const struct cp_info *conf, const struct cp_info *listeners, struct single_onion_problem *p)
{
    return single_onion_mode_is(conf, listeners, "0", p);
}

bool single_onion_circ_fits(const struct cp_event_circ *c)
{
    return c->n_hops == 1 && (c->build_flags & CP_BUILD_ONEHOP_TUNNEL);
}

bool anonymous_circ_fits(const struct cp_event_circ *c)
{
    return c->n_hops >= ANONYMOUS_MIN_HOPS && !(c->build_flags & CP_BUILD_ONEHOP_TUNNEL);
}

void single_onion_warn(const struct config *c)
{
    char list[SINGLE_ONION_WARN_NAMES * (CONFIG_SERVICE_NAME_MAX + 2) + 32] = "", what[48];
    size_t used = 0, n = 0;
    for (size_t i = 0; i < c->n_services; i++) {
        if (c->services[i].mode != SERVICE_MODE_SINGLE)
            continue;
        /* The first few by name, the rest by count: one line, however many services. */
        int w = n < SINGLE_ONION_WARN_NAMES
                    ? snprintf(list + used, sizeof(list) - used, "%s%s", n ? ", " : "", c->services[i].name)
                    : 0;
        n++;
        if (w > 0 && (size_t)w < sizeof(list) - used)
            used += (size_t)w;
    }
    if (n == 0)
        return;
    if (n > SINGLE_ONION_WARN_NAMES)
        snprintf(list + used, sizeof(list) - used, " and %zu more", n - SINGLE_ONION_WARN_NAMES);
    if (n == 1)
        snprintf(what, sizeof(what), "the onion service");
    else if (n > SINGLE_ONION_WARN_NAMES)
        snprintf(what, sizeof(what), "the %zu onion services", n);
    else
        snprintf(what, sizeof(what), "the onion services");
    log_warnx("SINGLE ONION SERVICE MODE: %s %s run by onionfront %s NOT location-hidden. Their tor makes "
              "one-hop circuits, so introduction and rendezvous relays see this server's IP address. Use single "
              "onions only for sites whose location is public anyway; this tor has no SocksPort and can never be "
              "used as a client.",
              what, list, n == 1 ? "is" : "are");
}
