/* keys.c — onion service key directories in tor's HiddenServiceDir format (see keys.h).
 *
 * Owns: key generation (OpenSSL ed25519 keygen, SHA-512 expansion, clamping), the on-disk format,
 * validation on load and import, and onionfront's anonymity rule. Does not own: the onion address
 * (onion_address.c), starting tor, publishing, logging. All crypto is OpenSSL's; the only code here
 * besides file handling is the map from an ed25519 public key to its X25519 u-coordinate, done with
 * OpenSSL BIGNUMs (below).
 *
 * Secret key / public key consistency. tor stores the *expanded* secret key (a = clamped first half of
 * SHA-512(seed), plus the signing prefix); OpenSSL's ed25519 API only accepts seeds, and OpenSSL has no
 * public ed25519 scalar-base multiplication. But the clamped scalar `a` is also a valid X25519 private
 * key, and OpenSSL's X25519 computes u(a*B) on the birationally equivalent Montgomery curve, where
 * u = (1 + y) / (1 - y) mod 2^255-19 for the Edwards point (x, y) (RFC 7748 4.1). So we check
 *   X25519_public(a) == (1 + y_pk) / (1 - y_pk)
 * with OpenSSL's X25519 and BIGNUM modular arithmetic: no hand-written curve arithmetic. This proves
 * that the public key is +-a*B; only the sign bit of x is not covered (a file whose public key was
 * negated on purpose). That last bit is checked by tor when it loads the directory: tor compares the whole
 * public key with the one it derives from the secret key and refuses to start on a mismatch
 * ("hs_ed25519_public_key does not match hs_ed25519_secret_key"), and it rewrites `hostname` from the key it
 * uses; the caller compares tor's hostname with onion_key.address after tor has started.
 *
 * Anonymity rule ("poisoning"). A key directory used by an anonymous service must never serve a single
 * onion: that would tie the service to this server's location. tor up to 0.4.5 enforced this: it
 * created an empty 0600 onion_service_non_anonymous in each new single-onion directory and refused a
 * directory used in the other mode. The code went with v2 services (rendservice.c): tor 0.4.9 in
 * non-anonymous mode still warns that it "will refuse to launch hidden services from the same
 * directories" if the mode changes, but writes no marker and refuses neither a directory an anonymous
 * service used, run as a single onion, nor a marked directory in anonymous mode. It checks only the
 * directory's permissions (group/other bits refused; a 0644 secret key inside a 0700 directory
 * accepted).
 *
 * onionfront therefore enforces the rule itself, the way tor <= 0.4.5 did, with the same marker file:
 *  - A directory onionfront creates gets the marker *before* any key is written.
 *  - A directory with the marker is a single onion's: accepted.
 *  - A directory without the marker that tor has used (it has authorized_clients/, which every tor
 *    since 0.3.5 creates on loading a v3 service, or a v2 `private_key`) may have been an anonymous
 *    hidden service: running it as a single onion would tie that service to this server's location, so
 *    it is refused. An operator who knows it only ever ran as a single onion (e.g. under tor >= 0.4.6,
 *    which no longer marks) creates the marker by hand, as with old tor.
 *  - A directory without the marker that tor never used (keys only: mkp224o output, a fresh copy) is
 *    accepted and marked on first use.
 *  - An import source (import-key) may come with the operator's evidence of how it ran, since tor >= 0.4.6
 *    leaves no mark (keys.h, enum keys_evidence): the torrc it ran under, or the operator's word. Shown
 *    single, it is accepted for a single onion (and its copy marked); shown anonymous, it is refused for
 *    one even with the marker. The source itself is never written to: the copy carries the rule on.
 *  Anonymous services (per-service modes, config.h) take the opposite side of the same rule:
 *  - A directory with the marker was a single onion's: its key is tied to this server's location, so it
 *    never serves an anonymous service (refused: the service needs a new key). tor 0.4.9 would accept it
 *    (case (c) above).
 *  - A directory without the marker is accepted; if tor never used it, it is claimed at once the way tor
 *    claims it (an empty authorized_clients/), so that from then on the single-onion rule above refuses
 *    it. A new anonymous key is written into such a directory, never with the marker.
 */
#include "sidecar/identity/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include "sidecar/core/fsutil.h"

#define KEYS_HEADER_LEN 32
#define KEYS_PUBLIC_FILE_LEN (KEYS_HEADER_LEN + 32)

/* tor's crypto_write_tagged_contents_to_file: "== <type>: <tag> ==" NUL-padded to 32 bytes. */
static const char keys_secret_header[KEYS_HEADER_LEN] = "== ed25519v1-secret: type0 ==";
static const char keys_public_header[KEYS_HEADER_LEN] = "== ed25519v1-public: type0 ==";

/* What the directory says about its past use (see the anonymity rule above). */
enum keys_dir_use {
    KEYS_DIR_UNUSED,        /* no marker, no sign that tor ever loaded it */
    KEYS_DIR_MARKED,        /* onion_service_non_anonymous present */
    KEYS_DIR_USED_UNMARKED  /* tor loaded it, no marker: possibly an anonymous hidden service */
};

static const char *keys_dir_use_str(enum keys_dir_use u)
{
    switch (u) {
    case KEYS_DIR_UNUSED: return "unused";
    case KEYS_DIR_MARKED: return "marked single onion";
    case KEYS_DIR_USED_UNMARKED: return "used by tor without the single onion marker";
    }
    return "?";
}

