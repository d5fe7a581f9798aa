/* config_compare.c — lookups in a loaded config and the comparisons reload uses (which parts of two
 * configs are equal, what needs a restart of onionfront); see config.h.
 *
 * Owns no state: pure functions over config.h's plain data. Not the parsing nor the defaults (config.c).
 * Tested in tests/unit/test_config.c (test_find, test_equal, test_port_equal_other_service,
 * test_restart_needed), whose configs come from config.c's parser. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sidecar/config/config.h"
#include "sidecar/config/ob_config.h"

const struct service_conf *config_find_service(const struct config *cfg, const char *name)
{
    if (!cfg || !name)
        return NULL;
    for (size_t i = 0; i < cfg->n_services; i++)
        if (strcmp(cfg->services[i].name, name) == 0)
            return &cfg->services[i];
    return NULL;
}

const struct port_conf *service_conf_find_port(const struct service_conf *svc, uint16_t virtual_port)
{
    if (!svc)
        return NULL;
    for (size_t i = 0; i < svc->n_ports; i++)
        if (svc->ports[i].virtual_port == virtual_port)
            return &svc->ports[i];
    return NULL;
}

bool backend_conf_equal(const struct backend_conf *a, const struct backend_conf *b)
{
    /* The address text is for logs: "unix:/x" and "/x" are the same backend. */
    return strcmp(a->name, b->name) == 0 && a->weight == b->weight && a->addr.kind == b->addr.kind &&
           a->addr.family == b->addr.family && a->addr.port == b->addr.port &&
           strcmp(a->addr.host, b->addr.host) == 0 && strcmp(a->addr.path, b->addr.path) == 0;
}

bool health_conf_equal(const struct health_conf *a, const struct health_conf *b)
{
    if (a->type != b->type || a->interval_ms != b->interval_ms || a->timeout_ms != b->timeout_ms ||
        a->rise != b->rise || a->fall != b->fall || a->method != b->method || strcmp(a->path, b->path) != 0 ||
        strcmp(a->host, b->host) != 0 || a->n_expect_status != b->n_expect_status ||
        strcmp(a->ca_file, b->ca_file) != 0 || a->tls_verify != b->tls_verify)
        return false;
    /* A set: entries are unique, so equal sizes and a ⊆ b mean equal. */
    for (size_t i = 0; i < a->n_expect_status; i++) {
        bool found = false;
        for (size_t j = 0; j < b->n_expect_status && !found; j++)
            found = a->expect_status[i] == b->expect_status[j];
        if (!found)
            return false;
    }
    return true;
}

bool port_conf_equal(const struct port_conf *a, const struct port_conf *b)
{
    if (a->virtual_port != b->virtual_port || a->n_backends != b->n_backends || a->balance != b->balance ||
        a->connect_timeout_ms != b->connect_timeout_ms ||
        a->max_streams_per_circuit != b->max_streams_per_circuit || a->proxy_protocol != b->proxy_protocol || a->tls != b->tls ||
        a->circuit_stream_rate != b->circuit_stream_rate || a->circuit_stream_burst != b->circuit_stream_burst ||
        a->idle_timeout_s != b->idle_timeout_s ||
        !health_conf_equal(&a->health, &b->health))
        return false;
    for (size_t i = 0; i < a->n_backends; i++)
        if (!backend_conf_equal(&a->backends[i], &b->backends[i]))
            return false;
    return true;
}

bool dos_conf_equal(const struct dos_conf *a, const struct dos_conf *b)
{
    return a->pow_enabled == b->pow_enabled && a->pow_queue_rate == b->pow_queue_rate &&
           a->pow_queue_burst == b->pow_queue_burst && a->intro_enabled == b->intro_enabled &&
           a->intro_rate_per_sec == b->intro_rate_per_sec && a->intro_burst_per_sec == b->intro_burst_per_sec &&
           a->max_streams_close_circuit == b->max_streams_close_circuit &&
           a->num_intro_points == b->num_intro_points;
}

const struct service_conf *config_first_pow_service(const struct config *cfg)
{
    for (size_t i = 0; i < cfg->n_services; i++)
        if (cfg->services[i].dos.pow_enabled)
            return &cfg->services[i];
    return NULL;
}

bool service_conf_tor_equal(const struct service_conf *a, const struct service_conf *b)
{
    if (strcmp(a->name, b->name) != 0 || a->mode != b->mode || strcmp(a->key_dir, b->key_dir) != 0 ||
        a->max_streams != b->max_streams || !dos_conf_equal(&a->dos, &b->dos) || a->n_ports != b->n_ports ||
        a->n_clients != b->n_clients || a->drop_client_auth != b->drop_client_auth ||
        !ob_conf_equal(&a->onionbalance, &b->onionbalance))
        return false;
    /* A changed client list must reach tor: any successful SETCONF makes it re-read authorized_clients. */
    for (size_t i = 0; i < a->n_clients; i++)
        if (strcmp(a->clients[i].name, b->clients[i].name) != 0 ||
            strcmp(a->clients[i].public_key, b->clients[i].public_key) != 0)
            return false;
    /* Virtual ports are unique within a service: equal counts and a ⊆ b mean the same set. */
    for (size_t i = 0; i < a->n_ports; i++)
        if (!service_conf_find_port(b, a->ports[i].virtual_port))
            return false;
    return true;
}

size_t config_count_mode(const struct config *cfg, enum service_mode mode)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_services; i++)
        n += cfg->services[i].mode == mode;
    return n;
}

bool service_conf_equal(const struct service_conf *a, const struct service_conf *b)
{
    if (!service_conf_tor_equal(a, b) || a->onion_location != b->onion_location)
        return false;
    for (size_t i = 0; i < a->n_ports; i++)
        if (!port_conf_equal(&a->ports[i], service_conf_find_port(b, a->ports[i].virtual_port)))
            return false;
    return true;
}

/* Two optional strings: both unset, or both set and equal. */
static bool config_str_equal(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

const char *config_restart_needed(const struct config *a, const struct config *b)
{
    if (!config_str_equal(a->state_dir, b->state_dir))
        return "state_dir";
    if (!config_str_equal(a->run_dir, b->run_dir))
        return "run_dir";
    if (a->tor.mode != b->tor.mode)
        return "tor.mode";
    if (!config_str_equal(a->tor.control_socket, b->tor.control_socket))
        return "tor.control_socket";
    if (!config_str_equal(a->tor.user, b->tor.user))
        return "tor.user";
    if (a->tor.instances != b->tor.instances)
        return "tor.instances";
    if (a->tor.tors_per_service != b->tor.tors_per_service)
        return "tor.tors_per_service"; /* it moves services between tors: a restart, as tor.instances */
    if (!config_str_equal(a->status.socket, b->status.socket))
        return "status.socket";
    if (a->metrics.enabled != b->metrics.enabled || strcmp(a->metrics.listen, b->metrics.listen) != 0)
        return "metrics.listen";
    if (a->onion_location.listen.enabled != b->onion_location.listen.enabled ||
        strcmp(a->onion_location.listen.listen, b->onion_location.listen.listen) != 0)
        return "onion_location.listen";
    if (a->probe.client_tor != b->probe.client_tor)
        return "probe.client_tor";
    if (a->tor.n_extra_torrc != b->tor.n_extra_torrc)
        return "tor.extra_torrc";
    for (size_t i = 0; i < a->tor.n_extra_torrc; i++)
        if (!config_str_equal(a->tor.extra_torrc[i], b->tor.extra_torrc[i]))
            return "tor.extra_torrc";
    return NULL;
}
