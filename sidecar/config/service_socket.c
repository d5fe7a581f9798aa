/* service_socket.c — the path of a service port's unix socket (see service_socket.h). Pure: no I/O. */
#include "sidecar/config/service_socket.h"

#include <stdio.h>
#include <sys/un.h>

int service_socket_path(const char *run_dir, const char *service, uint16_t virtual_port, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/proxy/%s-%u.sock", run_dir, service, (unsigned)virtual_port);
    if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return -1;
    return 0;
}