void onion_key_forget_secret(struct onion_key *k)
{
    if (!k)
        return;
    OPENSSL_cleanse(k->secret_key, sizeof k->secret_key);
    k->has_secret = false;
}

void onion_key_clear(struct onion_key *k)
{
    if (!k)
        return;
    OPENSSL_cleanse(k, sizeof *k);
    k->has_secret = false;
}

static int keys_path(char *buf, size_t cap, const char *dir, const char *name, char *err, size_t errlen)
{
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, errlen, "%s/%s: path too long", dir, name);
        return -1;
    }
    return 0;
}

/* Check that the expanded secret key `sk` belongs to the public key `pk` (see the top comment).
 * Return 0 if it does; -1 with a message naming `dir` if not or on error. */
static int keys_check_pair(const char *dir, const unsigned char sk[64], const unsigned char pk[32],
                           char *err, size_t errlen)
{
    unsigned char u_x25519[32], u_expected[32], y_le[32];
    size_t ulen = sizeof u_x25519;
    EVP_PKEY *x = NULL;
    BN_CTX *ctx = NULL;
    BIGNUM *p, *y, *num, *den, *u;
    int ret = -1;

    /* An expanded key from SHA-512 + clamping (tor, onionfront) or from mkp224o's "+8" search is
     * clamped: low 3 bits clear, bit 255 clear, bit 254 set. X25519 clamps its input, so for any
     * other scalar it would compute a different point: refuse such a key instead of misjudging it. */
    if ((sk[0] & 7) != 0 || (sk[31] & 0x80) != 0 || (sk[31] & 0x40) == 0) {
        snprintf(err, errlen, "%s/%s: not a clamped ed25519 expanded secret key", dir,
                 KEYS_SECRET_FILE);
        return -1;
    }

    x = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, sk, 32);
    if (!x || EVP_PKEY_get_raw_public_key(x, u_x25519, &ulen) != 1 || ulen != 32) {
        snprintf(err, errlen, "%s: OpenSSL X25519 failed while checking the key pair", dir);
        goto done;
    }

    /* y is the public key's little-endian encoding without its top bit (the sign of x). */
    memcpy(y_le, pk, 32);
    y_le[31] &= 0x7f;
    ctx = BN_CTX_new();
    if (!ctx)
        goto oom;
    BN_CTX_start(ctx);
    p = BN_CTX_get(ctx);
    y = BN_CTX_get(ctx);
    num = BN_CTX_get(ctx);
    den = BN_CTX_get(ctx);
    u = BN_CTX_get(ctx);
    if (!u)
        goto oom;
    /* p = 2^255 - 19 */
    if (!BN_set_bit(p, 255) || !BN_sub_word(p, 19) || !BN_lebin2bn(y_le, 32, y))
        goto oom;
    if (BN_cmp(y, p) >= 0) {
        snprintf(err, errlen, "%s/%s: not a valid ed25519 public key (non-canonical encoding)", dir,
                 KEYS_PUBLIC_FILE);
        goto done;
    }
    /* u = (1 + y) / (1 - y) mod p */
    if (!BN_one(num) || !BN_mod_sub(den, num, y, p, ctx) || !BN_mod_add(num, num, y, p, ctx))
        goto oom;
    if (BN_is_zero(den)) { /* y = 1: the neutral point, never a real public key */
        snprintf(err, errlen, "%s/%s: not a valid ed25519 public key (neutral point)", dir,
                 KEYS_PUBLIC_FILE);
        goto done;
    }
    if (!BN_mod_inverse(den, den, p, ctx) || !BN_mod_mul(u, num, den, p, ctx) ||
        BN_bn2lebinpad(u, u_expected, 32) != 32)
        goto oom;
    if (CRYPTO_memcmp(u_expected, u_x25519, 32) != 0) {
        snprintf(err, errlen,
                 "%s/%s does not match %s/%s: the key files come from different keys (restored from a "
                 "mixed-up backup?)",
                 dir, KEYS_SECRET_FILE, dir, KEYS_PUBLIC_FILE);
        goto done;
    }
    ret = 0;
    goto done;

oom:
    snprintf(err, errlen, "%s: OpenSSL error while checking the key pair", dir);
done:
    OPENSSL_cleanse(u_x25519, sizeof u_x25519); /* public, but derived from the secret: no trace */
    if (ctx) {
        BN_CTX_end(ctx);
        BN_CTX_free(ctx);
    }
    EVP_PKEY_free(x); /* OpenSSL wipes the X25519 private key on free */
    return ret;
}

/* Why the directory `dir` (onionfront's own if `strict`, else an import source) is not a key directory
 * it can use although it holds something: no hs_ed25519_secret_key, but a v2 key (`v2`: private_key),
 * or a public key (`pub`) or hostname (`host`) of its own. Into `err`. Only files that are there are
 * named, and a source directory (not onionfront's) is never to be cleaned up. */
