/* service.c — SETCONF publication of onionfront's services on one tor (see service.h): every path here
 * (publish, renew, re-add, foreign services, a tor that lost ours, unpublish) builds or checks the one
 * SETCONF of the service_mgr's HiddenService* lines on one tor. Which services this tor takes is
 * service_hosted.c's, which waiting ones it admits service_admit.c's (the state all three share:
 * service_int.h); this file calls both, and service_admit.c calls service_hosted.c, never back. */
#include "sidecar/publish/service.h"
#include "sidecar/publish/service_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/config/config.h"
#include "sidecar/config/config_value.h"
#include "sidecar/config/service_socket.h"
#include "sidecar/identity/instance.h"
#include "sidecar/core/clock.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/balance/ob_instance.h"
#include "sidecar/identity/service_id.h"

#define SERVICE_SETCONF_S_PER_SERVICE 1 /* a SETCONF's time to answer, per service, beyond command_timeout */

static double service_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

struct service_mgr *service_mgr_new(const struct config *conf, struct service_ids *ids)
{
    struct service_mgr *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->conf = conf;
    m->ids = ids;
    m->n = conf->n_services;
    m->services = calloc(m->n ? m->n : 1, sizeof(*m->services));
    if (!m->services) {
        free(m);
        return NULL;
    }
    return m;
}

void service_mgr_free(struct service_mgr *m)
{
    if (!m)
        return;
    cp_info_clear(&m->foreign);
    free(m->services);
    free(m);
}

static void service_publish(struct service_mgr *m);

int service_mgr_reconfigure(struct service_mgr *m, const struct config *conf, bool *tor_changed, char *err,
                            size_t errlen)
{
    size_t n = conf->n_services;
    struct service *next = calloc(n ? n : 1, sizeof(*next));
    bool changed = false;
    if (!next) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* m->conf is still the running config: compare what tor saw with what it is to see. A service whose
     * identity changed (new, another key directory or address, refused or accepted) changes tor's view;
     * a refused one before and after does not. */
    for (size_t i = 0; i < n; i++) {
        const struct service_conf *sc = &conf->services[i];
        const struct service_conf *old = config_find_service(m->conf, sc->name);
        const struct service_id *id = service_ids_at(m->ids, i);
        bool mine = service_conf_here(m, sc) || (old && service_conf_here(m, old)); /* else not this tor's view */
        if (old && id->kept) {
            next[i] = m->services[old - m->conf->services]; /* the same service in tor: keeps its state */
            changed = changed || (mine && !service_id_refusal(id) && !service_conf_tor_equal(old, sc));
        } else {
            changed = changed || mine;
        }
    }
    for (size_t j = 0; j < m->n; j++)
        changed = changed || (service_conf_here(m, &m->conf->services[j]) && !config_find_service(conf, m->conf->services[j].name));
    free(m->services);
    m->services = next;
    m->n = n;
    m->conf = conf;
    if (tor_changed)
        *tor_changed = changed;
    if (changed && m->conn && m->foreign_known) /* else service_foreign_cb publishes the new set */
        service_publish(m);
    return 0;
}

/* tor's HiddenServicePort for one virtual port: onionfront's own unix socket for it (proxy.c listens
 * there and chooses the backend; backends are not tor's business). tor splits the value at spaces and
 * would unquote it, so only plain path characters are allowed. */
