/* config.h — onionfront's configuration: the JSON file (docs/configuration.md) as plain data.
 *
 * Owns loading and strict validation of the config file, defaults (resolved at load time, so every field
 * below is set and later code never re-derives a default), and the comparisons reload needs. Does not own
 * any runtime state (timers, sockets, counters): runtime structs embed or point at these. Does not touch
 * the file system beyond reading the file and checking that each health.ca_file is a readable regular
 * file, resolve host names, talk to tor or log. The rules for single values (names, paths, addresses,
 * torrc lines, keys), their length limits and struct backend_addr are config_value.h's, included here.
 *
 * Leaf structs (struct backend_addr, struct backend_conf, struct health_conf) hold no pointers and may be
 * copied by value into runtime structs. The others point into memory owned by their struct config. */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sidecar/config/config_value.h" /* name, host and path limits; struct backend_addr */
#include "sidecar/config/ob_config.h"
#include "sidecar/config/service_mode.h"

#define CONFIG_MAX_SERVICES 512     /* services[] entries; an array sized by it belongs on the heap */
#define CONFIG_MAX_PORTS 64         /* per service */
#define CONFIG_MAX_BACKENDS 64      /* per port */
#define CONFIG_MAX_LIST 64          /* allowed_uids, allowed_gids, on_change, extra_torrc entries */
#define CONFIG_DEFAULT_TOR_BINARY "/usr/bin/tor" /* tor.binary in spawn mode, unless set */
#define CONFIG_MAX_EXPECT_STATUS 32 /* health.expect_status entries */
#define CONFIG_PATH_MAX 4095      /* any file system path */
#define CONFIG_RUN_DIR_MAX 56     /* leaves room for run_dir/proxy/<service>-<port>.sock in sun_path */
#define CONFIG_HTTP_PATH_MAX 1024 /* health.path */
#define CONFIG_HTTP_HOST_MAX 255  /* health.host */
#define CONFIG_CA_FILE_MAX 1024   /* health.ca_file (kept in struct health_conf, which is copied by value) */
#define CONFIG_DEFAULT_MAX_STREAMS_PER_CIRCUIT 64 /* a browser opens far fewer at once to one site */
/* A stream idle both ways this long is closed: HAProxy's usual `timeout tunnel 1h` for WebSocket and
 * CONNECT tunnels, far above any long-poll or WebSocket ping interval, but finite, so a visitor cannot
 * hold idle streams (up to max_streams_per_circuit per circuit) against the global cap for ever. */
#define CONFIG_DEFAULT_IDLE_TIMEOUT_S 3600
#define CONFIG_MAX_OPEN_STREAMS_MAX 1000000

enum tor_mode {
    TOR_MODE_SPAWN,  /* onionfront starts and supervises its own tor */
    TOR_MODE_ATTACH, /* onionfront uses a running tor through tor.control_socket */
};

/* How a tor taking over makes tor upload new descriptors (tor.renewal, service_mgr_renew). */
enum tor_renewal {
    TOR_RENEWAL_POW,   /* a moment of PoW parameters: same introduction points */
    TOR_RENEWAL_READD, /* the services removed and added again: new introduction points */
};

enum balance_policy {
    BALANCE_ROUND_ROBIN,
    BALANCE_LEAST_CONN,
    BALANCE_CIRCUIT, /* all streams of one rendezvous circuit go to the same backend */
};

enum health_type {
    HEALTH_TCP,
    HEALTH_HTTP,
    HEALTH_HTTPS,
    HEALTH_NONE, /* no checks: every backend with weight > 0 counts as up */
};

enum health_method {
    HEALTH_METHOD_GET,
    HEALTH_METHOD_HEAD,
    HEALTH_METHOD_OPTIONS,
};

enum config_log_level {
    CONFIG_LOG_DEBUG,
    CONFIG_LOG_INFO,
    CONFIG_LOG_NOTICE,
    CONFIG_LOG_WARN,
    CONFIG_LOG_ERROR,
};

enum config_log_format {
    CONFIG_LOG_FORMAT_TEXT, /* timestamped lines (journald priorities under systemd) */
    CONFIG_LOG_FORMAT_JSON, /* one JSON object per line */
};

struct backend_conf {
    char name[CONFIG_BACKEND_NAME_MAX + 1]; /* unique within its port; default "<service>-<virtual>-<i>" */
    struct backend_addr addr;
    unsigned weight; /* 0-256; 0 = drained (no new streams) */
};

