/* ob_config.c — the "onionbalance" object, ob_config and config.yaml texts, status JSON (see ob_config.h). */
#include "sidecar/config/ob_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sidecar/config/config_value.h"
#include "sidecar/core/onion_address.h"

static int ob_fail(char *err, size_t errlen, const char *path, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* "<path>.<field>: message" (or "<path>: message" without a field). Always -1. */
static int ob_fail(char *err, size_t errlen, const char *path, const char *field, const char *fmt, ...)
{
    int n = snprintf(err, errlen, "%s%s%s: ", path, field ? "." : "", field ? field : "");
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* RFC 4648 base32 (either case) of exactly 56 characters into 35 bytes. Return 0 or -1. */
static int ob_base32_decode56(const char *s, unsigned char out[35])
{
    unsigned acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < OB_ADDRESS_LEN; i++) {
        char c = s[i];
        int v = c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? c - 'A' : c >= '2' && c <= '7' ? c - '2' + 26 : -1;
        if (v < 0)
            return -1;
        acc = (acc << 5) | (unsigned)v;
        bits += 5;
        if (bits >= 8) {
            out[o++] = (unsigned char)(acc >> (bits - 8));
            bits -= 8;
            acc &= (1u << bits) - 1;
        }
    }
    return o == 35 ? 0 : -1;
}

bool ob_address_parse(const char *s, size_t len, char *out)
{
    unsigned char raw[35];
    char canon[ONION_ADDRESS_SIZE];
    if (len == OB_ADDRESS_LEN + 6 && strncasecmp(s + OB_ADDRESS_LEN, ".onion", 6) == 0)
        len = OB_ADDRESS_LEN;
    if (len != OB_ADDRESS_LEN || ob_base32_decode56(s, raw) < 0 || raw[34] != 3)
        return false;
    /* The address the public key gives (checksum and version included) must be this one. */
    if (onion_address_from_pubkey(raw, canon) < 0 || strncasecmp(canon, s, OB_ADDRESS_LEN) != 0)
        return false;
    if (out)
        memcpy(out, canon, OB_ADDRESS_LEN + 1);
    return true;
}

/* A required or optional onion address field of `o`. */
static int ob_get_address(json_t *o, const char *path, const char *field, char *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, field);
    if (!json_is_string(v))
        return ob_fail(err, errlen, path, field, "must be a string: a v3 onion address (56 characters + .onion)");
    if (!ob_address_parse(json_string_value(v), json_string_length(v), out))
        return ob_fail(err, errlen, path, field, "is not a v3 onion address (56 base32 characters with a valid "
                                                 "checksum, optionally followed by .onion)");
    return 0;
}

static int ob_parse_frontend(json_t *o, const char *path, bool pow_enabled, struct ob_conf *out, char *err,
                             size_t errlen)
{
    json_t *v = json_object_get(o, "frontend");
    if (!json_is_true(v))
        return ob_fail(err, errlen, path, "frontend", "must be true (leave it out for an instance)");
    if (pow_enabled)
        return ob_fail(err, errlen, path, NULL,
                       "a frontend cannot use dos.pow: Onionbalance 0.2.2 leaves pow-params out of the merged "
                       "descriptor, so clients of the master address would never solve a puzzle (enable PoW on "
                       "the instances' own addresses, or run one machine without Onionbalance)");
    json_t *arr = json_object_get(o, "instances");
    if (arr && !json_is_array(arr))
        return ob_fail(err, errlen, path, "instances", "must be an array of onion addresses");
    if (json_array_size(arr) > OB_MAX_INSTANCES)
        return ob_fail(err, errlen, path, "instances",
                       "must have at most %d entries (2 intro points each; tor clients refuse more than 20 and "
                       "Onionbalance caps the descriptor at 50 kB)", OB_MAX_INSTANCES);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char f[32];
        json_t *a = json_array_get(arr, i);
        snprintf(f, sizeof(f), "instances[%zu]", i);
        if (!json_is_string(a) || !ob_address_parse(json_string_value(a), json_string_length(a), out->instances[i]))
            return ob_fail(err, errlen, path, f, "is not a v3 onion address");
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->instances[j], out->instances[i]) == 0)
                return ob_fail(err, errlen, path, f, "is listed twice");
        out->n_instances = i + 1;
    }
    if ((v = json_object_get(o, "testnet")) && !json_is_boolean(v))
        return ob_fail(err, errlen, path, "testnet", "must be true or false");
    out->testnet = json_is_true(v);
    if ((v = json_object_get(o, "publish_deadline"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 60 || json_integer_value(v) > 86400)
            return ob_fail(err, errlen, path, "publish_deadline", "must be an integer, 60-86400 seconds");
        out->publish_deadline = (unsigned)json_integer_value(v);
    }
    out->role = OB_ROLE_FRONTEND;
    return 0;
}

