/* single_onion.h — the one rule for what makes a tor fit for onionfront: single onion service mode
 * (HiddenServiceSingleHopMode 1 and HiddenServiceNonAnonymousMode 1, which tor accepts only together)
 * and no client port open, so that it can never be used as a client (TOR-FACTS). tor.c applies it before
 * handing services to a tor, verify.c re-checks it later; both ask tor with the keys below.
 *
 * Also the warning onionfront prints at start, since the rule is what makes the services non-anonymous,
 * and the circuit rules of both modes.
 * Owns nothing; pure. */
#ifndef ONIONFRONT_SINGLE_ONION_H
#define ONIONFRONT_SINGLE_ONION_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct cp_event_circ;
struct cp_info;

#define SINGLE_ONION_N_CONF 2
#define SINGLE_ONION_N_LISTENERS 5
/* The GETCONF keys that must be "1". */
extern const char *const single_onion_conf_keys[SINGLE_ONION_N_CONF];
/* The GETINFO keys of tor's client listeners, which must all be empty. */
extern const char *const single_onion_listener_keys[SINGLE_ONION_N_LISTENERS];

/* The first violation of the rule. */
struct single_onion_problem {
    bool listener;     /* a client listener is open (else a conf key is not 1) */
    const char *key;   /* the key (borrowed from the tables above) */
    const char *value; /* its value in the answer (borrowed from it), or NULL if unset */
    const char *want;  /* a conf key: the value the rule wants ("1" or "0") */
};

/* Check a GETCONF answer of single_onion_conf_keys and a GETINFO answer of single_onion_listener_keys
 * (more keys are ignored). Return true if the tor is fit; else false with the first problem in *p. */
bool single_onion_check(const struct cp_info *conf, const struct cp_info *listeners, struct single_onion_problem *p);

/* The rule for the anonymous services' tor (workerset.h): an ordinary tor, so both conf keys are "0",
 * and no client listener either (it is never used as a client). As single_onion_check. */
bool anonymous_tor_check(const struct cp_info *conf, const struct cp_info *listeners, struct single_onion_problem *p);

/* The circuit rules, one per mode, for a BUILT HS_SERVICE_INTRO or HS_SERVICE_REND circuit (verify.c).
 * A single onion's: one hop, straight to the introduction or rendezvous relay, with ONEHOP_TUNNEL
 * (proposal 260; TOR-FACTS). An anonymous service's: at least 3 hops and no ONEHOP_TUNNEL — tor builds
 * them through its guard (and, with vanguards-lite, a layer-2 guard) to the relay, usually 4 hops; a
 * one-hop circuit would show the relay this server's address. */
bool single_onion_circ_fits(const struct cp_event_circ *c);
bool anonymous_circ_fits(const struct cp_event_circ *c);
#define ANONYMOUS_MIN_HOPS 3

/* Log the start-up warning that names exactly the single onion services of `c` (mode "single"), which
 * are not location-hidden; nothing if there is none. With more than SINGLE_ONION_WARN_NAMES it names
 * their count and the first few ("the 30 onion services a, b, c, d, e and 25 more"): one readable line. */
#define SINGLE_ONION_WARN_NAMES 5
void single_onion_warn(const struct config *c);

#endif