struct health_conf {
    enum health_type type;
    unsigned interval_ms; /* 100-3600000 */
    unsigned timeout_ms;  /* 50-60000, < interval_ms */
    unsigned rise;        /* consecutive successes to mark a backend up, 1-100 */
    unsigned fall;        /* consecutive failures to mark a backend down, 1-100 */
    /* http and https only (defaults are filled in for every type): */
    enum health_method method;
    char path[CONFIG_HTTP_PATH_MAX + 1];
    char host[CONFIG_HTTP_HOST_MAX + 1]; /* Host header; "" = derive from the backend address */
    uint16_t expect_status[CONFIG_MAX_EXPECT_STATUS];
    size_t n_expect_status; /* >= 1 */
    /* https only (defaults for every type): */
    char ca_file[CONFIG_CA_FILE_MAX + 1]; /* absolute path of a PEM CA bundle trusted instead of the
                                             system's CAs; "" = the system's CAs */
    bool tls_verify; /* false: neither the certificate nor its name is checked (ca_file is then "") */
};

struct port_conf {
    uint16_t virtual_port;         /* the onion service's port, unique within the service */
    struct backend_conf *backends; /* n_backends >= 1; a "target" becomes backends[0] */
    size_t n_backends;
    bool from_target; /* written as "target" (for messages only; behaves like a one-backend pool) */
    enum balance_policy balance;
    unsigned connect_timeout_ms;      /* 100-60000 */
    unsigned max_streams_per_circuit; /* 0-65535, 0 = unlimited; default
                                         CONFIG_DEFAULT_MAX_STREAMS_PER_CIRCUIT */
    unsigned circuit_stream_rate;     /* new streams per second one circuit may open (token bucket refill),
                                         0-65535, 0 = off (default) */
    unsigned circuit_stream_burst;    /* the bucket: 1-131070, default max(10, 2 x rate) */
    unsigned idle_timeout_s;          /* a stream with no byte either way this long is closed; 0 = off;
                                         0-86400, default CONFIG_DEFAULT_IDLE_TIMEOUT_S */
    bool proxy_protocol;              /* send a PROXY v2 header to backends */
    bool tls; /* "tls": its backends serve HTTPS; the probe reads the certificate a visitor gets and each
                 backend's (certwatch.h) */
    struct health_conf health;
};

#define CONFIG_DOS_RATE_MAX 2147483647u /* tor's bound on every PoW queue and intro DoS rate and burst */

/* A service's denial-of-service defences in tor (the service's "dos" object). Every field is set: tor's
 * defaults where the file says nothing. Sent in the service's SETCONF group (service.c). */
struct dos_conf {
    bool pow_enabled;           /* HiddenServicePoWDefensesEnabled (proposal 327) */
    unsigned pow_queue_rate;    /* HiddenServicePoWQueueRate, 0-CONFIG_DOS_RATE_MAX (0 = no limit), 250 */
    unsigned pow_queue_burst;   /* HiddenServicePoWQueueBurst, >= pow_queue_rate, 2500 */
    bool intro_enabled;         /* HiddenServiceEnableIntroDoSDefense */
    unsigned intro_rate_per_sec;  /* HiddenServiceEnableIntroDoSRatePerSec, 1-CONFIG_DOS_RATE_MAX, 25 */
    unsigned intro_burst_per_sec; /* HiddenServiceEnableIntroDoSBurstPerSec, >= intro_rate_per_sec, 200 */
    bool max_streams_close_circuit; /* HiddenServiceMaxStreamsCloseCircuit */
    unsigned num_intro_points;  /* HiddenServiceNumIntroductionPoints, 1-CONFIG_MAX_INTRO_POINTS, 3 */
};

#define CONFIG_MAX_CLIENTS 256   /* client_auth entries per service */
#define CONFIG_PROBE_CLIENT_NAME "onionfront-probe" /* reserved: the end-to-end probe's own client (probeauth.h) */

/* One client of a service with client authorization ("restricted discovery"). */
struct client_auth_conf {
    char name[CONFIG_SERVICE_NAME_MAX + 1];        /* ^[a-z0-9][a-z0-9_-]{0,31}$, unique in the service */
    char public_key[CONFIG_X25519_B32_LEN + 1];    /* base32, upper case (as tor writes it) */
};

enum probe_target_type {
    PROBE_TARGET_HTTP,    /* GET path, expect a status (and optionally a body substring) */
    PROBE_TARGET_CONNECT, /* the stream opens (the service and its proxy accepted it) */
};

#define CONFIG_PROBE_BODY_MAX 256

