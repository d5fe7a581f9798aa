/* keys.h — each onion service's key directory, in tor's own HiddenServiceDir format, so that a
 * directory tor wrote, mkp224o output and onionfront's own directories are interchangeable:
 *
 *   hs_ed25519_secret_key        32-byte header "== ed25519v1-secret: type0 ==" (NUL-padded) + the
 *                                64-byte expanded secret key (SHA-512 of the seed, first half clamped)
 *   hs_ed25519_public_key        32-byte header "== ed25519v1-public: type0 ==" (NUL-padded) + 32 bytes
 *   hostname                     "<56 base32 chars>.onion\n"
 *   onion_service_non_anonymous  empty marker: these keys are (to be) used by a single onion service
 *
 * Owns creating, loading, validating and importing those directories, and onionfront's anonymity rule
 * (keys.c, top comment: why onionfront enforces it when tor does not). Does not start tor, does not
 * publish anything, never logs (errors go to the caller's buffer, naming the path) and never puts key
 * material in a message. */
#ifndef ONIONFRONT_KEYS_H
#define ONIONFRONT_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "sidecar/core/onion_address.h"
#include "sidecar/config/service_mode.h"

#define KEYS_SECRET_FILE "hs_ed25519_secret_key"
#define KEYS_SECRET_FILE_LEN 96 /* 32-byte header + 64-byte expanded secret key */
#define KEYS_PUBLIC_FILE "hs_ed25519_public_key"
#define KEYS_HOSTNAME_FILE "hostname"
/* The marker file tor up to 0.4.5 wrote into a single onion service's directory ("poisoning"). */
#define KEYS_POISON_FILE "onion_service_non_anonymous"
/* A v2 (16-character address) service's key: tor wrote it up to 0.4.5; onionfront cannot use it. */
#define KEYS_V2_FILE "private_key"

struct onion_key {
    unsigned char public_key[32];
    /* The expanded secret key (valid only if has_secret). Keep it only as long as needed: call
     * onion_key_forget_secret() or onion_key_clear() as soon as it is no longer used. */
    unsigned char secret_key[64];
    bool has_secret;
    char address[ONION_ADDRESS_SIZE]; /* 56 lowercase base32 characters, no ".onion" */
};

/* Load the key directory `dir` for use by a single onion service and fill `out` (secret included).
 * Checks: `dir` is 0700 and ours; the secret key file has no group/other bits; the public key and
 * hostname files are not group/other-writable (mkp224o writes them 0644); headers and sizes; the
 * secret key matches the public key (see keys.c); `hostname`, if present, names the same address;
 * onionfront's anonymity rule (keys.c). A directory that tor never used (keys only, as mkp224o leaves
 * them) gets the onion_service_non_anonymous marker written here. Return 0, or -1 with a message in
 * `err` naming the path (never key material). */
int keys_load(const char *dir, struct onion_key *out, char *err, size_t errlen);

/* Like keys_load(), but if `dir` does not exist it is created (0700), and if it holds no key files at
 * all a new key is generated and written (marker, public key, hostname, then the secret key, each
 * atomically with mode 0600). `*created` (if not NULL) tells whether a key was generated. A directory
 * with some key files but not the secret key is refused, never overwritten. */
int keys_load_or_create(const char *dir, struct onion_key *out, bool *created, char *err, size_t errlen);

/* The same four for a service of `mode` (per-service modes, keys.c's top comment): the functions above
 * are SERVICE_MODE_SINGLE. For SERVICE_MODE_ANONYMOUS a directory with the single-onion marker is refused
 * (never created next to it either), an unused one is claimed with an empty authorized_clients/, and
 * nothing gets the marker. */
int keys_load_mode(const char *dir, enum service_mode mode, struct onion_key *out, char *err, size_t errlen);
int keys_load_or_create_mode(const char *dir, enum service_mode mode, struct onion_key *out, bool *created,
                             char *err, size_t errlen);
int keys_install_mode(const struct onion_key *k, const char *dst, enum service_mode mode, char *err, size_t errlen);
int keys_import_mode(const char *src, const char *dst, enum service_mode mode, char *address_out, char *err,
                     size_t errlen);