static int service_port_line(const struct config *c, const struct service_conf *sc, const struct port_conf *p,
                             char *out, size_t len)
{
    char path[128];
    if (service_socket_path(c->run_dir, sc->name, p->virtual_port, path, sizeof(path)) < 0)
        return -1;
    if (!config_is_plain_path(path)) /* config.c holds run_dir to this rule; service names are plainer */
        return -1;
    int n = snprintf(out, len, "%u unix:%s", p->virtual_port, path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Is `dir` the i-th service's key directory on this manager's tor (its key_dir, or its instance's copy)? */
static bool service_dir_is(const struct service_mgr *m, size_t i, const char *dir)
{
    char mine[PATH_MAX];
    return instance_key_dir(m->conf, service_id_at(m, i)->conf, m->instance, mine, sizeof(mine)) == 0 &&
           strcmp(mine, dir) == 0;
}

/* Our service whose key directory is `dir`, or NULL. */
static struct service *service_by_dir(struct service_mgr *m, const char *dir)
{
    for (size_t i = 0; i < m->n; i++)
        if (service_dir_is(m, i, dir))
            return &m->services[i];
    return NULL;
}

/* Append `key` = `value` (decimal) to items, the string to owned. Return 0 or -1 (OOM). */
static int service_add_uint(struct cp_conf_item *items, size_t *n, char **owned, size_t *n_owned, const char *key,
                            unsigned value)
{
    char v[16];
    snprintf(v, sizeof(v), "%u", value);
    if (!(owned[*n_owned] = strdup(v)))
        return -1;
    items[*n].key = key;
    items[*n].value = owned[(*n_owned)++];
    (*n)++;
    return 0;
}

#define SERVICE_DOS_ITEMS_MAX 9

/* A service's stream limit and DoS defences (config.h struct dos_conf) as its HiddenService* lines. Only
 * what differs from tor's defaults is sent, so turning a defence off removes its lines and GETCONF shows
 * what the config asks for. At most SERVICE_DOS_ITEMS_MAX items. Return 0 or -1 (OOM). */
static int service_dos_items(const struct service_conf *sc, bool pow, struct cp_conf_item *items, size_t *n,
                             char **owned, size_t *n_owned)
{
    const struct dos_conf *d = &sc->dos;
    int rc = 0;
    if (sc->max_streams > 0)
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServiceMaxStreams", sc->max_streams);
    if (d->max_streams_close_circuit)
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServiceMaxStreamsCloseCircuit", 1);
    if (d->num_intro_points != 3)
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServiceNumIntroductionPoints", d->num_intro_points);
    if (d->pow_enabled || pow) { /* pow: service_mgr_renew's first step, with the configured rate and burst */
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServicePoWDefensesEnabled", 1);
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServicePoWQueueRate", d->pow_queue_rate);
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServicePoWQueueBurst", d->pow_queue_burst);
    }
    if (d->intro_enabled) {
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServiceEnableIntroDoSDefense", 1);
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServiceEnableIntroDoSRatePerSec",
                               d->intro_rate_per_sec);
        rc |= service_add_uint(items, n, owned, n_owned, "HiddenServiceEnableIntroDoSBurstPerSec",
                               d->intro_burst_per_sec);
    }
    return rc ? -1 : 0;
}

#define SERVICE_SKIP_NONE ((size_t)-1)

/* Which of our services a SETCONF of the group carries (service_setconf_cmd). */
enum service_group {
    SERVICE_GROUP_NONE,       /* none: only the attached tor's own (service_readd, unpublish) */
    SERVICE_GROUP_CONFIGURED, /* every handed-over service as configured, waiting ones admitted first */
    SERVICE_GROUP_RENEW,      /* the same, PoW on for those configured without it (service_mgr_renew) */
    SERVICE_GROUP_HANDED,     /* the handed-over services as they are (but `skip`): service_mgr_renew_one */
};

/* An Onionbalance instance's ob_config must be in the directory this tor uses before the SETCONF. */
static void service_ob_prepare(struct service_mgr *m, size_t i)
{
    const struct service_id *id = service_id_at(m, i);
    char dir[PATH_MAX], err[PATH_MAX + 256];
    bool was_bad = m->services[i].ob_bad;
    m->services[i].ob_bad = false;
    if (id->conf->onionbalance.role != OB_ROLE_INSTANCE || service_id_refusal(id))
        return;
    if (instance_key_dir(m->conf, id->conf, m->instance, dir, sizeof(dir)) < 0) {
        snprintf(err, sizeof(err), "its key directory's path is too long");
        m->services[i].ob_bad = true;
    } else if (ob_instance_prepare(dir, id->address, &id->conf->onionbalance, err, sizeof(err)) < 0) {
        m->services[i].ob_bad = true;
    }
    if (m->services[i].ob_bad && !was_bad)
        log_error("services: service %s left out: Onionbalance instance: %s", id->conf->name, err);
}

/* Check each hosted service's key (and its copy on this tor, with the copy's authorized_clients) and
 * prepare its Onionbalance file: a service that fails is left out of the SETCONF. tor re-reads every
 * service's authorized_clients/ on any SETCONF, so no SETCONF that carries our services skips this. */
static void service_verify(struct service_mgr *m)
{
    for (size_t i = 0; i < m->n; i++) {
        char copy[PATH_MAX];
        m->services[i].copy_bad = false;
        if (!service_mgr_hosts(m, i))
            continue; /* another tor's */
        if (!service_ids_verify_key(m->ids, i))
            m->services[i].uploaded = false;
        else if (m->instance > 0 && service_id_at(m, i)->conf->onionbalance.role != OB_ROLE_FRONTEND)
            m->services[i].copy_bad =
                instance_key_dir(m->conf, service_id_at(m, i)->conf, m->instance, copy, sizeof(copy)) < 0 ||
                !service_ids_verify_copy(m->ids, i, copy);
        service_ob_prepare(m, i);
    }
}

/* Build the SETCONF that sets the complete HiddenService* group: the attached tor's own services first,
 * then ours as `group` says (every one verified first: service_verify; the `skip`-th left out; PoW on for
 * those with renew_pow). The one builder of the group: every path that sends it comes here. Returns a
 * new command, or NULL with err. */
static char *service_setconf_cmd(struct service_mgr *m, enum service_group group, size_t skip, char *err,
                                 size_t errlen)
{
    bool ours = group != SERVICE_GROUP_NONE;
    if (ours)
        service_verify(m);
    if (group == SERVICE_GROUP_CONFIGURED || group == SERVICE_GROUP_RENEW)
        service_admit_and_mark(m, group == SERVICE_GROUP_RENEW);
    size_t cap = m->foreign.n + 1;
    for (size_t i = 0; ours && i < m->n; i++)
        cap += 3 + SERVICE_DOS_ITEMS_MAX + service_id_at(m, i)->conf->n_ports; /* Dir, ports, dos, OB, ExportCircuitID */
    struct cp_conf_item *items = calloc(cap, sizeof(*items));
    char **owned = calloc(cap, sizeof(*owned));
    char *cmd = NULL;
    size_t n = 0, n_owned = 0;
    if (!items || !owned) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* The attached tor's own services, as GETCONF HiddenServiceOptions listed them. */
    for (size_t i = 0; i < m->foreign.n; i++) {
        items[n].key = m->foreign.items[i].key;
        items[n].value = m->foreign.items[i].value;
        n++;
    }
    for (size_t i = 0; ours && i < m->n; i++) {
        const struct service_conf *sc = service_id_at(m, i)->conf;
        if (!service_in_tor(m, i) || i == skip)
            continue; /* refused: tor would make it a new key */
        char dir[PATH_MAX];
        if (instance_key_dir(m->conf, sc, m->instance, dir, sizeof(dir)) < 0 || !(owned[n_owned] = strdup(dir))) {
            snprintf(err, errlen, "service %s: its key directory's path is too long", sc->name);
            goto done;
        }
        items[n].key = "HiddenServiceDir";
        items[n].value = owned[n_owned++];
        n++;
        for (size_t j = 0; j < sc->n_ports; j++) {
            const struct port_conf *p = &sc->ports[j];
            char line[512];
            if (service_port_line(m->conf, sc, p, line, sizeof(line)) < 0 || !(owned[n_owned] = strdup(line))) {
                snprintf(err, errlen, "service %s: port %u: the proxy socket path is too long or holds characters "
                         "tor cannot take", sc->name, p->virtual_port);
                goto done;
            }
            items[n].key = "HiddenServicePort";
            items[n].value = owned[n_owned++];
            n++;
        }
        if (service_dos_items(sc, m->services[i].renew_pow, items, &n, owned, &n_owned) < 0) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        /* ob_config is in the directory (service_publish): tor reads it while parsing this. */
        if (sc->onionbalance.role == OB_ROLE_INSTANCE) {
            items[n].key = "HiddenServiceOnionBalanceInstance";
            items[n].value = "1";
            n++;
        }
        /* tor's first line on every stream names the circuit (PROXY v1); proxy.c reads and drops it. */
        items[n].key = "HiddenServiceExportCircuitID";
        items[n].value = "haproxy";
        n++;
    }
    if (n == 0) {
        /* control-spec 3.1: a bare key resets the option; resetting the group removes every service. */
        items[0].key = "HiddenServiceDir";
        items[0].value = NULL;
        n = 1;
    }
    cmd = cp_cmd_setconf(items, n, err, errlen);
done:
    for (size_t i = 0; owned && i < n_owned; i++)
        free(owned[i]);
    free(owned);
    free(items);
    return cmd;
}

/* Send a SETCONF of the group with time for tor to answer in proportion to the services it handles
 * (tor.command_timeout, plus SERVICE_SETCONF_S_PER_SERVICE for each of ours it hosts: it loads keys and
 * registers or drops each one before it answers), so that a slow SETCONF of many services is not taken
 * for a hung tor and restarted (cp_conn.h). Return as cp_conn_send. */
static int service_send_setconf(struct service_mgr *m, const char *cmd, cp_conn_reply_cb cb, void *arg, char *err,
                                size_t errlen)
{
    size_t hosted = 0;
    for (size_t i = 0; i < m->n; i++)
        hosted += service_mgr_hosts(m, i);
    long secs = (long)m->conf->tor.command_timeout + (long)(hosted * SERVICE_SETCONF_S_PER_SERVICE);
    return cp_conn_send_timed(m->conn, cmd, (struct timeval){secs, 0}, cb, arg, err, errlen);
}

static void service_setconf_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct service_mgr *m = arg;
    (void)c;
    if (!r) {
        log_debug("services: SETCONF not answered: %s", err); /* the connection is gone; tor.c reports it */
        return;
    }
    if (!cp_reply_is_ok(r)) {
        log_error("services: tor refused the services: %d %s", r->status, cp_reply_message(r));
        return;
    }
    size_t in = 0;
    for (size_t i = 0; i < m->n; i++)
        in += service_in_tor(m, i);
    log_info("services: %zu service%s handed to tor", in, in == 1 ? "" : "s");
}

static void service_renew_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg);

