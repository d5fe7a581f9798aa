/* single_onion.c — the single-onion rule and its start-up warning (see single_onion.h). */
#include "sidecar/single_onion.h"

#include <string.h>

#include "controlproto/cp_event.h"
#include "sidecar/log.h"

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

void single_onion_warn(size_t n_services)
{
    log_warnx("SINGLE ONION SERVICE MODE: the %zu onion service%s run by onionfront %s NOT location-hidden. "
              "Their tor makes one-hop circuits, so introduction and rendezvous relays see this server's IP "
              "address. Use onionfront only for sites whose location is public anyway; this tor has no "
              "SocksPort and can never be used as a client.",
              n_services, n_services == 1 ? "" : "s", n_services == 1 ? "is" : "are");
}
