/* fdbudget.c — RLIMIT_NOFILE, the stream cap derived from it, and the reserve of spare descriptors
 * (see fdbudget.h for the budget). Owns only the reserve's descriptors; never logs (callers do). */
#include "sidecar/core/fdbudget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int fdbudget_raise_limit(rlim_t *before, rlim_t *after, char *err, size_t errlen)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        snprintf(err, errlen, "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
        return -1;
    }
    *before = *after = rl.rlim_cur;
    if (rl.rlim_cur == rl.rlim_max)
        return 0;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        snprintf(err, errlen, "cannot raise RLIMIT_NOFILE from %llu to %llu: %s", (unsigned long long)*before,
                 (unsigned long long)rl.rlim_max, strerror(errno));
        return -1;
    }
    *after = rl.rlim_cur;
    return 0;
}

#define FDBUDGET_OTHERS \
    ((rlim_t)FDBUDGET_RESERVE + FDBUDGET_METRICS_CLIENTS + FDBUDGET_ONIONLOC_CLIENTS + FDBUDGET_STATUS_CLIENTS)

/* Everything but the streams and their pipes. */
static rlim_t fdbudget_fixed(struct fdbudget_held held)
{
    return FDBUDGET_OTHERS + (rlim_t)held.listeners + (rlim_t)held.checks;
}

rlim_t fdbudget_hard_limit(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_NOFILE, &rl) < 0 ? RLIM_INFINITY : rl.rlim_max;
}

int fdbudget_check_held(struct fdbudget_held held, rlim_t hard, char *err, size_t errlen)
{
    rlim_t need = fdbudget_fixed(held) + 2 * (rlim_t)FDBUDGET_STREAMS_MIN;
    if (need <= hard)
        return 0;
    snprintf(err, errlen,
             "the config needs %llu file descriptors but RLIMIT_NOFILE's hard limit is %llu: %zu listening sockets "
             "(one per service port) and %zu health checks (one per backend of a port with checks), besides %llu "
             "for onionfront's other peers and %d for the fewest streams (%d); raise the limit (systemd: "
             "LimitNOFILE=) or configure fewer ports or backends",
             (unsigned long long)need, (unsigned long long)hard, held.listeners, held.checks,
             (unsigned long long)FDBUDGET_OTHERS, 2 * FDBUDGET_STREAMS_MIN, FDBUDGET_STREAMS_MIN);
    return -1;
}

unsigned fdbudget_stream_cap_for(unsigned configured, rlim_t nofile, struct fdbudget_held held)
{
    const rlim_t fixed = fdbudget_fixed(held);
    if (configured > 0)
        return configured;
    rlim_t cap = nofile > fixed ? (nofile - fixed) / 2 : 0;
    if (cap < FDBUDGET_STREAMS_MIN)
        cap = FDBUDGET_STREAMS_MIN;
    if (cap > FDBUDGET_STREAMS_AUTO_MAX)
        cap = FDBUDGET_STREAMS_AUTO_MAX;
    return (unsigned)cap;
}

static rlim_t fdbudget_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = 1024; /* the usual default */
    return rl.rlim_cur;
}

unsigned fdbudget_stream_cap(unsigned configured, struct fdbudget_held held)
{
    return fdbudget_stream_cap_for(configured, fdbudget_nofile(), held);
}

unsigned fdbudget_splice_cap_for(unsigned streams, rlim_t nofile, struct fdbudget_held held)
{
    rlim_t used = fdbudget_fixed(held) + 2 * (rlim_t)streams;
    rlim_t cap = nofile > used ? (nofile - used) / FDBUDGET_PIPE_FDS : 0;
    return cap < streams ? (unsigned)cap : streams;
}

unsigned fdbudget_splice_cap(unsigned streams, struct fdbudget_held held)
{
    return fdbudget_splice_cap_for(streams, fdbudget_nofile(), held);
}

int fd_reserve_init(struct fd_reserve *r, unsigned want)
{
    r->held = 0;
    r->want = want < FD_RESERVE_MAX ? want : FD_RESERVE_MAX;
    return fd_reserve_refill(r);
}

int fd_reserve_refill(struct fd_reserve *r)
{
    while (r->held < r->want) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        r->fds[r->held++] = fd;
    }
    return 0;
}

bool fd_reserve_release(struct fd_reserve *r)
{
    if (r->held == 0)
        return false;
    close(r->fds[--r->held]);
    return true;
}

void fd_reserve_close(struct fd_reserve *r)
{
    while (fd_reserve_release(r))
        ;
}

bool fdbudget_is_exhaustion(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}