/* Send the complete group (service_setconf_cmd): with `renew` (service_mgr_renew), PoW on in it for every
 * handed-over service configured without it; otherwise exactly the configured group, and a renewal under
 * way ends. */
static int service_send(struct service_mgr *m, bool renew)
{
    char err[512];
    char *cmd = service_setconf_cmd(m, renew ? SERVICE_GROUP_RENEW : SERVICE_GROUP_CONFIGURED, SERVICE_SKIP_NONE,
                                    err, sizeof(err));
    clock_gettime(CLOCK_MONOTONIC, &m->published_at);
    m->setconfs++;
    int rc = 0;
    if (!cmd || service_send_setconf(m, cmd, renew ? service_renew_cb : service_setconf_cb, m, err, sizeof(err)) < 0) {
        log_error("services: cannot publish: %s", err);
        for (size_t i = 0; i < m->n; i++)
            m->services[i].renew_pow = false;
        m->renew_waiting = 0;
        rc = -1;
    }
    free(cmd);
    return rc;
}

static void service_publish(struct service_mgr *m)
{
    (void)service_send(m, false);
}

static int service_readd(struct service_mgr *m);

/* The answer to service_mgr_renew's first SETCONF. Accepted: wait for each PoW-off service's upload
 * (service_renew_uploading), or none to wait for. Refused or unanswered: the configured group again. */