/* What shows how an import source ran, besides its own marker: a v3 directory carries no mark of its
 * mode (keys.c, top comment), so it is the operator's to show. */
enum keys_evidence {
    KEYS_EVIDENCE_NONE,      /* only the directory: the marker, or the traces tor leaves */
    KEYS_EVIDENCE_SINGLE,    /* it ran as a single onion: the torrc it ran under, or the operator's word */
    KEYS_EVIDENCE_ANONYMOUS, /* it ran as an ordinary hidden service: the torrc it ran under */
};

/* Read the import source `src` (a HiddenServiceDir another user may own: read through descriptors, no
 * link followed, nothing changed in it; its permissions are not checked) into `out` for a service of
 * `mode`, applying the anonymity rule with `ev`: a single onion service takes a directory with the
 * marker, one tor never used, or one `ev` shows ran single, never one `ev` shows ran anonymous; an
 * anonymous service never takes one that has the marker or that `ev` shows ran single. Return 0, or -1
 * with a message in `err` that says why and the ways forward (never key material). */
int keys_import_read(const char *src, enum service_mode mode, enum keys_evidence ev, struct onion_key *out,
                     char *err, size_t errlen);

/* Look at the key directory `dir` as keys_load_or_create_mode would for a service of `mode`, but change
 * nothing: no directory, key or marker is created (onionfront check-config, preflight.h). Return 1 with
 * the address (no ".onion") in `address` (ONION_ADDRESS_SIZE bytes) if it holds a usable key; 0 if it does
 * not exist or holds no key (a new one would be made there; `err` says which); -1 with keys_load_mode's
 * reason in `err` (a v2 or partial directory, permissions, the anonymity rule). */
int keys_inspect_mode(const char *dir, enum service_mode mode, char *address, char *err, size_t errlen);

/* `onionfront import-key`: validate the key directory `src` (formats and consistency as keys_load;
 * its permissions are not checked, since it may be a backup copy, but onionfront's anonymity rule
 * is) and copy the keys to `dst` (created 0700 if missing; files 0600, written atomically, secret key
 * last). If `dst` already holds the same key the call succeeds without change (idempotent); a
 * different key is refused, never overwritten. Put the address (no ".onion") in `address_out`
 * (ONION_ADDRESS_SIZE bytes) if not NULL. Return 0, or -1 with a message in `err` naming the path. */
int keys_import(const char *src, const char *dst, char *address_out, char *err, size_t errlen);

/* Write `k` (secret included) into the key directory `dst` (created 0700 if missing; files 0600, written
 * atomically, secret key last). If `dst` already holds the same key nothing changes; a different key is
 * refused, never overwritten. Return 0, or -1 with a message in `err` naming the path. */
int keys_install(const struct onion_key *k, const char *dst, char *err, size_t errlen);

/* Put `k`'s secret key in tor's hs_ed25519_secret_key format (header + expanded key) into `out`; the
 * caller wipes `out`. Return 0, or -1 if `k` holds no secret. */
int keys_secret_file_encode(const struct onion_key *k, unsigned char out[KEYS_SECRET_FILE_LEN]);

/* Read tor's hs_ed25519_secret_key format from `len` bytes of `buf` (a file named `what` in messages)
 * into `out`: header and size checked, the public key computed from the secret key (keys.c) and checked
 * against it, the address set. A bare secret key file carries no history, so the anonymity rule cannot
 * be applied to it: whoever imports it vouches that it was never an anonymous service's. Return 0, or -1
 * with a message naming `what` (never key material). */
int keys_secret_file_decode(const unsigned char *buf, size_t len, const char *what, struct onion_key *out,
                            char *err, size_t errlen);

/* Wipe the secret key of `k` (OPENSSL_cleanse) and clear has_secret; the public part stays. */
void onion_key_forget_secret(struct onion_key *k);

/* Wipe all of `k`. NULL is a no-op. */
void onion_key_clear(struct onion_key *k);

#endif
