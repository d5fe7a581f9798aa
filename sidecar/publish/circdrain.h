/* circdrain.h — winding one tor down before a planned stop (roll.h's DRAINING), so that no visitor's
 * request is lost when it ends.
 *
 * Why: a visitor's tor sends every request of a browser tab on its open rendezvous circuit to one of our
 * tors. Ending that tor while the visitor still uses the circuit fails the request sent in the moment between
 * the tor's end and the DESTROY reaching the visitor (docs/internals.md); unmodified tor cannot move an open
 * circuit to another tor. A visitor stops using a rendezvous circuit by itself once it is MaxCircuitDirtiness
 * old (10 minutes by default), and then closes it; its next request introduces itself anew, with the
 * descriptor it holds. So the tor to be ended, while another tor already is the one HSDirs serve:
 *  - uploads no descriptor any more (SETCONF PublishHidServDescriptors=0), so HSDirs keep serving the
 *    other tor's;
 *  - takes no new introduction: at each look its HS_SERVICE_INTRO circuits are closed (CLOSECIRCUIT), and
 *    each one tor launches to re-establish them is closed at its first CIRC event, before it is established.
 *    tor re-establishes them a few times, then stops for the rest of its period. A visitor whose cached
 *    descriptor names them fails that introduction and fetches the descriptor again: the other tor's (a delay
 *    of a few seconds, not a failed request);
 *  - then, once the looks have found no introduction circuit for CIRCDRAIN_INTRO_QUIET_MS (so that a
 *    visitor sent to introduce itself anew is refused at once, not stranded by a closing circuit),
 *    closes each visitor's rendezvous circuit at a moment when the visitor has just been answered: a
 *    visitor's tor keeps using a rendezvous circuit for as long as it lasts (tor's clients reuse it well
 *    past MaxCircuitDirtiness and never close it by themselves), so waiting for
 *    visitors to let go does not end. When the data path sees the last stream of a circuit of this tor
 *    end (proxy_set_stream_end_cb), the circuit is closed CIRCDRAIN_CLOSE_DELAY_MS later with
 *    "CLOSECIRCUIT <id> IfUnused" (tor keeps it if a new stream came meanwhile); the DESTROY usually
 *    reaches the visitor's tor before it sends its next request, so that request goes out on a new
 *    circuit (to the other tor) instead of failing. The delay lets tor send the stream's last
 *    cells first (closing a circuit drops cells still queued on it). A circuit whose last stream ended
 *    CIRCDRAIN_IDLE_MS ago or more (tor still had that stream at the first try) is closed at the next
 *    look, IfUnused. One still connecting to the rendezvous point, new, or that never carried a stream
 *    is left alone: its visitor's tor may send a request on it any moment (a never-used one serves
 *    any new stream of that tor); it is closed after its first stream, or cut at the limit. Only a
 *    request the visitor sends while the DESTROY travels can still fail (one network path's latency
 *    from the close to the visitor's tor). tor gives a visitor no way to move a request to another
 *    circuit, so no close is free of this race;
 *  - the tor is drained (circdrain_is_drained) once the looks (GETINFO circuit-status) have found neither
 *    an introduction nor a rendezvous circuit on it for CIRCDRAIN_QUIET_MS: tor re-establishes closed
 *    introduction circuits a few times before it gives up for a while, and a visitor introduced
 *    through one of them in that time must get its rendezvous circuit — ending the tor then would leave
 *    that visitor waiting for a rendezvous that never comes, until its own timeout. The roll ends the
 *    tor once it is drained and the data path has no stream through it, or at its limit.
 * If the tor is to stay after all (the roll aborted), circdrain_stop makes it publish again.
 *
 * Owns the look timer, the looks' commands and what the last look found. Not the connection (tor.c's)
 * nor the decision when to end the tor (roll.c). circdrain_look_parse is pure, for tests and fuzzing. */
#ifndef ONIONFRONT_CIRCDRAIN_H
#define ONIONFRONT_CIRCDRAIN_H

#include <stdbool.h>
#include <stddef.h>

struct cp_conn;
struct event_base;
struct circdrain;