static void service_renew_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct service_mgr *m = arg;
    service_setconf_cb(c, r, err, arg);
    if (!r || m->conn != c || m->renew_waiting == 0)
        return; /* gone (a new connection gets the configured group), or nothing to turn back */
    if (cp_reply_is_ok(r)) {
        m->renew_armed = true;
    } else { /* a tor without the pow module: the slower renewal, with new introduction points */
        log_warnx("services: tor refused PoW for new descriptors; they are built with new introduction points");
        (void)service_readd(m);
    }
}

/* HS_DESC UPLOAD of the i-th service after service_mgr_renew's first SETCONF was accepted: tor uploads it
 * with PoW parameters (tor's update_all_descriptors_pow_params fills them before any upload of that pass),
 * so PoW off now makes tor clear them and upload once more. Once every such service uploaded, the
 * configured group goes out: the renewal ends in the configured PoW state. */
static void service_renew_uploading(struct service_mgr *m, size_t i)
{
    if (!m->renew_armed || !m->services[i].renew_pow)
        return;
    m->services[i].renew_pow = false;
    if (--m->renew_waiting == 0) {
        log_info("services: new descriptors on their way; PoW back to the configured state");
        service_publish(m);
    }
}

/* Take tor's HiddenService* group (a GETCONF HiddenServiceOptions answer, consumed) as the new list of the
 * tor's own services: the groups of directories that are not ours (GETCONF lists each HiddenServiceDir
 * followed by its options). Ours, also those left by an earlier run, are replaced by what the config says
 * now. Set *foreign_dirs, and each service's in_tor. Return 0, or -1 (OOM). */
static int service_take_foreign(struct service_mgr *m, struct cp_info *all, size_t *foreign_dirs)
{
    struct cp_kv *items = calloc(all->n ? all->n : 1, sizeof(*items));
    size_t n = 0;
    bool skipping = false;
    *foreign_dirs = 0;
    if (!items) {
        cp_info_clear(all);
        return -1;
    }
    for (size_t i = 0; i < m->n; i++)
        m->services[i].in_tor = false;
    for (size_t i = 0; i < all->n; i++) {
        struct cp_kv *kv = &all->items[i];
        if (strcmp(kv->key, "HiddenServiceDir") == 0) {
            struct service *s = kv->value ? service_by_dir(m, kv->value) : NULL;
            skipping = !kv->value || s;
            *foreign_dirs += !skipping;
            if (s && !s->admitted) { /* already in this tor (a reconnect): it stays, out of the window */
                s->admitted = true;
                s->admitted_at = (double)clock_now_ms() / 1e3 - SERVICE_ADMIT_WAIT_S;
            }
            if (s)
                s->in_tor = true;
        }
        if (skipping || !kv->value)
            continue;
        items[n++] = *kv; /* moved: the strings now belong to m->foreign */
        kv->key = kv->value = NULL;
    }
    cp_info_clear(all);
    cp_info_clear(&m->foreign);
    m->foreign.items = items;
    m->foreign.n = n;
    return 0;
}

