/* service_id.c — each service's name, key, address and refusal, kept once (see service_id.h). */
#include "sidecar/identity/service_id.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sidecar/identity/addrbook.h"
#include "sidecar/identity/clientauth.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/identity/keys.h"
#include "sidecar/core/log.h"
#include "sidecar/identity/probeauth.h"

struct service_ids {
    const struct config *conf; /* borrowed: state_dir for the address record */
    struct service_id *ids;
    size_t n;
};

/* Fill `ids` from `conf`, addresses empty. */
static struct service_id *service_ids_of(const struct config *conf)
{
    struct service_id *ids = calloc(conf->n_services ? conf->n_services : 1, sizeof(*ids));
    for (size_t i = 0; ids && i < conf->n_services; i++)
        ids[i].conf = &conf->services[i];
    return ids;
}

struct service_ids *service_ids_new(const struct config *conf)
{
    struct service_ids *s = calloc(1, sizeof(*s));
    if (!s || !(s->ids = service_ids_of(conf))) {
        free(s);
        return NULL;
    }
    s->conf = conf;
    s->n = conf->n_services;
    return s;
}

void service_ids_free(struct service_ids *s)
{
    if (!s)
        return;
    free(s->ids);
    free(s);
}

/* The mode rule: a key never moves between modes. Is `sc`'s recorded address of another mode than `sc`
 * (the record says which mode each address was given to)? Then put the refusal, naming the service and
 * what to do (a new key), into `refusal` and return true. */
static bool service_id_mode_changed(const struct addrbook *book, const struct service_conf *sc, char *refusal,
                                    size_t refusal_len)
{
    enum service_mode was = addrbook_mode(book, sc->name);
    if (was == sc->mode)
        return false;
    snprintf(refusal, refusal_len,
             "service %s: REFUSED: its mode changed from %s to %s, but %s.onion has been %s (recorded "
             "in %s), and a key never moves between modes: %s. To make %s %s, give it a new key and address on "
             "purpose: keep \"mode\": \"%s\" in the config, run onionfront new-key %s, then reload (or start)",
             sc->name, service_mode_str(was), service_mode_str(sc->mode), addrbook_address(book, sc->name),
             was == SERVICE_MODE_SINGLE ? "a single onion service" : "an anonymous service", addrbook_path(book),
             was == SERVICE_MODE_SINGLE
                 ? "a single onion's key is tied to this server's location, so it must never be an anonymous service"
                 : "an anonymous service's key must never serve a single onion, which would tie it to this server's "
                   "location",
             sc->name, service_mode_str(sc->mode), service_mode_str(sc->mode), sc->name);
    return true;
}

/* The one rule for a service's key, against the address record `book` (addrbook.h): a service the record
 * knows must have the recorded key (loaded, never created); a new one gets its key loaded or created,
 * and recorded (*book_changed set). The secret is wiped at once: tor reads the key files itself. With
 * `dry`, the same verdict without acting on it: keys are only looked at (keys_inspect_mode), nothing is
 * created, marked, recorded or logged.
 * Return 1 with the address in `address` (ONION_ADDRESS_SIZE bytes; dry: "" for a key still to be made), 0
 * if the service is refused (the reason in `refusal`), or -1 with an error naming the service (a new
 * service's key cannot be made). */
static int service_id_key_only(struct addrbook *book, const struct service_conf *sc, bool dry, char *address,
                               bool *book_changed, bool *mode_refused, char *refusal, size_t refusal_len, char *err,
                               size_t errlen)
{
    struct onion_key key = {0};
    bool created = false;
    char kerr[768];
    if (!addrbook_address(book, sc->name)) {
        address[0] = '\0';
        if (dry ? keys_inspect_mode(sc->key_dir, sc->mode, address, kerr, sizeof(kerr)) < 0
                : keys_load_or_create_mode(sc->key_dir, sc->mode, &key, &created, kerr, sizeof(kerr)) < 0) {
            snprintf(err, errlen, "service %s: %s", sc->name, kerr);
            return -1;
        }
        if (dry)
            return 1;
        snprintf(address, ONION_ADDRESS_SIZE, "%s", key.address);
        onion_key_clear(&key);
        if (addrbook_note_key(book, sc->name, address, created ? ADDRBOOK_CREATED : ADDRBOOK_LOADED, sc->mode,
                              time(NULL), err, errlen) < 0)
            return -1;
        *book_changed = true;
        if (created)
            log_notice_f(LOG_SERVICE(sc->name),
                         "service %s: created a new key, address %s.onion (a new service; recorded in %s)", sc->name,
                         address, addrbook_path(book));
        else
            log_notice_f(LOG_SERVICE(sc->name), "service %s: found its key, address %s.onion (recorded in %s)",
                         sc->name, address, addrbook_path(book));
        return 1;
    }
    if ((*mode_refused = service_id_mode_changed(book, sc, refusal, refusal_len)))
        return 0;
    int rc = dry ? (keys_inspect_mode(sc->key_dir, sc->mode, key.address, kerr, sizeof(kerr)) == 1 ? 0 : -1)
                 : keys_load_mode(sc->key_dir, sc->mode, &key, kerr, sizeof(kerr));
    enum addrbook_verdict v =
        addrbook_check(book, sc->name, sc->key_dir, rc == 0 ? key.address : NULL, kerr, refusal, refusal_len);
    if (v == ADDRBOOK_SAME)
        snprintf(address, ONION_ADDRESS_SIZE, "%s", key.address);
    onion_key_clear(&key);
    return v == ADDRBOOK_SAME ? 1 : 0;
}

