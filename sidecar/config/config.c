/* config.c — load and strictly validate onionfront's JSON config into the plain data of config.h.
 *
 * Owns: the schema — parsing with jansson, every key, shape and range of docs/configuration.md, the
 * cross-field checks, the defaults (resolved here, once), config_free and the enum stringers. The rules
 * for single values (names, paths, addresses, torrc lines, keys) are config_value.c's; this file says
 * where each applies and names the field. The lookups and the comparisons reload uses are
 * config_compare.c's; reading the file or buffer and explaining a syntax error, config_load.c's; the
 * list of errors, config_errors.c's. Every error names its field path ("services[1].ports[0].target: port must be
 * 1-65535"); JSON syntax errors name line and column.
 * Does not: create or inspect directories, resolve host names, talk to tor, or log; the only file it
 * looks at besides the config is each health.ca_file (a readable regular file, not parsed here).
 * The schema: one parse function per section over shared field getters that name the path
 * (config_field.c; the services section is config_service.c's, called from here); the cross-field
 * checks need every section's result (the value rules live in config_value.c). */
#include "sidecar/config/config.h"
#include "sidecar/config/config_int.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sidecar/config/config_value.h"
#include "sidecar/config/placement.h"
#include "sidecar/config/config_errors.h"

/* ---- tor ----------------------------------------------------------------------------------------- */

