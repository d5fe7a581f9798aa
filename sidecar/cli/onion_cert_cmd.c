/* onion_cert_cmd.c — `onionfront onion-csr` and `onion-caa` (see onion_cert_cmd.h). */
#include "sidecar/cli/onion_cert_cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/rand.h>

#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/proc.h"
#include "sidecar/identity/keys.h"
#include "sidecar/identity/onion_csr.h"

/* If argv[*i] is the option `name`, as "NAME VALUE" or "NAME=VALUE", put its value in *val, advance *i
 * past it and return 1; return 0 if it is another word, -1 (said on errf) if the value is missing. */
static int onion_cert_opt(const char *cmd, int argc, char **argv, int *i, const char *name, const char **val,
                          FILE *errf)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return 0;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(errf, "onionfront %s: %s needs a value\n", cmd, name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

static int onion_cert_usage(const char *cmd, const char *why, const char *arg, FILE *errf)
{
    fprintf(errf, "onionfront %s: %s%s%s\n", cmd, why, arg ? " " : "", arg ? arg : "");
    if (strcmp(cmd, "onion-csr") == 0)
        fprintf(errf, "usage: onionfront [-c CONFIG] onion-csr SERVICE --ca-nonce NONCE [--wildcard] [--out FILE] "
                      "[" ONION_CERT_PUBLISH_FLAG "]\n");
    else
        fprintf(errf, "usage: onionfront [-c CONFIG] onion-caa SERVICE --caa RECORD [--caa RECORD ...] "
                      "[--expiry SECONDS] [" ONION_CERT_PUBLISH_FLAG "]\n");
    return 2;
}

/* A certificate is logged in public Certificate Transparency logs, and its name with it: for a service
 * whose address is meant to stay unknown (client authorization, or a location-hidden service) that
 * publishes the address, so only the operator's explicit word (ONION_CERT_PUBLISH_FLAG) makes it go on.
 * Return true (said on errf) if `sc` is such a service and `publish` was not given. */
static bool onion_cert_address_private(const char *cmd, const struct service_conf *sc, bool publish, FILE *errf)
{
    bool anonymous = sc->mode == SERVICE_MODE_ANONYMOUS, private = sc->n_clients > 0;
    if (publish || (!anonymous && !private))
        return false;
    fprintf(errf,
            "onionfront %s: refusing: service %s is %s; a certificate for it goes into public Certificate "
            "Transparency logs, which publish its .onion address to everyone (the reason Onion-Location is off "
            "for it). If the address may be public, say so with " ONION_CERT_PUBLISH_FLAG "\n",
            cmd, sc->name,
            private && anonymous ? "an anonymous service with client authorization"
            : private            ? "a service with client authorization (its address is for its clients only)"
                                 : "an anonymous (location-hidden) service");
    return true;
}

/* Load the config and SERVICE's key (secret included) into *key; `publish`: ONION_CERT_PUBLISH_FLAG was
 * given. Return 0, or -1 with the reason said on errf; nothing is created or changed on the way to a
 * refusal. */
static int onion_cert_load_key(const char *cmd, const char *config_path, const char *service, bool publish,
                               struct onion_key *key, FILE *errf)
{
    char err[2048], path[PATH_MAX];
    struct stat st;
    int rc = -1;
    struct config *conf = config_load_file(config_path, err, sizeof err);
    if (!conf) {
        fprintf(errf, "onionfront %s: %s: %s\n", cmd, config_path, err);
        return -1;
    }
    const struct service_conf *sc = config_find_service(conf, service);
    if (!sc) {
        fprintf(errf, "onionfront %s: no service named \"%s\" in %s\n", cmd, service, config_path);
        goto done;
    }
    if (sc->onionbalance.role == OB_ROLE_INSTANCE) {
        fprintf(errf,
                "onionfront %s: service %s is an Onionbalance instance of %s.onion: visitors, and so certificates, "
                "use the master address, and only the master's key can prove control of it. Run this command "
                "for the Onionbalance frontend service that holds the master key (on the machine that runs it); "
                "an instance's own address is never shown to visitors\n",
                cmd, sc->name, sc->onionbalance.master_address);
        goto done;
    }
    if (onion_cert_address_private(cmd, sc, publish, errf))
        goto done;
    /* The secret key is about to be in this process's memory. */
    if (proc_protect_secrets() < 0) {
        fprintf(errf, "onionfront %s: cannot keep core dumps and ptrace away from the key (prctl, setrlimit): %s\n",
                cmd, strerror(errno));
        goto done;
    }
    /* Before the first start there is no key: say that plainly, not as a missing file in a message. */
    int n = snprintf(path, sizeof path, "%s/%s", sc->key_dir, KEYS_SECRET_FILE);
    if (n > 0 && (size_t)n < sizeof path && lstat(path, &st) < 0 && errno == ENOENT) {
        fprintf(errf,
                "onionfront %s: service %s has no key yet (%s does not exist): onionfront creates it at the "
                "service's first start; or give it one with onionfront new-key %s, or import-key %s DIR|FILE\n",
                cmd, sc->name, path, sc->name, sc->name);
        goto done;
    }
    if (keys_load_mode(sc->key_dir, sc->mode, key, err, sizeof err) < 0) {
        fprintf(errf, "onionfront %s: service %s: %s\n", cmd, sc->name, err);
        goto done;
    }
    rc = 0;
done:
    config_free(conf);
    return rc;
}

/* Split `file` into its directory (into `dir`) and name. Return the name, or NULL if `file` names none. */
static const char *onion_cert_split(const char *file, char *dir, size_t cap)
{
    const char *slash = strrchr(file, '/');
    if (!slash) {
        snprintf(dir, cap, ".");
        return *file ? file : NULL;
    }
    if (!slash[1] || (size_t)(slash - file) >= cap)
        return NULL;
    snprintf(dir, cap, "%.*s", slash == file ? 1 : (int)(slash - file), file);
    return slash + 1;
}

int onion_cert_cmd_csr(const char *config_path, int argc, char **argv, FILE *out, FILE *errf)
{
    static const char cmd[] = "onion-csr";
    const char *service = NULL, *nonce_text = NULL, *file = NULL, *name = NULL, *v;
    char dir[PATH_MAX], err[1024];
    bool wildcard = false, publish = false;
    struct onion_nonce ca, app;
    struct onion_key key;
    int o;

    for (int i = 0; i < argc; i++) {
        if ((o = onion_cert_opt(cmd, argc, argv, &i, "--ca-nonce", &v, errf)) != 0) {
            if (o < 0 || nonce_text)
                return o < 0 ? 2 : onion_cert_usage(cmd, "--ca-nonce given twice", NULL, errf);
            nonce_text = v;
        } else if ((o = onion_cert_opt(cmd, argc, argv, &i, "--out", &v, errf)) != 0) {
            if (o < 0 || file)
                return o < 0 ? 2 : onion_cert_usage(cmd, "--out given twice", NULL, errf);
            file = v;
        } else if (strcmp(argv[i], "--wildcard") == 0) {
            wildcard = true;
        } else if (strcmp(argv[i], ONION_CERT_PUBLISH_FLAG) == 0) {
            publish = true;
        } else if (argv[i][0] == '-' || service) {
            return onion_cert_usage(cmd, argv[i][0] == '-' ? "unknown option" : "unexpected argument", argv[i],
                                    errf);
        } else {
            service = argv[i];
        }
    }
    if (!service)
        return onion_cert_usage(cmd, "which service? (a name from the config)", NULL, errf);
    if (!nonce_text)
        return onion_cert_usage(cmd, "--ca-nonce is required: the nonce the certificate authority gave you", NULL,
                                errf);
    if (onion_nonce_parse(nonce_text, &ca, err, sizeof err) < 0) {
        fprintf(errf, "onionfront %s: --ca-nonce: %s\n", cmd, err);
        return 1;
    }
    if (file && !(name = onion_cert_split(file, dir, sizeof dir))) {
        fprintf(errf, "onionfront %s: --out %s: not a file name\n", cmd, file);
        return 1;
    }
    /* The applicant's nonce: the Baseline Requirements ask for at least 64 bits of entropy. */
    app.len = ONION_APPLICANT_NONCE_LEN;
    if (RAND_bytes(app.bytes, (int)app.len) != 1) {
        fprintf(errf, "onionfront %s: no random bytes from OpenSSL for the applicant's nonce\n", cmd);
        return 1;
    }
    if (onion_cert_load_key(cmd, config_path, service, publish, &key, errf) < 0)
        return 1;
    char *pem = onion_csr_build(&key, &ca, &app, wildcard, err, sizeof err);
    if (!pem) {
        fprintf(errf, "onionfront %s: service %s: %s\n", cmd, service, err);
        onion_key_clear(&key);
        return 1;
    }
    int rc = 0;
    size_t len = strlen(pem);
    if (!file) {
        if (fwrite(pem, 1, len, out) != len || fflush(out) != 0) {
            fprintf(errf, "onionfront %s: writing to standard output failed: %s\n", cmd, strerror(errno));
            rc = 1;
        }
    } else if (fs_write_atomic(dir, name, pem, len, 0644, err, sizeof err) < 0) {
        fprintf(errf, "onionfront %s: %s\n", cmd, err);
        rc = 1;
    } else {
        fprintf(out,
                "onionfront %s: the certificate signing request for %s.onion%s%s%s (service %s), signed with its "
                "onion key, is in %s: give it to the certificate authority\n",
                cmd, key.address, wildcard ? " and *." : "", wildcard ? key.address : "", wildcard ? ".onion" : "",
                service, file);
    }
    free(pem);
    onion_key_clear(&key);
    return rc;
}

/* Read --expiry's SECONDS: 1 to ONION_CAA_EXPIRY_MAX. Return it, or -1. */
static long onion_cert_seconds(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || s[0] == '+' || v < 1 || v > ONION_CAA_EXPIRY_MAX)
        return -1;
    return v;
}

