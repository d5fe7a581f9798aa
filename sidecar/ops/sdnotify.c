/* sdnotify.c — sd_notify(3)'s datagram protocol and the watchdog timer (see sdnotify.h).
 *
 * Owns one SOCK_DGRAM unix socket (unconnected; each message is a sendto to the saved address) and one
 * timer. systemd identifies the sender by the kernel's SCM_CREDENTIALS, so nothing else is attached.
 * Logs only from the timer (which has no caller to report to); everything else reports through the
 * caller's buffer. */
#include "sidecar/ops/sdnotify.h"

#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/core/log.h"

struct sdnotify {
    struct event_base *base;
    int fd;                    /* -1 when not enabled */
    struct sockaddr_un addr;
    socklen_t addrlen;
    char display[sizeof(((struct sockaddr_un *)0)->sun_path) + 1]; /* the path as given, for messages */

    uint64_t watchdog_usec;    /* 0: no watchdog */
    struct event *watchdog_ev;
    sdnotify_healthy_fn healthy;
    void *healthy_arg;
    unsigned long pings;
    char last_status[512];     /* the last text sent by sdnotify_update */
    struct timespec last_tick; /* CLOCK_MONOTONIC of the previous timer run */
    bool ping_failing;         /* log a failing ping once, not every interval */
};

/* Parse a decimal unsigned 64-bit number that fills all of `s`. */
static int sdnotify_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 0;
}

/* Fill n->addr from $NOTIFY_SOCKET's value. sd_notify(3): an absolute path, or "@" for an abstract
 * socket (the "@" becomes the leading NUL, and the address length excludes any trailing NUL). */
static int sdnotify_set_addr(struct sdnotify *n, const char *path, char *err, size_t errlen)
{
    size_t len = strlen(path);
    if (len < 2 || (path[0] != '/' && path[0] != '@')) {
        snprintf(err, errlen, "NOTIFY_SOCKET=\"%s\": must be an absolute path or an @abstract name", path);
        return -1;
    }
    if (len > sizeof(n->addr.sun_path) - (path[0] == '/' ? 1 : 0)) {
        snprintf(err, errlen, "NOTIFY_SOCKET: the socket name is longer than %zu bytes",
                 sizeof(n->addr.sun_path) - 1);
        return -1;
    }
    memset(&n->addr, 0, sizeof(n->addr));
    n->addr.sun_family = AF_UNIX;
    memcpy(n->addr.sun_path, path, len);
    if (path[0] == '@') {
        n->addr.sun_path[0] = '\0';
        n->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    } else {
        n->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    }
    snprintf(n->display, sizeof(n->display), "%s", path);
    return 0;
}

struct sdnotify *sdnotify_new(struct event_base *base, char *err, size_t errlen)
{
    /* Copy first: unsetenv invalidates getenv's pointers. */
    const char *e_sock = getenv("NOTIFY_SOCKET");
    const char *e_usec = getenv("WATCHDOG_USEC");
    const char *e_pid = getenv("WATCHDOG_PID");
    char *sock = e_sock ? strdup(e_sock) : NULL;
    char *usec = e_usec ? strdup(e_usec) : NULL;
    char *pid = e_pid ? strdup(e_pid) : NULL;
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");

    struct sdnotify *n = calloc(1, sizeof(*n));
    if (!n || (e_sock && !sock) || (e_usec && !usec) || (e_pid && !pid)) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    n->base = base;
    n->fd = -1;
    if (sock && *sock) {
        if (sdnotify_set_addr(n, sock, err, errlen) < 0)
            goto fail;
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (n->fd < 0) {
            snprintf(err, errlen, "NOTIFY_SOCKET=%s: cannot create a datagram socket: %s", sock, strerror(errno));
            goto fail;
        }
    }
    if (usec) {
        uint64_t v, p;
        if (sdnotify_parse_u64(usec, &v) < 0) {
            snprintf(err, errlen, "WATCHDOG_USEC=\"%s\": not a number of microseconds", usec);
            goto fail;
        }
        /* sd_watchdog_enabled(3): WATCHDOG_PID, when set, names the process the watchdog is for. */
        bool ours = !pid || (sdnotify_parse_u64(pid, &p) == 0 && p == (uint64_t)getpid());
        if (ours && n->fd >= 0)
            n->watchdog_usec = v;
    }
    free(sock);
    free(usec);
    free(pid);
    return n;

fail:
    sdnotify_free(n);
    free(sock);
    free(usec);
    free(pid);
    return NULL;
}

void sdnotify_free(struct sdnotify *n)
{
    if (!n)
        return;
    if (n->watchdog_ev)
        event_free(n->watchdog_ev);
    if (n->fd >= 0)
        close(n->fd);
    free(n);
}