int ob_conf_parse(json_t *o, const char *path, bool pow_enabled, struct ob_conf *out, char *err,
                  size_t errlen)
{
    static const char *const instance_keys[] = {"master_address", NULL};
    static const char *const frontend_keys[] = {"frontend", "instances", "testnet", "publish_deadline", NULL};
    memset(out, 0, sizeof(*out));
    out->publish_deadline = OB_DEFAULT_PUBLISH_DEADLINE;
    if (!o)
        return 0;
    if (!json_is_object(o))
        return ob_fail(err, errlen, path, NULL, "must be an object");
    bool frontend = json_object_get(o, "frontend") != NULL;
    const char *const *allowed = frontend ? frontend_keys : instance_keys;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i]) {
            bool other = false;
            for (const char *const *k = frontend ? instance_keys : frontend_keys; *k; k++)
                other |= strcmp(*k, key) == 0;
            return ob_fail(err, errlen, path, NULL, "%s key \"%.64s\"%s", other ? "misplaced" : "unknown", key,
                           !other ? ""
                           : frontend ? " (master_address belongs to an instance, not a frontend)"
                                      : " (frontend settings need \"frontend\": true)");
        }
    }
    if (frontend)
        return ob_parse_frontend(o, path, pow_enabled, out, err, errlen);
    if (ob_get_address(o, path, "master_address", out->master_address, err, errlen) < 0)
        return -1;
    out->role = OB_ROLE_INSTANCE;
    return 0;
}

bool ob_conf_equal(const struct ob_conf *a, const struct ob_conf *b)
{
    if (a->role != b->role || strcmp(a->master_address, b->master_address) != 0 || a->n_instances != b->n_instances ||
        a->testnet != b->testnet || a->publish_deadline != b->publish_deadline)
        return false;
    for (size_t i = 0; i < a->n_instances; i++)
        if (strcmp(a->instances[i], b->instances[i]) != 0)
            return false;
    return true;
}

const char *ob_role_str(enum ob_role r)
{
    switch (r) {
    case OB_ROLE_NONE: return "none";
    case OB_ROLE_INSTANCE: return "instance";
    case OB_ROLE_FRONTEND: return "frontend";
    }
    return "?";
}

