/* status_client.h — the client side of the status socket, for `onionfront status`: connect, send
 * requests, read replies (blocking, with a deadline: this runs in the CLI, never in the daemon), and
 * turn the replies into a short summary for people.
 *
 * Owns nothing beyond one call. Does not know the daemon's modules: it reads the JSON the status
 * socket sends (status.h documents the protocol). The summary reads these fields and skips any that
 * are missing, so it works with whatever a daemon of another version reports:
 *   status   {"state", "version", "pid", "uptime_seconds", "problems": [string],
 *             "tor": {"state", "bootstrap_progress", "version", "pid", "restarts"}}
 *   services [{"name", "address", "ports": [{"virtual", "targets": [string]}], "uploaded",
 *             "verdict" (string, e.g. "single onion"), "probe": {"state", "last": {"ttfb_seconds"}},
 *             "descriptor": {"hsdirs_confirmed", "hsdirs_total", "last_upload_age_seconds"}}]
 *   backends [{"service", "virtual_port", "up", "backends": [{"name", "state", "last_result",
 *             "last_detail"}]}] */
#ifndef ONIONFRONT_STATUS_CLIENT_H
#define ONIONFRONT_STATUS_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define STATUS_CLIENT_TIMEOUT_MS 15000         /* per request: connect, send, whole reply */
#define STATUS_CLIENT_MAX_REPLY (64u << 20)    /* bytes of one reply line */

/* Connect to the status socket at `path`. Return the fd; -1 if onionfront is not running (no socket, or
 * a stale one nobody listens on); -2 if it cannot tell (this user may not connect, another error); each
 * with a message that says which. */
int status_client_connect(const char *path, char *err, size_t errlen);

/* Send {"cmd":cmd} on `fd` and read one reply line within timeout_ms. Return the reply's "result" (a
 * new reference), or NULL with err: the daemon's "error" text for {"ok":false}, or what went wrong
 * with the connection or the reply. */
json_t *status_client_call(int fd, const char *cmd, int timeout_ms, char *err, size_t errlen);
/* As status_client_call with a whole request object (stolen), e.g. {"cmd":"log-level","level":"debug"}. */
json_t *status_client_send(int fd, json_t *req, int timeout_ms, char *err, size_t errlen);

#define STATUS_CLIENT_FULL_MAX 4 /* services shown in full; with more, a healthy one gets one line */

/* The summary for people from the results of "status", "services" and "backends" (each may be NULL:
 * that part is left out): the status and its problems, then each service in full — or, with more than
 * STATUS_CLIENT_FULL_MAX services, one line per service without a problem (an address, its descriptor
 * on every responsible HSDir, its circuits of the right kind, reachable or starting end to end, every
 * backend up) and the full view only for the others. Returns malloc'd text ending in "\n", or NULL on
 * OOM. */
char *status_client_summary(const json_t *status, const json_t *services, const json_t *backends);

/* `onionfront status` (without a command) and `check` exit codes, Nagios/monit style (the table in
 * onionfront(1) and --help). */
#define STATUS_EXIT_OK 0       /* "state": "ok" (and, for `check` only, "starting": within tor.bootstrap_timeout
                                  of the start) */
#define STATUS_EXIT_DEGRADED 1 /* "degraded": something is listed under "problems"; for `status`, "starting" */
#define STATUS_EXIT_DOWN 2     /* "down" (no usable tor, no tor bootstrapped after tor.bootstrap_timeout, a
                                  service down end to end), or not running */
#define STATUS_EXIT_UNKNOWN 3  /* cannot tell: the config cannot be read, the socket refused this user, no
                                  usable answer */

/* The exit code for a "status" result (STATUS_EXIT_UNKNOWN without a "state"). */
int status_client_exit_code(const json_t *status);

/* `onionfront check`: one Nagios-plugin line on `out`, "ONIONFRONT OK|WARNING|CRITICAL|UNKNOWN - <the
 * first problem ("starting: " before it while starting), or all services up> | problems=N services=N
 * uploaded=N"; returns the exit code as above ("starting" is OK)
 * (CRITICAL with the reason when onionfront is not running, UNKNOWN when it cannot tell). */
int status_client_check(const char *path, FILE *out);

/* `onionfront status`: connect to `path`; with cmd NULL ask status, services (services-detail with
 * `detail`: each descriptor's per-HSDir lists), backends and circuits and print the summary (or, with
 * `json`, one object {"status", "services", "backends", "circuits"}, where a command the daemon could not
 * answer is null); with a command, send only that one with its `nargs` arguments (log-level LEVEL
 * [SECONDS]; others take none) and print its result (metrics as text, reload and log-level as a line,
 * services and services-detail as the summary's service views, others as JSON; `json`: the JSON); with a word that is not one of the daemon's commands (its "help" list), show the
 * service of that name in full (status SERVICE; with `json` its object, with the per-HSDir detail).
 * Errors go to `errf`, prefixed "onionfront <prog>: " (the command word
 * the user typed: "status", "log-level", "restart-tor"). Returns the exit code: without a command, and for a service,
 * status_client_exit_code of the status (2 when not running, 3 when it cannot tell, 1 on an error reply or no such service: the
 * daemon's refusal of the word as a command is printed then);
 * with a command 0, or 1 (not running, refused, bad arguments, or an error reply). */
int status_client_run(const char *path, const char *prog, const char *cmd, char *const *args, int nargs, bool json,
                      bool detail,
                      FILE *out, FILE *errf);

#endif
