/* service_socket.h — the naming rule for the unix sockets that join tor to the proxy: one socket per
 * service virtual port, <run_dir>/proxy/<service>-<virtual_port>.sock.
 *
 * Owns only that rule, so the two sides that must agree on it (the proxy, datapath/, which listens there,
 * and the HiddenServicePort lines of publish/service.c, which point tor there) read it from one place
 * below them both. Not the directory's creation or its mode (proxy.c), nor the sockets themselves. */
#ifndef ONIONFRONT_SERVICE_SOCKET_H
#define ONIONFRONT_SERVICE_SOCKET_H

#include <stddef.h>
#include <stdint.h>

/* "<run_dir>/proxy/<service>-<virtual_port>.sock" into `out` (`len` bytes). Return 0, or -1 if it does
 * not fit in `out` or in a unix socket address (sun_path). */
int service_socket_path(const char *run_dir, const char *service, uint16_t virtual_port, char *out, size_t len);

#endif