static void service_foreign_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct service_mgr *m = arg;
    char perr[256];
    (void)err; /* no answer: the connection is gone and tor.c reports why */
    if (!r || m->conn != c)
        return;
    struct cp_info all = {0};
    if (!cp_reply_is_ok(r) || cp_info_parse(r, &all, perr, sizeof(perr)) < 0) {
        log_error("services: cannot read tor's existing HiddenService lines (%s); not publishing so as not "
                  "to remove them", cp_reply_is_ok(r) ? perr : cp_reply_message(r));
        return;
    }
    size_t foreign_dirs;
    if (service_take_foreign(m, &all, &foreign_dirs) < 0) {
        log_error("services: out of memory");
        return;
    }
    m->foreign_known = true;
    if (foreign_dirs)
        log_info("services: keeping %zu service%s this tor already had", foreign_dirs, foreign_dirs == 1 ? "" : "s");
    service_publish(m);
}

/* ---- a tor that lost our services ----
 * tor 0.4.9 re-reads its torrc on SIGHUP or SIGNAL RELOAD (Debian's logrotate reloads the system tor daily)
 * and drops every service added with SETCONF. It then reports CONF_CHANGED with its new HiddenService*
 * group (the whole group, or a bare "HiddenServiceOptions" when empty), followed by "SIGNAL RELOAD".
 * Our own SETCONFs cause CONF_CHANGED too, listing all our directories: such an event needs nothing. Any
 * other CONF_CHANGED of the group, and every reload, is verified with GETCONF HiddenServiceOptions; if one
 * of our directories is missing, the complete group (the tor's own services as tor lists them now, then
 * ours) is sent again. The keys stay where they are, so the addresses do too. No loop: after that SETCONF
 * all our directories are there, and tor sends no CONF_CHANGED for a SETCONF that changes nothing. */

static void service_check_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg);

/* Ask tor for its HiddenService* group, unless a check is already on its way: tor answers in order, so
 * that answer already reflects whatever triggered this one. */
static void service_watch_check(struct service_mgr *m)
{
    char err[256];
    if (!m->conn || !m->foreign_known || m->unpublishing || m->check_pending)
        return;
    static const char *const key = "HiddenServiceOptions";
    char *cmd = cp_cmd_getconf(&key, 1, err, sizeof(err));
    /* The SETCONF count now: a SETCONF of ours sent after this makes the answer stale. */
    m->check_setconfs = m->setconfs;
    if (!cmd || cp_conn_send(m->conn, cmd, service_check_cb, m, err, sizeof(err)) < 0)
        log_warnx("services: cannot ask tor for its HiddenService lines: %s", err);
    else
        m->check_pending = true;
    free(cmd);
}

static void service_check_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct service_mgr *m = arg;
    char perr[256];
    if (!r || m->conn != c) {
        log_debug("services: HiddenService check not answered: %s", err);
        return;
    }
    m->check_pending = false;
    /* A SETCONF of ours was sent meanwhile: this answer predates it (it may list a service that was just
     * removed, which must not be taken for one of the tor's own). That SETCONF set the whole group. */
    if (m->unpublishing || m->setconfs != m->check_setconfs)
        return;
    struct cp_info all = {0};
    if (!cp_reply_is_ok(r) || cp_info_parse(r, &all, perr, sizeof(perr)) < 0) {
        log_warnx("services: cannot read tor's HiddenService lines after a configuration change: %s",
                  cp_reply_is_ok(r) ? perr : cp_reply_message(r));
        return;
    }
    size_t foreign_dirs, dropped = 0;
    if (service_take_foreign(m, &all, &foreign_dirs) < 0) {
        log_error("services: out of memory");
        return;
    }
    bool reloaded = m->reload_seen;
    m->reload_seen = false;
    for (size_t i = 0; i < m->n; i++)
        if (!m->services[i].in_tor && service_in_tor(m, i)) { /* not one we leave out on purpose */
            m->services[i].reapplied++;
            dropped++;
        }
    if (!dropped) {
        log_debug("services: tor still has all %zu of our services (%zu of its own)", m->n, foreign_dirs);
        return;
    }
    if (reloaded)
        log_notice("services: tor reloaded its configuration and dropped %zu service%s; re-applied (keys and "
                   "addresses unchanged%s)", dropped, dropped == 1 ? "" : "s",
                   foreign_dirs ? ", the tor's own services as its torrc now says" : "");
    else
        log_warnx("services: %zu of onionfront's services vanished from tor's configuration (another "
                  "controller's SETCONF?); re-applied", dropped);
    service_publish(m);
}

