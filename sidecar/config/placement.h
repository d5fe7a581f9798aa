/* placement.h — which of the tors (tor.instances) host each single-onion service. By default every tor
 * hosts every service (each a hot standby of the others). With tor.tors_per_service = c below the number
 * of tors, each service is hosted by c of them, chosen by rendezvous hashing (highest random weight) of
 * the service's name with each tor's number: a service's tors depend only on its name and the two
 * numbers, so a reload that adds or removes a service moves no other one, and the services spread
 * evenly over the tors (M tors with c per service carry M/c times the services of one).
 *
 * Pure computation, done once per config (config.c fills service_conf.tor_mask); the workers ask
 * service_conf.tor_mask through service_mgr_hosts. Not failover or the roll (workerset.c acts on it). */
#ifndef ONIONFRONT_PLACEMENT_H
#define ONIONFRONT_PLACEMENT_H

#include <stddef.h>

#define PLACEMENT_MAX_TORS 8 /* bits of a tor mask; tor.instances is at most instance.h's INSTANCE_MAX */

/* The tors that host the service named `name` (NUL-terminated), as a bit mask (bit k: tor k, 0-based), of
 * `tors` tors with `per_service` each (clamped to 1..tors; tors to 1..PLACEMENT_MAX_TORS). */
unsigned placement_mask(const char *name, unsigned tors, unsigned per_service);

/* How many bits of `mask` are set (tors hosting a service). */
unsigned placement_count(unsigned mask);

#endif
