/* addrbook.h — the address record: every onion address each service was given, kept in the state
 * directory as a small JSON file (state_dir/addresses.json, written atomically, mode 0600), so that a
 * service whose key went missing (an unmounted volume, a wrong key_dir, a container started without its
 * volume) is refused instead of silently getting a new key and a new address.
 *
 *   {"format": "onionfront-addresses 1",
 *    "services": {"web": {"addresses": [
 *        {"address": "<56 chars>", "since": "2026-12-03T10:00:00Z", "how": "created",
 *         "first_published": "2026-12-03T10:00:04Z", "replaced": "2026-12-04T08:00:00Z"},
 *        {"address": "<56 chars>", "since": "2026-12-04T08:00:00Z", "how": "new-key",
 *         "replaces": "<56 chars>", "mode": "anonymous"}]}}}
 *
 * The last entry of "addresses" is the service's address now; earlier ones were replaced on purpose
 * (`onionfront new-key`, `import-key`). Times are UTC wall-clock dates (a date is the point here).
 * "mode" is the kind of service the address was given to (config.h's enum service_mode, spelled as in
 * the config); absent means "single" (every address before per-service modes was a single onion's). A
 * key never changes mode (service_id.c enforces it with addrbook_mode).
 *
 * Owns the file's format, its validation and the decision whether a service's key may be used
 * (addrbook_check). Does not read or create keys (keys.c), does not publish (service.c), never logs:
 * errors go to the caller's buffer, naming the file. A missing file is an empty record (a first start,
 * or an upgrade from a version without it: every service's current key is then recorded as found). */
#ifndef ONIONFRONT_ADDRBOOK_H
#define ONIONFRONT_ADDRBOOK_H

#include <stddef.h>
#include <time.h>

#include "sidecar/config/config.h"

#define ADDRBOOK_FILE "addresses.json"
#define ADDRBOOK_MAX_BYTES (1024 * 1024) /* a larger file is refused as corrupt */

struct addrbook;

/* How a service came to have an address; one stringer (addrbook_how_str) and parser share the names. */
enum addrbook_how {
    ADDRBOOK_CREATED,  /* onionfront created the key for a service it had never seen */
    ADDRBOOK_LOADED,   /* the key was already in the key directory the first time onionfront saw it */
    ADDRBOOK_NEW_KEY,  /* `onionfront new-key`: a new address on purpose */
    ADDRBOOK_IMPORTED  /* `onionfront import-key`: a key brought in on purpose */
};

const char *addrbook_how_str(enum addrbook_how how);

/* The verdict on a service's key against the record. */
enum addrbook_verdict {
    ADDRBOOK_UNKNOWN,   /* the record has no address for the service: a new service, a key may be made */
    ADDRBOOK_SAME,      /* the key is the recorded one */
    ADDRBOOK_MISSING,   /* a known service whose key is missing or unusable: refuse the service */
    ADDRBOOK_DIFFERENT  /* a known service whose key has another address: refuse the service */
};

const char *addrbook_verdict_str(enum addrbook_verdict v);

/* Read `state_dir`/addresses.json. A missing file gives an empty record. Return the record, or NULL with
 * a message in `err` that names the file, what is wrong with it and what to do. */
struct addrbook *addrbook_load(const char *state_dir, char *err, size_t errlen);

/* Parse `len` bytes of `text` as a record to be saved under `state_dir` (used by addrbook_load; tests and
 * the fuzzer call it directly). Return the record, or NULL with a message naming `what` (the file). */
struct addrbook *addrbook_parse(const char *state_dir, const char *what, const char *text, size_t len,
                                char *err, size_t errlen);

/* Write the record to its file atomically with mode 0600. Return 0, or -1 with a message naming the file. */
int addrbook_save(const struct addrbook *b, char *err, size_t errlen);

/* The record's file name (state_dir/addresses.json). */
const char *addrbook_path(const struct addrbook *b);

/* NULL is a no-op. */
void addrbook_free(struct addrbook *b);

/* The address `service` has now (56 characters, no ".onion"), or NULL if the record does not know it.
 * Borrowed from `b`: valid until `b` changes. */
const char *addrbook_address(const struct addrbook *b, const char *service);

/* Number of addresses recorded for `service` (0 if unknown). */
size_t addrbook_count(const struct addrbook *b, const char *service);

/* The mode `service`'s current address was given to (SERVICE_MODE_SINGLE if the record has no mode or
 * does not know the service). */
enum service_mode addrbook_mode(const struct addrbook *b, const char *service);

/* Record that `service` now has `address`, got `how`, for a service of `mode`, at `now`. For an unknown service the address is
 * recorded; for the recorded address nothing changes. Another address is recorded only for a change
 * made on purpose (ADDRBOOK_NEW_KEY, ADDRBOOK_IMPORTED): the old entry gets "replaced", the new one
 * "replaces"; ADDRBOOK_CREATED or ADDRBOOK_LOADED with another address is refused (-1, a bug of the
 * caller: it must refuse the service instead). Return 1 if the record changed, 0 if not, -1 with a
 * message. */
int addrbook_note_key(struct addrbook *b, const char *service, const char *address, enum addrbook_how how,
                      enum service_mode mode, time_t now, char *err, size_t errlen);

/* Record the first publication (a confirmed descriptor upload) of `service`'s current `address` at
 * `now`. Return 1 if the record changed, 0 if it already had it or `address` is not the service's
 * current address. */
int addrbook_note_published(struct addrbook *b, const char *service, const char *address, time_t now);

/* Decide whether `service` may use its key. `key_address` is the address of the key found in `key_dir`
 * (NULL if there is no usable key; then `key_error` says why). For ADDRBOOK_MISSING and
 * ADDRBOOK_DIFFERENT, `msg` gets the refusal, naming the service, the expected address, the key path and
 * what to do; otherwise `msg` is left alone. */
enum addrbook_verdict addrbook_check(const struct addrbook *b, const char *service, const char *key_dir,
                                     const char *key_address, const char *key_error, char *msg,
                                     size_t msglen);

#endif
