/* served_find.h — which tor's descriptor of a service the HSDirs serve, asked of every tor's descriptor
 * tracker. The rule itself is served.h's (pure functions on plain records); this is the one place that
 * gathers those records from the trackers (descriptor.h), so that served.h needs nothing of them and
 * descriptor.c, which keeps served.h's records, is not included back. */
#ifndef ONIONFRONT_SERVED_FIND_H
#define ONIONFRONT_SERVED_FIND_H

#include <stddef.h>

#include "sidecar/publish/served.h"

struct descriptor_tracker;

/* Which evidence answers. */
enum served_basis {
    /* The acceptance record alone (served_by_rounds): what the tors' own uploads say, known the moment
     * HSDirs confirm them. The failover, the rolling restart and the probe's repairs act on it. */
    SERVED_BASIS_ACCEPTED,
    /* The copies HSDirs handed the hsfetch, compared with each tor's own descriptor (served_compare),
     * else the acceptance record: what visitors get. Status and metrics show it. */
    SERVED_BASIS_FETCHED,
};

/* For `address`, over the trackers of the tors that publish it (ts[k]: tor k's, NULL skipped): which
 * tor's descriptor the HSDirs serve on `basis`, into *out (out->tor -1 if not known; with
 * SERVED_BASIS_ACCEPTED only tor and source are set, the rest zero). */
void served_find(const struct descriptor_tracker *const *ts, size_t n, const char *address,
                 enum served_basis basis, struct served_result *out);

#endif