static int config_parse_tor(struct config_ctx *c, json_t *o, struct config *cfg)
{
    static const char *const keys[] = {"mode", "binary", "control_socket", "user", "bootstrap_timeout",
                                       "command_timeout", "restart_backoff_max", "extra_torrc", "instances",
                                       "drain_timeout", "tors_per_service", "renewal", NULL};
    struct tor_conf *t = &cfg->tor;
    json_t *empty = NULL;
    int rc = -1;

    t->mode = TOR_MODE_SPAWN;
    t->bootstrap_timeout = 300;
    t->command_timeout = 30;
    t->restart_backoff_max = 60;
    t->instances = 1;
    t->drain_timeout = 120; /* roll.h's ROLL_DRAIN_DEFAULT_S: browsers' idle keep-alive ends within 115 s */
    if (!o) {
        o = empty = json_object();
        if (!empty)
            return config_oom(c, "tor");
    }
    if (config_check_object(c, "tor", o) < 0 || config_check_keys(c, "tor", o, keys) < 0)
        goto out;
    int mode = TOR_MODE_SPAWN;
    if (config_get_enum(c, "tor", o, "mode", config_tor_modes, &mode) < 0)
        goto out;
    t->mode = (enum tor_mode)mode;
    int renewal = TOR_RENEWAL_POW;
    if (config_get_enum(c, "tor", o, "renewal", config_tor_renewals, &renewal) < 0)
        goto out;
    t->renewal = (enum tor_renewal)renewal;
    bool spawn = t->mode == TOR_MODE_SPAWN;

    static const char *const spawn_only[] = {"binary", "user", "extra_torrc", NULL};
    if (!spawn && config_refuse_keys(c, "tor", o, spawn_only, "only allowed in spawn mode") < 0)
        goto out;

    if (spawn) {
        /* tor_process.c writes these into the torrc unquoted (DataDirectory, ControlPort unix:...). */
        static const char *const dirs[] = {"state_dir", "run_dir"};
        const char *vals[] = {cfg->state_dir, cfg->run_dir};
        for (size_t i = 0; i < 2; i++) {
            if (!config_is_torrc_safe_path(vals[i])) {
                config_fail(c, dirs[i], "must be printable ASCII without spaces, '\"', '\\' or '#' in "
                                        "spawn mode (it goes into tor's torrc)");
                goto out;
            }
        }
        t->binary = strdup(CONFIG_DEFAULT_TOR_BINARY);
        if (!t->binary) {
            config_oom(c, "tor.binary");
            goto out;
        }
        if (config_get_path(c, "tor", o, "binary", false, CONFIG_PATH_MAX, NULL, &t->binary) < 0)
            goto out;
    }

    if (spawn) {
        t->control_socket = config_path_join(cfg->run_dir, "control/control.sock");
        if (!t->control_socket) {
            config_oom(c, "tor.control_socket");
            goto out;
        }
        if (json_object_get(o, "control_socket")) {
            config_fail(c, "tor.control_socket", "not allowed in spawn mode (onionfront uses %s)",
                        t->control_socket);
            goto out;
        }
    } else {
        if (!json_object_get(o, "control_socket")) {
            config_fail(c, "tor.control_socket", "is required in attach mode");
            goto out;
        }
        if (config_get_socket(c, "tor", o, "control_socket", true, &t->control_socket) < 0)
            goto out;
    }

    const char *user = NULL;
    size_t user_len = 0;
    if (config_get_str(c, "tor", o, "user", false, &user, &user_len) < 0)
        goto out;
    if (user) {
        if (!config_is_user_name(user, user_len)) {
            config_fail(c, "tor.user", "must be a user name: %s", CONFIG_USER_NAME_RULE);
            goto out;
        }
        t->user = strdup(user);
        if (!t->user) {
            config_oom(c, "tor.user");
            goto out;
        }
    }

    if (config_get_uint(c, "tor", o, "bootstrap_timeout", false, 10, 3600, &t->bootstrap_timeout) < 0 ||
        config_get_uint(c, "tor", o, "command_timeout", false, 1, 600, &t->command_timeout) < 0 ||
        config_get_uint(c, "tor", o, "restart_backoff_max", false, 1, 3600, &t->restart_backoff_max) < 0 ||
        config_get_uint(c, "tor", o, "instances", false, 1, 4, &t->instances) < 0 ||
        config_get_uint(c, "tor", o, "drain_timeout", false, 0, 3600, &t->drain_timeout) < 0)
        goto out;
    if (!spawn && t->instances > 1) {
        config_fail(c, "tor.instances", "must be 1 in attach mode (onionfront runs several tors only in spawn mode)");
        goto out;
    }
    /* Absent: every tor hosts every service (placement.h). Set: that many of them, at most all. */
    t->tors_per_service = t->instances;
    if (config_get_uint(c, "tor", o, "tors_per_service", false, 1, 4, &t->tors_per_service) < 0)
        goto out;
    if (t->tors_per_service > t->instances) {
        config_fail(c, "tor.tors_per_service", "must be at most tor.instances (%u): each service is hosted by that "
                    "many of the tors", t->instances);
        goto out;
    }

    json_t *lines;
    if (config_get_array(c, "tor", o, "extra_torrc", false, 0, CONFIG_MAX_LIST, &lines) < 0)
        goto out;
    if (lines && json_array_size(lines) > 0) {
        size_t n = json_array_size(lines);
        t->extra_torrc = calloc(n, sizeof *t->extra_torrc);
        if (!t->extra_torrc) {
            config_oom(c, "tor.extra_torrc");
            goto out;
        }
        t->n_extra_torrc = n;
        for (size_t i = 0; i < n; i++) {
            char p[FIELD_PATH_LEN];
            char why[160];
            json_t *v = json_array_get(lines, i);
            config_subi(p, "tor", "extra_torrc", i);
            if (!json_is_string(v)) {
                config_fail(c, p, "must be a string");
                goto out;
            }
            const char *s = json_string_value(v);
            size_t len = json_string_length(v);
            if (strlen(s) != len) {
                config_fail(c, p, "must not contain CR, LF or other control characters");
                goto out;
            }
            if (config_check_torrc_line(s, len, why, sizeof why) < 0) {
                config_fail(c, p, "%s", why);
                goto out;
            }
            t->extra_torrc[i] = strdup(s);
            if (!t->extra_torrc[i]) {
                config_oom(c, p);
                goto out;
            }
        }
    }
    rc = 0;
out:
    json_decref(empty);
    return rc;
}

/* ---- status, metrics, probe, onion_location ------------------------------------------------------ */

/* A list of uids or gids (0-4294967294; -1 means "no id" to chown and friends), without duplicates. */
static int config_get_ids(struct config_ctx *c, const char *obj, json_t *o, const char *key, const char *what,
                          unsigned **out, size_t *n_out)
{
    json_t *arr;
    if (config_get_array(c, obj, o, key, false, 0, CONFIG_MAX_LIST, &arr) < 0)
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return 0;
    size_t n = json_array_size(arr);
    unsigned *ids = calloc(n, sizeof *ids);
    char p[FIELD_PATH_LEN];
    if (!ids) {
        config_sub(p, obj, key);
        return config_oom(c, p);
    }
    *out = ids;
    *n_out = n;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        config_subi(p, obj, key, i);
        if (!json_is_integer(v))
            return config_fail(c, p, "must be an integer");
        long long x = json_integer_value(v);
        if (x < 0 || x > 4294967294LL)
            return config_fail(c, p, "must be 0-4294967294");
        ids[i] = (unsigned)x;
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                return config_fail(c, p, "duplicate %s %u", what, ids[i]);
    }
    return 0;
}

