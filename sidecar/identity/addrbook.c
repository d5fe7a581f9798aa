/* addrbook.c — the address record (see addrbook.h).
 *
 * The record is held as the validated jansson document itself: it is tiny, read at start, at reload and
 * by the key commands, and written only when a key is first seen, first published or replaced on
 * purpose. Every change is read-modify-write by the caller (load, note, save), so a daemon and an
 * offline `onionfront new-key` do not overwrite each other's entries except in the instant between
 * one's read and its rename. */
#include "sidecar/identity/addrbook.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sidecar/core/fsutil.h"

#define ADDRBOOK_FORMAT "onionfront-addresses 1"
#define ADDRBOOK_ADDRESS_LEN 56

struct addrbook {
    char dir[4096];
    char path[4200];
    json_t *doc; /* validated: {"format", "services": {name: {"addresses": [entry, ...]}}} */
};

static const char *const addrbook_how_names[] = {
    [ADDRBOOK_CREATED] = "created",
    [ADDRBOOK_LOADED] = "loaded",
    [ADDRBOOK_NEW_KEY] = "new-key",
    [ADDRBOOK_IMPORTED] = "import-key",
};
#define ADDRBOOK_N_HOW (sizeof(addrbook_how_names) / sizeof(addrbook_how_names[0]))

const char *addrbook_how_str(enum addrbook_how how)
{
    return (size_t)how < ADDRBOOK_N_HOW ? addrbook_how_names[how] : "?";
}

const char *addrbook_verdict_str(enum addrbook_verdict v)
{
    switch (v) {
    case ADDRBOOK_UNKNOWN: return "unknown";
    case ADDRBOOK_SAME: return "same";
    case ADDRBOOK_MISSING: return "missing";
    case ADDRBOOK_DIFFERENT: return "different";
    }
    return "?";
}

static bool addrbook_is_address(const char *s)
{
    if (!s || strlen(s) != ADDRBOOK_ADDRESS_LEN)
        return false;
    for (const char *q = s; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '2' && *q <= '7')))
            return false;
    return true;
}

/* "2026-12-03T10:00:00Z" */
static void addrbook_time_str(time_t t, char out[32])
{
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(out, 32, "@%lld", (long long)t);
}

/* Check one entry of services.<name>.addresses. Return 0, or -1 with `err` naming the entry. */
static int addrbook_check_entry(const char *name, size_t i, json_t *e, char *err, size_t errlen)
{
    const char *address = NULL, *since = NULL, *how = NULL, *published = NULL, *replaced = NULL,
               *replaces = NULL, *mode = NULL;
    json_error_t jerr;
    if (json_unpack_ex(e, &jerr, JSON_STRICT, "{s:s, s:s, s:s, s?s, s?s, s?s, s?s}", "address", &address, "since",
                       &since, "how", &how, "first_published", &published, "replaced", &replaced, "replaces",
                       &replaces, "mode", &mode) < 0) {
        snprintf(err, errlen, "services.%s.addresses[%zu]: %s", name, i, jerr.text);
        return -1;
    }
    if (mode && strcmp(mode, service_mode_str(SERVICE_MODE_SINGLE)) != 0 &&
        strcmp(mode, service_mode_str(SERVICE_MODE_ANONYMOUS)) != 0) {
        snprintf(err, errlen, "services.%s.addresses[%zu].mode: \"%.32s\" is neither single nor anonymous", name, i,
                 mode);
        return -1;
    }
    if (!addrbook_is_address(address) || (replaces && !addrbook_is_address(replaces))) {
        snprintf(err, errlen, "services.%s.addresses[%zu].%s: not a v3 onion address (56 base32 characters "
                 "without \".onion\")", name, i, addrbook_is_address(address) ? "replaces" : "address");
        return -1;
    }
    for (size_t h = 0; h < ADDRBOOK_N_HOW; h++)
        if (strcmp(how, addrbook_how_names[h]) == 0)
            return 0;
    snprintf(err, errlen, "services.%s.addresses[%zu].how: \"%.32s\" is none of created, loaded, new-key, "
             "import-key", name, i, how);
    return -1;
}

