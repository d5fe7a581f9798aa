/* unixsock.h — making way for a listening unix socket at a path where an earlier run may have left one.
 *
 * A process that ends without removing its socket file leaves it behind, and bind() then fails with
 * EADDRINUSE; but the file may as well belong to a process that still listens there (a second
 * onionfront), or not be a socket at all. One rule for every listener onionfront opens (the proxy's
 * ports, the status socket). Owns nothing beyond the call; never logs: errors go to the caller's
 * buffer. */
#ifndef ONIONFRONT_UNIXSOCK_H
#define ONIONFRONT_UNIXSOCK_H

#include <stdbool.h>
#include <stddef.h>

/* Make way at `path` for a new listening unix socket. Return 0 when nothing is there, or when a socket
 * file nothing listens on (stale) was there and is removed (then *removed is set, if `removed` is not
 * NULL). Return -1 with a message naming `path` when something else is there: not a socket (not ours
 * to remove), a socket a process listens on (even one whose backlog is full), a socket that cannot be
 * probed, or a stale socket that cannot be removed. */
int unixsock_clear_stale(const char *path, bool *removed, char *err, size_t errlen);

#endif