/* The key rule above (*mode_refused: refused by the mode rule), then the service's client authorization files (clientauth.h): a service whose
 * authorized_clients directory cannot be brought in line, or holds a file onionfront did not write, is
 * refused, since tor would ignore a malformed file and might publish it without authorization. */
static int service_id_key_check(const struct config *conf, struct addrbook *book, const struct service_conf *sc,
                                char *address, bool *book_changed, bool *mode_refused, char *refusal,
                                size_t refusal_len, char *err, size_t errlen)
{
    char cerr[1024];
    struct client_auth_conf pbuf;
    const struct client_auth_conf *probe = NULL;
    *mode_refused = false;
    int rc = service_id_key_only(book, sc, false, address, book_changed, mode_refused, refusal, refusal_len, err,
                                 errlen);
    int arc = rc == 1 ? probeauth_for_service(conf, sc, true, &pbuf, &probe, cerr, sizeof(cerr)) : 0;
    if (rc == 1 && arc == 0)
        arc = clientauth_sync_dir(sc, sc->key_dir, probe, cerr, sizeof(cerr));
    if (arc < 0) {
        snprintf(refusal, refusal_len, "service %s: REFUSED: client authorization: %s. The other services keep "
                 "running", sc->name, cerr);
        return 0;
    }
    if (arc == 1)
        log_notice_f(LOG_SERVICE(sc->name), "service %s: client authorization removed on purpose "
                     "(drop_client_auth): the service is public now", sc->name);
    return rc;
}

/* Save `book` if `changed`. Return 0, or -1 with a message. */
static int service_ids_book_save(const struct addrbook *book, bool changed, char *err, size_t errlen)
{
    char serr[512];
    if (!changed || addrbook_save(book, serr, sizeof(serr)) == 0)
        return 0;
    snprintf(err, errlen, "cannot record the services' addresses: %s", serr);
    return -1;
}

int service_id_prepare_key(const struct config *conf, const struct service_conf *sc, char *err, size_t errlen)
{
    char address[ONION_ADDRESS_SIZE], refusal[2048];
    bool changed = false, mode_refused;
    struct addrbook *book = addrbook_load(conf->state_dir, err, errlen);
    if (!book)
        return -1;
    int rc = service_id_key_check(conf, book, sc, address, &changed, &mode_refused, refusal, sizeof(refusal), err, errlen);
    if (rc >= 0 && service_ids_book_save(book, changed, err, errlen) < 0)
        rc = -1;
    addrbook_free(book);
    return rc;
}

int service_id_check_key(const struct config *conf, const struct service_conf *sc, char *why, size_t whylen)
{
    char address[ONION_ADDRESS_SIZE];
    bool changed = false, mode_refused;
    struct addrbook *book = addrbook_load(conf->state_dir, why, whylen);
    if (!book)
        return -1;
    int rc = service_id_key_only(book, sc, true, address, &changed, &mode_refused, why, whylen, why, whylen);
    addrbook_free(book);
    return rc;
}

/* Check `id`'s key against `book` and set its address, or its refusal (logged). On a `reload`, a service
 * whose mode changed is an error instead (the whole reload is refused: the running config stays). Return
 * 0 (also when refused), or -1 with an error. */
static int service_id_load_key(const struct config *conf, struct service_id *id, struct addrbook *book,
                               bool *book_changed, bool reload, char *err, size_t errlen)
{
    bool mode_refused;
    id->refused[0] = '\0';
    int rc = service_id_key_check(conf, book, id->conf, id->address, book_changed, &mode_refused, id->refused,
                                  sizeof(id->refused), err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0 && reload && mode_refused) {
        snprintf(err, errlen, "%s", id->refused);
        return -1;
    }
    if (rc == 0) {
        id->address[0] = '\0';
        log_error_f(LOG_SERVICE(id->conf->name), "%s", id->refused);
    }
    return 0;
}

/* Check the keys of `ids` (`n`, of `conf`) against the record; kept[i] (if `kept`) says the i-th had the
 * address before. All or nothing. Return 0, or -1 with a message. */