bool sdnotify_enabled(const struct sdnotify *n)
{
    return n && n->fd >= 0;
}

int sdnotify_send(struct sdnotify *n, const char *msg, char *err, size_t errlen)
{
    if (!sdnotify_enabled(n))
        return 0;
    size_t len = strlen(msg);
    for (;;) {
        ssize_t r = sendto(n->fd, msg, len, MSG_NOSIGNAL, (const struct sockaddr *)&n->addr, n->addrlen);
        if (r >= 0)
            return 0;
        if (errno != EINTR)
            break;
    }
    snprintf(err, errlen, "notify socket %s: %s", n->display, strerror(errno));
    return -1;
}

int sdnotify_status(struct sdnotify *n, const char *prefix, char *err, size_t errlen, const char *fmt, ...)
{
    if (!sdnotify_enabled(n))
        return 0;
    char msg[SDNOTIFY_MSG_MAX];
    int off = snprintf(msg, sizeof(msg), "%sSTATUS=", prefix ? prefix : "");
    if (off < 0 || (size_t)off >= sizeof(msg)) {
        snprintf(err, errlen, "notification prefix too long");
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + off, sizeof(msg) - (size_t)off, fmt, ap); /* cut to fit: a status is informative */
    va_end(ap);
    for (char *p = msg + off; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return sdnotify_send(n, msg, err, errlen);
}

void sdnotify_update(struct sdnotify *n, const char *prefix, const char *fmt, ...)
{
    char text[512], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n && !prefix && strcmp(text, n->last_status) == 0)
        return;
    if (n)
        memcpy(n->last_status, text, sizeof(text));
    if (sdnotify_status(n, prefix, err, sizeof(err), "%s", text) < 0)
        log_debug("sdnotify: %s", err);
}

uint64_t sdnotify_watchdog_usec(const struct sdnotify *n)
{
    return n ? n->watchdog_usec : 0;
}

unsigned long sdnotify_watchdog_pings(const struct sdnotify *n)
{
    return n ? n->pings : 0;
}

static struct timeval sdnotify_half_interval(const struct sdnotify *n)
{
    uint64_t half = n->watchdog_usec / 2;
    if (half == 0)
        half = 1;
    return (struct timeval){.tv_sec = (time_t)(half / 1000000), .tv_usec = (suseconds_t)(half % 1000000)};
}

static void sdnotify_ping(struct sdnotify *n)
{
    char err[256];
    if (n->healthy && !n->healthy(n->healthy_arg)) {
        log_debug("sdnotify: not healthy; withholding the watchdog ping");
        return;
    }
    if (sdnotify_send(n, "WATCHDOG=1", err, sizeof(err)) < 0) {
        if (!n->ping_failing)
            log_warnx("sdnotify: watchdog ping failed: %s", err);
        n->ping_failing = true;
        return;
    }
    n->ping_failing = false;
    n->pings++;
}

static void sdnotify_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
    struct sdnotify *n = arg;
    (void)fd;
    (void)what;
    /* This callback running is the proof that the loop turns. A tick that comes much later than asked
     * means the loop was blocked; worth a line, since systemd may be about to kill us for it. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t elapsed_us = (int64_t)(now.tv_sec - n->last_tick.tv_sec) * 1000000 +
                         (int64_t)(now.tv_nsec - n->last_tick.tv_nsec) / 1000;
    if (elapsed_us > (int64_t)(n->watchdog_usec / 2 + n->watchdog_usec / 4))
        log_warnx("sdnotify: the event loop was blocked: %.1f s between watchdog ticks (interval %.1f s)",
                  (double)elapsed_us / 1e6, (double)n->watchdog_usec / 2e6);
    n->last_tick = now;
    sdnotify_ping(n);
}

int sdnotify_watchdog_start(struct sdnotify *n, sdnotify_healthy_fn healthy, void *arg, char *err,
                            size_t errlen)
{
    if (!n || n->watchdog_usec == 0)
        return 0;
    n->healthy = healthy;
    n->healthy_arg = arg;
    if (!n->watchdog_ev) {
        n->watchdog_ev = event_new(n->base, -1, EV_PERSIST, sdnotify_watchdog_cb, n);
        if (!n->watchdog_ev) {
            snprintf(err, errlen, "cannot create the watchdog timer");
            return -1;
        }
    }
    struct timeval tv = sdnotify_half_interval(n);
    if (event_add(n->watchdog_ev, &tv) < 0) {
        snprintf(err, errlen, "cannot start the watchdog timer");
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &n->last_tick);
    sdnotify_ping(n);
    return 0;
}