/* Check the shape of a whole document. Return 0, or -1 with `err` naming the place. */
static int addrbook_check_doc(json_t *doc, char *err, size_t errlen)
{
    const char *format = NULL, *name;
    json_t *services = NULL, *svc;
    json_error_t jerr;
    if (json_unpack_ex(doc, &jerr, JSON_STRICT, "{s:s, s:o}", "format", &format, "services", &services) < 0) {
        snprintf(err, errlen, "%s", jerr.text);
        return -1;
    }
    if (strcmp(format, ADDRBOOK_FORMAT) != 0) {
        snprintf(err, errlen, "format: \"%.40s\" is not \"%s\" (written by another version?)", format,
                 ADDRBOOK_FORMAT);
        return -1;
    }
    if (!json_is_object(services)) {
        snprintf(err, errlen, "services: not an object");
        return -1;
    }
    json_object_foreach(services, name, svc) {
        json_t *addrs = NULL, *e;
        size_t i;
        if (!*name || strlen(name) > 64) {
            snprintf(err, errlen, "services: a service name is empty or longer than 64 characters");
            return -1;
        }
        if (json_unpack_ex(svc, &jerr, JSON_STRICT, "{s:o}", "addresses", &addrs) < 0) {
            snprintf(err, errlen, "services.%s: %s", name, jerr.text);
            return -1;
        }
        if (!json_is_array(addrs) || json_array_size(addrs) == 0) {
            snprintf(err, errlen, "services.%s.addresses: not a non-empty array", name);
            return -1;
        }
        json_array_foreach(addrs, i, e) {
            if (addrbook_check_entry(name, i, e, err, errlen) < 0)
                return -1;
        }
    }
    return 0;
}

static struct addrbook *addrbook_new(const char *state_dir, json_t *doc)
{
    struct addrbook *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    snprintf(b->dir, sizeof(b->dir), "%s", state_dir);
    snprintf(b->path, sizeof(b->path), "%s/%s", state_dir, ADDRBOOK_FILE);
    b->doc = doc;
    return b;
}

struct addrbook *addrbook_parse(const char *state_dir, const char *what, const char *text, size_t len,
                                char *err, size_t errlen)
{
    json_error_t jerr;
    char why[512];
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc)
        snprintf(why, sizeof(why), "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
    if (!doc || addrbook_check_doc(doc, why, sizeof(why)) < 0) {
        snprintf(err, errlen,
                 "%s: %s. This file records the onion addresses onionfront's services had, so that none gets a "
                 "new address by accident; restore it from a backup or repair it (format in onionfront(1)). "
                 "Moving it away makes onionfront record every service's current key as found",
                 what, why);
        json_decref(doc);
        return NULL;
    }
    struct addrbook *b = addrbook_new(state_dir, doc);
    if (!b) {
        snprintf(err, errlen, "%s: out of memory", what);
        json_decref(doc);
    }
    return b;
}