static void keys_no_secret(const char *dir, bool strict, bool v2, bool pub, bool host, char *err, size_t errlen)
{
    if (v2) {
        snprintf(err, errlen,
                 "%s is a v2 onion service's key directory (%s: an address of 16 characters), and tor no longer "
                 "runs v2 services (since 0.4.6); onionfront uses v3 keys (%s) only, and a v3 address cannot be made "
                 "from a v2 key. %s",
                 dir, KEYS_V2_FILE, KEYS_SECRET_FILE,
                 strict ? "Give the service a key directory of its own (a missing or empty key_dir gets a new v3 key "
                          "and a new address)"
                        : "There is nothing onionfront can import from it");
        return;
    }
    char present[128];
    snprintf(present, sizeof present, "%s%s%s", pub ? KEYS_PUBLIC_FILE : "", pub && host ? " and " : "",
             host ? KEYS_HOSTNAME_FILE : "");
    if (!strict) {
        snprintf(err, errlen,
                 "%s holds no %s (only %s): not a complete tor key directory. Give the directory that holds the "
                 "service's %s, or that file itself",
                 dir, KEYS_SECRET_FILE, present, KEYS_SECRET_FILE);
        return;
    }
    /* Never generate over a public key or hostname: that address may be known to people. */
    snprintf(err, errlen,
             "%s/%s: missing, but %s/%s exists (an interrupted key creation or an incomplete copy); restore the "
             "secret key, or remove %s from %s to create a new key",
             dir, KEYS_SECRET_FILE, dir, pub ? KEYS_PUBLIC_FILE : KEYS_HOSTNAME_FILE, present, dir);
}

/* Read and validate the key files of `dir` into `out` (secret included). `strict` applies the
 * permission rules of keys_load; without it (import source) permissions are not looked at.
 * Set `*empty` when the directory holds none of the three files (and return 0). */
static int keys_read_dir(const char *dir, bool strict, struct onion_key *out, bool *empty, char *err,
                         size_t errlen)
{
    char spath[4096], ppath[4096], hpath[4096], ms[6];
    unsigned char sbuf[KEYS_SECRET_FILE_LEN + 1], pbuf[KEYS_PUBLIC_FILE_LEN + 1];
    char hbuf[128];
    size_t slen = 0, plen = 0, hlen = 0;
    struct stat sst, pst, hst;
    int rs, rp, rh, ret = -1;

    *empty = false;
    memset(out, 0, sizeof *out);
    /* Every file is read relative to the directory checked here, never followed through a symlink and
     * never blocked on a FIFO: tor's User owns the directory and onionfront may be root (fsutil.h). */
    int dfd = fs_open_dir(dir, strict, err, errlen);
    if (dfd < 0)
        return -1;
    if (keys_path(spath, sizeof spath, dir, KEYS_SECRET_FILE, err, errlen) < 0 ||
        keys_path(ppath, sizeof ppath, dir, KEYS_PUBLIC_FILE, err, errlen) < 0 ||
        keys_path(hpath, sizeof hpath, dir, KEYS_HOSTNAME_FILE, err, errlen) < 0)
        goto done;

    rs = fs_read_small_at(dfd, dir, KEYS_SECRET_FILE, sbuf, sizeof sbuf, &slen, &sst, err, errlen);
    if (rs < 0)
        goto done;
    rp = fs_read_small_at(dfd, dir, KEYS_PUBLIC_FILE, pbuf, sizeof pbuf, &plen, &pst, err, errlen);
    if (rp < 0)
        goto done;
    rh = fs_read_small_at(dfd, dir, KEYS_HOSTNAME_FILE, hbuf, sizeof hbuf - 1, &hlen, &hst, err, errlen);
    if (rh < 0)
        goto done;

    if (rs == 1) {
        struct stat vst;
        bool v2 = fstatat(dfd, KEYS_V2_FILE, &vst, AT_SYMLINK_NOFOLLOW) == 0;
        if (!(rp == 1 && rh == 1 && (strict || !v2))) {
            keys_no_secret(dir, strict, v2, rp == 0, rh == 0, err, errlen);
            goto done;
        }
        *empty = true;
        ret = 0;
        goto done;
    }
    if (rp == 1) {
        snprintf(err, errlen,
                 "%s: missing (tor would recreate it from the secret key, onionfront needs it to check "
                 "the key); restore it with the secret key it belongs to",
                 ppath);
        goto done;
    }

    /* Permissions. The secret key: no group/other bit at all. The public key and hostname are public
     * (mkp224o writes them 0644), but must not be writable by others. tor itself only checks the
     * directory (a 0644 secret key in a 0700 directory is accepted); we are stricter. */
    if (strict && (sst.st_mode & 077)) {
        snprintf(err, errlen, "%s: mode %s gives group/other access to the secret key; it must be 0600 "
                 "(chmod 600 %s)", spath, fs_mode_str(sst.st_mode, ms), spath);
        goto done;
    }
    if (strict && (pst.st_mode & 022)) {
        snprintf(err, errlen, "%s: mode %s lets group/other write it; use 0600", ppath,
                 fs_mode_str(pst.st_mode, ms));
        goto done;
    }
    if (strict && rh == 0 && (hst.st_mode & 022)) {
        snprintf(err, errlen, "%s: mode %s lets group/other write it; use 0600", hpath,
                 fs_mode_str(hst.st_mode, ms));
        goto done;
    }

    /* Format: exact sizes and headers, as tor writes them. */
    if (slen != KEYS_SECRET_FILE_LEN) {
        snprintf(err, errlen, "%s: %zu bytes, expected %d (32-byte header + 64-byte expanded key)", spath,
                 slen, KEYS_SECRET_FILE_LEN);
        goto done;
    }
    if (memcmp(sbuf, keys_secret_header, KEYS_HEADER_LEN) != 0) {
        snprintf(err, errlen, "%s: bad header, expected \"%s\" padded with NULs to 32 bytes", spath,
                 keys_secret_header);
        goto done;
    }
    if (plen != KEYS_PUBLIC_FILE_LEN) {
        snprintf(err, errlen, "%s: %zu bytes, expected %d (32-byte header + 32-byte key)", ppath, plen,
                 KEYS_PUBLIC_FILE_LEN);
        goto done;
    }
    if (memcmp(pbuf, keys_public_header, KEYS_HEADER_LEN) != 0) {
        snprintf(err, errlen, "%s: bad header, expected \"%s\" padded with NULs to 32 bytes", ppath,
                 keys_public_header);
        goto done;
    }

    memcpy(out->public_key, pbuf + KEYS_HEADER_LEN, 32);
    if (onion_address_from_pubkey(out->public_key, out->address) < 0) {
        snprintf(err, errlen, "%s: SHA3-256 failed computing the onion address", ppath);
        goto done;
    }
    if (rh == 0) {
        /* tor and mkp224o write "<address>.onion\n"; accept it without the newline too. */
        hbuf[hlen] = '\0';
        char want[ONION_ADDRESS_SIZE + 8];
        snprintf(want, sizeof want, "%s.onion", out->address);
        size_t wl = strlen(want);
        bool ok = (hlen == wl || (hlen == wl + 1 && hbuf[wl] == '\n')) && !memcmp(hbuf, want, wl);
        if (!ok) {
            /* Never quote the file: it may not be what tor wrote (a link to another file, say). */
            snprintf(err, errlen, "%s: does not name %s.onion, the address of %s", hpath, out->address,
                     KEYS_PUBLIC_FILE);
            goto done;
        }
    }
    if (keys_check_pair(dir, sbuf + KEYS_HEADER_LEN, out->public_key, err, errlen) < 0)
        goto done;
    memcpy(out->secret_key, sbuf + KEYS_HEADER_LEN, 64);
    out->has_secret = true;
    ret = 0;

done:
    close(dfd);
    OPENSSL_cleanse(sbuf, sizeof sbuf);
    if (ret < 0)
        onion_key_clear(out);
    return ret;
}

