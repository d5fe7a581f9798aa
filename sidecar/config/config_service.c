/* config_service.c — the services section of the config schema (see config_int.h): each service, its
 * ports, backends, health checks, dos limits, client authorization and probe target, with the checks
 * between a service's own fields.
 *
 * Reads fields through config_field.c and applies config_value.c's rules to single values; the checks
 * across services and sections, the defaults of the other sections and the top level are config.c's,
 * which calls config_parse_service for each entry. Nothing here calls back into config.c. */
#include "sidecar/config/config.h"
#include "sidecar/config/config_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/config/config_errors.h"
#include "sidecar/config/config_value.h"

/* ---- services ------------------------------------------------------------------------------------ */


/* health.tls_verify and health.ca_file of an https check. */
static int config_parse_health_tls(struct config_ctx *c, const char *obj, json_t *o, struct health_conf *h)
{
    char p[FIELD_PATH_LEN];
    char why[320];
    char *path = NULL;
    if (config_get_bool(c, obj, o, "tls_verify", &h->tls_verify) < 0 ||
        config_get_path(c, obj, o, "ca_file", false, CONFIG_CA_FILE_MAX, NULL, &path) < 0)
        return -1;
    if (!path)
        return 0;
    config_sub(p, obj, "ca_file");
    int rc = 0;
    if (!h->tls_verify)
        rc = config_fail(c, p, "not allowed with tls_verify false (no certificate is checked)");
    else if (config_check_readable_file(path, why, sizeof why) < 0)
        rc = config_fail(c, p, "%s", why);
    else
        memcpy(h->ca_file, path, strlen(path) + 1);
    free(path);
    return rc;
}

/* "path" of an HTTP check or probe: starts with "/", printable ASCII; into `out` (CONFIG_HTTP_PATH_MAX + 1
 * bytes) if present. */
static int config_get_http_path(struct config_ctx *c, const char *obj, json_t *o, char *out)
{
    char p[FIELD_PATH_LEN];
    const char *s = NULL;
    size_t len = 0;
    if (config_get_str(c, obj, o, "path", false, &s, &len) < 0)
        return -1;
    if (!s)
        return 0;
    config_sub(p, obj, "path");
    if (len == 0 || s[0] != '/')
        return config_fail(c, p, "must start with \"/\"");
    if (len > CONFIG_HTTP_PATH_MAX)
        return config_fail(c, p, "must be at most %d bytes", CONFIG_HTTP_PATH_MAX);
    if (!config_is_visible_ascii(s, len))
        return config_fail(c, p, "must be printable ASCII without spaces");
    memcpy(out, s, len + 1);
    return 0;
}

