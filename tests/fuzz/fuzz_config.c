/* fuzz_config.c — libFuzzer target for sidecar/config/config.c: any bytes through config_load_string and
 * config_load_string_errors (which goes on past bad values: every error collected).
 *
 * Must never crash, leak or overflow the error buffer; both must agree, and every error list be
 * non-empty with non-empty messages; a loaded config is also walked (every string read,
 * the comparisons run against itself) so that a half-initialised struct shows up under ASan/UBSan. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sidecar/config/config.h"
#include "sidecar/config/config_errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t fuzz_config_walk(const struct config *c)
{
    size_t sum = strlen(c->state_dir) + strlen(c->run_dir) + strlen(c->tor.control_socket) +
                 strlen(c->status.socket) + strlen(config_log_level_str(c->log_level)) +
                 strlen(tor_mode_str(c->tor.mode));
    for (size_t i = 0; i < c->tor.n_extra_torrc; i++)
        sum += strlen(c->tor.extra_torrc[i]);
    for (size_t i = 0; i < c->n_services; i++) {
        const struct service_conf *s = &c->services[i];
        sum += strlen(s->name) + strlen(s->key_dir);
        if (config_find_service(c, s->name) != s || !service_conf_equal(s, s) || !service_conf_tor_equal(s, s))
            __builtin_trap();
        for (size_t j = 0; j < s->n_ports; j++) {
            const struct port_conf *p = &s->ports[j];
            if (service_conf_find_port(s, p->virtual_port) != p || !port_conf_equal(p, p))
                __builtin_trap();
            sum += strlen(balance_policy_str(p->balance)) + strlen(health_type_str(p->health.type)) +
                   strlen(health_method_str(p->health.method)) + strlen(p->health.path) + strlen(p->health.host) +
                   strlen(p->health.ca_file);
            for (size_t k = 0; k < p->n_backends; k++) {
                const struct backend_conf *b = &p->backends[k];
                sum += strlen(b->name) + strlen(b->addr.text) + strlen(b->addr.host) + strlen(b->addr.path) +
                       strlen(backend_addr_kind_str(b->addr.kind));
            }
        }
    }
    for (size_t i = 0; i < c->onion_location.n_on_change; i++)
        sum += strlen(c->onion_location.on_change[i]);
    if (c->onion_location.enabled)
        sum += strlen(c->onion_location.dir);
    for (size_t i = 0; i < c->onion_location.n_allow; i++)
        sum += strlen(c->onion_location.allow[i].text);
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    memset(err, 0, sizeof err);
    struct config *c = config_load_string((const char *)data, size, err, sizeof err - 1);
    bool loaded = c != NULL;
    if (c) {
        volatile size_t sum = fuzz_config_walk(c);
        (void)sum;
        config_free(c);
    } else if (err[0] == '\0' || err[sizeof err - 1] != '\0') {
        __builtin_trap(); /* every failure explains itself, within the buffer */
    }
    struct config_errors errs = {0};
    struct config *c2 = config_load_string_errors((const char *)data, size, &errs);
    if (!c2 == loaded || (!c2 && config_errors_count(&errs) == 0) || (c2 && config_errors_count(&errs) != 0))
        __builtin_trap();
    for (size_t i = 0; i < errs.n; i++)
        if (errs.msg[i][0] == '\0')
            __builtin_trap();
    config_free(c2);
    config_errors_clear(&errs);
    return 0;
}
