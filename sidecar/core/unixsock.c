/* unixsock.c — a stale unix socket file found and removed before a bind (see unixsock.h). */
#include "sidecar/core/unixsock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Does a process listen on the socket file `path`? 1 yes, 0 no (stale), -1 with errno: cannot tell. */
static int unixsock_listened(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* Non-blocking, so a listener with a full backlog answers at once instead of holding the start. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    close(fd);
    /* connect(2): EAGAIN is a live listener whose backlog is full; only ECONNREFUSED says nobody listens. */
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
        return 1;
    if (e == ECONNREFUSED || e == ENOENT)
        return 0;
    errno = e;
    return -1;
}

int unixsock_clear_stale(const char *path, bool *removed, char *err, size_t errlen)
{
    struct stat st;
    if (removed)
        *removed = false;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket; not replacing it", path);
        return -1;
    }
    int live = unixsock_listened(path);
    if (live < 0) {
        snprintf(err, errlen, "%s exists and cannot be probed: %s", path, strerror(errno));
        return -1;
    }
    if (live) {
        snprintf(err, errlen, "%s is in use: another process (an onionfront already running?) is listening on it",
                 path);
        return -1;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove the stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    if (removed)
        *removed = true;
    return 0;
}