/* status.allowed_uids/gids are filled through an unsigned array. */
_Static_assert(sizeof(uid_t) == sizeof(unsigned) && sizeof(gid_t) == sizeof(unsigned) && (uid_t)-1 > 0,
               "uid_t and gid_t must be unsigned int");

static int config_parse_status(struct config_ctx *c, json_t *o, struct config *cfg)
{
    static const char *const keys[] = {"socket", "allowed_uids", "allowed_gids", "admin_uids", "admin_gids", NULL};
    struct status_conf *st = &cfg->status;
    st->socket = config_path_join(cfg->run_dir, "status.sock");
    if (!st->socket)
        return config_oom(c, "status.socket");
    if (!o)
        return 0;
    if (config_check_object(c, "status", o) < 0 || config_check_keys(c, "status", o, keys) < 0)
        return -1;
    if (config_get_socket(c, "status", o, "socket", false, &st->socket) < 0)
        return -1;
    if (strcmp(st->socket, cfg->tor.control_socket) == 0)
        return config_fail(c, "status.socket", "must differ from tor's control socket");
    unsigned *ids = NULL;
    size_t n = 0;
    int rc = config_get_ids(c, "status", o, "allowed_uids", "uid", &ids, &n);
    st->allowed_uids = (uid_t *)ids;
    st->n_allowed_uids = n;
    if (rc < 0)
        return -1;
    ids = NULL;
    n = 0;
    rc = config_get_ids(c, "status", o, "allowed_gids", "gid", &ids, &n);
    st->allowed_gids = (gid_t *)ids;
    st->n_allowed_gids = n;
    if (rc < 0)
        return -1;
    /* Admins may read too: no need to list them in allowed_* as well (and it is not refused). */
    ids = NULL;
    n = 0;
    rc = config_get_ids(c, "status", o, "admin_uids", "uid", &ids, &n);
    st->admin_uids = (uid_t *)ids;
    st->n_admin_uids = n;
    if (rc < 0)
        return -1;
    ids = NULL;
    n = 0;
    rc = config_get_ids(c, "status", o, "admin_gids", "gid", &ids, &n);
    st->admin_gids = (gid_t *)ids;
    st->n_admin_gids = n;
    return rc;
}

/* obj.listen: an IP literal and port (loopback only if `loopback_only`), or null/absent (disabled). */
static int config_parse_listen(struct config_ctx *c, const char *obj, json_t *o, bool loopback_only,
                               struct metrics_conf *m)
{
    char p[FIELD_PATH_LEN];
    config_sub(p, obj, "listen");
    json_t *v = json_object_get(o, "listen");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return config_fail(c, p, "must be a string or null");
    struct backend_addr a;
    char why[160];
    int rc = config_parse_addr(json_string_value(v), json_string_length(v), &a, why, sizeof why);
    if (rc == -2)
        return config_fail(c, p, "%s", why);
    if (!loopback_only) {
        if (rc != 0 || a.kind != BACKEND_ADDR_INET || a.family == AF_UNSPEC || strlen(a.text) >= sizeof m->listen)
            return config_fail(c, p, "must be an IP address and port, e.g. \"10.0.0.5:8081\" or \"[::1]:8081\"");
        goto take;
    }
    bool loopback = false;
    if (rc == 0 && a.family == AF_INET) {
        struct in_addr in4;
        loopback = inet_pton(AF_INET, a.host, &in4) == 1 && (ntohl(in4.s_addr) >> 24) == 127;
    } else if (rc == 0 && a.family == AF_INET6) {
        struct in6_addr in6;
        loopback = inet_pton(AF_INET6, a.host, &in6) == 1 && IN6_IS_ADDR_LOOPBACK(&in6);
    }
    if (!loopback || a.kind != BACKEND_ADDR_INET || strlen(a.text) >= sizeof m->listen)
        return config_fail(c, p, "must be a loopback address and port: 127.0.0.0/8 or [::1], e.g. \"127.0.0.1:9464\"");
take:
    m->enabled = true;
    memcpy(m->listen, a.text, strlen(a.text) + 1);
    memcpy(m->host, a.host, strlen(a.host) + 1);
    m->family = a.family;
    m->port = a.port;
    return 0;
}

