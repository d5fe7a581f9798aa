/* probe.h — the end-to-end probe: is each onion reachable the way a visitor reaches it?
 *
 * onionfront runs a client tor of its own (tor.h's TOR_ROLE_PROBE_CLIENT: an ordinary client, never the
 * single-onion tor, with its SocksPort on a unix socket in <run_dir>/probe/) and, every probe.interval
 * seconds (each wait jittered by +-10 %), fetches each service's probe target (config.h's struct
 * probe_target_conf) through it with libcurl over SOCKS5h: an HTTP GET with expected status codes and an
 * optional body substring, or a plain connect. Each probe
 *   - first makes the client tor fetch the descriptor afresh (HSFETCH <addr>; the fetched descriptor
 *     replaces the cached one) and waits for HS_DESC RECEIVED or FAILED: the time to the descriptor;
 *   - then connects with a SOCKS username of its own (IsolateSOCKSAuth): a fresh circuit every time.
 * The outcome: success, time to the descriptor, time to the first byte, or the failing stage —
 * descriptor, introduction, rendezvous (tor's ExtendedErrors SOCKS5 replies F0-F7), stream (any other
 * SOCKS failure or a timeout before the stream opened) or http (no or a wrong answer). A probe that could
 * not run because the client tor is not usable is not counted.
 *
 * The results feed each service's ladder (ladder.h): reachable / degraded / down, and on each probe that
 * finds it down the next repair step, done through `struct probe_actions`; each step is logged once at
 * warning. The tor restart step is a request: the actions grant it only when most of that tor's
 * services are down (ladder_restart_decide), and the probe logs what was done or why not.
 * A service is `starting` (not probed, not judged) until the descriptor clients fetch is on every
 * responsible HSDir (actions.published), or PROBE_ARM_WAIT_MS after the first HSDir confirmed it (one
 * that never answers must not keep the probe off): probed earlier, the client tor may ask an HSDir the
 * upload has not reached yet, and a service just started would be reported degraded (seen in make
 * test). When no tor hosting it is up (its tor restarted), it is `starting` again, and only an upload
 * round begun after that counts.
 *
 * The schedule (pace.h): each service's next probe is due probe.interval (+-10 %) after its last one
 * began; at most PROBE_MAX_IN_FLIGHT probes run at once (each holds a few of the client tor's circuits:
 * descriptor fetch, introduction, rendezvous), and starts are spread over the interval, at least
 * interval / (services probed) apart (at most PROBE_GAP_CAP_MS). Due probes wait their turn, most
 * overdue first; with more services than fit, a service's interval stretches instead of the client tor
 * being overrun.
 *
 * On a "tls" probe port (config.h's port_conf.tls) the fetch is https and each probe also reads the
 * certificate a visitor got and each backend's (certwatch.h).
 *
 * Owns the client tor's supervisor, its curl loop, each service's probe state. Not the services'
 * identities (service_id.c), not the repairs themselves (the actions do them on the workers). */
#ifndef ONIONFRONT_PROBE_H
#define ONIONFRONT_PROBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sidecar/probe/ladder.h"

struct config;
struct event_base;
struct metrics;
struct proc_mgr;
struct service_ids;
struct probe;

enum probe_stage {
    PROBE_STAGE_NONE, /* success */
    PROBE_STAGE_DESCRIPTOR,
    PROBE_STAGE_INTRODUCTION,
    PROBE_STAGE_RENDEZVOUS,
    PROBE_STAGE_STREAM,
    PROBE_STAGE_HTTP,
    PROBE_STAGE_OPEN,   /* a private service opened to a client without a key */
    PROBE_STAGE_CLIENT, /* our own client tor failed us: not counted */
};
#define PROBE_N_STAGES 8
const char *probe_stage_str(enum probe_stage s);

/* The stage a SOCKS5 reply code names (tor's ExtendedErrors: 0xF0-0xF7; others: stream). Pure. */
enum probe_stage probe_stage_of_socks(int code);

/* A private service (client_auth) is probed twice each time: first WITHOUT a key (the client tor holds
 * none for it: ONION_CLIENT_AUTH_REMOVE, which also drops its cached descriptor; a fresh HSFETCH; a
 * connect), which must be refused, then WITH the probe's own key (probeauth.h; ONION_CLIENT_AUTH_ADD), the
 * ordinary probe. The keyless pass's verdict: */
enum probe_keyless {
    PROBE_KEYLESS_NONE,         /* not a private service, or not probed yet */
    PROBE_KEYLESS_REFUSED,      /* tor's SOCKS F4: the descriptor needs client authorization */
    PROBE_KEYLESS_INCONCLUSIVE, /* failed otherwise (no descriptor, introduction...): the keyed pass tells */
    PROBE_KEYLESS_OPEN,         /* the stream opened: anyone with the address gets in */
};
const char *probe_keyless_str(enum probe_keyless k);
/* The keyless pass's verdict from its connect: `connected` (the stream opened), else tor's SOCKS5 reply
 * `socks_code` (-1 if none). Pure. */
