/* service.c — keys, addresses and SETCONF publication of onionfront's services (see service.h). */
#include "sidecar/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/addrbook.h"
#include "sidecar/config.h"
#include "sidecar/keys.h"
#include "sidecar/log.h"
#include "sidecar/metrics.h"
#include "sidecar/proxy.h"

struct service {
    const struct service_conf *conf; /* borrowed from the current config */
    char address[64];                /* without ".onion"; "" while refused */
    char refused[2048];              /* why the service is not handed to tor (addrbook.h), or "" */
    bool uploaded;                   /* first HS_DESC UPLOADED seen */
    bool publication_recorded;       /* its first upload is in the address record */
    unsigned uploads;
    bool in_tor;                     /* listed in tor's last GETCONF HiddenServiceOptions answer */
    unsigned reapplied;              /* times tor dropped it (a reload) and it was handed back */
};

struct service_mgr {
    const struct config *conf;
    struct service *services;
    size_t n;
    struct cp_conn *conn;
    struct cp_info foreign; /* the attached tor's own HiddenService* lines, kept in every SETCONF */
    bool foreign_known;     /* `foreign` is this connection's answer: until then no SETCONF may be sent,
                               since it would replace (remove) the tor's own services */
    struct timespec published_at;
    /* Watching for a tor that lost our services (a reload re-reads its torrc and drops every SETCONF'd
     * service; see service_watch_*). */
    unsigned long setconfs; /* SETCONFs sent on this connection: an answer to an older check is stale */
    bool check_pending;     /* a GETCONF of the check is on its way; later triggers are covered by it */
    bool reload_seen;       /* tor reported SIGNAL RELOAD since the last check */
    bool unpublishing;      /* our services were removed on purpose: never re-apply them */
    unsigned long check_setconfs; /* `setconfs` when the pending check was sent */
};

static double service_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

struct service_mgr *service_mgr_new(const struct config *conf)
{
    struct service_mgr *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->conf = conf;
    m->n = conf->n_services;
    m->services = calloc(m->n ? m->n : 1, sizeof(*m->services));
    if (!m->services) {
        free(m);
        return NULL;
    }
    for (size_t i = 0; i < m->n; i++)
        m->services[i].conf = &conf->services[i];
    return m;
}

/* Is `s` handed to tor? */
static bool service_in_tor(const struct service *s)
{
    return !s->refused[0];
}

void service_mgr_free(struct service_mgr *m)
{
    if (!m)
        return;
    cp_info_clear(&m->foreign);
    free(m->services);
    free(m);
}

/* The one rule for a service's key, against the address record `book` (addrbook.h): a service the record
 * knows must have the recorded key (loaded, never created); a new one gets its key loaded or created,
 * and recorded (*book_changed set). The secret is wiped at once: tor reads the key files itself.
 * Return 1 with the address in `address` (KEYS_ADDRESS_SIZE bytes), 0 if the service is refused (the
 * reason in `refusal`), or -1 with an error naming the service (a new service's key cannot be made). */
static int service_key_check(struct addrbook *book, const struct service_conf *sc, char *address,
                             bool *book_changed, char *refusal, size_t refusal_len, char *err, size_t errlen)
{
    struct onion_key key;
    bool created = false;
    char kerr[768];
    if (!addrbook_address(book, sc->name)) {
        if (keys_load_or_create(sc->key_dir, &key, &created, kerr, sizeof(kerr)) < 0) {
            snprintf(err, errlen, "service %s: %s", sc->name, kerr);
            return -1;
        }
        snprintf(address, KEYS_ADDRESS_SIZE, "%s", key.address);
        onion_key_clear(&key);
        if (addrbook_note_key(book, sc->name, address, created ? ADDRBOOK_CREATED : ADDRBOOK_LOADED, time(NULL),
                              err, errlen) < 0)
            return -1;
        *book_changed = true;
        if (created)
            log_notice_f(LOG_SERVICE(sc->name), "service %s: created a new key, address %s.onion (a new service; recorded in %s)", sc->name,
                       address, addrbook_path(book));
        else
            log_notice_f(LOG_SERVICE(sc->name), "service %s: found its key, address %s.onion (recorded in %s)", sc->name, address,
                       addrbook_path(book));
        return 1;
    }
    int rc = keys_load(sc->key_dir, &key, kerr, sizeof(kerr));
    enum addrbook_verdict v =
        addrbook_check(book, sc->name, sc->key_dir, rc == 0 ? key.address : NULL, kerr, refusal, refusal_len);
    if (v == ADDRBOOK_SAME)
        snprintf(address, KEYS_ADDRESS_SIZE, "%s", key.address);
    onion_key_clear(&key);
    return v == ADDRBOOK_SAME ? 1 : 0;
}

