/* sdnotify.h — the systemd service notification protocol (sd_notify(3)), spoken by hand: one unix
 * datagram per message to the socket named by $NOTIFY_SOCKET ("/path", or "@name" for the abstract
 * namespace), text of newline-separated VAR=value assignments ("READY=1", "STATUS=...", "WATCHDOG=1",
 * "STOPPING=1", "RELOADING=1"). libsystemd is not one of onionfront's libraries and the protocol is one
 * sendto(), so this file is the whole client.
 *
 * Owns the notification socket and the watchdog timer: with $WATCHDOG_USEC set (and $WATCHDOG_PID unset
 * or ours), "WATCHDOG=1" is sent every half interval from a libevent timer — so a blocked event loop
 * stops the pings and systemd restarts onionfront — and only while the caller's health predicate agrees.
 * Reads and then removes NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from the environment, so tor and
 * other children cannot talk to systemd in onionfront's name. Does not decide when onionfront is ready:
 * main.c does. Outside systemd (no $NOTIFY_SOCKET) every call is a successful no-op. */
#ifndef ONIONFRONT_SDNOTIFY_H
#define ONIONFRONT_SDNOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct sdnotify;

/* The longest message sent (a STATUS= line is cut to fit). */
#define SDNOTIFY_MSG_MAX 1024

/* Read $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID, remove them from the environment, and open the
 * socket if there is one. Return the notifier (free with sdnotify_free), or NULL with a message in
 * `err` when the variables are malformed (a relative or over-long socket path, a non-numeric
 * WATCHDOG_USEC) or the socket cannot be created. The environment is cleared in every case. */
struct sdnotify *sdnotify_new(struct event_base *base, char *err, size_t errlen);

/* Stop the watchdog and close the socket. NULL is a no-op. */
void sdnotify_free(struct sdnotify *n);

/* True if there is a notification socket (running under systemd with Type=notify). */
bool sdnotify_enabled(const struct sdnotify *n);

/* Send `msg` (one or more "VAR=value" lines) as one datagram. Return 0 (also when not enabled or `n`
 * is NULL), or -1 with a message in `err` naming the socket. */
int sdnotify_send(struct sdnotify *n, const char *msg, char *err, size_t errlen);

/* Send "STATUS=<text>" (printf-style), prefixed by `prefix` lines if not NULL (e.g. "READY=1\n",
 * "STOPPING=1\n"). Newlines in the formatted text become spaces, since a newline ends the assignment.
 * Return as sdnotify_send. */
int sdnotify_status(struct sdnotify *n, const char *prefix, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Tell systemd the daemon's state: like sdnotify_status, but without a `prefix` only when the text
 * differs from the last one sent this way (a status line polled every second is sent on change). A
 * failure is logged at debug: systemd's view is informative, onionfront runs on if it cannot be told. */
void sdnotify_update(struct sdnotify *n, const char *prefix, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The watchdog interval systemd asked for in microseconds, 0 if none (or not for this process). */
uint64_t sdnotify_watchdog_usec(const struct sdnotify *n);

/* Decides whether a watchdog ping may be sent now. */
typedef bool (*sdnotify_healthy_fn)(void *arg);

/* Start sending "WATCHDOG=1" every half watchdog interval while `healthy(arg)` (NULL: always) returns
 * true. Sends one ping at once. Return 0 (also when there is no watchdog), or -1 with a message. */
int sdnotify_watchdog_start(struct sdnotify *n, sdnotify_healthy_fn healthy, void *arg, char *err,
                            size_t errlen);

/* Number of WATCHDOG=1 pings sent so far (for tests and status). */
unsigned long sdnotify_watchdog_pings(const struct sdnotify *n);

#endif