int onion_cert_cmd_caa(const char *config_path, int argc, char **argv, time_t now, FILE *out, FILE *errf)
{
    static const char cmd[] = "onion-caa";
    const char *service = NULL, *expiry_text = NULL, *v;
    char records[ONION_CERT_CMD_MAX_CAA * (ONION_CAA_RECORD_MAX + 1)], rec[ONION_CAA_RECORD_MAX], err[1024];
    size_t n_records = 0, used = 0;
    bool publish = false;
    struct onion_key key;
    int o;

    records[0] = '\0';
    for (int i = 0; i < argc; i++) {
        if ((o = onion_cert_opt(cmd, argc, argv, &i, "--caa", &v, errf)) != 0) {
            if (o < 0)
                return 2;
            if (n_records == ONION_CERT_CMD_MAX_CAA) {
                fprintf(errf, "onionfront %s: at most %d --caa records\n", cmd, ONION_CERT_CMD_MAX_CAA);
                return 1;
            }
            if (onion_caa_record_parse(v, rec, err, sizeof err) < 0) {
                fprintf(errf, "onionfront %s: --caa %s: %s\n", cmd, v, err);
                return 1;
            }
            /* RFC 9799 6.4: the records as in the descriptor, one per line */
            used += (size_t)snprintf(records + used, sizeof records - used, "%s%s", n_records ? "\n" : "", rec);
            n_records++;
        } else if ((o = onion_cert_opt(cmd, argc, argv, &i, "--expiry", &v, errf)) != 0) {
            if (o < 0 || expiry_text)
                return o < 0 ? 2 : onion_cert_usage(cmd, "--expiry given twice", NULL, errf);
            expiry_text = v;
        } else if (strcmp(argv[i], ONION_CERT_PUBLISH_FLAG) == 0) {
            publish = true;
        } else if (argv[i][0] == '-' || service) {
            return onion_cert_usage(cmd, argv[i][0] == '-' ? "unknown option" : "unexpected argument", argv[i],
                                    errf);
        } else {
            service = argv[i];
        }
    }
    if (!service)
        return onion_cert_usage(cmd, "which service? (a name from the config)", NULL, errf);
    if (n_records == 0)
        return onion_cert_usage(cmd, "--caa is required, e.g. --caa 'issue \"harica.gr\"'", NULL, errf);
    long seconds = ONION_CAA_EXPIRY_MAX;
    if (expiry_text && (seconds = onion_cert_seconds(expiry_text)) < 0) {
        fprintf(errf, "onionfront %s: --expiry %s: must be a number of seconds, 1-%d (RFC 9799: at most 8 hours)\n",
                cmd, expiry_text, ONION_CAA_EXPIRY_MAX);
        return 1;
    }
    if (onion_cert_load_key(cmd, config_path, service, publish, &key, errf) < 0)
        return 1;
    int64_t expiry = (int64_t)now + seconds;
    json_t *obj = onion_caa_build(&key, records, expiry, err, sizeof err);
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    int rc = 0;
    if (!obj) {
        fprintf(errf, "onionfront %s: service %s: %s\n", cmd, service, err);
        rc = 1;
    } else if (!text || fprintf(out, "%s\n", text) < 0 || fflush(out) != 0) {
        fprintf(errf, "onionfront %s: writing to standard output failed\n", cmd);
        rc = 1;
    } else {
        char when[32];
        struct tm tm;
        time_t t = (time_t)expiry;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
        fprintf(errf,
                "onionfront %s: in-band CAA of %s.onion (service %s), valid until %s: send it as "
                "onionCAA[\"%s.onion\"] in the ACME finalize request\n",
                cmd, key.address, service, when, key.address);
    }
    free(text);
    json_decref(obj);
    onion_key_clear(&key);
    return rc;
}
