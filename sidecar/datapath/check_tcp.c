/* check_tcp.c — the TCP connect check (see check_tcp.h). */
#include "sidecar/core/clock.h"
#include "sidecar/datapath/check_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct check_tcp {
    int fd;
    struct event *ev;         /* EV_WRITE on fd with the deadline as timeout, or a deferred completion */
    uint64_t deadline_ms;     /* clock_now_ms() at the start + the timeout; the timer on ev only wakes us */
    enum check_result result; /* for a completion known at start (deferred to the loop) */
    char detail[96];
    check_done_cb cb;
    void *arg;
};

bool check_tcp_supports(const struct backend_addr *addr)
{
    return addr->kind == BACKEND_ADDR_UNIX ||
           (addr->kind == BACKEND_ADDR_INET && (addr->family == AF_INET || addr->family == AF_INET6));
}

static enum check_result check_tcp_errno_result(int e)
{
    switch (e) {
    case ECONNREFUSED:
        return CHECK_CONNECT_REFUSED;
    case ETIMEDOUT:
        return CHECK_CONNECT_TIMEOUT;
    default:
        return CHECK_CONNECT_ERROR;
    }
}

static void check_tcp_release(struct check_tcp *c)
{
    if (c->ev)
        event_free(c->ev);
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

/* The one completion: free the check, then report (so the callback may start the next check). */
static void check_tcp_finish(struct check_tcp *c, enum check_result r, const char *detail)
{
    check_done_cb cb = c->cb;
    void *arg = c->arg;
    char copy[sizeof(c->detail)];
    snprintf(copy, sizeof(copy), "%s", detail);
    check_tcp_release(c);
    cb(r, copy, arg);
}

static void check_tcp_connect_cb(evutil_socket_t fd, short what, void *arg)
{
    struct check_tcp *c = arg;
    /* The deadline first, on clock_now_ms (CLOCK_MONOTONIC) from the check's real start: a connection
     * that completes after it is still a timeout (relayd). */
    if (clock_now_ms() >= c->deadline_ms) {
        check_tcp_finish(c, CHECK_CONNECT_TIMEOUT, "");
        return;
    }
    if (what & EV_TIMEOUT) {
        /* libevent's timer woke us before our deadline (its clock lags ours, see clock.h): not a timeout
         * yet; watch the socket for what is left. */
        struct timeval tv = clock_until(c->deadline_ms);
        if (event_add(c->ev, &tv) != 0)
            check_tcp_finish(c, CHECK_CONNECT_ERROR, "cannot watch the socket");
        return;
    }
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        soerr = errno;
    if (soerr == 0)
        check_tcp_finish(c, CHECK_OK, "");
    else
        check_tcp_finish(c, check_tcp_errno_result(soerr), strerror(soerr));
}

/* A result known during check_tcp_start, delivered from the loop. */
static void check_tcp_deferred_cb(evutil_socket_t fd, short what, void *arg)
{
    struct check_tcp *c = arg;
    (void)fd;
    (void)what;
    check_tcp_finish(c, c->result, c->detail);
}

static socklen_t check_tcp_sockaddr(const struct backend_addr *addr, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (addr->kind == BACKEND_ADDR_UNIX) {
        struct sockaddr_un *sun = (struct sockaddr_un *)ss;
        sun->sun_family = AF_UNIX;
        if (strlen(addr->path) >= sizeof(sun->sun_path))
            return 0;
        memcpy(sun->sun_path, addr->path, strlen(addr->path) + 1);
        return (socklen_t)sizeof(*sun);
    }
    if (addr->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(addr->port);
        return inet_pton(AF_INET, addr->host, &sin->sin_addr) == 1 ? (socklen_t)sizeof(*sin) : 0;
    }
    if (addr->family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(addr->port);
        return inet_pton(AF_INET6, addr->host, &sin6->sin6_addr) == 1 ? (socklen_t)sizeof(*sin6) : 0;
    }
    return 0;
}

struct check_tcp *check_tcp_start(struct event_base *base, const struct backend_addr *addr, unsigned timeout_ms,
                                  check_done_cb cb, void *arg, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen = check_tcp_sockaddr(addr, &ss);
    if (sslen == 0) {
        snprintf(err, errlen, "check_tcp: %s: not an IP literal or unix socket path", addr->text);
        return NULL;
    }
    struct check_tcp *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "check_tcp: %s: out of memory", addr->text);
        return NULL;
    }
    c->cb = cb;
    c->arg = arg;
    c->deadline_ms = clock_now_ms() + timeout_ms;
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(err, errlen, "check_tcp: %s: socket: %s", addr->text, strerror(errno));
        check_tcp_release(c);
        return NULL;
    }
    int e = connect(c->fd, (struct sockaddr *)&ss, sslen) == 0 ? 0 : errno;
    if (e != EINPROGRESS) {
        /* Done already (unix sockets answer at once: connected, ECONNREFUSED, ENOENT, or EAGAIN for a
         * full backlog): report from the loop, never from inside the caller's call. */
        c->result = e == 0 ? CHECK_OK : check_tcp_errno_result(e);
        if (e != 0)
            snprintf(c->detail, sizeof(c->detail), "%s", strerror(e));
        c->ev = event_new(base, -1, 0, check_tcp_deferred_cb, c);
        if (!c->ev) {
            snprintf(err, errlen, "check_tcp: %s: out of memory", addr->text);
            check_tcp_release(c);
            return NULL;
        }
        event_active(c->ev, EV_TIMEOUT, 0);
        return c;
    }
    c->ev = event_new(base, c->fd, EV_WRITE, check_tcp_connect_cb, c);
    struct timeval tv = clock_until(c->deadline_ms);
    if (!c->ev || event_add(c->ev, &tv) != 0) {
        snprintf(err, errlen, "check_tcp: %s: cannot watch the socket", addr->text);
        check_tcp_release(c);
        return NULL;
    }
    return c;
}

void check_tcp_cancel(struct check_tcp *c)
{
    if (c)
        check_tcp_release(c);
}