/* Is every one of our key directories among the HiddenServiceDir lines of `changed`? */
static bool service_all_listed(const struct service_mgr *m, const struct cp_info *changed)
{
    for (size_t i = 0; i < m->n; i++) {
        bool found = !service_in_tor(m, i); /* left out on purpose */
        for (size_t j = 0; j < changed->n && !found; j++)
            found = strcmp(changed->items[j].key, "HiddenServiceDir") == 0 && changed->items[j].value &&
                    service_dir_is(m, i, changed->items[j].value);
        if (!found)
            return false;
    }
    return true;
}

static void service_conf_changed_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct service_mgr *m = arg;
    struct cp_info changed = {0};
    char err[256];
    (void)c;
    if (cp_event_conf_changed_parse(ev, &changed, err, sizeof(err)) < 0) {
        log_debug("services: undecodable CONF_CHANGED event: %s", err);
        return;
    }
    bool hs = false;
    for (size_t i = 0; i < changed.n && !hs; i++)
        hs = strncmp(changed.items[i].key, "HiddenService", strlen("HiddenService")) == 0;
    /* All our directories listed: our own SETCONF (or one that kept ours); nothing is missing. */
    if (hs && !service_all_listed(m, &changed)) {
        log_debug("services: tor's HiddenService lines changed without all of ours; checking");
        service_watch_check(m);
    }
    cp_info_clear(&changed);
}

static void service_signal_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct service_mgr *m = arg;
    char name[32], err[128];
    (void)c;
    if (cp_event_signal_parse(ev, name, sizeof(name), err, sizeof(err)) < 0 || strcmp(name, "RELOAD") != 0)
        return;
    /* CONF_CHANGED came first if the group changed; this also catches a reload that reported none. */
    log_info("services: tor reloaded its configuration (SIGHUP or SIGNAL RELOAD)");
    m->reload_seen = true;
    service_watch_check(m);
}

/* The index of the service with this address, or m->n. */
static size_t service_by_address(const struct service_mgr *m, const char *addr)
{
    const struct service_id *id = service_ids_find(m->ids, addr);
    return id ? (size_t)(id - service_ids_at(m->ids, 0)) : m->n;
}

static void service_hs_desc_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct service_mgr *m = arg;
    struct cp_event_hs_desc e = {0};
    char err[256];
    (void)c;
    if (cp_event_hs_desc_parse(ev, &e, err, sizeof(err)) < 0) {
        log_debug("services: undecodable HS_DESC event: %s", err);
        return;
    }
    size_t i = e.address ? service_by_address(m, e.address) : m->n;
    struct service *s = i < m->n ? &m->services[i] : NULL;
    const struct service_id *id = service_id_at(m, i);
    if (s && e.action == CP_HS_DESC_UPLOAD) {
        s->up_sent++;
        service_renew_uploading(m, i);
    }
    /* A fetch's FAILED (the probe's HSFETCH) says nothing of an upload: it must not free an admission
     * slot nor read as an upload failure. */
    bool upload_failed = e.action == CP_HS_DESC_FAILED && !cp_event_hs_desc_failed_fetch(&e);
    if (s && (e.action == CP_HS_DESC_UPLOADED || upload_failed))
        s->up_answered++;
    if (s && e.action == CP_HS_DESC_UPLOADED) {
        s->uploads++;
        service_ids_note_published(m->ids, i);
        if (!s->uploaded) {
            s->uploaded = true;
            log_info_f(LOG_SERVICE(id->conf->name),
                       "service %s: descriptor uploaded to HSDir $%s~%s, %.1f s after publishing; %s.onion is "
                       "reachable",
                       id->conf->name, e.hsdir_fp, e.hsdir_nick, service_since(&m->published_at), id->address);
        }
    } else if (s && upload_failed) {
        log_debug_f(LOG_SERVICE(id->conf->name), "service %s: descriptor upload to $%s failed: %s", id->conf->name,
                    e.hsdir_fp, e.reason ? e.reason : "unknown reason");
    }
    cp_event_hs_desc_clear(&e);
    /* Slots of the window freed (see SERVICE_ADMIT_WINDOW): hand tor the next services, but not in the
     * middle of a renewal (its last step publishes, and admits, anyway). */
    if (m->conn && m->foreign_known && !m->unpublishing && m->renew_waiting == 0 &&
        service_admit_due(m, (double)clock_now_ms() / 1e3))
        service_publish(m);
}

void service_mgr_attach(struct service_mgr *m, struct cp_conn *conn)
{
    char err[256];
    m->conn = conn;
    m->foreign_known = false;
    m->check_pending = m->reload_seen = m->unpublishing = false;
    m->setconfs = 0;
    cp_conn_subscribe(conn, "HS_DESC", service_hs_desc_cb, m);
    cp_conn_subscribe(conn, "CONF_CHANGED", service_conf_changed_cb, m);
    cp_conn_subscribe(conn, "SIGNAL", service_signal_cb, m);
    static const char *const key = "HiddenServiceOptions";
    char *cmd = cp_cmd_getconf(&key, 1, err, sizeof(err));
    if (!cmd || cp_conn_send(conn, cmd, service_foreign_cb, m, err, sizeof(err)) < 0)
        log_error("services: cannot query tor: %s", err);
    free(cmd);
}