static int config_parse_metrics(struct config_ctx *c, json_t *o, struct metrics_conf *m)
{
    static const char *const keys[] = {"listen", NULL};
    if (!o)
        return 0;
    if (config_check_object(c, "metrics", o) < 0 || config_check_keys(c, "metrics", o, keys) < 0)
        return -1;
    /* The metrics endpoint has no authentication: it must not be reachable from other hosts. */
    return config_parse_listen(c, "metrics", o, true, m);
}

static int config_parse_limits(struct config_ctx *c, json_t *o, struct limits_conf *l)
{
    static const char *const keys[] = {"max_open_streams", NULL};
    l->max_open_streams = 0;
    if (!o)
        return 0;
    if (config_check_object(c, "limits", o) < 0 || config_check_keys(c, "limits", o, keys) < 0)
        return -1;
    return config_get_uint(c, "limits", o, "max_open_streams", false, 0, CONFIG_MAX_OPEN_STREAMS_MAX,
                           &l->max_open_streams);
}

static int config_parse_probe(struct config_ctx *c, json_t *o, struct probe_conf *pr, enum tor_mode mode)
{
    static const char *const keys[] = {"hsfetch_interval", "republish_deadline", "client_tor", "interval",
                                       "timeout", "window", "down_after", NULL};
    pr->hsfetch_interval = 300;
    pr->republish_deadline = 120;
    pr->client_tor = mode == TOR_MODE_SPAWN;
    pr->interval = 60;
    pr->timeout = 60;
    pr->window = 5;
    pr->down_after = 2;
    if (!o)
        return 0;
    if (config_check_object(c, "probe", o) < 0 || config_check_keys(c, "probe", o, keys) < 0)
        return -1;
    if (config_get_uint(c, "probe", o, "hsfetch_interval", false, 10, 86400, &pr->hsfetch_interval) < 0 ||
        config_get_uint(c, "probe", o, "republish_deadline", false, 10, 3600, &pr->republish_deadline) < 0 ||
        config_get_bool(c, "probe", o, "client_tor", &pr->client_tor) < 0 ||
        config_get_uint(c, "probe", o, "interval", false, 5, 86400, &pr->interval) < 0 ||
        config_get_uint(c, "probe", o, "timeout", false, 5, 600, &pr->timeout) < 0 ||
        config_get_uint(c, "probe", o, "window", false, 1, 100, &pr->window) < 0)
        return -1;
    if (pr->down_after > pr->window)
        pr->down_after = pr->window;
    return config_get_uint(c, "probe", o, "down_after", false, 1, pr->window, &pr->down_after);
}

/* onion_location.allow against the listen address `m`: each entry of listen's family (another could never
 * match); absent, the loopback network of that family, which only a loopback listen address may rely on:
 * a farm-facing one must name its web servers. */