enum probe_keyless probe_keyless_judge(bool connected, int socks_code);

enum probe_published {
    PROBE_PUBLISHED_NO_TOR, /* no tor that hosts it is up */
    PROBE_PUBLISHED_NONE,
    PROBE_PUBLISHED_SOME,
    PROBE_PUBLISHED_ALL,
};

#define PROBE_ARM_WAIT_MS 30000 /* from the first confirmation to the first probe, at most */
#define PROBE_MAX_IN_FLIGHT 4   /* probes at once */
#define PROBE_GAP_CAP_MS 2000   /* the spacing of probe starts, at most */

/* May a service's first probe begin now? `published` as the action answers it, `first_seen_ms` the
 * clock_now_ms when it was first at least SOME (0: not yet). Pure. */
bool probe_may_arm(enum probe_published published, uint64_t first_seen_ms, uint64_t now_ms);

/* The repairs, done by the daemon on the workers. */
struct probe_actions {
    /* How far the descriptor clients fetch of the service with this address (56 characters) is
     * confirmed in an upload round begun at or after `since` (seconds, clock_now_ms / 1000):
     * PROBE_PUBLISHED_NONE, _SOME (by some responsible HSDirs) or _ALL (by every one); _NO_TOR if no tor
     * hosting it is up. */
    enum probe_published (*published)(void *arg, const char *address, double since);
    /* Re-post its descriptor. Return 0 if that was started, -1 if not. */
    int (*repost)(void *arg, const char *address);
    /* Re-publish it alone on its tor: new descriptors, the other services untouched. Return 0 if that was
     * started, -1 if not. */
    int (*republish)(void *arg, const char *address);
    /* Asked to restart the tor it runs on because of `why`: restart it only if most of that tor's services
     * are down and its restart budget allows (ladder_restart_decide). Return 1 if a tor was restarted, 0
     * if not; either way say what (or why not) in `msg`. */
    int (*restart_tor)(void *arg, const char *address, const char *why, char *msg, size_t msglen);
    /* A private service a client without a key could open: withdraw it from every tor (`why` is its
     * refusal, shown in status) until the operator fixes it and reloads. */
    void (*withdraw)(void *arg, const char *address, const char *why);
    void *arg;
};

/* Create (nothing starts). `conf` and `ids` are borrowed (conf until probe_set_config). NULL on OOM. */
struct probe *probe_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                        const struct service_ids *ids, const struct probe_actions *actions);

/* Start the client tor and the schedule if probe.client_tor is on (else nothing). Return 0, or -1 with
 * a message. */
int probe_start(struct probe *p, char *err, size_t errlen);

/* A reloaded config: interval, timeout, window, targets apply from the next probe. */
void probe_set_config(struct probe *p, const struct config *conf);

/* Free: a probe in flight is abandoned, the client tor killed. NULL is a no-op. */
void probe_free(struct probe *p);

/* Whether the probe has judged the service with this address: false before its first counted probe
 * (starting, or when probing is off). If true, *state is the verdict. */
bool probe_verdict(const struct probe *p, const char *address, enum ladder_state *state);

/* The gap a ladder's tor restarts keep per tor (ladder_restart_gap of probe.interval and probe.window). */
double probe_restart_gap(const struct probe *p);

/* The service's probe as JSON, or NULL when it is not probed. Returns a new reference:
 * {"state", "probes", "failures_in_window", "last": null | {"time", "ok", "stage", "detail",
 *  "descriptor_seconds", "ttfb_seconds", "http_status"}, "last_success", "down_since",
 *  "repairs": [{"step", "time", "declined" (only a restart_tor step that was not done: why)}],
 *  "recovered_at", "client_auth": null | {"keyless", "detail", "time"}, "withdrawn": null | why,
 *  "tls": null | certwatch_to_json's object (a "tls" probe port)}
 *  (times ISO 8601 UTC). A withdrawn service's state is "down". */
json_t *probe_service_to_json(const struct probe *p, const char *address);

/* Append to `problems` each TLS certificate finding of the services with a "tls" probe port
 * (certwatch_problems). Return the worst: 0 none, 1 a warning, 2 critical (certwatch.h's thresholds). */
int probe_tls_problems(const struct probe *p, json_t *problems);

/* {"enabled", "client_tor": {"state", "pid", "restarts", "socks_socket"}}: the client tor. New reference. */
json_t *probe_to_json(const struct probe *p);

/* onionfront_service_reachable{service} (1 reachable or degraded, 0 down; judged services only),
 * onionfront_probe_state{service,state}, onionfront_probe_runs_total{service,result},
 * onionfront_probe_ttfb_seconds{service} (histogram), onionfront_probe_descriptor_seconds{service},
 * onionfront_probe_repairs_total{service,step}, onionfront_probe_client_up,
 * onionfront_service_open_without_key{service} (1: a private service opened to a client without a key,
 * withdrawn), and the onionfront_tls_cert_* gauges of services with a "tls" probe port (certwatch.h).
 * Return 0 or -1. */
int probe_metrics(const struct probe *p, struct metrics *m);

#endif