int ob_instance_file_text(const char *master, char *out, size_t len)
{
    int n = snprintf(out, len, "MasterOnionAddress %s.onion\n", master);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

char *ob_yaml_render(const char *key_path, const char (*instances)[OB_ADDRESS_LEN + 1], size_t n, char *err,
                     size_t errlen)
{
    /* Values go into YAML unquoted: only characters that YAML reads as a plain scalar, and that
     * config.c already requires of paths (run_dir) — nothing that starts a comment, flow or quote. */
    if (!key_path || key_path[0] != '/' || !config_is_plain_path(key_path)) {
        snprintf(err, errlen, "the key path may only contain A-Z a-z 0-9 / . _ - +");
        return NULL;
    }
    if (n == 0 || n > OB_MAX_INSTANCES * 2) {
        snprintf(err, errlen, "needs 1-%d instances, has %zu", OB_MAX_INSTANCES, n);
        return NULL;
    }
    size_t cap = 128 + strlen(key_path) + n * (OB_ADDRESS_LEN + 64);
    char *out = malloc(cap);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t o = (size_t)snprintf(out, cap, "# written by onionfront at every start of Onionbalance: do not edit\n"
                                          "services:\n- key: %s\n  instances:\n", key_path);
    for (size_t i = 0; i < n; i++) {
        if (!ob_address_parse(instances[i], strlen(instances[i]), NULL)) {
            snprintf(err, errlen, "instance %zu is not a v3 onion address", i);
            free(out);
            return NULL;
        }
        o += (size_t)snprintf(out + o, cap - o, "  - address: %.56s.onion\n    name: instance%zu\n", instances[i],
                              i + 1);
    }
    return out;
}

/* A string field of `o` into `out`, "" when absent or null. */
static void ob_copy_str(json_t *o, const char *key, char *out, size_t len)
{
    json_t *v = json_object_get(o, key);
    snprintf(out, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

int ob_status_parse(const char *json, size_t len, const char *master, struct ob_status *out, char *err,
                    size_t errlen)
{
    json_error_t je;
    memset(out, 0, sizeof(*out));
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "not JSON: %s", je.text);
        return -1;
    }
    int rc = -1;
    json_t *svcs = json_object_get(root, "services"), *svc;
    size_t i;
    if (!json_is_array(svcs)) {
        snprintf(err, errlen, "no \"services\" array");
        goto done;
    }
    json_array_foreach(svcs, i, svc) {
        json_t *a = json_object_get(svc, "onionAddress");
        char addr[OB_ADDRESS_LEN + 1];
        /* stem's address carries ".onion"; some versions printed it twice. */
        if (!json_is_string(a) || json_string_length(a) < OB_ADDRESS_LEN ||
            !ob_address_parse(json_string_value(a), OB_ADDRESS_LEN, addr) || strcmp(addr, master) != 0)
            continue;
        ob_copy_str(svc, "publishAttemptFirstDescriptor", out->attempt_first, sizeof(out->attempt_first));
        ob_copy_str(svc, "publishAttemptSecondDescriptor", out->attempt_second, sizeof(out->attempt_second));
        out->attempted = out->attempt_first[0] || out->attempt_second[0];
        json_t *insts = json_object_get(svc, "instances"), *in;
        size_t j;
        json_array_foreach(insts, j, in) {
            json_t *ia = json_object_get(in, "onionAddress"), *ip = json_object_get(in, "introPointsNum");
            struct ob_status_instance *si = &out->instances[out->n_instances];
            if (out->n_instances == sizeof(out->instances) / sizeof(out->instances[0]))
                break;
            if (!json_is_string(ia) || !ob_address_parse(json_string_value(ia), json_string_length(ia), si->address))
                continue;
            json_t *r = json_object_get(in, "descriptorReceived");
            if (!r)
                r = json_object_get(in, "received");
            si->received = json_is_string(r);
            snprintf(si->received_at, sizeof(si->received_at), "%s", si->received ? json_string_value(r) : "");
            /* Onionbalance writes len(intro_set) of a descriptor tor built: 0-20 (tor refuses more), and
             * leaves the field out before the first descriptor. Anything else did not come from it. */
            si->intro_points = -1;
            if (ip && !json_is_null(ip)) {
                if (!json_is_integer(ip) || json_integer_value(ip) < 0 ||
                    json_integer_value(ip) > CONFIG_MAX_INTRO_POINTS) {
                    snprintf(err, errlen, "services[%zu].instances[%zu].introPointsNum: must be an integer 0-%d",
                             i, j, CONFIG_MAX_INTRO_POINTS);
                    goto done;
                }
                si->intro_points = (int)json_integer_value(ip);
            }
            out->n_instances++;
        }
        rc = 0;
        goto done;
    }
    snprintf(err, errlen, "the master %.56s is not listed", master);
done:
    json_decref(root);
    return rc;
}