/* What the end-to-end probe (probe.h) fetches from one service: "services[i].probe". */
struct probe_target_conf {
    enum probe_target_type type; /* default: http when `port` is 80 or a "tls" port (then https), else connect */
    uint16_t port;               /* a virtual port of the service; default the first "tls" port, else 80 if it
                                    has one, else the first */
    char path[CONFIG_HTTP_PATH_MAX + 1]; /* http: default "/" */
    uint16_t expect_status[CONFIG_MAX_EXPECT_STATUS];
    size_t n_expect_status;                    /* 0 = any 2xx or 3xx */
    char body_contains[CONFIG_PROBE_BODY_MAX + 1]; /* "" = not checked */
};

struct service_conf {
    char name[CONFIG_SERVICE_NAME_MAX + 1];
    enum service_mode mode; /* default single */
    bool onion_location;    /* Onion-Location files for it: default true for single, false for anonymous */
    struct client_auth_conf *clients; /* <key_dir>/authorized_clients/<name>.auth (clientauth.c) */
    size_t n_clients;                 /* 0 = no client authorization */
    bool drop_client_auth; /* "drop_client_auth": a service that had clients may become public (clientauth.h) */
    char *key_dir;        /* always set: absolute, default <state_dir>/keys/<name> */
    unsigned max_streams; /* HiddenServiceMaxStreams, 0-65535, 0 = unlimited ("max_streams" or
                             "dos.max_streams") */
    struct dos_conf dos;
    struct port_conf *ports;
    size_t n_ports; /* >= 1 */
    struct probe_target_conf probe;
    struct ob_conf onionbalance; /* its Onionbalance role (ob_config.h); role OB_ROLE_NONE by default */
    unsigned tor_mask;           /* single mode: the tors hosting it, bit k = tor k (placement.h; from its
                                    name, tor.instances and tor.tors_per_service) */
};

struct tor_conf {
    enum tor_mode mode;
    char *binary;         /* spawn: absolute path (default /usr/bin/tor); attach: NULL */
    char *control_socket; /* always set: attach: as configured; spawn: <run_dir>/control/control.sock */
    char *user;           /* spawn only: tor's User option; NULL = not set */
    unsigned bootstrap_timeout;   /* seconds, 10-3600 */
    unsigned command_timeout;     /* seconds, 1-600 */
    unsigned restart_backoff_max; /* seconds, 1-3600 */
    unsigned instances;           /* spawn: how many tors, 1-4 (instance.h); attach: 1 */
    unsigned tors_per_service;    /* 1..instances: how many of them host each single onion (placement.h);
                                     instances (every tor hosts every service) unless set */
    unsigned drain_timeout;       /* seconds, 0-3600: a roll's longest drain of each tor (roll.h) */
    enum tor_renewal renewal;     /* read at each renewal, so a reload applies it */
    char **extra_torrc;           /* spawn only: validated torrc lines */
    size_t n_extra_torrc;
};

struct status_conf {
    char *socket; /* always set: default <run_dir>/status.sock */
    uid_t *allowed_uids; /* may read (status, metrics ...), besides root and the daemon's own uid */
    size_t n_allowed_uids;
    gid_t *allowed_gids;
    size_t n_allowed_gids;
    uid_t *admin_uids;   /* may also run reload, restart-tor, log-level (root and the daemon's uid always) */
    size_t n_admin_uids;
    gid_t *admin_gids;
    size_t n_admin_gids;
};

struct metrics_conf {
    bool enabled;    /* false when "listen" is absent or null */
    char listen[64]; /* as written, e.g. "127.0.0.1:9464" */
    char host[46];   /* loopback IP literal, IPv6 without brackets */
    int family;      /* AF_INET or AF_INET6 */
    uint16_t port;
};

struct limits_conf {
    unsigned max_open_streams; /* data-path streams open at once over all ports, 0-1000000; 0 = auto:
                                  derived from the file-descriptor limit at start (fdbudget.h) */
};

struct probe_conf {
    unsigned hsfetch_interval;   /* seconds, 10-86400 */
    unsigned republish_deadline; /* seconds, 10-3600 */
    /* The end-to-end probe (probe.h): */
    bool client_tor;   /* run onionfront's own client tor and probe through it; default: on in spawn mode */
    unsigned interval; /* seconds between probes of a service, 5-86400 (default 60; each wait jittered +-10 %) */
    unsigned timeout;  /* seconds one probe may take, 5-600 (default 60) */
    unsigned window;   /* the last N probes a service's state is judged from, 1-100 (default 5) */
    unsigned down_after; /* consecutive failed probes that make it down, 1-window (default 2) */
};

struct onion_location_conf {
    bool enabled;     /* the "onion_location" object is present */
    struct metrics_conf listen; /* "listen": the HTTP endpoint /onion-location/<service> for a farm's web
                                   servers (any IP address; enabled false when absent or null) */
    struct config_cidr allow[CONFIG_MAX_LIST]; /* "allow": who may connect to listen (the web servers),
                                   all of listen's family; default its loopback (127.0.0.0/8 or ::1), and
                                   required when listen is not a loopback address */
    size_t n_allow;
    char *dir;        /* enabled: absolute directory for the per-service include files */
    char **on_change; /* NULL-terminated argv (on_change[0] absolute), or NULL for no command */
    size_t n_on_change;
};