/* Find out what `dir` says about its past use. Return 0, or -1 with a message. */
static int keys_dir_use_get(const char *dir, enum keys_dir_use *use, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;

    if (keys_path(path, sizeof path, dir, KEYS_POISON_FILE, err, errlen) < 0)
        return -1;
    if (lstat(path, &st) == 0) { /* a symlink is not followed: it is "not a regular file" */
        if (!S_ISREG(st.st_mode)) { /* as tor <= 0.4.5: anything but a file is an error */
            snprintf(err, errlen, "%s: exists but is not a regular file", path);
            return -1;
        }
        *use = KEYS_DIR_MARKED;
        return 0;
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        return -1;
    }
    /* Traces tor leaves when it loads a service: authorized_clients/ (every v3 service since 0.3.5)
     * or a v2 private_key. */
    static const char *const traces[] = {"authorized_clients", KEYS_V2_FILE};
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        if (keys_path(path, sizeof path, dir, traces[i], err, errlen) < 0)
            return -1;
        if (lstat(path, &st) == 0) {
            *use = KEYS_DIR_USED_UNMARKED;
            return 0;
        }
        if (errno != ENOENT) {
            snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
            return -1;
        }
    }
    *use = KEYS_DIR_UNUSED;
    return 0;
}

/* Apply the anonymity rule to `dir` holding the key for `address`, for a service of `mode`. Return 0 if
 * it may be used, -1 with a message if not. */
static int keys_check_rule(const char *dir, enum keys_dir_use use, const char *address, enum service_mode mode,
                           char *err, size_t errlen)
{
    if (mode == SERVICE_MODE_ANONYMOUS && use == KEYS_DIR_MARKED) {
        snprintf(err, errlen,
                 "%s: refusing to use %s.onion as an anonymous service: this directory was a single onion "
                 "service's (it has %s), so its key is tied to this server's location. An anonymous service "
                 "needs a key that was never a single onion's: give it a new key (onionfront new-key SERVICE, or "
                 "another key_dir)",
                 dir, address, KEYS_POISON_FILE);
        return -1;
    }
    if (mode == SERVICE_MODE_ANONYMOUS || use != KEYS_DIR_USED_UNMARKED)
        return 0;
    snprintf(err, errlen,
             "%s: refusing to use %s.onion as a single onion service: this directory was %s "
             "(it has authorized_clients/ or private_key but no %s), so it may have been an "
             "anonymous hidden service, and a single onion would reveal its server's location. If these "
             "keys were only ever used by a single onion service, create the marker: touch %s/%s",
             dir, address, keys_dir_use_str(use), KEYS_POISON_FILE, dir, KEYS_POISON_FILE);
    return -1;
}

/* Mark `dir` as used by a service of `mode`: a single onion's gets the marker; an anonymous service's
 * gets an empty authorized_clients/ (0700), the trace tor leaves, which the single-onion rule refuses. */