/* Save `book` if `changed`. Return 0, or -1 with a message. */
static int service_book_save(const struct addrbook *book, bool changed, char *err, size_t errlen)
{
    char serr[512];
    if (!changed || addrbook_save(book, serr, sizeof(serr)) == 0)
        return 0;
    snprintf(err, errlen, "cannot record the services' addresses: %s", serr);
    return -1;
}

int service_key_prepare(const struct config *conf, const struct service_conf *sc, char *err, size_t errlen)
{
    char address[KEYS_ADDRESS_SIZE], refusal[2048];
    bool changed = false;
    struct addrbook *book = addrbook_load(conf->state_dir, err, errlen);
    if (!book)
        return -1;
    int rc = service_key_check(book, sc, address, &changed, refusal, sizeof(refusal), err, errlen);
    if (rc >= 0 && service_book_save(book, changed, err, errlen) < 0)
        rc = -1;
    addrbook_free(book);
    return rc;
}

/* Check `s`'s key against `book` and set its address, or its refusal (logged). Return 0 (also when
 * refused), or -1 with an error. */
static int service_load_key(struct service *s, struct addrbook *book, bool *book_changed, char *err, size_t errlen)
{
    s->refused[0] = '\0';
    int rc = service_key_check(book, s->conf, s->address, book_changed, s->refused, sizeof(s->refused), err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        s->address[0] = '\0';
        log_error_f(LOG_SERVICE(s->conf->name), "%s", s->refused);
    }
    return 0;
}

int service_mgr_load_keys(struct service_mgr *m, char *err, size_t errlen)
{
    bool changed = false;
    int rc = 0;
    struct addrbook *book = addrbook_load(m->conf->state_dir, err, errlen);
    if (!book)
        return -1;
    for (size_t i = 0; i < m->n && rc == 0; i++) {
        struct service *s = &m->services[i];
        rc = service_load_key(s, book, &changed, err, errlen);
        if (rc == 0 && service_in_tor(s))
            log_info_f(LOG_SERVICE(s->conf->name), "service %s: loaded its key, address %s.onion", s->conf->name, s->address);
    }
    if (service_book_save(book, changed, err, errlen) < 0)
        rc = -1;
    addrbook_free(book);
    return rc;
}

static void service_publish(struct service_mgr *m);

int service_mgr_reconfigure(struct service_mgr *m, const struct config *conf, bool *tor_changed, char *err,
                            size_t errlen)
{
    size_t n = conf->n_services;
    struct service *next = calloc(n ? n : 1, sizeof(*next));
    bool changed = false, book_changed = false;
    struct addrbook *book = next ? addrbook_load(conf->state_dir, err, errlen) : NULL;
    if (!next || !book) {
        if (!next)
            snprintf(err, errlen, "out of memory");
        free(next);
        return -1;
    }
    /* Every service's key is checked again, kept ones too: a key directory may have gone since, or a key
     * been replaced on purpose (onionfront new-key), and tor re-reads every key on a SETCONF. */
    for (size_t i = 0; i < n; i++) {
        const struct service_conf *sc = &conf->services[i];
        const struct service *old = NULL;
        for (size_t j = 0; j < m->n; j++)
            if (strcmp(m->services[j].conf->name, sc->name) == 0)
                old = &m->services[j];
        next[i].conf = sc;
        if (service_load_key(&next[i], book, &book_changed, err, errlen) < 0) {
            free(next);
            addrbook_free(book);
            return -1;
        }
        bool was_in_tor = old && service_in_tor(old), in_tor = service_in_tor(&next[i]);
        if (was_in_tor && in_tor && strcmp(old->conf->key_dir, sc->key_dir) == 0 &&
            strcmp(old->address, next[i].address) == 0) {
            next[i].uploaded = old->uploaded; /* the same service in tor: keeps its upload state */
            next[i].uploads = old->uploads;
            next[i].publication_recorded = old->publication_recorded;
            if (!service_conf_tor_equal(old->conf, sc))
                changed = true;
        } else {
            changed = changed || was_in_tor || in_tor;
            if (in_tor)
                log_info_f(LOG_SERVICE(sc->name), "service %s: loaded its key, address %s.onion", sc->name, next[i].address);
        }
    }
    if (service_book_save(book, book_changed, err, errlen) < 0) {
        free(next);
        addrbook_free(book);
        return -1;
    }
    addrbook_free(book);
    for (size_t j = 0; j < m->n; j++) {
        if (!config_find_service(conf, m->services[j].conf->name)) {
            changed = changed || service_in_tor(&m->services[j]);
            log_info_f(LOG_SERVICE(m->services[j].conf->name), "service %s: removed (%s.onion)",
                       m->services[j].conf->name, m->services[j].address);
        }
    }
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
    if (proxy_socket_path(c->run_dir, sc->name, p->virtual_port, path, sizeof(path)) < 0)
        return -1;
    if (!config_is_plain_path(path)) /* config.c holds run_dir to this rule; service names are plainer */
        return -1;
    int n = snprintf(out, len, "%u unix:%s", p->virtual_port, path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Our service whose key directory is `dir`, or NULL. */
static struct service *service_by_dir(struct service_mgr *m, const char *dir)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->services[i].conf->key_dir, dir) == 0)
            return &m->services[i];
    return NULL;
}

