/* torcaps.c — a tor binary's version and modules, and whether a config's dos settings fit them
 * (see torcaps.h). */
#include "sidecar/tor/torcaps.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sidecar/core/clock.h"
#include "sidecar/config/config.h"
#include "sidecar/core/proc.h"

#define TORCAPS_OUTPUT_MAX 8192
#define TORCAPS_TIMEOUT_MS 10000

int torcaps_version_cmp(const unsigned a[4], const unsigned b[4])
{
    for (int i = 0; i < 4; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Parse "a.b.c.d" (each 0-65535) at s into v; return the number of bytes read, or 0. */
static size_t torcaps_scan_version(const char *s, unsigned v[4])
{
    size_t i = 0;
    for (int k = 0; k < 4; k++) {
        if (k > 0 && s[i++] != '.')
            return 0;
        size_t start = i;
        unsigned long x = 0;
        while (s[i] >= '0' && s[i] <= '9' && i - start < 5)
            x = x * 10 + (unsigned long)(s[i++] - '0');
        if (i == start || x > 65535 || (s[i] >= '0' && s[i] <= '9'))
            return 0;
        v[k] = (unsigned)x;
    }
    return i;
}

int torcaps_parse_version(const char *text, struct torcaps *caps, char *err, size_t errlen)
{
    static const char prefix[] = "Tor version ";
    if (strncmp(text, prefix, strlen(prefix)) != 0) {
        snprintf(err, errlen, "tor --version did not start with \"%s\"", prefix);
        return -1;
    }
    const char *s = text + strlen(prefix);
    size_t n = torcaps_scan_version(s, caps->version);
    /* After the number: "." (end of sentence), "-alpha" and the like, or " (git-...)". */
    if (n == 0 || (s[n] != '.' && s[n] != '-' && s[n] != ' ' && s[n] != '\n' && s[n] != '\0')) {
        snprintf(err, errlen, "tor --version: no version number a.b.c.d after \"%s\"", prefix);
        return -1;
    }
    snprintf(caps->version_text, sizeof(caps->version_text), "%.*s", (int)n, s);
    return 0;
}

int torcaps_parse_modules(const char *text, struct torcaps *caps, char *err, size_t errlen)
{
    bool seen = false;
    const char *line = text;
    for (int lineno = 1; *line; lineno++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        if (len > 0) {
            if (!colon || colon == line) {
                snprintf(err, errlen, "tor --list-modules: line %d is not \"name: yes|no\"", lineno);
                return -1;
            }
            const char *val = colon + 1;
            size_t vlen = len - (size_t)(val - line);
            bool yes = vlen == 4 && memcmp(val, " yes", 4) == 0;
            if (!yes && !(vlen == 3 && memcmp(val, " no", 3) == 0)) {
                snprintf(err, errlen, "tor --list-modules: line %d is not \"name: yes|no\"", lineno);
                return -1;
            }
            if ((size_t)(colon - line) == 3 && memcmp(line, "pow", 3) == 0) {
                caps->pow = yes;
                seen = true;
            }
        }
        line += len + (end ? 1 : 0);
    }
    if (!seen) {
        snprintf(err, errlen, "tor --list-modules does not list the pow module");
        return -1;
    }
    return 0;
}

int torcaps_check_service(const struct torcaps *caps, const struct service_conf *sc, size_t i, char *err,
                          size_t errlen)
{
    unsigned min[4];
    torcaps_scan_version(TORCAPS_POW_MIN_VERSION, min);
    if (!sc->dos.pow_enabled)
        return 0;
    if (!caps->pow) {
        snprintf(err, errlen, "services[%zu].dos.pow.enabled: this tor (%s) was built without the pow module "
                 "(tor --list-modules says \"pow: no\")", i, caps->version_text);
        return -1;
    }
    if (torcaps_version_cmp(caps->version, min) < 0) {
        snprintf(err, errlen, "services[%zu].dos.pow.enabled: needs tor %s or later (older ones crash on PoW "
                 "services, TROVE-2026-020); this tor is %s", i, TORCAPS_POW_MIN_VERSION, caps->version_text);
        return -1;
    }
    return 0;
}

int torcaps_check(const struct torcaps *caps, const struct config *conf, char *err, size_t errlen)
{
    for (size_t i = 0; i < conf->n_services; i++)
        if (torcaps_check_service(caps, &conf->services[i], i, err, errlen) < 0)
            return -1;
    return 0;
}

/* Run `binary arg` with stdout+stderr into `out` (NUL-terminated, truncated at outlen - 1), bounded by
 * TORCAPS_TIMEOUT_MS (then SIGKILL). Return 0 if it exited 0, else -1 with why. */
static int torcaps_run(const char *binary, const char *arg, char *out, size_t outlen, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "%s %s: pipe: %s", binary, arg, strerror(errno));
        return -1;
    }
    const char *const argv[] = {binary, arg, NULL};
    pid_t pid;
    int rc = proc_spawn_fd(argv, fds[1], &pid);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(err, errlen, "cannot run %s %s: %s", binary, arg, strerror(rc));
        return -1;
    }
    size_t used = 0;
    bool timed_out = false;
    uint64_t deadline = clock_now_ms() + TORCAPS_TIMEOUT_MS;
    for (;;) {
        uint64_t now = clock_now_ms();
        long left = now >= deadline ? 0 : (long)(deadline - now);
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        char buf[1024];
        ssize_t got = read(fds[0], buf, sizeof(buf));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t take = (size_t)got < outlen - 1 - used ? (size_t)got : outlen - 1 - used;
        memcpy(out + used, buf, take);
        used += take;
    }
    out[used] = '\0';
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        snprintf(err, errlen, "%s %s did not finish within %d s", binary, arg, TORCAPS_TIMEOUT_MS / 1000);
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "%s %s failed (exit status %d)", binary, arg, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    return 0;
}

/* Run `binary arg` into a new buffer and hand it to `parse`. */
static int torcaps_run_parse(const char *binary, const char *arg,
                             int (*parse)(const char *, struct torcaps *, char *, size_t), struct torcaps *caps,
                             char *err, size_t errlen)
{
    char *out = malloc(TORCAPS_OUTPUT_MAX);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = torcaps_run(binary, arg, out, TORCAPS_OUTPUT_MAX, err, errlen) == 0 && parse(out, caps, err, errlen) == 0
                 ? 0
                 : -1;
    free(out);
    return rc;
}

int torcaps_probe_version(const char *binary, struct torcaps *caps, char *err, size_t errlen)
{
    *caps = (struct torcaps){0};
    return torcaps_run_parse(binary, "--version", torcaps_parse_version, caps, err, errlen);
}

int torcaps_probe(const char *binary, struct torcaps *caps, char *err, size_t errlen)
{
    if (torcaps_probe_version(binary, caps, err, errlen) < 0)
        return -1;
    return torcaps_run_parse(binary, "--list-modules", torcaps_parse_modules, caps, err, errlen);
}

int torcaps_check_config(const struct config *conf, char *err, size_t errlen)
{
    const struct service_conf *svc = config_first_pow_service(conf);
    if (!svc || conf->tor.mode != TOR_MODE_SPAWN)
        return 0;
    struct torcaps caps;
    char why[512];
    if (torcaps_probe(conf->tor.binary, &caps, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "services[%zu].dos.pow.enabled: cannot tell whether tor supports proof-of-work: %s",
                 (size_t)(svc - conf->services), why);
        return -1;
    }
    return torcaps_check(&caps, conf, err, errlen);
}