#define CIRCDRAIN_LOOK_MS 500         /* between looks at the tor's circuits while draining */
#define CIRCDRAIN_QUIET_MS 2000       /* looks with no introduction or rendezvous circuit: drained */
#define CIRCDRAIN_MAX_CLOSE 256       /* circuit ids of each kind kept from one look, at most */
#define CIRCDRAIN_CLOSE_DELAY_MS 50   /* from a circuit's last stream end to its CLOSECIRCUIT */
#define CIRCDRAIN_INTRO_QUIET_MS 1000 /* looks with no intro circuit before rendezvous circuits are closed */
#define CIRCDRAIN_IDLE_MS 2000        /* a circuit with no stream end for this long is idle */
#define CIRCDRAIN_SLOTS 4096          /* circuits remembered (by id modulo this): last stream end, first look */
#define CIRCDRAIN_RECENT_INTRO 16     /* intro circuits closed from CIRC events, remembered to close once */

/* What one look at GETINFO circuit-status found. */
struct circdrain_look {
    unsigned rend;                             /* open HS_SERVICE_REND circuits */
    size_t n_rend;                             /* of those joined (not HSSR_CONNECTING): in rend_ids[] */
    unsigned long rend_ids[CIRCDRAIN_MAX_CLOSE];
    size_t n_intro;                            /* HS_SERVICE_INTRO circuits listed in intro[] */
    unsigned long intro[CIRCDRAIN_MAX_CLOSE];  /* their ids (the first CIRCDRAIN_MAX_CLOSE) */
};

/* Read the data block of GETINFO circuit-status (one circuit a line; "" when there is none) into `out`.
 * Only circuits not CLOSED or FAILED count. Return 0, or -1 naming the line that was wrong. */
int circdrain_look_parse(const char *data, struct circdrain_look *out, char *err, size_t errlen);

/* A drainer; `base` drives the look timer (NULL: no timer, looks only by circdrain_look_now). NULL on
 * OOM. */
struct circdrain *circdrain_new(struct event_base *base);

/* Free (a look still in flight completes into nothing). NULL is a no-op. */
void circdrain_free(struct circdrain *d);

/* The tor's new verified control connection (borrowed until circdrain_detach). */
void circdrain_attach(struct circdrain *d, struct cp_conn *conn);

/* The connection is gone (the tor ended or restarts): the drain, if any, ends with it; a new tor
 * process publishes by default, so there is nothing to undo. */
void circdrain_detach(struct circdrain *d);

/* Begin draining: stop uploads, then look at once and every CIRCDRAIN_LOOK_MS. Return 0 (also if
 * draining already), or -1 without a ready connection. */
int circdrain_start(struct circdrain *d);

/* End the drain and make the tor publish again (PublishHidServDescriptors=1), before any command sent
 * after this call on the same connection. Nothing if not draining. */
void circdrain_stop(struct circdrain *d);

bool circdrain_is_draining(const struct circdrain *d);

/* Open rendezvous circuits at the last look that started after circdrain_start, or -1 before the first
 * such answer (or when not draining). */
long circdrain_rend_circuits(const struct circdrain *d);

/* Have the looks found neither an introduction nor a rendezvous circuit on the tor for at least
 * CIRCDRAIN_QUIET_MS? False when not draining. */
bool circdrain_is_drained(const struct circdrain *d);

/* Introduction circuits closed by this drain so far. */
unsigned long circdrain_intro_closed(const struct circdrain *d);

/* Rendezvous circuits this drain asked tor to close (IfUnused: tor may have kept some in use). */
unsigned long circdrain_rend_closes(const struct circdrain *d);

/* The data path saw a stream of this tor's circuit `circuit_id` end: remember it (also outside a drain:
 * a circuit that never carried a stream is never closed as idle), and while draining close the circuit
 * CIRCDRAIN_CLOSE_DELAY_MS from now (IfUnused). */
void circdrain_stream_ended(struct circdrain *d, unsigned long circuit_id);

/* Look now (tests; the timer does it while draining). */
void circdrain_look_now(struct circdrain *d);

#endif
