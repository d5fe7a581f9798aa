/* splice_pump.h — one direction of a byte stream copied from one socket to another with splice(2)
 * through a pipe, on the event loop: the bytes go socket -> pipe -> socket inside the kernel and never
 * through a user-space buffer. Linux only; elsewhere splice_pump_supported() is false and
 * splice_pump_new fails with ENOSYS, and the caller copies through its own buffers.
 *
 * Backpressure: the pipe is the only buffer (its capacity, 64 KiB by default). After each read the
 * pump writes what it can; while the pipe still holds bytes it stops reading the source and waits for
 * the destination to become writable, so a slow reader costs one wake-up per write it accepts and a
 * pump never holds more than one pipe's worth.
 *
 * Owns its pipe and its two events; borrows the two sockets (never closes or shuts them down: the
 * caller passes the end of the stream on, which may have to wait for the other direction). A leaf
 * module: no logging, no knowledge of the proxy. */
#ifndef ONIONFRONT_SPLICE_PUMP_H
#define ONIONFRONT_SPLICE_PUMP_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct evbuffer;
struct splice_pump;

/* The pump's three outcomes, all called from its events. After `done` or `failed` the pump does
 * nothing more on its own (its events are stopped) and touches nothing of itself after the callback
 * returns, so the callback may free it. */
struct splice_pump_cbs {
    void (*moved)(size_t n, void *arg); /* `n` more bytes read from the source (counted as read) */
    void (*done)(void *arg);            /* the source ended and every byte reached the destination */
    /* A splice failed with errno `err` on the source (`at_source`) or the destination. When
     * splice_pump_is_refusal(err), the kernel refused splice for these descriptors: nothing was lost,
     * the bytes still in the pipe can be taken back with splice_pump_take. */
    void (*failed)(int err, bool at_source, void *arg);
};

/* True when this system splices between sockets (probed once per call with a socketpair and a pipe;
 * the caller keeps the answer). */
bool splice_pump_supported(void);

/* A pump from `src` to `dst` (non-blocking sockets), with its pipe; its events are not added yet.
 * Return it, or NULL with errno (EMFILE when no descriptor is left for the pipe, ENOSYS off Linux). */
struct splice_pump *splice_pump_new(struct event_base *base, int src, int dst, const struct splice_pump_cbs *cbs,
                                    void *arg);

/* Start reading the source. Return 0, or -1 (event_add failed). */
int splice_pump_start(struct splice_pump *p);

/* Stop both events (the pump can be freed later; it does nothing until started again). */
void splice_pump_stop(struct splice_pump *p);

/* Bytes read from the source and not yet written (those in the pipe). */
size_t splice_pump_pending(const struct splice_pump *p);

/* How many times the pump's events have run (tests: a busy loop shows up here). */
unsigned long splice_pump_wakeups(const struct splice_pump *p);

/* Move the bytes still in the pipe into `out` (for a caller going back to copying through its own
 * buffers, in order). Stops the pump. Return 0, or -1 if not all could be read. */
int splice_pump_take(struct splice_pump *p, struct evbuffer *out);

/* True for the errors that mean "no splice for these descriptors" rather than a broken connection. */
bool splice_pump_is_refusal(int err);

/* Stop the pump and close its pipe. NULL is a no-op. From its `done` or `failed` callback too, not
 * from `moved`. */
void splice_pump_free(struct splice_pump *p);

#endif
