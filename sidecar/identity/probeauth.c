/* probeauth.c — the probe's own client-authorization key pair (see probeauth.h). */
#include "sidecar/identity/probeauth.h"

#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "sidecar/identity/clientauth.h"
#include "sidecar/config/config_value.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/onion_address.h"

bool probeauth_wanted(const struct config *c)
{
    return c->probe.client_tor;
}

void probeauth_clear(struct probeauth *a)
{
    OPENSSL_cleanse(a->private_b64, sizeof(a->private_b64));
}

/* Fill *out from the private key `priv` (52 base32 characters). Return 0 or -1. */
static int probeauth_from_private(const char *priv, struct probeauth *out)
{
    unsigned char raw[32], pub[32];
    size_t pub_len = sizeof(pub);
    EVP_PKEY *key = NULL;
    int ok = config_x25519_b32_decode(priv, CONFIG_X25519_B32_LEN, raw) == 0 &&
             (key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, raw, sizeof(raw))) != NULL &&
             EVP_PKEY_get_raw_public_key(key, pub, &pub_len) == 1 && pub_len == sizeof(pub);
    if (ok) {
        memset(out, 0, sizeof(*out));
        snprintf(out->entry.name, sizeof(out->entry.name), "%s", PROBEAUTH_CLIENT_NAME);
        onion_address_base32(pub, sizeof(pub), out->entry.public_key);
        for (char *p = out->entry.public_key; *p; p++)
            if (*p >= 'a' && *p <= 'z')
                *p = (char)(*p - 'a' + 'A');
        EVP_EncodeBlock((unsigned char *)out->private_b64, raw, sizeof(raw));
    }
    OPENSSL_cleanse(raw, sizeof(raw));
    EVP_PKEY_free(key);
    return ok ? 0 : -1;
}

int probeauth_load(const char *state_dir, bool create, struct probeauth *out, char *err, size_t errlen)
{
    char buf[CONFIG_X25519_B32_LEN + 2], pub[53], priv[53];
    size_t len = 0;
    int dfd = fs_open_dir(state_dir, false, err, errlen);
    if (dfd < 0)
        return -1;
    int rc = fs_read_small_at(dfd, state_dir, PROBEAUTH_FILE, buf, sizeof(buf) - 1, &len, NULL, err, errlen);
    if (rc == 1 && create) {
        if (clientauth_keypair(pub, priv) < 0) {
            snprintf(err, errlen, "%s/%s: OpenSSL could not make an x25519 key pair", state_dir, PROBEAUTH_FILE);
            rc = -1;
        } else {
            len = (size_t)snprintf(buf, sizeof(buf), "%s\n", priv);
            rc = fs_write_at(dfd, state_dir, PROBEAUTH_FILE, buf, len, err, errlen);
        }
        OPENSSL_cleanse(priv, sizeof(priv));
    }
    if (rc == 0 && (len != CONFIG_X25519_B32_LEN + 1 || buf[CONFIG_X25519_B32_LEN] != '\n' ||
                    probeauth_from_private(buf, out) < 0)) {
        snprintf(err, errlen, "%s/%s: not a probe key onionfront wrote (remove it: a new one is made at the "
                 "next start or reload)", state_dir, PROBEAUTH_FILE);
        rc = -1;
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    close(dfd);
    return rc;
}

int probeauth_entry(const struct config *c, bool create, struct client_auth_conf *entry, bool *have, char *err,
                    size_t errlen)
{
    struct probeauth a;
    *have = false;
    if (!probeauth_wanted(c))
        return 0;
    int rc = probeauth_load(c->state_dir, create, &a, err, errlen);
    if (rc == 0) {
        *entry = a.entry;
        *have = true;
    }
    probeauth_clear(&a);
    return rc < 0 ? -1 : 0;
}

int probeauth_for_service(const struct config *c, const struct service_conf *sc, bool create,
                          struct client_auth_conf *buf, const struct client_auth_conf **out, char *err,
                          size_t errlen)
{
    bool have = false;
    *out = NULL;
    if (sc->n_clients == 0)
        return 0;
    if (probeauth_entry(c, create, buf, &have, err, errlen) < 0)
        return -1;
    *out = have ? buf : NULL;
    return 0;
}