/* Build the SETCONF that sets the complete HiddenService* group: the attached tor's own services first,
 * then ours (all of them, or none with `ours` false). Returns a new command, or NULL with err. */
static char *service_setconf_cmd(const struct service_mgr *m, bool ours, char *err, size_t errlen)
{
    size_t cap = m->foreign.n + 1;
    for (size_t i = 0; ours && i < m->n; i++)
        cap += 3 + m->services[i].conf->n_ports; /* Dir, one Port per virtual port, MaxStreams, ExportCircuitID */
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
        const struct service_conf *sc = m->services[i].conf;
        if (!service_in_tor(&m->services[i]))
            continue; /* refused: tor would make it a new key */
        items[n].key = "HiddenServiceDir";
        items[n].value = sc->key_dir;
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
        if (sc->max_streams > 0) {
            char v[16];
            snprintf(v, sizeof(v), "%u", sc->max_streams);
            if (!(owned[n_owned] = strdup(v))) {
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            items[n].key = "HiddenServiceMaxStreams";
            items[n].value = owned[n_owned++];
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
    log_info("services: %zu service%s handed to tor", m->n, m->n == 1 ? "" : "s");
}

/* Just before `s` is handed to tor (again: a restarted tor, a reload): its key directory must still
 * hold the key of the address onionfront publishes, since tor creates a new key where it finds none.
 * Otherwise refuse the service (logged) until the next reload checks it against the record again. */
static void service_verify_key(struct service *s)
{
    struct onion_key key;
    char kerr[768];
    if (!service_in_tor(s))
        return;
    int rc = keys_load(s->conf->key_dir, &key, kerr, sizeof(kerr));
    if (rc == 0 && strcmp(key.address, s->address) == 0) {
        onion_key_clear(&key);
        return;
    }
    if (rc == 0)
        snprintf(s->refused, sizeof(s->refused),
                 "service %s: REFUSED: %s/%s is now the key of %s.onion, not of %s.onion that onionfront publishes. "
                 "If it was replaced on purpose (onionfront new-key or import-key), reload onionfront to publish "
                 "it; otherwise put the key of %s.onion back and reload. The other services keep running",
                 s->conf->name, s->conf->key_dir, KEYS_SECRET_FILE, key.address, s->address, s->address);
    else
        snprintf(s->refused, sizeof(s->refused),
                 "service %s: REFUSED: its key is missing or unusable now (%s); it was published as %s.onion. "
                 "Restore %s/%s (mount the volume it is on, or copy back a backup; onionfront import-key %s FILE) "
                 "and reload onionfront. The other services keep running",
                 s->conf->name, kerr, s->address, s->conf->key_dir, KEYS_SECRET_FILE, s->conf->name);
    onion_key_clear(&key);
    log_error_f(LOG_SERVICE(s->conf->name), "%s", s->refused);
    s->address[0] = '\0';
    s->uploaded = false;
}

static void service_publish(struct service_mgr *m)
{
    char err[512];
    for (size_t i = 0; i < m->n; i++)
        service_verify_key(&m->services[i]);
    char *cmd = service_setconf_cmd(m, true, err, sizeof(err));
    clock_gettime(CLOCK_MONOTONIC, &m->published_at);
    m->setconfs++;
    if (!cmd || cp_conn_send(m->conn, cmd, service_setconf_cb, m, err, sizeof(err)) < 0)
        log_error("services: cannot publish: %s", err);
    free(cmd);
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
        if (!m->services[i].in_tor) {
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
        bool found = false;
        for (size_t j = 0; j < changed->n && !found; j++)
            found = strcmp(changed->items[j].key, "HiddenServiceDir") == 0 && changed->items[j].value &&
                    strcmp(changed->items[j].value, m->services[i].conf->key_dir) == 0;
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

static struct service *service_by_address(struct service_mgr *m, const char *addr)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->services[i].address, addr) == 0)
            return &m->services[i];
    return NULL;
}

/* Put the first confirmed upload of `s`'s address into the address record (once per address). */
static void service_record_publication(const struct service_mgr *m, const struct service *s)
{
    char err[768];
    struct addrbook *book = addrbook_load(m->conf->state_dir, err, sizeof(err));
    if (!book || (addrbook_note_published(book, s->conf->name, s->address, time(NULL)) == 1 &&
                  service_book_save(book, true, err, sizeof(err)) < 0))
        log_error("service %s: cannot record its publication: %s", s->conf->name, err);
    addrbook_free(book);
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
    struct service *s = e.address ? service_by_address(m, e.address) : NULL;
    if (s && e.action == CP_HS_DESC_UPLOADED) {
        s->uploads++;
        if (!s->publication_recorded) {
            s->publication_recorded = true;
            service_record_publication(m, s);
        }
        if (!s->uploaded) {
            s->uploaded = true;
            log_info_f(LOG_SERVICE(s->conf->name),
                       "service %s: descriptor uploaded to HSDir $%s~%s, %.1f s after publishing; %s.onion is "
                       "reachable",
                       s->conf->name, e.hsdir_fp, e.hsdir_nick, service_since(&m->published_at), s->address);
        }
    } else if (s && e.action == CP_HS_DESC_FAILED) {
        log_debug_f(LOG_SERVICE(s->conf->name), "service %s: descriptor upload to $%s failed: %s", s->conf->name,
                    e.hsdir_fp, e.reason ? e.reason : "unknown reason");
    }
    cp_event_hs_desc_clear(&e);
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
    /* The next tor (a restart or reconnect) must upload again before a service counts as reachable,
     * and its first upload is logged again. */
    for (size_t i = 0; i < m->n; i++)
        m->services[i].uploaded = false;
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
    if (!m->conn || !m->foreign_known || !u || !(cmd = service_setconf_cmd(m, false, err, sizeof(err)))) {
        free(u);
        done(arg);
        return;
    }
    u->done = done;
    u->arg = arg;
    m->unpublishing = true; /* the CONF_CHANGED this causes must not bring them back */
    m->setconfs++;
    if (cp_conn_send(m->conn, cmd, service_unpublish_cb, u, err, sizeof(err)) < 0) {
        free(u);
        done(arg);
    }
    free(cmd);
}

size_t service_mgr_count(const struct service_mgr *m)
{
    return m->n;
}

const char *service_mgr_address(const struct service_mgr *m, size_t i)
{
    return i < m->n ? m->services[i].address : "";
}

const char *service_mgr_name(const struct service_mgr *m, size_t i)
{
    return i < m->n ? m->services[i].conf->name : "";
}

const char *service_mgr_refusal(const struct service_mgr *m, size_t i)
{
    return i < m->n && !service_in_tor(&m->services[i]) ? m->services[i].refused : NULL;
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
        json_t *ports = json_array();
        for (size_t j = 0; ports && j < s->conf->n_ports; j++)
            if (json_array_append_new(ports, service_port_json(&s->conf->ports[j])) < 0) {
                json_decref(ports);
                ports = NULL;
            }
        char address[80];
        snprintf(address, sizeof(address), "%s.onion", s->address);
        json_t *o = ports ? json_pack("{s:s, s:o, s:o, s:b, s:I, s:I}", "name", s->conf->name, "address",
                                      s->address[0] ? json_string(address) : json_null(), "ports", ports,
                                      "uploaded", s->uploaded, "uploads", (json_int_t)s->uploads,
                                      "reapplied", (json_int_t)s->reapplied)
                          : NULL;
        if (o && !service_in_tor(s))
            json_object_set_new(o, "refused", json_string(s->refused));
        if (json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

int service_mgr_metrics(const struct service_mgr *m, struct metrics *out)
{
    size_t uploaded = 0;
    for (size_t i = 0; i < m->n; i++)
        uploaded += m->services[i].uploaded;
    if (metrics_family(out, "onionfront_services", METRICS_GAUGE,
                       "Configured onion services by state: uploaded = tor confirmed a descriptor upload, "
                       "pending = not yet.") < 0 ||
        metrics_sample(out, "onionfront_services", (const char *const[]){"state", "uploaded", NULL},
                       (double)uploaded) < 0 ||
        metrics_sample(out, "onionfront_services", (const char *const[]){"state", "pending", NULL},
                       (double)(m->n - uploaded)) < 0 ||
        metrics_family(out, "onionfront_service_up", METRICS_GAUGE,
                       "1 once tor confirmed a descriptor upload for the service, else 0.") < 0)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (metrics_sample(out, "onionfront_service_up",
                           (const char *const[]){"service", m->services[i].conf->name, NULL},
                           m->services[i].uploaded ? 1 : 0) < 0)
            return -1;
    if (metrics_family(out, "onionfront_service_reapplied_total", METRICS_COUNTER,
                       "Times tor dropped the service from its configuration (a reload of its torrc) and "
                       "onionfront handed it back.") < 0)
        return -1;
    for (size_t i = 0; i < m->n; i++)
        if (metrics_sample(out, "onionfront_service_reapplied_total",
                           (const char *const[]){"service", m->services[i].conf->name, NULL},
                           (double)m->services[i].reapplied) < 0)
            return -1;
    return 0;
}