void service_mgr_detach(struct service_mgr *m)
{
    m->conn = NULL;
    m->foreign_known = false;
    m->renew_armed = false; /* the next tor gets the configured group */
    m->renew_waiting = 0;
    for (size_t i = 0; i < m->n; i++)
        m->services[i].renew_pow = false;
    /* The next tor (a restart or reconnect) must upload again before a service counts as reachable,
     * and its first upload is logged again. */
    for (size_t i = 0; i < m->n; i++) {
        m->services[i].uploaded = false;
        m->services[i].admitted = false; /* the next tor is admitted to in steps again */
    }
    m->admit_said = false;
}

struct service_unpublish_ctx {
    void (*done)(void *arg);
    void *arg;
};

static void service_unpublish_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct service_unpublish_ctx *u = arg;
    (void)c;
    if (!r)
        log_debug("services: removal not answered: %s", err);
    else if (!cp_reply_is_ok(r))
        log_warnx("services: tor refused to remove the services: %s", cp_reply_message(r));
    else
        log_info("services: removed from tor");
    u->done(u->arg);
    free(u);
}

void service_mgr_unpublish(struct service_mgr *m, void (*done)(void *arg), void *arg)
{
    char err[256];
    struct service_unpublish_ctx *u = calloc(1, sizeof(*u));
    char *cmd = NULL;
    /* Without the tor's own services known nothing of ours was handed over on this connection, and a
     * SETCONF would remove theirs. */
    if (!m->conn || !m->foreign_known || !u || !(cmd = service_setconf_cmd(m, SERVICE_GROUP_NONE, SERVICE_SKIP_NONE, err, sizeof(err)))) {
        free(u);
        done(arg);
        return;
    }
    u->done = done;
    u->arg = arg;
    m->unpublishing = true; /* the CONF_CHANGED this causes must not bring them back */
    m->setconfs++;
    if (service_send_setconf(m, cmd, service_unpublish_cb, u, err, sizeof(err)) < 0) {
        free(u);
        done(arg);
    }
    free(cmd);
}

void service_mgr_set_instance(struct service_mgr *m, unsigned instance)
{
    m->instance = instance;
}

void service_mgr_set_mode(struct service_mgr *m, enum service_mode mode)
{
    m->mode = mode;
}

int service_mgr_republish(struct service_mgr *m)
{
    if (!m->conn || !m->foreign_known || m->unpublishing)
        return -1;
    service_publish(m);
    return 0;
}

/* Make tor forget the services (and their descriptors), then build them anew: new introduction points,
 * so their introduction and rendezvous circuits are rebuilt. Return 0, or -1 if nothing was sent. */
static int service_readd(struct service_mgr *m)
{
    char err[256];
    char *cmd = service_setconf_cmd(m, SERVICE_GROUP_NONE, SERVICE_SKIP_NONE, err, sizeof(err));
    if (!cmd)
        return -1;
    /* Two SETCONFs in a row. The CONF_CHANGED of the first one triggers a check, which tor answers after
     * the second. */
    m->setconfs++;
    int rc = service_send_setconf(m, cmd, service_setconf_cb, m, err, sizeof(err));
    free(cmd);
    if (rc < 0)
        return -1;
    service_publish(m);
    return 0;
}

int service_mgr_renew_one(struct service_mgr *m, const char *address)
{
    char err[256];
    char *cmd = NULL;
    size_t i = address ? service_by_address(m, address) : m->n;
    if (i >= m->n || !service_in_tor(m, i) || !m->conn || !m->foreign_known || m->unpublishing)
        return -1;
    const struct service_conf *sc = service_id_at(m, i)->conf;
    if (sc->dos.pow_enabled) {
        /* TOR-FACTS: with PoW on, a SETCONF of the unchanged group makes tor re-seed the puzzle and upload
         * new descriptors of this service within a second, keeping its introduction points. It does the
         * same for the other PoW services on this tor (and nothing to the rest). */
        log_info_f(LOG_SERVICE(sc->name), "services: re-publishing %s (PoW on: one SETCONF of the group)", sc->name);
        service_publish(m);
        return 0;
    }
    /* Without it, then with it: tor drops the service (its descriptors and introduction circuits) and
     * builds it anew with the same key; only its lines change, so the others keep their descriptors. */
    if (!(cmd = service_setconf_cmd(m, SERVICE_GROUP_HANDED, i, err, sizeof(err))))
        return -1;
    m->setconfs++;
    int rc = service_send_setconf(m, cmd, service_setconf_cb, m, err, sizeof(err));
    free(cmd);
    if (rc < 0)
        return -1;
    log_info_f(LOG_SERVICE(sc->name), "services: re-publishing %s alone (removed and added again)", sc->name);
    service_publish(m);
    return 0;
}

