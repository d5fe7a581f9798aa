/* sockopen.c — close-on-exec sockets for libevent connects (see sockopen.h). */
#include "sidecar/core/sockopen.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <unistd.h>

int sockopen_bufferevent_connect(struct bufferevent *bev, const struct sockaddr *sa, int salen)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bufferevent_setfd(bev, fd) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    /* With a descriptor already set, libevent connects on it instead of opening its own. */
    return bufferevent_socket_connect(bev, sa, salen);
}