struct config {
    char *state_dir; /* absolute, no trailing "/" */
    char *run_dir;   /* absolute, no trailing "/", at most CONFIG_RUN_DIR_MAX bytes */
    enum config_log_level log_level;
    enum config_log_format log_format;
    struct tor_conf tor;
    struct service_conf *services;
    size_t n_services; /* >= 1 */
    struct status_conf status;
    struct metrics_conf metrics;
    struct limits_conf limits;
    struct probe_conf probe;
    struct onion_location_conf onion_location;
};

struct config_errors;

/* Read and validate the JSON config at `path`. Return a new config (free with config_free), or NULL with
 * a message in `err`: "line L, column C: ..." for JSON syntax errors (duplicate keys included), "<field
 * path>: ..." (e.g. "services[1].ports[0].virtual: invalid port \"70000\" (must be 1-65535)") for
 * everything else — the first error, and how many more there were (config_errors_summary). */
struct config *config_load_file(const char *path, char *err, size_t errlen);

/* As config_load_file, from `len` bytes at `json` (need not be NUL-terminated). */
struct config *config_load_string(const char *json, size_t len, char *err, size_t errlen);

/* As config_load_file and config_load_string, with every error in `errs` (config_errors.h; the caller
 * clears it): the parse goes on past a bad value (the field keeps its default) and stops only at a
 * structural error (not JSON, a section of the wrong type, a required field missing). */
struct config *config_load_file_errors(const char *path, struct config_errors *errs);
struct config *config_load_string_errors(const char *json, size_t len, struct config_errors *errs);

/* The schema on a parsed document `root` (borrowed, a jansson json_t): a new config, or NULL with every
 * error in `errs`. The loaders' (config_load.c) entry into config.c; others use the loaders above. */
struct json_t;
struct config *config_from_json(struct json_t *root, struct config_errors *errs);

/* Free `cfg` and everything it holds. NULL is a no-op. */
void config_free(struct config *cfg);

/* The service named `name`, or NULL. Borrowed from `cfg`. */
const struct service_conf *config_find_service(const struct config *cfg, const char *name);

/* The port of `svc` with this virtual port, or NULL. Borrowed from `svc`. */
const struct port_conf *service_conf_find_port(const struct service_conf *svc, uint16_t virtual_port);

/* True if the two are the same in every field (backend order matters: it is the round-robin order). */
bool backend_conf_equal(const struct backend_conf *a, const struct backend_conf *b);
bool health_conf_equal(const struct health_conf *a, const struct health_conf *b);
bool port_conf_equal(const struct port_conf *a, const struct port_conf *b);

/* How many services of `cfg` are of `mode`. */
size_t config_count_mode(const struct config *cfg, enum service_mode mode);

/* True if the two services are the same in every field. Ports are matched by virtual port, so a
 * reordering of "ports" alone is no difference. */
bool service_conf_equal(const struct service_conf *a, const struct service_conf *b);

/* True if tor would be given the same HiddenService* lines for both: same name, mode, key_dir, max_streams, dos
 * settings, Onionbalance role and set of virtual ports. Backends, balance, health and the other data-path
 * settings are ignored. */
bool service_conf_tor_equal(const struct service_conf *a, const struct service_conf *b);

bool dos_conf_equal(const struct dos_conf *a, const struct dos_conf *b);

/* The first service with proof-of-work enabled, or NULL. Borrowed from `cfg`. */
const struct service_conf *config_first_pow_service(const struct config *cfg);

/* A reload from `a` to `b`: the first setting that cannot change without restarting onionfront (and
 * its tor), as the config file spells it ("tor.mode", "status.socket" ...), or NULL if `b` can be
 * applied to the running daemon. */
const char *config_restart_needed(const struct config *a, const struct config *b);

/* Stringers: the config file's spelling of each value ("round_robin", "http", "spawn", ...). */
const char *balance_policy_str(enum balance_policy p);
const char *health_type_str(enum health_type t);
const char *health_method_str(enum health_method m);
const char *tor_mode_str(enum tor_mode m);
const char *config_log_level_str(enum config_log_level l);
const char *config_log_format_str(enum config_log_format f);
const char *backend_addr_kind_str(enum backend_addr_kind k);
const char *probe_target_type_str(enum probe_target_type t);
const char *service_mode_str(enum service_mode m);

#endif