int service_mgr_renew(struct service_mgr *m, bool pow_safe)
{
    if (!m->conn || !m->foreign_known || m->unpublishing)
        return -1;
    if (!pow_safe || m->conf->tor.renewal == TOR_RENEWAL_READD)
        return service_readd(m);
    return service_send(m, true);
}

size_t service_mgr_count(const struct service_mgr *m)
{
    return m->n;
}

const char *service_mgr_address(const struct service_mgr *m, size_t i)
{
    return i < m->n ? service_id_at(m, i)->address : "";
}

const char *service_mgr_name(const struct service_mgr *m, size_t i)
{
    return i < m->n ? service_id_at(m, i)->conf->name : "";
}

bool service_mgr_uploaded(const struct service_mgr *m, size_t i)
{
    return i < m->n && m->services[i].uploaded;
}

/* One port as JSON: {"virtual", "targets": [address as written ...]}. */
static json_t *service_port_json(const struct port_conf *p)
{
    json_t *targets = json_array();
    for (size_t k = 0; targets && k < p->n_backends; k++)
        if (json_array_append_new(targets, json_string(p->backends[k].addr.text)) < 0) {
            json_decref(targets);
            return NULL;
        }
    return targets ? json_pack("{s:i, s:o}", "virtual", (int)p->virtual_port, "targets", targets) : NULL;
}

json_t *service_mgr_to_json(const struct service_mgr *m)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < m->n; i++) {
        const struct service *s = &m->services[i];
        const struct service_id *id = service_id_at(m, i);
        json_t *ports = json_array();
        for (size_t j = 0; ports && j < id->conf->n_ports; j++)
            if (json_array_append_new(ports, service_port_json(&id->conf->ports[j])) < 0) {
                json_decref(ports);
                ports = NULL;
            }
        char address[80];
        snprintf(address, sizeof(address), "%s.onion", id->address);
        json_t *o = ports ? json_pack("{s:s, s:s, s:o, s:o, s:b, s:I, s:I}", "name", id->conf->name, "mode",
                                      service_mode_str(id->conf->mode), "address",
                                      id->address[0] ? json_string(address) : json_null(), "ports", ports,
                                      "uploaded", s->uploaded, "uploads", (json_int_t)s->uploads,
                                      "reapplied", (json_int_t)s->reapplied)
                          : NULL;
        if (o && service_for_tor(m, i))
            json_object_set_new(o, "handed", json_boolean(s->admitted)); /* false: waits for the window */
        if (o && service_id_refusal(id))
            json_object_set_new(o, "refused", json_string(service_id_refusal(id)));
        if (json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

int service_mgr_metrics(const struct service_mgr *m, struct metrics *out)
{
    size_t uploaded = 0, hosted = 0;
    for (size_t i = 0; i < m->n; i++) {
        uploaded += m->services[i].uploaded;
        hosted += service_mgr_hosts(m, i);
    }
    if (metrics_family(out, "onionfront_services", METRICS_GAUGE,
                       "Configured onion services by state: uploaded = tor confirmed a descriptor upload, "
                       "pending = not yet.") < 0 ||
        metrics_sample(out, "onionfront_services", (const char *const[]){"state", "uploaded", NULL},
                       (double)uploaded) < 0 ||
        metrics_sample(out, "onionfront_services", (const char *const[]){"state", "pending", NULL},
                       (double)(hosted - uploaded)) < 0 ||
        metrics_family(out, "onionfront_service_up", METRICS_GAUGE,
                       "1 once tor confirmed a descriptor upload for the service, else 0.") < 0)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (service_mgr_hosts(m, i) && metrics_sample(out, "onionfront_service_up",
                           (const char *const[]){"service", service_id_at(m, i)->conf->name, NULL},
                           m->services[i].uploaded ? 1 : 0) < 0)
            return -1;
    if (metrics_family(out, "onionfront_service_reapplied_total", METRICS_COUNTER,
                       "Times tor dropped the service from its configuration (a reload of its torrc) and "
                       "onionfront handed it back.") < 0)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (service_mgr_hosts(m, i) && metrics_sample(out, "onionfront_service_reapplied_total",
                           (const char *const[]){"service", service_id_at(m, i)->conf->name, NULL},
                           (double)m->services[i].reapplied) < 0)
            return -1;
    return 0;
}