static int service_ids_check_all(const struct config *conf, struct service_id *ids, size_t n, const bool *kept,
                                 char *err, size_t errlen)
{
    bool changed = false;
    int rc = 0;
    struct addrbook *book = addrbook_load(conf->state_dir, err, errlen);
    if (!book)
        return -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct service_id *id = &ids[i];
        char before[ONION_ADDRESS_SIZE];
        snprintf(before, sizeof(before), "%s", id->address);
        rc = service_id_load_key(conf, id, book, &changed, kept != NULL, err, errlen);
        bool same = kept && kept[i] && strcmp(before, id->address) == 0;
        if (rc == 0 && !id->refused[0] && !same)
            log_info_f(LOG_SERVICE(id->conf->name), "service %s: loaded its key, address %s.onion", id->conf->name,
                       id->address);
    }
    if (rc == 0 && service_ids_book_save(book, changed, err, errlen) < 0)
        rc = -1;
    addrbook_free(book);
    return rc;
}

int service_ids_load_keys(struct service_ids *s, char *err, size_t errlen)
{
    return service_ids_check_all(s->conf, s->ids, s->n, NULL, err, errlen);
}

int service_ids_start(struct service_ids *s, char *err, size_t errlen)
{
    char keys_dir[PATH_MAX];
    if (snprintf(keys_dir, sizeof(keys_dir), "%s/keys", s->conf->state_dir) >= (int)sizeof(keys_dir)) {
        snprintf(err, errlen, "state_dir is too long");
        return -1;
    }
    if (fs_ensure_private_dir(s->conf->state_dir, NULL, err, errlen) < 0 ||
        fs_ensure_private_dir(keys_dir, NULL, err, errlen) < 0)
        return -1;
    return service_ids_load_keys(s, err, errlen);
}

int service_ids_reconfigure(struct service_ids *s, const struct config *conf, char *err, size_t errlen)
{
    size_t n = conf->n_services;
    struct service_id *next = service_ids_of(conf);
    bool *kept = calloc(n ? n : 1, sizeof(*kept));
    if (!next || !kept) {
        free(next);
        free(kept);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Every service's key is checked again, kept ones too: a key directory may have gone since, or a key
     * been replaced on purpose (onionfront new-key), and tor re-reads every key on a SETCONF. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < s->n; j++)
            if (strcmp(s->ids[j].conf->name, next[i].conf->name) == 0 &&
                strcmp(s->ids[j].conf->key_dir, next[i].conf->key_dir) == 0) {
                memcpy(next[i].address, s->ids[j].address, sizeof(next[i].address));
                next[i].publication_recorded = s->ids[j].publication_recorded;
                kept[i] = true;
            }
    if (service_ids_check_all(conf, next, n, kept, err, errlen) < 0) {
        free(next);
        free(kept);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        /* a changed address (refused: "") is a new identity to every tor */
        const struct service_id *old = NULL;
        for (size_t j = 0; j < s->n && kept[i] && !old; j++)
            if (strcmp(s->ids[j].conf->name, next[i].conf->name) == 0)
                old = &s->ids[j];
        /* a withdrawn one (off every tor, its address kept for status) is handed to the tors again */
        next[i].kept = old && !old->withdrawn && strcmp(old->address, next[i].address) == 0;
        if (!next[i].kept)
            next[i].publication_recorded = false;
    }
    free(kept);
    for (size_t j = 0; j < s->n; j++)
        if (!config_find_service(conf, s->ids[j].conf->name))
            log_info_f(LOG_SERVICE(s->ids[j].conf->name), "service %s: removed (%s.onion)", s->ids[j].conf->name,
                       s->ids[j].address);
    free(s->ids);
    s->ids = next;
    s->n = n;
    s->conf = conf;
    return 0;
}

bool service_ids_verify_copy(const struct service_ids *s, size_t i, const char *dir)
{
    struct onion_key key;
    char kerr[768];
    if (i >= s->n || s->ids[i].refused[0])
        return false;
    const struct service_id *id = &s->ids[i];
    int rc = keys_load_mode(dir, id->conf->mode, &key, kerr, sizeof(kerr));
    bool same = rc == 0 && strcmp(key.address, id->address) == 0;
    if (rc == 0 && !same)
        snprintf(kerr, sizeof(kerr), "%s holds the key of %s.onion", dir, key.address);
    onion_key_clear(&key);
    if (!same) {
        log_error_f(LOG_SERVICE(id->conf->name), "service %s: not handed to this tor: its copy of the key is not "
                    "the key of %s.onion (%s); the next reload or restart copies it again",
                    id->conf->name, id->address, kerr);
        return false;
    }
    /* The copy's own authorized_clients is what this tor enforces: exactly the configured clients, or the
     * service stays off this tor (never published open by a standby). */
    char cerr[1024];
    struct client_auth_conf pbuf;
    const struct client_auth_conf *probe = NULL;
    if (probeauth_for_service(s->conf, id->conf, false, &pbuf, &probe, cerr, sizeof(cerr)) < 0 ||
        clientauth_check_dir(id->conf, dir, probe, cerr, sizeof(cerr)) < 0) {
        log_error_f(LOG_SERVICE(id->conf->name), "service %s: not handed to this tor: client authorization of "
                    "its copy: %s; the next reload or restart of that tor writes it again", id->conf->name, cerr);
        return false;
    }
    return true;
}

