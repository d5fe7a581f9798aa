/* ob_watch.h — does the master descriptor Onionbalance publishes leave out a live instance?
 *
 * Onionbalance 0.2.2 merges into the master only the instances whose descriptor it holds and received at
 * most INSTANCE_DESCRIPTOR_TOO_OLD before the publish, and publishes again only when an instance's set of
 * introduction points changes, its own descriptor's lifetime ends or the HSDirs change
 * (docs/internals.md, "Onionbalance leaving out an instance"). So a master published without an instance
 * can stay without it while that instance is up and unchanged. This module tells that from Onionbalance's
 * status socket alone (struct ob_status): per instance, the last two descriptorReceived stamps it reported
 * against its publish attempts. The frontend (ob_frontend.c) says which instances are live and restarts
 * Onionbalance when one stays left out longer than the bound.
 * Pure: no I/O; the monotonic clock is the caller's. Not the repair, not which instance is live. */
#ifndef ONIONFRONT_OB_WATCH_H
#define ONIONFRONT_OB_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/config/ob_config.h"

/* Fetch rounds of Onionbalance an instance may stay left out before the frontend repairs. */
#define OB_WATCH_ROUNDS 3

/* Onionbalance's timing (its hs_v3/params.py), with or without --is-testnet. */
struct ob_watch_params {
    unsigned too_old_s; /* INSTANCE_DESCRIPTOR_TOO_OLD: an older instance descriptor is left out */
    unsigned bound_s;   /* OB_WATCH_ROUNDS fetch rounds (each FETCH_DESCRIPTOR_FREQUENCY + its 5 s NEWNYM pause) */
};
struct ob_watch_params ob_watch_params_for(bool testnet);

enum ob_left_out {
    OB_LEFT_IN,               /* in the master, as far as the status shows */
    OB_LEFT_OUT_NO_DESCRIPTOR, /* Onionbalance holds no descriptor of it */
    OB_LEFT_OUT_NO_INTRO,     /* its descriptor lists no introduction points */
    OB_LEFT_OUT_NONE_AT_PUBLISH, /* the last publish came before Onionbalance held any descriptor of it */
    OB_LEFT_OUT_OLD_AT_PUBLISH,  /* the last publish came when its descriptor was older than too_old_s */
};
const char *ob_left_out_str(enum ob_left_out r);

struct ob_watch_instance {
    char address[OB_ADDRESS_LEN + 1];
    /* The last two distinct descriptorReceived stamps seen (seconds, Onionbalance's UTC clock): 0 for
     * "no descriptor", -1 not seen. */
    int64_t received, previous;
    /* Each descriptor's last publish attempt seen (seconds, -1 none) and whether it left the instance out,
     * judged when first seen: later fetches replace the stamps it was judged by. */
    int64_t publish[2];
    enum ob_left_out at_publish[2];
    uint64_t left_out_since_ms; /* monotonic; 0 while in the master */
};
struct ob_watch {
    struct ob_watch_instance instances[OB_MAX_INSTANCES * 2];
    size_t n;
};

/* Forget everything (a new Onionbalance process). */
void ob_watch_reset(struct ob_watch *w);

/* Look at instance `address` (no ".onion") in the status `st` read at `now_ms` (monotonic, > 0). `live`:
 * its own tor is up and has uploaded its descriptor (a remote or down instance is never reported, and its
 * time starts again). Return true when it has been left out for longer than p->bound_s, with why in `why`
 * (its time then starts again: the next report comes a bound later at the earliest); else false. */
bool ob_watch_check(struct ob_watch *w, const struct ob_status *st, const char *address, bool live,
                    uint64_t now_ms, const struct ob_watch_params *p, char *why, size_t len);

#endif