static int keys_write_marker(const char *dir, enum service_mode mode, char *err, size_t errlen)
{
    char path[4096];
    if (mode == SERVICE_MODE_ANONYMOUS)
        return keys_path(path, sizeof path, dir, "authorized_clients", err, errlen) < 0 ||
                       fs_ensure_private_dir(path, NULL, err, errlen) < 0
                   ? -1
                   : 0;
    /* Empty, 0600: what tor <= 0.4.5 wrote (O_CREAT|O_TRUNC, 0600, nothing written). */
    return fs_write_atomic(dir, KEYS_POISON_FILE, "", 0, 0600, err, errlen);
}

/* Write `k` into the private directory `dir`: marker first (a directory never holds unmarked keys we
 * wrote), then public key and hostname, the secret key last (so an interrupted write never leaves a
 * secret key whose public half is missing, and keys_read_dir refuses the half-written state). */
static int keys_write_dir(const char *dir, const struct onion_key *k, enum service_mode mode, char *err,
                          size_t errlen)
{
    unsigned char buf[KEYS_SECRET_FILE_LEN];
    char host[ONION_ADDRESS_SIZE + 8];
    int ret = -1;

    if (keys_write_marker(dir, mode, err, errlen) < 0)
        return -1;
    memcpy(buf, keys_public_header, KEYS_HEADER_LEN);
    memcpy(buf + KEYS_HEADER_LEN, k->public_key, 32);
    if (fs_write_atomic(dir, KEYS_PUBLIC_FILE, buf, KEYS_PUBLIC_FILE_LEN, 0600, err, errlen) < 0)
        goto done;
    int n = snprintf(host, sizeof host, "%s.onion\n", k->address);
    if (fs_write_atomic(dir, KEYS_HOSTNAME_FILE, host, (size_t)n, 0600, err, errlen) < 0)
        goto done;
    memcpy(buf, keys_secret_header, KEYS_HEADER_LEN);
    memcpy(buf + KEYS_HEADER_LEN, k->secret_key, 64);
    if (fs_write_atomic(dir, KEYS_SECRET_FILE, buf, KEYS_SECRET_FILE_LEN, 0600, err, errlen) < 0)
        goto done;
    ret = 0;
done:
    OPENSSL_cleanse(buf, sizeof buf);
    return ret;
}

/* Generate a new key: OpenSSL ed25519 keygen, then tor's expanded form of the seed. */
static int keys_generate(struct onion_key *out, char *err, size_t errlen)
{
    unsigned char seed[32], h[EVP_MAX_MD_SIZE];
    size_t slen = sizeof seed, plen = sizeof out->public_key;
    unsigned int hlen = 0;
    EVP_PKEY *pkey = NULL;
    int ret = -1;

    memset(out, 0, sizeof *out);
    pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (!pkey || EVP_PKEY_get_raw_private_key(pkey, seed, &slen) != 1 || slen != 32 ||
        EVP_PKEY_get_raw_public_key(pkey, out->public_key, &plen) != 1 || plen != 32) {
        snprintf(err, errlen, "OpenSSL ed25519 key generation failed");
        goto done;
    }
    /* RFC 8032 5.1.5: h = SHA-512(seed); a = h[0..31] clamped; h[32..63] is the signing prefix. */
    if (EVP_Digest(seed, sizeof seed, h, &hlen, EVP_sha512(), NULL) != 1 || hlen != 64) {
        snprintf(err, errlen, "OpenSSL SHA-512 failed");
        goto done;
    }
    h[0] &= 248;
    h[31] &= 127;
    h[31] |= 64;
    memcpy(out->secret_key, h, 64);
    out->has_secret = true;
    if (onion_address_from_pubkey(out->public_key, out->address) < 0) {
        snprintf(err, errlen, "OpenSSL SHA3-256 failed");
        goto done;
    }
    /* Self-check of the expansion against OpenSSL's own public key. */
    if (keys_check_pair("(new key)", out->secret_key, out->public_key, err, errlen) < 0)
        goto done;
    ret = 0;
done:
    OPENSSL_cleanse(seed, sizeof seed);
    OPENSSL_cleanse(h, sizeof h);
    EVP_PKEY_free(pkey);
    if (ret < 0)
        onion_key_clear(out);
    return ret;
}

/* Load the non-empty strict directory `dir` already read into `out`: apply the rule, mark if unused. */
static int keys_finish_load(const char *dir, enum service_mode mode, struct onion_key *out, char *err,
                            size_t errlen)
{
    enum keys_dir_use use;

    if (keys_dir_use_get(dir, &use, err, errlen) < 0 ||
        keys_check_rule(dir, use, out->address, mode, err, errlen) < 0 ||
        (use == KEYS_DIR_UNUSED && keys_write_marker(dir, mode, err, errlen) < 0)) {
        onion_key_clear(out);
        return -1;
    }
    return 0;
}

int keys_load(const char *dir, struct onion_key *out, char *err, size_t errlen)
{
    return keys_load_mode(dir, SERVICE_MODE_SINGLE, out, err, errlen);
}

int keys_load_mode(const char *dir, enum service_mode mode, struct onion_key *out, char *err, size_t errlen)
{
    bool empty;

    if (keys_read_dir(dir, true, out, &empty, err, errlen) < 0)
        return -1;
    if (empty) {
        snprintf(err, errlen, "%s/%s: no such file: this directory holds no onion service key", dir,
                 KEYS_SECRET_FILE);
        return -1;
    }
    return keys_finish_load(dir, mode, out, err, errlen);
}