struct addrbook *addrbook_load(const char *state_dir, char *err, size_t errlen)
{
    char path[4200];
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/%s", state_dir, ADDRBOOK_FILE);
    char *buf = malloc(ADDRBOOK_MAX_BYTES + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    int rc = fs_read_small(path, buf, ADDRBOOK_MAX_BYTES + 1, &len, NULL, err, errlen);
    struct addrbook *b = NULL;
    if (rc == 1) { /* none yet */
        json_t *doc = json_pack("{s:s, s:{}}", "format", ADDRBOOK_FORMAT, "services");
        if (!doc || !(b = addrbook_new(state_dir, doc))) {
            json_decref(doc);
            snprintf(err, errlen, "%s: out of memory", path);
        }
    } else if (rc == 0 && len > ADDRBOOK_MAX_BYTES) {
        snprintf(err, errlen, "%s: larger than %d bytes; not an address record of onionfront's", path,
                 ADDRBOOK_MAX_BYTES);
    } else if (rc == 0) {
        b = addrbook_parse(state_dir, path, buf, len, err, errlen);
    }
    free(buf);
    return b;
}

int addrbook_save(const struct addrbook *b, char *err, size_t errlen)
{
    char *text = json_dumps(b->doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", b->path);
        return -1;
    }
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: the file ends with a newline */
    int rc = fs_write_atomic(b->dir, ADDRBOOK_FILE, text, len + 1, 0600, err, errlen);
    free(text);
    return rc;
}

const char *addrbook_path(const struct addrbook *b)
{
    return b->path;
}

void addrbook_free(struct addrbook *b)
{
    if (!b)
        return;
    json_decref(b->doc);
    free(b);
}

/* services.<service>.addresses, borrowed, or NULL. */
static json_t *addrbook_entries(const struct addrbook *b, const char *service)
{
    json_t *svc = json_object_get(json_object_get(b->doc, "services"), service);
    return json_object_get(svc, "addresses");
}

/* The current (last) entry of `service`, borrowed, or NULL. */
static json_t *addrbook_current(const struct addrbook *b, const char *service)
{
    json_t *addrs = addrbook_entries(b, service);
    size_t n = json_array_size(addrs);
    return n ? json_array_get(addrs, n - 1) : NULL;
}

const char *addrbook_address(const struct addrbook *b, const char *service)
{
    return json_string_value(json_object_get(addrbook_current(b, service), "address"));
}

size_t addrbook_count(const struct addrbook *b, const char *service)
{
    return json_array_size(addrbook_entries(b, service));
}

enum service_mode addrbook_mode(const struct addrbook *b, const char *service)
{
    const char *mode = json_string_value(json_object_get(addrbook_current(b, service), "mode"));
    return mode && strcmp(mode, service_mode_str(SERVICE_MODE_ANONYMOUS)) == 0 ? SERVICE_MODE_ANONYMOUS
                                                                                 : SERVICE_MODE_SINGLE;
}

int addrbook_note_key(struct addrbook *b, const char *service, const char *address, enum addrbook_how how,
                      enum service_mode mode, time_t now, char *err, size_t errlen)
{
    char when[32];
    const char *old = addrbook_address(b, service);
    if (!addrbook_is_address(address) || (size_t)how >= ADDRBOOK_N_HOW) {
        snprintf(err, errlen, "service %s: not an onion address to record", service);
        return -1;
    }
    if (old && strcmp(old, address) == 0)
        return 0;
    bool deliberate = how == ADDRBOOK_NEW_KEY || how == ADDRBOOK_IMPORTED;
    if (old && !deliberate) {
        snprintf(err, errlen, "service %s: %s.onion is recorded; refusing to record %s.onion as %s", service, old,
                 address, addrbook_how_str(how));
        return -1;
    }
    addrbook_time_str(now, when);
    json_t *entry = json_pack("{s:s, s:s, s:s, s:s}", "address", address, "since", when, "how", addrbook_how_str(how),
                              "mode", service_mode_str(mode));
    if (entry && old && json_object_set_new(entry, "replaces", json_string(old)) < 0) {
        json_decref(entry);
        entry = NULL;
    }
    json_t *services = json_object_get(b->doc, "services"), *addrs = addrbook_entries(b, service);
    if (entry && !addrs) {
        addrs = json_array();
        if (!addrs || json_object_set_new(services, service, json_pack("{s:o}", "addresses", addrs)) < 0) {
            json_decref(entry);
            entry = NULL;
        }
    }
    if (entry && old && json_object_set_new(addrbook_current(b, service), "replaced", json_string(when)) < 0) {
        json_decref(entry);
        entry = NULL;
    }
    if (!entry || json_array_append_new(addrs, entry) < 0) {
        snprintf(err, errlen, "service %s: out of memory", service);
        return -1;
    }
    return 1;
}

int addrbook_note_published(struct addrbook *b, const char *service, const char *address, time_t now)
{
    char when[32];
    json_t *cur = addrbook_current(b, service);
    const char *recorded = json_string_value(json_object_get(cur, "address"));
    if (!recorded || strcmp(recorded, address) != 0 || json_object_get(cur, "first_published"))
        return 0;
    addrbook_time_str(now, when);
    return json_object_set_new(cur, "first_published", json_string(when)) < 0 ? 0 : 1;
}

enum addrbook_verdict addrbook_check(const struct addrbook *b, const char *service, const char *key_dir,
                                     const char *key_address, const char *key_error, char *msg,
                                     size_t msglen)
{
    const char *expected = addrbook_address(b, service);
    json_t *cur = addrbook_current(b, service);
    const char *published = json_string_value(json_object_get(cur, "first_published"));
    char history[160];
    if (!expected)
        return ADDRBOOK_UNKNOWN;
    if (key_address && strcmp(key_address, expected) == 0)
        return ADDRBOOK_SAME;
    if (published)
        snprintf(history, sizeof(history), "published since %s", published);
    else
        snprintf(history, sizeof(history), "its address since %s",
                 json_string_value(json_object_get(cur, "since")));
    if (!key_address) {
        snprintf(msg, msglen,
                 "service %s: REFUSED: its key is missing or unusable (%s), but %s has been %s.onion (%s, recorded "
                 "in %s); onionfront will not give it a new address by accident. Restore %s/hs_ed25519_secret_key "
                 "(mount the volume it is on, correct key_dir, or copy back a backup), or import the key: "
                 "onionfront import-key %s FILE_OR_DIR; to give %s a new address on purpose: onionfront new-key %s. "
                 "The other services keep running",
                 service, key_error ? key_error : "no key", service, expected, history, b->path, key_dir,
                 service, service, service);
        return ADDRBOOK_MISSING;
    }
    snprintf(msg, msglen,
             "service %s: REFUSED: %s/hs_ed25519_secret_key is the key of %s.onion, but %s has been %s.onion (%s, "
             "recorded in %s); onionfront will not change its address by accident. Put %s's own key back (or "
             "correct key_dir); to switch %s to %s.onion on purpose: onionfront import-key %s %s. The other "
             "services keep running",
             service, key_dir, key_address, service, expected, history, b->path, service, service, key_address,
             service, key_dir);
    return ADDRBOOK_DIFFERENT;
}