int service_ids_withdraw(struct service_ids *s, const char *address, const char *why)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->ids[i].address[0] && onion_address_equal(s->ids[i].address, address)) {
            snprintf(s->ids[i].refused, sizeof(s->ids[i].refused), "%s", why);
            s->ids[i].withdrawn = true;
            return 0;
        }
    return -1;
}

const char *service_id_withdrawn(const struct service_id *id)
{
    return id->withdrawn ? id->refused : NULL;
}

bool service_ids_verify_key(struct service_ids *s, size_t i)
{
    struct onion_key key;
    char kerr[768];
    if (i >= s->n)
        return false;
    struct service_id *id = &s->ids[i];
    if (id->refused[0])
        return false;
    int rc = keys_load_mode(id->conf->key_dir, id->conf->mode, &key, kerr, sizeof(kerr));
    char cerr[1024];
    struct client_auth_conf pbuf;
    const struct client_auth_conf *probe = NULL;
    bool auth_ok = rc == 0 && probeauth_for_service(s->conf, id->conf, false, &pbuf, &probe, cerr, sizeof(cerr)) == 0 &&
                   clientauth_check_dir(id->conf, id->conf->key_dir, probe, cerr, sizeof(cerr)) == 0;
    if (rc == 0 && strcmp(key.address, id->address) == 0 && auth_ok) {
        onion_key_clear(&key);
        return true;
    }
    if (rc == 0 && !auth_ok)
        snprintf(id->refused, sizeof(id->refused),
                 "service %s: REFUSED: client authorization: %s. Reload onionfront once it is fixed. The other "
                 "services keep running", id->conf->name, cerr);
    else if (rc == 0)
        snprintf(id->refused, sizeof(id->refused),
                 "service %s: REFUSED: %s/%s is now the key of %s.onion, not of %s.onion that onionfront publishes. "
                 "If it was replaced on purpose (onionfront new-key or import-key), reload onionfront to publish "
                 "it; otherwise put the key of %s.onion back and reload. The other services keep running",
                 id->conf->name, id->conf->key_dir, KEYS_SECRET_FILE, key.address, id->address, id->address);
    else
        snprintf(id->refused, sizeof(id->refused),
                 "service %s: REFUSED: its key is missing or unusable now (%s); it was published as %s.onion. "
                 "Restore %s/%s (mount the volume it is on, or copy back a backup; onionfront import-key %s FILE) "
                 "and reload onionfront. The other services keep running",
                 id->conf->name, kerr, id->address, id->conf->key_dir, KEYS_SECRET_FILE, id->conf->name);
    onion_key_clear(&key);
    log_error_f(LOG_SERVICE(id->conf->name), "%s", id->refused);
    id->address[0] = '\0';
    return false;
}

void service_ids_note_published(struct service_ids *s, size_t i)
{
    char err[768];
    if (i >= s->n || s->ids[i].publication_recorded)
        return;
    struct service_id *id = &s->ids[i];
    id->publication_recorded = true;
    struct addrbook *book = addrbook_load(s->conf->state_dir, err, sizeof(err));
    if (!book || (addrbook_note_published(book, id->conf->name, id->address, time(NULL)) == 1 &&
                  service_ids_book_save(book, true, err, sizeof(err)) < 0))
        log_error_f(LOG_SERVICE(id->conf->name), "service %s: cannot record its publication: %s", id->conf->name,
                    err);
    addrbook_free(book);
}

size_t service_ids_count(const struct service_ids *s)
{
    return s->n;
}

const struct service_id *service_ids_at(const struct service_ids *s, size_t i)
{
    return i < s->n ? &s->ids[i] : NULL;
}

const struct service_id *service_ids_find(const struct service_ids *s, const char *address)
{
    for (size_t i = 0; address && address[0] && i < s->n; i++)
        if (onion_address_equal(s->ids[i].address, address))
            return &s->ids[i];
    return NULL;
}

const char *service_id_name(const struct service_id *id)
{
    return id->conf->name;
}

const char *service_id_refusal(const struct service_id *id)
{
    return id->refused[0] ? id->refused : NULL;
}