/* "expect_status": 1-CONFIG_MAX_EXPECT_STATUS distinct codes 100-599, if present (else *n unchanged). */
static int config_get_statuses(struct config_ctx *c, const char *obj, json_t *o, uint16_t *out, size_t *n_out)
{
    char p[FIELD_PATH_LEN];
    json_t *arr;
    if (config_get_array(c, obj, o, "expect_status", false, 1, CONFIG_MAX_EXPECT_STATUS, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    size_t n = json_array_size(arr);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        config_subi(p, obj, "expect_status", i);
        if (!json_is_integer(v))
            return config_fail(c, p, "must be an integer");
        long long x = json_integer_value(v);
        if (x < 100 || x > 599)
            return config_fail(c, p, "must be 100-599");
        out[i] = (uint16_t)x;
        for (size_t j = 0; j < i; j++)
            if (out[j] == out[i])
                return config_fail(c, p, "duplicate status %lld", x);
    }
    *n_out = n;
    return 0;
}

static int config_parse_health(struct config_ctx *c, const char *port_path, json_t *o, struct health_conf *h)
{
    static const char *const keys[] = {"type", "interval_ms", "timeout_ms", "rise", "fall", "method", "path",
                                       "host", "expect_status", "ca_file", "tls_verify", NULL};
    static const char *const http_only[] = {"method", "path", "host", "expect_status", NULL};
    static const char *const https_only[] = {"ca_file", "tls_verify", NULL};
    char obj[FIELD_PATH_LEN];
    char p[FIELD_PATH_LEN];

    h->type = HEALTH_TCP;
    h->interval_ms = 2000;
    h->timeout_ms = 1000;
    h->rise = 2;
    h->fall = 3;
    h->method = HEALTH_METHOD_GET;
    memcpy(h->path, "/", 2);
    h->host[0] = '\0';
    h->expect_status[0] = 200;
    h->n_expect_status = 1;
    h->ca_file[0] = '\0';
    h->tls_verify = true;
    if (!o)
        return 0;
    config_sub(obj, port_path, "health");
    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    int type = HEALTH_TCP;
    if (config_get_enum(c, obj, o, "type", config_health_types, &type) < 0)
        return -1;
    h->type = (enum health_type)type;
    if (config_get_uint(c, obj, o, "interval_ms", false, 100, 3600000, &h->interval_ms) < 0 ||
        config_get_uint(c, obj, o, "timeout_ms", false, 50, 60000, &h->timeout_ms) < 0)
        return -1;
    if (h->timeout_ms >= h->interval_ms) {
        /* Blame the field the operator wrote: a default timeout_ms is not their doing. */
        if (json_object_get(o, "timeout_ms")) {
            config_sub(p, obj, "timeout_ms");
            return config_fail(c, p, "must be less than interval_ms (%u)", h->interval_ms);
        }
        config_sub(p, obj, "interval_ms");
        return config_fail(c, p, "must be greater than timeout_ms (%u)", h->timeout_ms);
    }
    if (config_get_uint(c, obj, o, "rise", false, 1, 100, &h->rise) < 0 ||
        config_get_uint(c, obj, o, "fall", false, 1, 100, &h->fall) < 0)
        return -1;

    if (h->type != HEALTH_HTTPS && config_refuse_keys(c, obj, o, https_only, "only allowed for https checks") < 0)
        return -1;
    if (h->type != HEALTH_HTTP && h->type != HEALTH_HTTPS)
        return config_refuse_keys(c, obj, o, http_only, "only allowed for http and https checks");

    int method = HEALTH_METHOD_GET;
    if (config_get_enum(c, obj, o, "method", config_health_methods, &method) < 0)
        return -1;
    h->method = (enum health_method)method;

    if (config_get_http_path(c, obj, o, h->path) < 0)
        return -1;
    const char *s = NULL;
    size_t len = 0;

    json_t *hv = json_object_get(o, "host");
    if (hv && !json_is_null(hv)) {
        config_sub(p, obj, "host");
        if (!json_is_string(hv))
            return config_fail(c, p, "must be a string or null");
        s = json_string_value(hv);
        len = json_string_length(hv);
        if (len == 0)
            return config_fail(c, p, "must not be empty (use null for the default)");
        if (len > CONFIG_HTTP_HOST_MAX)
            return config_fail(c, p, "must be at most %d bytes", CONFIG_HTTP_HOST_MAX);
        if (!config_is_visible_ascii(s, len))
            return config_fail(c, p, "must be printable ASCII without spaces");
        memcpy(h->host, s, len + 1);
    }

    if (config_get_statuses(c, obj, o, h->expect_status, &h->n_expect_status) < 0)
        return -1;
    return h->type == HEALTH_HTTPS ? config_parse_health_tls(c, obj, o, h) : 0;
}

static int config_parse_backend(struct config_ctx *c, const char *obj, json_t *o, const struct service_conf *svc,
                                struct port_conf *pc, size_t idx)
{
    static const char *const keys[] = {"name", "address", "weight", NULL};
    struct backend_conf *b = &pc->backends[idx];
    char p[FIELD_PATH_LEN];
    char why[160];
    const char *s = NULL;
    size_t len = 0;

    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    if (config_get_str(c, obj, o, "name", false, &s, &len) < 0)
        return -1;
    bool named = s != NULL;
    if (named) {
        config_sub(p, obj, "name");
        if (!config_is_backend_name(s, len))
            return config_fail(c, p, "must be %s", CONFIG_BACKEND_NAME_RULE);
        memcpy(b->name, s, len + 1);
    } else {
        snprintf(b->name, sizeof b->name, "%s-%u-%zu", svc->name, (unsigned)pc->virtual_port, idx);
    }
    for (size_t j = 0; j < idx; j++) {
        if (strcmp(pc->backends[j].name, b->name) == 0) {
            if (named)
                return config_fail(c, p, "duplicate backend name \"%s\"", b->name);
            return config_fail(c, obj, "default name \"%s\" is already used by backends[%zu]", b->name, j);
        }
    }

    s = NULL;
    if (config_get_str(c, obj, o, "address", true, &s, &len) < 0)
        return -1;
    config_sub(p, obj, "address");
    if (config_parse_addr(s, len, &b->addr, why, sizeof why) < 0)
        return config_fail(c, p, "%s", why);
    for (size_t j = 0; j < idx; j++) {
        if (config_addr_same(&pc->backends[j].addr, &b->addr)) {
            char shown[100];
            config_msg_text(shown, sizeof shown, s, len, 80);
            return config_fail(c, p, "\"%s\" is already used by backends[%zu]", shown, j);
        }
    }

    b->weight = 1;
    return config_get_uint(c, obj, o, "weight", false, 0, 256, &b->weight);
}

static int config_parse_port(struct config_ctx *c, const char *obj, json_t *o, struct service_conf *svc, size_t idx)
{
    static const char *const keys[] = {"virtual", "target", "backends", "balance", "connect_timeout_ms",
                                       "max_streams_per_circuit", "circuit_stream_rate", "circuit_stream_burst",
                                       "idle_timeout", "proxy_protocol", "tls", "health", NULL};
    struct port_conf *pc = &svc->ports[idx];
    char p[FIELD_PATH_LEN];

    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    unsigned virt = 0;
    if (config_get_uint(c, obj, o, "virtual", true, 1, 65535, &virt) < 0)
        return -1;
    pc->virtual_port = (uint16_t)virt;
    for (size_t j = 0; j < idx && virt; j++) { /* 0: its error is reported already */
        if (svc->ports[j].virtual_port == pc->virtual_port) {
            config_sub(p, obj, "virtual");
            return config_fail(c, p, "duplicate virtual port %u", virt);
        }
    }

    json_t *target = json_object_get(o, "target");
    json_t *backends = json_object_get(o, "backends");
    if (target && backends)
        return config_fail(c, obj, "must have either \"target\" or \"backends\", not both");
    if (!target && !backends)
        return config_fail(c, obj, "must have \"target\" or \"backends\"");
    if (target) {
        const char *s = NULL;
        size_t len = 0;
        char why[160];
        if (config_get_str(c, obj, o, "target", true, &s, &len) < 0)
            return -1;
        pc->backends = calloc(1, sizeof *pc->backends);
        config_sub(p, obj, "target");
        if (!pc->backends)
            return config_oom(c, p);
        pc->n_backends = 1;
        pc->from_target = true;
        if (config_parse_addr(s, len, &pc->backends[0].addr, why, sizeof why) < 0)
            return config_fail(c, p, "%s", why);
        snprintf(pc->backends[0].name, sizeof pc->backends[0].name, "%s-%u-0", svc->name, virt);
        pc->backends[0].weight = 1;
    } else {
        json_t *arr;
        if (config_get_array(c, obj, o, "backends", true, 1, CONFIG_MAX_BACKENDS, &arr) < 0)
            return -1;
        size_t n = json_array_size(arr);
        pc->backends = calloc(n, sizeof *pc->backends);
        if (!pc->backends) {
            config_sub(p, obj, "backends");
            return config_oom(c, p);
        }
        pc->n_backends = n;
        for (size_t i = 0; i < n; i++) {
            config_subi(p, obj, "backends", i);
            if (config_parse_backend(c, p, json_array_get(arr, i), svc, pc, i) < 0)
                return -1;
        }
    }

    int balance = BALANCE_ROUND_ROBIN;
    if (config_get_enum(c, obj, o, "balance", config_balance_names, &balance) < 0)
        return -1;
    pc->balance = (enum balance_policy)balance;
    pc->connect_timeout_ms = 3000;
    pc->max_streams_per_circuit = CONFIG_DEFAULT_MAX_STREAMS_PER_CIRCUIT;
    pc->idle_timeout_s = CONFIG_DEFAULT_IDLE_TIMEOUT_S;
    pc->proxy_protocol = false;
    pc->tls = false;
    if (config_get_uint(c, obj, o, "connect_timeout_ms", false, 100, 60000, &pc->connect_timeout_ms) < 0 ||
        config_get_uint(c, obj, o, "max_streams_per_circuit", false, 0, 65535, &pc->max_streams_per_circuit) < 0 ||
        config_get_uint(c, obj, o, "circuit_stream_rate", false, 0, 65535, &pc->circuit_stream_rate) < 0 ||
        config_get_uint(c, obj, o, "idle_timeout", false, 0, 86400, &pc->idle_timeout_s) < 0 ||
        config_get_bool(c, obj, o, "proxy_protocol", &pc->proxy_protocol) < 0 ||
        config_get_bool(c, obj, o, "tls", &pc->tls) < 0)
        return -1;
    pc->circuit_stream_burst = pc->circuit_stream_rate * 2 > 10 ? pc->circuit_stream_rate * 2 : 10;
    if (config_get_uint(c, obj, o, "circuit_stream_burst", false, 1, 131070, &pc->circuit_stream_burst) < 0)
        return -1;
    if (json_object_get(o, "circuit_stream_burst") && pc->circuit_stream_rate == 0) {
        config_sub(p, obj, "circuit_stream_burst");
        return config_fail(c, p, "needs circuit_stream_rate > 0");
    }
    return config_parse_health(c, obj, json_object_get(o, "health"), &pc->health);
}

/* key_dir must not share files with a directory of onionfront's tors or Onionbalance under state_dir (so
 * it can be neither state_dir nor contain it), run_dir or another service. */
static int config_check_key_dir(struct config_ctx *c, const char *path, const struct config *cfg, size_t idx)
{
    const char *kd = cfg->services[idx].key_dir;
    char shown[220], other[220];
    config_msg_text(shown, sizeof shown, kd, strlen(kd), 200);
    /* Every directory onionfront writes under state_dir besides keys/, whether or not this config uses it
     * (a reload may start using it): what a tor or Onionbalance writes there must not land among keys. */
    static const char *const tors[][2] = {
        {"tor", "tor's DataDirectory"},
        {"instances", "the other tors' directory"},
        {"anonymous", "the anonymous services' tor directory"},
        {"probe-tor", "the probe's tor DataDirectory"},
        {"ob-tor", "Onionbalance's tor DataDirectory"},
        {"ob", "Onionbalance's directory"},
    };
    for (size_t t = 0; t < sizeof(tors) / sizeof(tors[0]); t++) {
        char *tor_dir = config_path_join(cfg->state_dir, tors[t][0]);
        if (!tor_dir)
            return config_oom(c, path);
        bool bad = config_path_within(kd, tor_dir) || config_path_within(tor_dir, kd);
        if (bad) {
            config_msg_text(other, sizeof other, tor_dir, strlen(tor_dir), 200);
            free(tor_dir);
            return config_fail(c, path, "\"%s\" overlaps %s \"%s\"", shown, tors[t][1], other);
        }
        free(tor_dir);
    }
    if (config_path_within(kd, cfg->run_dir) || config_path_within(cfg->run_dir, kd)) {
        config_msg_text(other, sizeof other, cfg->run_dir, strlen(cfg->run_dir), 200);
        return config_fail(c, path, "\"%s\" overlaps run_dir \"%s\"", shown, other);
    }
    for (size_t j = 0; j < idx; j++) {
        const char *okd = cfg->services[j].key_dir;
        if (strcmp(okd, kd) == 0)
            return config_fail(c, path, "\"%s\" is already used by services[%zu]", shown, j);
        if (config_path_within(kd, okd) || config_path_within(okd, kd)) {
            config_msg_text(other, sizeof other, okd, strlen(okd), 200);
            return config_fail(c, path, "\"%s\" overlaps services[%zu].key_dir \"%s\"", shown, j, other);
        }
    }
    return 0;
}

/* A rate/burst pair of one defence: both within tor's bounds (the rate from `rate_min`), burst >= rate
 * (tor refuses a smaller burst once the defence is on; we refuse it always, so turning the defence on
 * later cannot fail at tor). */
static int config_parse_rate_burst(struct config_ctx *c, const char *obj, json_t *o, const char *rate_key,
                                   const char *burst_key, unsigned rate_min, unsigned *rate, unsigned *burst)
{
    char p[FIELD_PATH_LEN];
    if (config_get_uint(c, obj, o, rate_key, false, rate_min, CONFIG_DOS_RATE_MAX, rate) < 0 ||
        config_get_uint(c, obj, o, burst_key, false, rate_min, CONFIG_DOS_RATE_MAX, burst) < 0)
        return -1;
    config_sub(p, obj, burst_key);
    if (*burst < *rate)
        return config_fail(c, p, "must be at least %s (%u); tor refuses a smaller burst", rate_key, *rate);
    return 0;
}

/* One defence object of "dos": {"enabled", rate, burst}. */
struct config_defence {
    const char *key;
    const char *const *keys;
    const char *rate_key, *burst_key;
    unsigned rate_min;
};

/* services[i].dos: proof-of-work, intro-point rate limits, stream limits (tor's per-service options). */
static int config_parse_dos(struct config_ctx *c, const char *svc_obj, json_t *svc_o, struct service_conf *svc)
{
    static const char *const keys[] = {"pow", "intro", "max_streams", "max_streams_close_circuit",
                                       "num_intro_points", NULL};
    static const char *const pow_keys[] = {"enabled", "queue_rate", "queue_burst", NULL};
    static const char *const intro_keys[] = {"enabled", "rate_per_sec", "burst_per_sec", NULL};
    struct dos_conf *d = &svc->dos;
    char obj[FIELD_PATH_LEN], p[FIELD_PATH_LEN];
    *d = (struct dos_conf){.pow_queue_rate = 250, .pow_queue_burst = 2500, .intro_rate_per_sec = 25,
                           .intro_burst_per_sec = 200, .num_intro_points = 3};
    json_t *o = json_object_get(svc_o, "dos");
    if (!o)
        return 0;
    config_sub(obj, svc_obj, "dos");
    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    if (json_object_get(o, "max_streams") && json_object_get(svc_o, "max_streams")) {
        config_sub(p, obj, "max_streams");
        return config_fail(c, p, "set it here or as %s.max_streams, not both", svc_obj);
    }
    if (config_get_uint(c, obj, o, "max_streams", false, 0, 65535, &svc->max_streams) < 0 ||
        config_get_bool(c, obj, o, "max_streams_close_circuit", &d->max_streams_close_circuit) < 0 ||
        config_get_uint(c, obj, o, "num_intro_points", false, 1, CONFIG_MAX_INTRO_POINTS, &d->num_intro_points) < 0)
        return -1;
    if (d->max_streams_close_circuit && svc->max_streams == 0) {
        config_sub(p, obj, "max_streams_close_circuit");
        return config_fail(c, p, "needs a max_streams above 0 (0 = unlimited, nothing to exceed)");
    }
    /* An intro rate of 0 means "infinite" to tor, which silently turns an enabled defence off: refused. */
    static const struct config_defence defences[] = {
        {"pow", pow_keys, "queue_rate", "queue_burst", 0},
        {"intro", intro_keys, "rate_per_sec", "burst_per_sec", 1},
    };
    bool *enabled[] = {&d->pow_enabled, &d->intro_enabled};
    unsigned *rates[] = {&d->pow_queue_rate, &d->intro_rate_per_sec};
    unsigned *bursts[] = {&d->pow_queue_burst, &d->intro_burst_per_sec};
    for (size_t i = 0; i < 2; i++) {
        const struct config_defence *df = &defences[i];
        json_t *v = json_object_get(o, df->key);
        if (!v)
            continue;
        config_sub(p, obj, df->key);
        if (config_check_object(c, p, v) < 0 || config_check_keys(c, p, v, df->keys) < 0 ||
            config_get_bool(c, p, v, "enabled", enabled[i]) < 0 ||
            config_parse_rate_burst(c, p, v, df->rate_key, df->burst_key, df->rate_min, rates[i], bursts[i]) < 0)
            return -1;
    }
    return 0;
}

/* services[i].client_auth: [{name, public_key}], names unique, keys valid x25519 base32. */
static int config_parse_clients(struct config_ctx *c, const char *obj, json_t *o, struct service_conf *svc)
{
    static const char *const keys[] = {"name", "public_key", NULL};
    char p[FIELD_PATH_LEN], q[FIELD_PATH_LEN];
    json_t *arr = NULL;
    if (config_get_array(c, obj, o, "client_auth", false, 1, CONFIG_MAX_CLIENTS, &arr) < 0)
        return -1;
    if (!arr)
        return 0;
    size_t n = json_array_size(arr);
    if (!(svc->clients = calloc(n, sizeof(*svc->clients)))) {
        config_sub(p, obj, "client_auth");
        return config_oom(c, p);
    }
    svc->n_clients = n;
    for (size_t i = 0; i < n; i++) {
        struct client_auth_conf *cl = &svc->clients[i];
        json_t *e = json_array_get(arr, i);
        const char *s = NULL;
        size_t len = 0;
        config_subi(p, obj, "client_auth", i);
        if (config_check_object(c, p, e) < 0 || config_check_keys(c, p, e, keys) < 0 ||
            config_get_str(c, p, e, "name", true, &s, &len) < 0)
            return -1;
        config_sub(q, p, "name");
        if (!config_is_service_name(s, len))
            return config_fail(c, q, "must be %s", CONFIG_SERVICE_NAME_RULE);
        memcpy(cl->name, s, len + 1);
        if (strcmp(cl->name, CONFIG_PROBE_CLIENT_NAME) == 0)
            return config_fail(c, q, "\"%s\" is onionfront's own probe client (it proves the service refuses a "
                               "client without a key): choose another name", cl->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(svc->clients[j].name, cl->name) == 0)
                return config_fail(c, q, "duplicate client name \"%s\"", cl->name);
        if (config_get_str(c, p, e, "public_key", true, &s, &len) < 0)
            return -1;
        config_sub(q, p, "public_key");
        /* tor's own "descriptor:x25519:" prefix is accepted, so a line from a .auth file can be pasted. */
        if (len > strlen("descriptor:x25519:") && strncmp(s, "descriptor:x25519:", strlen("descriptor:x25519:")) == 0) {
            s += strlen("descriptor:x25519:");
            len -= strlen("descriptor:x25519:");
        }
        if (config_x25519_b32_decode(s, len, NULL) < 0)
            return config_fail(c, q, "must be an x25519 public key in base32 (52 characters A-Z 2-7)");
        for (size_t k = 0; k < len; k++)
            cl->public_key[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 'a' + 'A' : s[k]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(svc->clients[j].public_key, cl->public_key) == 0)
                return config_fail(c, q, "the same key as client \"%s\"", svc->clients[j].name);
    }
    return 0;
}

/* "services[i].probe": what the end-to-end probe fetches (struct probe_target_conf); defaults when absent. */
static int config_parse_probe_target(struct config_ctx *c, const char *obj, json_t *o, struct service_conf *svc)
{
    static const char *const keys[] = {"port", "type", "path", "expect_status", "body_contains", NULL};
    static const char *const http_only[] = {"path", "expect_status", "body_contains", NULL};
    struct probe_target_conf *pt = &svc->probe;
    char p[FIELD_PATH_LEN];
    pt->port = service_conf_find_port(svc, 80) ? 80 : svc->ports[0].virtual_port;
    for (size_t i = 0; i < svc->n_ports; i++) /* the certificate a visitor gets is watched on the first TLS port */
        if (svc->ports[i].tls) {
            pt->port = svc->ports[i].virtual_port;
            break;
        }
    snprintf(pt->path, sizeof pt->path, "/");
    if (o && (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0))
        return -1;
    unsigned port = pt->port;
    if (o && config_get_uint(c, obj, o, "port", false, 1, 65535, &port) < 0)
        return -1;
    pt->port = (uint16_t)port;
    if (!service_conf_find_port(svc, pt->port)) {
        config_sub(p, obj, "port");
        return config_fail(c, p, "must be one of the service's virtual ports");
    }
    const struct port_conf *target = service_conf_find_port(svc, pt->port);
    int type = pt->port == 80 || target->tls ? PROBE_TARGET_HTTP : PROBE_TARGET_CONNECT;
    if (o && config_get_enum(c, obj, o, "type", config_probe_types, &type) < 0)
        return -1;
    pt->type = (enum probe_target_type)type;
    if (!o)
        return 0;
    if (pt->type != PROBE_TARGET_HTTP)
        return config_refuse_keys(c, obj, o, http_only, "only allowed for http probes");
    if (config_get_http_path(c, obj, o, pt->path) < 0 ||
        config_get_statuses(c, obj, o, pt->expect_status, &pt->n_expect_status) < 0)
        return -1;
    const char *s = NULL;
    size_t len = 0;
    if (config_get_str(c, obj, o, "body_contains", false, &s, &len) < 0)
        return -1;
    if (s) {
        config_sub(p, obj, "body_contains");
        if (len == 0 || len > CONFIG_PROBE_BODY_MAX)
            return config_fail(c, p, "must be 1-%d bytes", CONFIG_PROBE_BODY_MAX);
        memcpy(pt->body_contains, s, len + 1);
    }
    return 0;
}

/* "mode" and "onion_location" of a service. An anonymous service runs on a tor onionfront spawns
 * (workerset.h), so attach mode has none: the attached tor is the single-onion one. Onion-Location is
 * on by default only for a single onion without client_auth (config_parse_service; docs/configuration.md
 * says why). */
static int config_parse_service_mode(struct config_ctx *c, const char *obj, json_t *o, const struct config *cfg,
                                     struct service_conf *svc)
{
    char p[FIELD_PATH_LEN];
    int mode = SERVICE_MODE_SINGLE;
    if (config_get_enum(c, obj, o, "mode", config_service_modes, &mode) < 0)
        return -1;
    svc->mode = (enum service_mode)mode;
    config_sub(p, obj, "mode");
    if (svc->mode == SERVICE_MODE_ANONYMOUS && cfg->tor.mode != TOR_MODE_SPAWN)
        return config_fail(c, p, "\"anonymous\" needs tor.mode \"spawn\": onionfront runs the anonymous services' "
                                 "tor itself, and an attached tor is a single-onion tor");
    svc->onion_location = svc->mode == SERVICE_MODE_SINGLE;
    return config_get_bool(c, obj, o, "onion_location", &svc->onion_location);
}

int config_parse_service(struct config_ctx *c, const char *obj, json_t *o, struct config *cfg, size_t idx)
{
    static const char *const keys[] = {"name",        "mode",  "onion_location",   "key_dir", "max_streams", "dos",
                                       "client_auth", "drop_client_auth", "ports", "probe",       "onionbalance",
                                       NULL};
    struct service_conf *svc = &cfg->services[idx];
    char p[FIELD_PATH_LEN];
    const char *s = NULL;
    size_t len = 0;

    if (config_check_object(c, obj, o) < 0 || config_check_keys(c, obj, o, keys) < 0)
        return -1;
    if (config_get_str(c, obj, o, "name", true, &s, &len) < 0)
        return -1;
    config_sub(p, obj, "name");
    if (!config_is_service_name(s, len))
        return config_fail(c, p, "must be %s", CONFIG_SERVICE_NAME_RULE);
    memcpy(svc->name, s, len + 1);
    for (size_t j = 0; j < idx; j++)
        if (strcmp(cfg->services[j].name, svc->name) == 0)
            return config_fail(c, p, "duplicate service name \"%s\"", svc->name);
    if (config_parse_service_mode(c, obj, o, cfg, svc) < 0)
        return -1;

    if (config_get_path(c, obj, o, "key_dir", false, CONFIG_PATH_MAX, NULL, &svc->key_dir) < 0)
        return -1;
    config_sub(p, obj, "key_dir");
    if (!svc->key_dir) {
        char rel[sizeof "keys/" + CONFIG_SERVICE_NAME_MAX];
        snprintf(rel, sizeof rel, "keys/%s", svc->name);
        svc->key_dir = config_path_join(cfg->state_dir, rel);
        if (!svc->key_dir)
            return config_oom(c, p);
    }
    if (config_check_key_dir(c, p, cfg, idx) < 0)
        return -1;

    if (config_get_uint(c, obj, o, "max_streams", false, 0, 65535, &svc->max_streams) < 0 ||
        config_parse_dos(c, obj, o, svc) < 0 || config_parse_clients(c, obj, o, svc) < 0 ||
        config_get_bool(c, obj, o, "drop_client_auth", &svc->drop_client_auth) < 0)
        return -1;
    if (svc->drop_client_auth && svc->n_clients > 0) {
        config_sub(p, obj, "drop_client_auth");
        return config_fail(c, p, "cannot be set with client_auth (it removes every client, on purpose)");
    }
    /* A private service's address is for its clients only: Onion-Location would hand it to every visitor
     * of the clearnet site. Off by default there, and refused when asked for. */
    if (svc->n_clients > 0 && svc->onion_location) {
        if (json_object_get(o, "onion_location")) {
            config_sub(p, obj, "onion_location");
            return config_fail(c, p, "cannot be true with client_auth: Onion-Location would advertise a private "
                                     "service's address to every visitor of the clearnet site");
        }
        svc->onion_location = false;
    }
    config_sub(p, obj, "onionbalance");
    char oberr[1024];
    if (ob_conf_parse(json_object_get(o, "onionbalance"), p, svc->dos.pow_enabled, &svc->onionbalance, oberr,
                      sizeof oberr) < 0) {
        config_errors_add(c->errs, oberr); /* it names the field path itself */
        return -1;
    }
    /* Instances run on the single-onion tors (their keys are copied per tor, ob_config beside them). */
    if (svc->onionbalance.role != OB_ROLE_NONE && svc->mode != SERVICE_MODE_SINGLE)
        return config_fail(c, p, "only for a service with mode \"single\": onionfront runs Onionbalance instances "
                                 "on its single-onion tors");
    /* Onionbalance publishes a frontend's address; visitors reach the instances' ports, not this machine. */
    if (svc->onionbalance.role == OB_ROLE_FRONTEND)
        return config_refuse_keys(c, obj, o,
                                  (const char *const[]){"ports", "probe", "client_auth", "drop_client_auth", NULL},
                                  "not for an Onionbalance frontend: visitors of the master address reach the "
                                  "instances, whose own services set it");

    json_t *arr;
    if (config_get_array(c, obj, o, "ports", true, 1, CONFIG_MAX_PORTS, &arr) < 0)
        return -1;
    size_t n = json_array_size(arr);
    svc->ports = calloc(n, sizeof *svc->ports);
    if (!svc->ports) {
        config_sub(p, obj, "ports");
        return config_oom(c, p);
    }
    svc->n_ports = n;
    for (size_t i = 0; i < n; i++) {
        config_subi(p, obj, "ports", i);
        if (config_parse_port(c, p, json_array_get(arr, i), svc, i) < 0)
            return -1;
    }
    config_sub(p, obj, "probe");
    return config_parse_probe_target(c, p, json_object_get(o, "probe"), svc);
}