int keys_inspect_mode(const char *dir, enum service_mode mode, char *address, char *err, size_t errlen)
{
    struct onion_key k;
    struct stat st;
    enum keys_dir_use use;
    bool empty;
    if (stat(dir, &st) < 0 && errno == ENOENT) {
        snprintf(err, errlen, "%s: no such directory: it holds no onion service key", dir);
        return 0;
    }
    if (keys_read_dir(dir, true, &k, &empty, err, errlen) < 0)
        return -1;
    if (empty) {
        /* keys_load_or_create_mode's rule for a new key: never an anonymous one beside the marker */
        if (mode == SERVICE_MODE_ANONYMOUS && (keys_dir_use_get(dir, &use, err, errlen) < 0 ||
                                               keys_check_rule(dir, use, "(a new key)", mode, err, errlen) < 0))
            return -1;
        snprintf(err, errlen, "%s/%s: no such file: this directory holds no onion service key", dir,
                 KEYS_SECRET_FILE);
        return 0;
    }
    /* keys_finish_load without the marker it would write */
    int rc = keys_dir_use_get(dir, &use, err, errlen) < 0 || keys_check_rule(dir, use, k.address, mode, err, errlen) < 0
                 ? -1
                 : 1;
    if (rc == 1)
        memcpy(address, k.address, ONION_ADDRESS_SIZE);
    onion_key_clear(&k);
    return rc;
}

int keys_load_or_create(const char *dir, struct onion_key *out, bool *created, char *err, size_t errlen)
{
    return keys_load_or_create_mode(dir, SERVICE_MODE_SINGLE, out, created, err, errlen);
}

int keys_load_or_create_mode(const char *dir, enum service_mode mode, struct onion_key *out, bool *created,
                             char *err, size_t errlen)
{
    bool empty;

    if (created)
        *created = false;
    if (fs_ensure_private_dir(dir, NULL, err, errlen) < 0)
        return -1;
    if (keys_read_dir(dir, true, out, &empty, err, errlen) < 0)
        return -1;
    if (!empty)
        return keys_finish_load(dir, mode, out, err, errlen);

    /* No key at all: a new key has never been used anywhere, whatever else the directory holds. But a
     * single onion's marker stays: an anonymous key is never written next to it. */
    enum keys_dir_use use;
    if (mode == SERVICE_MODE_ANONYMOUS &&
        (keys_dir_use_get(dir, &use, err, errlen) < 0 ||
         keys_check_rule(dir, use, "(a new key)", mode, err, errlen) < 0))
        return -1;
    if (keys_generate(out, err, errlen) < 0)
        return -1;
    if (keys_write_dir(dir, out, mode, err, errlen) < 0) {
        onion_key_clear(out);
        return -1;
    }
    if (created)
        *created = true;
    return 0;
}

int keys_install(const struct onion_key *k, const char *dst, char *err, size_t errlen)
{
    return keys_install_mode(k, dst, SERVICE_MODE_SINGLE, err, errlen);
}

int keys_install_mode(const struct onion_key *k, const char *dst, enum service_mode mode, char *err, size_t errlen)
{
    struct onion_key d;
    bool empty;
    int ret = -1;

    memset(&d, 0, sizeof d);
    if (fs_ensure_private_dir(dst, NULL, err, errlen) < 0)
        return -1;
    if (keys_read_dir(dst, true, &d, &empty, err, errlen) < 0)
        return -1;
    if (!empty) {
        if (CRYPTO_memcmp(d.public_key, k->public_key, 32) != 0 ||
            CRYPTO_memcmp(d.secret_key, k->secret_key, 64) != 0) {
            snprintf(err, errlen,
                     "%s: already holds a different key (%s.onion), not overwriting it with %s.onion; move it "
                     "away first",
                     dst, d.address, k->address);
            goto done;
        }
        /* Same key already there: the rule and the marker as on load. */
        if (keys_finish_load(dst, mode, &d, err, errlen) < 0)
            goto done;
    } else if (keys_write_dir(dst, k, mode, err, errlen) < 0) {
        goto done;
    }
    ret = 0;
done:
    onion_key_clear(&d);
    return ret;
}

int keys_import(const char *src, const char *dst, char *address_out, char *err, size_t errlen)
{
    return keys_import_mode(src, dst, SERVICE_MODE_SINGLE, address_out, err, errlen);
}

/* The anonymity rule for an import source (keys_import_read); keys_check_rule's for `ev` NONE, except
 * that the reasons name the evidence. */
