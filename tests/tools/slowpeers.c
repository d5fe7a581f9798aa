/* slowpeers.c — a bounded slow-client flood for the limits test (tests/integration/test_limits.sh): keeps
 * COUNT connections open to a TCP address on loopback or a unix socket and sends one byte on each every
 * INTERVAL_MS (the bytes of TEXT in turn), reconnecting a connection the server closed, until
 * DURATION_S have passed. With "-b 127.x.y.z" first, TCP connections come from that loopback address
 * (one host flooding, while others use 127.0.0.1). Then it closes everything and prints what happened on one line:
 *   "slowpeers: connections N (open at the end M), closed by the server K, connect failures F".
 * Bounded in count and time by its arguments; loopback and unix sockets only. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SLOWPEERS_MAX 20000

struct target {
    struct sockaddr_storage ss;
    socklen_t len;
    struct sockaddr_in from; /* -b: the source address; sin_family 0 when not given */
};

static int parse_target(const char *kind, const char *where, struct target *t)
{
    memset(t, 0, sizeof(*t));
    if (strcmp(kind, "unix") == 0) {
        struct sockaddr_un *su = (struct sockaddr_un *)&t->ss;
        if (strlen(where) >= sizeof(su->sun_path))
            return -1;
        su->sun_family = AF_UNIX;
        snprintf(su->sun_path, sizeof(su->sun_path), "%s", where);
        t->len = sizeof(*su);
        return 0;
    }
    char host[64];
    const char *colon = strrchr(where, ':');
    if (strcmp(kind, "tcp") != 0 || !colon || (size_t)(colon - where) >= sizeof(host))
        return -1;
    memcpy(host, where, (size_t)(colon - where));
    host[colon - where] = '\0';
    struct sockaddr_in *s4 = (struct sockaddr_in *)&t->ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)atoi(colon + 1));
    /* Loopback only: this is a flood. */
    if (inet_pton(AF_INET, host, &s4->sin_addr) != 1 || (ntohl(s4->sin_addr.s_addr) >> 24) != 127)
        return -1;
    t->len = sizeof(*s4);
    return 0;
}

static int open_one(const struct target *t)
{
    int fd = socket(t->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (t->from.sin_family && bind(fd, (const struct sockaddr *)&t->from, sizeof(t->from)) < 0) {
        close(fd);
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&t->ss, t->len) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Has the server closed (or reset) this connection? Reads and drops whatever it sent. */
static int closed_by_server(int fd)
{
    char buf[512];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n == 0)
            return 1;
        return errno == EAGAIN || errno == ENOTCONN || errno == EINTR ? 0 : 1;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct sockaddr_in from = {0};
    if (argc > 2 && strcmp(argv[1], "-b") == 0) {
        from.sin_family = AF_INET;
        if (inet_pton(AF_INET, argv[2], &from.sin_addr) != 1 || (ntohl(from.sin_addr.s_addr) >> 24) != 127) {
            fprintf(stderr, "slowpeers: -b needs a loopback IPv4 address\n");
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    if (argc < 6 || argc > 7) {
        fprintf(stderr, "usage: slowpeers [-b 127.x.y.z] tcp 127.x.y.z:PORT|unix PATH COUNT INTERVAL_MS DURATION_S [TEXT]\n");
        return 2;
    }
    struct target t;
    int count = atoi(argv[3]), interval = atoi(argv[4]), duration = atoi(argv[5]);
    const char *text = argc == 7 ? argv[6] : "GET /metrics HTTP/1.1\r\n";
    size_t text_len = strlen(text);
    if (parse_target(argv[1], argv[2], &t) < 0 || count < 1 || count > SLOWPEERS_MAX || interval < 1 ||
        duration < 1 || duration > 600 || text_len == 0) {
        fprintf(stderr, "slowpeers: bad arguments (loopback TCP or a unix socket; COUNT 1-%d; DURATION 1-600)\n",
                SLOWPEERS_MAX);
        return 2;
    }
    t.from = from;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int *fds = calloc((size_t)count, sizeof(*fds));
    size_t *pos = calloc((size_t)count, sizeof(*pos));
    if (!fds || !pos)
        return 1;
    unsigned long connections = 0, closed = 0, failures = 0;
    for (int i = 0; i < count; i++)
        fds[i] = -1;
    double end = now_s() + duration;
    while (now_s() < end) {
        for (int i = 0; i < count; i++) {
            if (fds[i] >= 0 && closed_by_server(fds[i])) {
                close(fds[i]);
                fds[i] = -1;
                closed++;
            }
            if (fds[i] < 0) {
                if ((fds[i] = open_one(&t)) < 0) {
                    failures++;
                    continue;
                }
                connections++;
                pos[i] = 0;
            }
            /* Still connecting (the server's backlog is full) is fine: the byte goes out later or never. */
            if (send(fds[i], text + pos[i] % text_len, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
                pos[i]++;
        }
        poll(NULL, 0, interval);
    }
    int open_now = 0;
    for (int i = 0; i < count; i++)
        if (fds[i] >= 0) {
            open_now++;
            close(fds[i]);
        }
    printf("slowpeers: connections %lu (open at the end %d), closed by the server %lu, connect failures %lu\n",
           connections, open_now, closed, failures);
    free(fds);
    free(pos);
    return 0;
}
