/* proxy_circ.c — the proxy's per-circuit bookkeeping (see proxy.h: max_streams_per_circuit,
 * circuit_stream_rate): for each port, a hash of the circuits tor named in its PROXY lines, with their
 * open streams and their new-stream token bucket, and the admission of a new stream against both limits.
 *
 * Owns the struct proxy_circ records of each port (proxy_int.h). Not the streams (proxy_stream.c), the
 * PROXY line that names the circuit (proxy_listen.c) or the counters' reporting (proxy.c). */
#include "sidecar/datapath/proxy.h"
#include "sidecar/datapath/proxy_int.h"

#include <stdlib.h>

#include "sidecar/core/clock.h"
#include "sidecar/core/log.h"
#include "sidecar/datapath/backend.h"

static unsigned proxy_circ_bucket(uint32_t id)
{
    return (unsigned)((id * 2654435761u) >> 24) % PROXY_CIRC_BUCKETS;
}

/* Refill `c`'s bucket (port `pc`) up to now; true if it is full (a record without streams may go). */
static bool proxy_circ_refill(struct proxy_circ *c, const struct port_conf *pc, uint64_t now)
{
    uint64_t cap = (uint64_t)pc->circuit_stream_burst * 1000;
    uint64_t add = (now - c->refill_at) * pc->circuit_stream_rate; /* ms x streams/s = milli-streams */
    c->tokens_milli = c->tokens_milli + add >= cap ? cap : c->tokens_milli + add;
    c->refill_at = now;
    return c->tokens_milli >= cap;
}

/* Circuit `id`'s record on `pp`, made (with a full bucket) if there is none. On the way, records without
 * streams whose bucket has refilled are dropped from the chain: they would start full anyway. NULL if
 * out of memory. */
static struct proxy_circ *proxy_circ_get(struct proxy_port *pp, const struct port_conf *pc, uint32_t id,
                                         uint64_t now)
{
    struct proxy_circ **pc_link = &pp->circs[proxy_circ_bucket(id)], *found = NULL;
    while (*pc_link) {
        struct proxy_circ *c = *pc_link;
        if (c->id == id) {
            found = c;
        } else if (c->streams == 0 && proxy_circ_refill(c, pc, now)) {
            *pc_link = c->next;
            free(c);
            continue;
        }
        pc_link = &c->next;
    }
    if (found || !(found = calloc(1, sizeof(*found))))
        return found;
    found->id = id;
    found->tokens_milli = (uint64_t)pc->circuit_stream_burst * 1000;
    found->refill_at = now;
    found->next = pp->circs[proxy_circ_bucket(id)];
    pp->circs[proxy_circ_bucket(id)] = found;
    return found;
}

void proxy_circ_dec(struct proxy_port *pp, uint32_t id)
{
    const struct port_conf *pc = backend_pool_port(pp->pool);
    struct proxy_circ **link = &pp->circs[proxy_circ_bucket(id)];
    for (; *link; link = &(*link)->next) {
        struct proxy_circ *c = *link;
        if (c->id != id)
            continue;
        if (--c->streams == 0) {
            pp->circuits--;
            if (pc->circuit_stream_rate == 0 || proxy_circ_refill(c, pc, clock_now_ms())) {
                *link = c->next;
                free(c);
            }
        }
        return;
    }
}


int proxy_circ_admit(struct proxy_port *pp, const struct port_conf *pc, uint32_t id, uint64_t stream_id)
{
    uint64_t now = clock_now_ms();
    struct proxy_circ *c = proxy_circ_get(pp, pc, id, now);
    if (!c)
        return -1;
    if (pc->max_streams_per_circuit > 0 && c->streams >= pc->max_streams_per_circuit) {
        pp->rejected_circuit_limit++;
        log_debug("proxy %s: stream %llu: circuit %u has %u streams open (max_streams_per_circuit %u); "
                  "closing it",
                  pp->label, (unsigned long long)stream_id, (unsigned)id, c->streams, pc->max_streams_per_circuit);
        return -1;
    }
    if (pc->circuit_stream_rate > 0) {
        proxy_circ_refill(c, pc, now);
        if (c->tokens_milli < 1000) {
            pp->rejected_circuit_rate++;
            log_debug("proxy %s: stream %llu: circuit %u opens streams faster than circuit_stream_rate %u/s "
                      "(burst %u); closing it", pp->label, (unsigned long long)stream_id, (unsigned)id,
                      pc->circuit_stream_rate, pc->circuit_stream_burst);
            return -1; /* its record stays: the bucket is not full */
        }
        c->tokens_milli -= 1000;
    }
    if (c->streams++ == 0)
        pp->circuits++;
    return 0;
}

void proxy_circ_clear(struct proxy_port *pp)
{
    for (unsigned i = 0; i < PROXY_CIRC_BUCKETS; i++) {
        while (pp->circs[i]) {
            struct proxy_circ *c = pp->circs[i];
            pp->circs[i] = c->next;
            free(c);
        }
    }
}