static int keys_check_import_rule(const char *src, enum keys_dir_use use, const char *address,
                                  enum service_mode mode, enum keys_evidence ev, char *err, size_t errlen)
{
    if (mode == SERVICE_MODE_ANONYMOUS && ev == KEYS_EVIDENCE_SINGLE) {
        snprintf(err, errlen,
                 "%s: refusing to use %s.onion as an anonymous service: it ran as a single onion service, so its "
                 "key is tied to that server's location. An anonymous service needs a key that was never a single "
                 "onion's: give it a new key (onionfront new-key SERVICE)",
                 src, address);
        return -1;
    }
    if (mode == SERVICE_MODE_ANONYMOUS)
        return keys_check_rule(src, use, address, mode, err, errlen); /* refuses the marker */
    if (ev == KEYS_EVIDENCE_SINGLE || (ev == KEYS_EVIDENCE_NONE && use != KEYS_DIR_USED_UNMARKED))
        return 0; /* shown to be a single onion's, or marked, or never used */
    /* A hidden service's key as a single onion's: the address stays, the hiding ends. */
    snprintf(err, errlen,
             "%s: refusing to make %s.onion a single onion service: %s, and running an ordinary (anonymous) "
             "hidden service as a single onion would show where that hidden service is: its server's location. "
             "Two ways forward: keep it hidden, with \"mode\": \"anonymous\" for this service in onionfront's "
             "config; or give this service a new address as a single onion (onionfront new-key SERVICE)%s",
             src, address,
             ev == KEYS_EVIDENCE_ANONYMOUS
                 ? "the torrc it ran under ran it as an ordinary (anonymous) hidden service"
                 : "nothing shows that it ran as one (since 0.4.6 tor leaves no mark of the mode in the directory, "
                   "so an ordinary hidden service's directory looks the same)",
             ev == KEYS_EVIDENCE_ANONYMOUS
                 ? ""
                 : ". If it did run as a single onion, show it: --torrc FILE (the torrc it ran under, with "
                   "HiddenServiceNonAnonymousMode 1), or --i-know-it-was-a-single-onion");
    return -1;
}

int keys_import_read(const char *src, enum service_mode mode, enum keys_evidence ev, struct onion_key *out,
                     char *err, size_t errlen)
{
    enum keys_dir_use use;
    bool empty;

    if (keys_read_dir(src, false, out, &empty, err, errlen) < 0)
        return -1;
    if (empty) {
        snprintf(err, errlen, "%s/%s: no such file: %s holds no onion service key", src, KEYS_SECRET_FILE, src);
        return -1;
    }
    if (keys_dir_use_get(src, &use, err, errlen) < 0 ||
        keys_check_import_rule(src, use, out->address, mode, ev, err, errlen) < 0) {
        onion_key_clear(out);
        return -1;
    }
    return 0;
}

int keys_import_mode(const char *src, const char *dst, enum service_mode mode, char *address_out, char *err,
                     size_t errlen)
{
    struct onion_key s;
    if (keys_import_read(src, mode, KEYS_EVIDENCE_NONE, &s, err, errlen) < 0)
        return -1;
    int ret = keys_install_mode(&s, dst, mode, err, errlen);
    if (ret == 0 && address_out)
        memcpy(address_out, s.address, ONION_ADDRESS_SIZE);
    onion_key_clear(&s);
    return ret;
}

/* ---- tor's secret key file on its own (onionfront export-key / import-key FILE) ------------------ */

/* Compute the ed25519 public key A = a*B of the expanded secret key `sk` (a = its clamped first half).
 * OpenSSL's ed25519 API only takes seeds, and X25519 (see keys_check_pair) gives A's y coordinate but
 * not the sign of x. So the point is computed by OpenSSL's generic prime-field EC code on Wei25519, the
 * short Weierstrass form of curve25519 (RFC 7748 4.1; draft-ietf-lwig-curve-representations,
 * Appendix E): (x_w, y_w) = (u + A/3, v) on y^2 = x^3 + a x + b, a = (3 - A^2)/3, b = (2A^3 - 9A)/27,
 * A = 486662, generator = the Montgomery base point (u, v) = (9, V_B). Back on the Montgomery curve,
 * the Edwards point is y = (u - 1)/(u + 1), x = c * u / v, with c = sqrt(-486664) chosen so that the
 * Montgomery base point maps to the Edwards base point (c = X_B * V_B / 9). Only coordinate maps are
 * done here, in BIGNUMs; the scalar multiplication is OpenSSL's. Return 0, or -1 with a message. */
