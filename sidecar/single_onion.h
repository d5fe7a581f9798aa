/* single_onion.h — the one rule for what makes a tor fit for onionfront: single onion service mode
 * (HiddenServiceSingleHopMode 1 and HiddenServiceNonAnonymousMode 1, which tor accepts only together)
 * and no client port open, so that it can never be used as a client (TOR-FACTS). tor.c applies it before
 * handing services to a tor, verify.c re-checks it later; both ask tor with the keys below.
 *
 * Also the warning onionfront prints at start, since the rule is what makes the services non-anonymous.
 * Owns nothing; pure. */
#ifndef ONIONFRONT_SINGLE_ONION_H
#define ONIONFRONT_SINGLE_ONION_H

#include <stdbool.h>
#include <stddef.h>

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

/* Log the start-up warning that the `n_services` services are not location-hidden. */
void single_onion_warn(size_t n_services);

#endif