static int config_parse_onion_location_allow(struct config_ctx *c, json_t *o, struct onion_location_conf *ol)
{
    char p[FIELD_PATH_LEN], why[160];
    json_t *arr;
    if (config_get_array(c, "onion_location", o, "allow", false, 1, CONFIG_MAX_LIST, &arr) < 0)
        return -1;
    config_sub(p, "onion_location", "allow");
    if (arr && !ol->listen.enabled)
        return config_fail(c, p, "needs listen: it says who may connect to it");
    if (!ol->listen.enabled)
        return 0;
    const struct metrics_conf *m = &ol->listen;
    if (!arr) {
        const char *lo = m->family == AF_INET6 ? "::1" : "127.0.0.0/8";
        struct in6_addr a6;
        struct in_addr a4;
        bool loopback = m->family == AF_INET6
                            ? inet_pton(AF_INET6, m->host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)
                            : inet_pton(AF_INET, m->host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
        if (!loopback)
            return config_fail(c, p, "is required when listen (%s) is not a loopback address: list the web servers' "
                                     "addresses or networks, e.g. [\"10.0.0.0/24\"]", m->listen);
        config_parse_cidr(lo, strlen(lo), &ol->allow[0], why, sizeof why);
        ol->n_allow = 1;
        return 0;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *v = json_array_get(arr, i);
        config_subi(p, "onion_location", "allow", i);
        if (!json_is_string(v))
            return config_fail(c, p, "must be a string");
        struct config_cidr *net = &ol->allow[i];
        if (config_parse_cidr(json_string_value(v), json_string_length(v), net, why, sizeof why) < 0)
            return config_fail(c, p, "%s", why);
        if (net->family != m->family)
            return config_fail(c, p, "%s can never match: listen (%s) is %s", net->text, m->listen,
                               m->family == AF_INET6 ? "IPv6" : "IPv4");
        ol->n_allow = i + 1;
    }
    return 0;
}

static int config_parse_onion_location(struct config_ctx *c, json_t *o, struct onion_location_conf *ol)
{
    static const char *const keys[] = {"dir", "on_change", "listen", "allow", NULL};
    if (!o)
        return 0;
    if (config_check_object(c, "onion_location", o) < 0 || config_check_keys(c, "onion_location", o, keys) < 0)
        return -1;
    ol->enabled = true;
    /* Serves only public data (the onion addresses): a farm-facing address is allowed, for the peers in
     * allow. */
    if (config_parse_listen(c, "onion_location", o, false, &ol->listen) < 0 ||
        config_parse_onion_location_allow(c, o, ol) < 0)
        return -1;
    if (config_get_path(c, "onion_location", o, "dir", true, CONFIG_PATH_MAX, NULL, &ol->dir) < 0)
        return -1;
    json_t *arr;
    if (config_get_array(c, "onion_location", o, "on_change", false, 0, CONFIG_MAX_LIST, &arr) < 0)
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return 0; /* [] = no command, like an absent key */
    size_t n = json_array_size(arr);
    ol->on_change = calloc(n + 1, sizeof *ol->on_change);
    if (!ol->on_change)
        return config_oom(c, "onion_location.on_change");
    ol->n_on_change = n;
    for (size_t i = 0; i < n; i++) {
        char p[FIELD_PATH_LEN];
        json_t *v = json_array_get(arr, i);
        config_subi(p, "onion_location", "on_change", i);
        if (!json_is_string(v))
            return config_fail(c, p, "must be a string");
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (i == 0) {
            /* Run with execv: no shell, no PATH search. */
            char why[96];
            char *norm = config_norm_path(s, len, CONFIG_PATH_MAX, why, sizeof why);
            if (!norm)
                return config_fail(c, p, "%s (the command is run without a shell or PATH search)", why);
            ol->on_change[0] = norm;
            continue;
        }
        if (strlen(s) != len)
            return config_fail(c, p, "must not contain NUL");
        ol->on_change[i] = strdup(s);
        if (!ol->on_change[i])
            return config_oom(c, p);
    }
    return 0;
}

/* ---- top level ----------------------------------------------------------------------------------- */

static int config_parse_root(struct config_ctx *c, json_t *root, struct config *cfg)
{
    static const char *const keys[] = {"state_dir", "run_dir", "log_level", "log_format", "tor", "services",
                                       "status", "metrics", "limits", "probe", "onion_location", NULL};
    if (!json_is_object(root))
        return config_fail(c, "config", "must be a JSON object");
    if (config_check_keys(c, "", root, keys) < 0)
        return -1;
    if (config_get_path(c, "", root, "state_dir", true, CONFIG_PATH_MAX, NULL, &cfg->state_dir) < 0 ||
        config_get_path(c, "", root, "run_dir", true, CONFIG_RUN_DIR_MAX,
                        "(unix socket paths under it are limited to 107 bytes)", &cfg->run_dir) < 0)
        return -1;
    /* In both modes: the data-path sockets under run_dir go into tor's HiddenServicePort lines. */
    if (!config_is_plain_path(cfg->run_dir))
        return config_fail(c, "run_dir", "may only contain A-Z a-z 0-9 / . _ - + (tor's HiddenServicePort "
                                         "lines name the data-path sockets under it)");
    int level = CONFIG_LOG_INFO;
    if (config_get_enum(c, "", root, "log_level", config_log_level_names, &level) < 0)
        return -1;
    cfg->log_level = (enum config_log_level)level;
    int format = CONFIG_LOG_FORMAT_TEXT;
    if (config_get_enum(c, "", root, "log_format", config_log_format_names, &format) < 0)
        return -1;
    cfg->log_format = (enum config_log_format)format;
    if (config_parse_tor(c, json_object_get(root, "tor"), cfg) < 0)
        return -1;

    json_t *arr;
    if (config_get_array(c, "", root, "services", true, 1, CONFIG_MAX_SERVICES, &arr) < 0)
        return -1;
    size_t n = json_array_size(arr);
    cfg->services = calloc(n, sizeof *cfg->services);
    if (!cfg->services)
        return config_oom(c, "services");
    cfg->n_services = n;
    for (size_t i = 0; i < n; i++) {
        char p[FIELD_PATH_LEN];
        config_subi(p, "", "services", i);
        if (config_parse_service(c, p, json_array_get(arr, i), cfg, i) < 0)
            return -1;
        cfg->services[i].tor_mask = placement_mask(cfg->services[i].name, cfg->tor.instances,
                                                   cfg->tor.tors_per_service);
        for (size_t j = 0; j < i && cfg->services[i].onionbalance.role == OB_ROLE_FRONTEND; j++)
            if (cfg->services[j].onionbalance.role == OB_ROLE_FRONTEND)
                return config_fail(c, p, "a second Onionbalance frontend (services[%zu] is one): onionfront runs "
                                         "one Onionbalance, for one master address", j);
    }

    if (config_parse_status(c, json_object_get(root, "status"), cfg) < 0 ||
        config_parse_metrics(c, json_object_get(root, "metrics"), &cfg->metrics) < 0 ||
        config_parse_limits(c, json_object_get(root, "limits"), &cfg->limits) < 0 ||
        config_parse_probe(c, json_object_get(root, "probe"), &cfg->probe, cfg->tor.mode) < 0 ||
        config_parse_onion_location(c, json_object_get(root, "onion_location"), &cfg->onion_location) < 0)
        return -1;
    return 0;
}

struct config *config_from_json(json_t *root, struct config_errors *errs)
{
    struct config_ctx c = {errs};
    struct config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        config_oom(&c, "config");
        return NULL;
    }
    if (config_parse_root(&c, root, cfg) < 0 || config_errors_count(errs) > 0) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

static void config_free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void config_free(struct config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_services; i++) {
        struct service_conf *svc = &cfg->services[i];
        for (size_t j = 0; j < svc->n_ports; j++)
            free(svc->ports[j].backends);
        free(svc->ports);
        free(svc->clients);
        free(svc->key_dir);
    }
    free(cfg->services);
    free(cfg->tor.binary);
    free(cfg->tor.control_socket);
    free(cfg->tor.user);
    config_free_strv(cfg->tor.extra_torrc, cfg->tor.n_extra_torrc);
    free(cfg->status.socket);
    free(cfg->status.allowed_uids);
    free(cfg->status.allowed_gids);
    free(cfg->status.admin_uids);
    free(cfg->status.admin_gids);
    free(cfg->onion_location.dir);
    config_free_strv(cfg->onion_location.on_change, cfg->onion_location.n_on_change);
    free(cfg->state_dir);
    free(cfg->run_dir);
    free(cfg);
}

/* ---- stringers ----------------------------------------------------------------------------------- */

/* The name of value `v` in a NULL-terminated table, or "unknown". */
static const char *config_name(const char *const *table, unsigned v)
{
    for (unsigned i = 0; table[i]; i++)
        if (i == v)
            return table[i];
    return "unknown";
}

const char *balance_policy_str(enum balance_policy p)
{
    return config_name(config_balance_names, p);
}

const char *health_type_str(enum health_type t)
{
    return config_name(config_health_types, t);
}

const char *health_method_str(enum health_method m)
{
    return config_name(config_health_methods, m);
}

const char *tor_mode_str(enum tor_mode m)
{
    return config_name(config_tor_modes, m);
}

const char *config_log_level_str(enum config_log_level l)
{
    return config_name(config_log_level_names, l);
}

const char *config_log_format_str(enum config_log_format f)
{
    return config_name(config_log_format_names, f);
}

const char *backend_addr_kind_str(enum backend_addr_kind k)
{
    return config_name(config_addr_kinds, k);
}

const char *probe_target_type_str(enum probe_target_type t)
{
    return config_name(config_probe_types, t);
}

const char *service_mode_str(enum service_mode m)
{
    return config_name(config_service_modes, m);
}
