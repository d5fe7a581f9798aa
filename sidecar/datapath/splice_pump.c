/* splice_pump.c — socket -> pipe -> socket copying with splice(2) for one direction of a stream (see
 * splice_pump.h). Owns the pipe and two events; knows nothing of what the bytes are. */
#include "sidecar/datapath/splice_pump.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* What one splice from the source asks for: the default pipe's capacity. A pipe counts pages, not
 * bytes, so it may take less; splice then moves what fits. */
#define SPLICE_PUMP_CHUNK (64u * 1024)

struct splice_pump {
    int src, dst;
    int pipe[2]; /* [0] read end, [1] write end */
    size_t pending;
    bool src_ended;
    struct event *rd; /* src readable: persistent, added while the pipe is empty */
    struct event *wr; /* dst writable: persistent, added while the pipe holds bytes */
    struct splice_pump_cbs cbs;
    void *arg;
    unsigned long wakeups;
};

#ifdef __linux__

bool splice_pump_is_refusal(int err)
{
    return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP;
}

bool splice_pump_supported(void)
{
    int sv[2], pfd[2];
    bool ok = false;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return false;
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) == 0) {
        ok = write(sv[0], "x", 1) == 1 && splice(sv[1], NULL, pfd[1], NULL, 1, SPLICE_F_NONBLOCK) == 1;
        close(pfd[0]);
        close(pfd[1]);
    }
    close(sv[0]);
    close(sv[1]);
    return ok;
}

static void splice_pump_read_cb(evutil_socket_t fd, short what, void *arg);
static void splice_pump_write_cb(evutil_socket_t fd, short what, void *arg);

struct splice_pump *splice_pump_new(struct event_base *base, int src, int dst, const struct splice_pump_cbs *cbs,
                                    void *arg)
{
    struct splice_pump *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->src = src;
    p->dst = dst;
    p->cbs = *cbs;
    p->arg = arg;
    if (pipe2(p->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;
        free(p);
        errno = e;
        return NULL;
    }
    p->rd = event_new(base, src, EV_READ | EV_PERSIST, splice_pump_read_cb, p);
    p->wr = event_new(base, dst, EV_WRITE | EV_PERSIST, splice_pump_write_cb, p);
    if (!p->rd || !p->wr) {
        splice_pump_free(p);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

/* Write what the pipe holds to the destination, as far as it takes it. Return 0, or -1 with errno. */
static int splice_pump_flush(struct splice_pump *p)
{
    while (p->pending > 0) {
        ssize_t n = splice(p->pipe[0], NULL, p->dst, NULL, p->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            p->pending -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n == 0)
            errno = EPIPE; /* cannot happen with bytes in the pipe; treat as a broken destination */
        return -1;
    }
    return 0;
}

/* After a read or a write: wait for the destination while the pipe holds bytes, otherwise read on
 * (or report the end). Each switch is one epoll_ctl; a pump that keeps up never switches. */
static void splice_pump_settle(struct splice_pump *p)
{
    if (p->pending > 0) {
        event_del(p->rd);
        event_add(p->wr, NULL);
        return;
    }
    event_del(p->wr);
    if (p->src_ended) {
        event_del(p->rd);
        p->cbs.done(p->arg); /* last: the callback may stop the pump */
        return;
    }
    event_add(p->rd, NULL);
}

static void splice_pump_fail(struct splice_pump *p, int err, bool at_source)
{
    splice_pump_stop(p);
    p->cbs.failed(err, at_source, p->arg);
}

/* The source is readable, and the pipe is empty (reading stops while it is not): one splice in, then
 * straight out. Level-triggered, so more bytes bring us back. */
static void splice_pump_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct splice_pump *p = arg;
    (void)fd;
    (void)what;
    p->wakeups++;
    ssize_t n = splice(p->src, NULL, p->pipe[1], NULL, SPLICE_PUMP_CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return;
        splice_pump_fail(p, errno, true);
        return;
    }
    if (n == 0) {
        p->src_ended = true;
    } else {
        p->pending += (size_t)n;
        p->cbs.moved((size_t)n, p->arg);
    }
    if (splice_pump_flush(p) < 0) {
        splice_pump_fail(p, errno, false);
        return;
    }
    splice_pump_settle(p);
}

static void splice_pump_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct splice_pump *p = arg;
    (void)fd;
    (void)what;
    p->wakeups++;
    if (splice_pump_flush(p) < 0) {
        splice_pump_fail(p, errno, false);
        return;
    }
    splice_pump_settle(p);
}

int splice_pump_take(struct splice_pump *p, struct evbuffer *out)
{
    splice_pump_stop(p);
    while (p->pending > 0) {
        int n = evbuffer_read(out, p->pipe[0], p->pending > INT32_MAX ? INT32_MAX : (int)p->pending);
        if (n <= 0)
            return -1;
        p->pending -= (size_t)n;
    }
    return 0;
}

#else /* no splice(2) */

bool splice_pump_is_refusal(int err)
{
    return err == ENOSYS;
}

bool splice_pump_supported(void)
{
    return false;
}

struct splice_pump *splice_pump_new(struct event_base *base, int src, int dst, const struct splice_pump_cbs *cbs,
                                    void *arg)
{
    (void)base, (void)src, (void)dst, (void)cbs, (void)arg;
    errno = ENOSYS;
    return NULL;
}

int splice_pump_take(struct splice_pump *p, struct evbuffer *out)
{
    (void)p, (void)out;
    return 0;
}

#endif

int splice_pump_start(struct splice_pump *p)
{
    return event_add(p->rd, NULL);
}

void splice_pump_stop(struct splice_pump *p)
{
    if (p->rd)
        event_del(p->rd);
    if (p->wr)
        event_del(p->wr);
}

size_t splice_pump_pending(const struct splice_pump *p)
{
    return p->pending;
}

unsigned long splice_pump_wakeups(const struct splice_pump *p)
{
    return p->wakeups;
}

void splice_pump_free(struct splice_pump *p)
{
    if (!p)
        return;
    splice_pump_stop(p);
    if (p->rd)
        event_free(p->rd);
    if (p->wr)
        event_free(p->wr);
    close(p->pipe[0]);
    close(p->pipe[1]);
    free(p);
}
