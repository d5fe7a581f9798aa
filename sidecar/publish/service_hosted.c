/* service_hosted.c — which of the configured services one tor takes (its mode and placement) and
 * hands to tor (not refused, its key copy and Onionbalance file good, not a frontend's master key), and
 * which it has handed over (admitted). Pure questions on the service_mgr's state (service_int.h); the
 * lowest of the service manager's files: service.c and service_admit.c call it, it calls neither. */
#include "sidecar/publish/service.h"
#include "sidecar/publish/service_int.h"

#include "sidecar/config/config.h"
#include "sidecar/identity/service_id.h"

const struct service_id *service_id_at(const struct service_mgr *m, size_t i)
{
    return service_ids_at(m->ids, i);
}

/* Is the service `sc` this tor's: of its mode and, for a single onion, placed on this tor (placement.h)? */
bool service_conf_here(const struct service_mgr *m, const struct service_conf *sc)
{
    return sc->mode == m->mode && (m->mode != SERVICE_MODE_SINGLE || (sc->tor_mask >> m->instance & 1u));
}

bool service_mgr_hosts(const struct service_mgr *m, size_t i)
{
    return i < m->n && service_conf_here(m, service_id_at(m, i)->conf);
}

bool service_mgr_all_public(const struct service_mgr *m, const struct config *conf)
{
    for (size_t i = 0; m->mode == SERVICE_MODE_SINGLE && i < conf->n_services; i++)
        if (service_conf_here(m, &conf->services[i]) && conf->services[i].n_clients > 0)
            return false;
    return m->mode == SERVICE_MODE_SINGLE;
}

bool service_for_tor(const struct service_mgr *m, size_t i)
{
    /* An Onionbalance frontend's key is the master key: Onionbalance publishes it, never a tor. */
    return service_mgr_hosts(m, i) && !service_id_refusal(service_id_at(m, i)) && !m->services[i].copy_bad &&
           !m->services[i].ob_bad && service_id_at(m, i)->conf->onionbalance.role != OB_ROLE_FRONTEND;
}

bool service_in_tor(const struct service_mgr *m, size_t i)
{
    return service_for_tor(m, i) && m->services[i].admitted;
}