static int keys_public_from_secret(const unsigned char sk[64], unsigned char pk[32], char *err, size_t errlen)
{
    static const char v_b[] = "14781619447589544791020593568409986887264606134616475288964881837755586237401";
    static const char x_b[] = "15112221349535400772501151409588531511454012693041857206046113283949847762202";
    static const char l_low[] = "27742317777372353535851937790883648493"; /* L = 2^252 + l_low */
    BN_CTX *ctx = BN_CTX_new();
    EC_GROUP *group = NULL;
    EC_POINT *g = NULL, *q = NULL;
    BIGNUM *p, *ma, *a3, *wa, *wb, *t, *gx, *gy, *order, *cof, *scalar, *u, *v, *y, *x;
    int ret = -1;

    if (!ctx)
        goto done;
    BN_CTX_start(ctx);
    p = BN_CTX_get(ctx);
    ma = BN_CTX_get(ctx);
    a3 = BN_CTX_get(ctx);
    wa = BN_CTX_get(ctx);
    wb = BN_CTX_get(ctx);
    t = BN_CTX_get(ctx);
    gx = BN_CTX_get(ctx);
    gy = BN_CTX_get(ctx);
    order = BN_CTX_get(ctx);
    cof = BN_CTX_get(ctx);
    scalar = BN_CTX_get(ctx);
    u = BN_CTX_get(ctx);
    v = BN_CTX_get(ctx);
    y = BN_CTX_get(ctx);
    x = BN_CTX_get(ctx);
    if (!x || !BN_set_bit(p, 255) || !BN_sub_word(p, 19) || !BN_set_word(ma, 486662))
        goto done;
    /* a3 = A/3;  a = 1 - A*a3 = (3 - A^2)/3;  b = 2*a3^3 - a3 = (2A^3 - 9A)/27 */
    if (!BN_set_word(t, 3) || !BN_mod_inverse(t, t, p, ctx) || !BN_mod_mul(a3, ma, t, p, ctx) ||
        !BN_mod_mul(wa, ma, a3, p, ctx) || !BN_one(t) || !BN_mod_sub(wa, t, wa, p, ctx) ||
        !BN_mod_sqr(wb, a3, p, ctx) || !BN_mod_mul(wb, wb, a3, p, ctx) || !BN_mod_add(wb, wb, wb, p, ctx) ||
        !BN_mod_sub(wb, wb, a3, p, ctx))
        goto done;
    /* generator (9 + a3, V_B), of order L, cofactor 8 */
    if (!BN_set_word(gx, 9) || !BN_mod_add(gx, gx, a3, p, ctx) || !BN_dec2bn(&gy, v_b) ||
        !BN_dec2bn(&order, l_low) || !BN_set_word(t, 0) || !BN_set_bit(t, 252) || !BN_add(order, order, t) ||
        !BN_set_word(cof, 8))
        goto done;
    if (!(group = EC_GROUP_new_curve_GFp(p, wa, wb, ctx)) || !(g = EC_POINT_new(group)) ||
        !(q = EC_POINT_new(group)) || !EC_POINT_set_affine_coordinates(group, g, gx, gy, ctx) ||
        !EC_GROUP_set_generator(group, g, order, cof))
        goto done;
    if (!BN_lebin2bn(sk, 32, scalar) || !EC_POINT_mul(group, q, scalar, NULL, NULL, ctx) ||
        !EC_POINT_get_affine_coordinates(group, q, u, v, ctx) || !BN_mod_sub(u, u, a3, p, ctx))
        goto done;
    /* y = (u - 1)/(u + 1) */
    if (!BN_one(t) || !BN_mod_sub(y, u, t, p, ctx) || !BN_mod_add(x, u, t, p, ctx) ||
        !BN_mod_inverse(x, x, p, ctx) || !BN_mod_mul(y, y, x, p, ctx))
        goto done;
    /* x = c*u/v with c = X_B * V_B / 9 */
    if (!BN_dec2bn(&x, x_b) || !BN_mod_mul(x, x, gy, p, ctx) || !BN_set_word(t, 9) ||
        !BN_mod_inverse(t, t, p, ctx) || !BN_mod_mul(x, x, t, p, ctx) || !BN_mod_mul(x, x, u, p, ctx) ||
        !BN_mod_inverse(t, v, p, ctx) || !BN_mod_mul(x, x, t, p, ctx))
        goto done;
    /* RFC 8032 5.1.2: y little-endian, the top bit = the low bit of x */
    if (BN_bn2lebinpad(y, pk, 32) != 32)
        goto done;
    pk[31] |= (unsigned char)(BN_is_odd(x) ? 0x80 : 0);
    ret = 0;
done:
    if (ret < 0)
        snprintf(err, errlen, "OpenSSL error while computing the public key from the secret key");
    if (ctx) {
        BN_clear(scalar); /* the secret scalar */
        BN_CTX_end(ctx);
        BN_CTX_free(ctx);
    }
    EC_POINT_free(q);
    EC_POINT_free(g);
    EC_GROUP_free(group);
    return ret;
}

int keys_secret_file_encode(const struct onion_key *k, unsigned char out[KEYS_SECRET_FILE_LEN])
{
    if (!k->has_secret)
        return -1;
    memcpy(out, keys_secret_header, KEYS_HEADER_LEN);
    memcpy(out + KEYS_HEADER_LEN, k->secret_key, 64);
    return 0;
}

int keys_secret_file_decode(const unsigned char *buf, size_t len, const char *what, struct onion_key *out,
                            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len != KEYS_SECRET_FILE_LEN) {
        snprintf(err, errlen, "%s: %zu bytes, expected %d (tor's %s: 32-byte header + 64-byte expanded key)",
                 what, len, KEYS_SECRET_FILE_LEN, KEYS_SECRET_FILE);
        return -1;
    }
    if (memcmp(buf, keys_secret_header, KEYS_HEADER_LEN) != 0) {
        snprintf(err, errlen, "%s: bad header, expected \"%s\" padded with NULs to 32 bytes (tor's %s)", what,
                 keys_secret_header, KEYS_SECRET_FILE);
        return -1;
    }
    memcpy(out->secret_key, buf + KEYS_HEADER_LEN, 64);
    out->has_secret = true;
    /* keys_check_pair refuses an unclamped scalar before anything relies on the derived key */
    if (keys_public_from_secret(out->secret_key, out->public_key, err, errlen) < 0 ||
        keys_check_pair(what, out->secret_key, out->public_key, err, errlen) < 0) {
        onion_key_clear(out);
        return -1;
    }
    if (onion_address_from_pubkey(out->public_key, out->address) < 0) {
        snprintf(err, errlen, "%s: SHA3-256 failed computing the onion address", what);
        onion_key_clear(out);
        return -1;
    }
    return 0;
}
