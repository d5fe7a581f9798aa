/* socks_echo.c — a byte-exact integrity client for echo backends reached through a SOCKS5 proxy (the
 * private network's tor client): runs STREAMS concurrent streams, each sends BYTES random bytes and
 * reads the echo back while sending, and compares SHA-256 digests of what went out and what came back.
 * Not part of the daemon; used by tests/integration/test_backends.sh.
 *
 *   socks_echo [-n STREAMS] [-b BYTES] [-g GROUPS] [-t SECONDS] [-H] SOCKS_PORT HOST PORT
 *     -n  concurrent streams (default 1)
 *     -b  payload bytes per stream (default 65536)
 *     -g  SOCKS username groups: stream i authenticates as "<prefix>-<i % GROUPS>", and tor puts
 *         streams with different credentials on different circuits (default 1)
 *     -t  overall deadline in seconds (default 120)
 *     -H  half-close after sending (only where the path keeps half-closed streams open: tor does not,
 *         it ends the whole stream on EOF from the client)
 *
 * Prints one line per stream ("stream 3: ok 1048576 bytes, sha256 ab12..., 2.1 s" or
 * "stream 3: FAIL <why> (<received>/<bytes> bytes back)") and a summary "ok K/N streams"; exits 0 only
 * if every stream came back byte for byte. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum se_state { SE_GREETING, SE_AUTH, SE_CONNECT, SE_DATA, SE_DONE };

struct se_run;

struct se_stream {
    struct se_run *run;
    int index;
    enum se_state state;
    struct bufferevent *bev;
    unsigned char *payload;
    size_t received;
    EVP_MD_CTX *rx;
    unsigned char tx_digest[32];
    bool ok, finished;
    char why[160];
    double started;
};

struct se_run {
    struct event_base *base;
    const char *host;
    unsigned port;
    size_t bytes;
    int groups;
    bool half_close;
    char user_prefix[32];
    struct se_stream *streams;
    int n, finished;
};

static double se_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void se_finish(struct se_stream *s, bool ok, const char *why)
{
    if (s->finished)
        return;
    s->finished = true;
    s->ok = ok;
    s->state = SE_DONE;
    snprintf(s->why, sizeof(s->why), "%s", why);
    if (s->bev) {
        bufferevent_free(s->bev);
        s->bev = NULL;
    }
    if (++s->run->finished == s->run->n)
        event_base_loopexit(s->run->base, NULL);
}

static void se_send_payload(struct se_stream *s)
{
    s->state = SE_DATA;
    bufferevent_write(s->bev, s->payload, s->run->bytes);
}

static void se_check_done(struct se_stream *s)
{
    if (s->received < s->run->bytes)
        return;
    unsigned char rx[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(s->rx, rx, &len);
    if (s->received != s->run->bytes)
        se_finish(s, false, "more bytes than sent");
    else if (memcmp(rx, s->tx_digest, 32) != 0)
        se_finish(s, false, "sha256 mismatch");
    else
        se_finish(s, true, "");
}

static void se_read_cb(struct bufferevent *bev, void *arg)
{
    struct se_stream *s = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    unsigned char buf[512];
    switch (s->state) {
    case SE_GREETING: /* VER METHOD */
        if (evbuffer_get_length(in) < 2)
            return;
        evbuffer_remove(in, buf, 2);
        if (buf[0] != 5 || buf[1] != 2) {
            se_finish(s, false, "SOCKS server refused username/password authentication");
            return;
        }
        {
            char user[64];
            int ul = snprintf(user, sizeof(user), "%s-%d", s->run->user_prefix, s->index % s->run->groups);
            unsigned char auth[3 + 64 + 1];
            size_t k = 0;
            auth[k++] = 1;
            auth[k++] = (unsigned char)ul;
            memcpy(auth + k, user, (size_t)ul);
            k += (size_t)ul;
            auth[k++] = 1;
            auth[k++] = 'x';
            bufferevent_write(bev, auth, k);
        }
        s->state = SE_AUTH;
        return;
    case SE_AUTH: /* VER STATUS (RFC 1929) */
        if (evbuffer_get_length(in) < 2)
            return;
        evbuffer_remove(in, buf, 2);
        if (buf[1] != 0) {
            se_finish(s, false, "SOCKS authentication failed");
            return;
        }
        {
            size_t hl = strlen(s->run->host), k = 0;
            unsigned char req[7 + 255];
            req[k++] = 5; /* CONNECT to a domain name (RFC 1928 4) */
            req[k++] = 1;
            req[k++] = 0;
            req[k++] = 3;
            req[k++] = (unsigned char)hl;
            memcpy(req + k, s->run->host, hl);
            k += hl;
            req[k++] = (unsigned char)(s->run->port >> 8);
            req[k++] = (unsigned char)s->run->port;
            bufferevent_write(bev, req, k);
        }
        s->state = SE_CONNECT;
        return;
    case SE_CONNECT: { /* VER REP RSV ATYP BND.ADDR BND.PORT */
        size_t have = evbuffer_get_length(in), need;
        if (have < 5)
            return;
        evbuffer_copyout(in, buf, 5);
        if (buf[1] != 0) {
            char why[64];
            snprintf(why, sizeof(why), "SOCKS CONNECT failed, reply %u", buf[1]);
            se_finish(s, false, why);
            return;
        }
        need = buf[3] == 1 ? 10 : buf[3] == 4 ? 22 : buf[3] == 3 ? 7u + buf[4] : 0;
        if (need == 0) {
            se_finish(s, false, "SOCKS reply with an unknown address type");
            return;
        }
        if (have < need)
            return;
        evbuffer_drain(in, need);
        se_send_payload(s);
        if (evbuffer_get_length(in) == 0)
            return;
    }
        /* fall through: echo bytes may have come with the reply */
    case SE_DATA:
        while (evbuffer_get_length(in) > 0) {
            int n = evbuffer_remove(in, buf, sizeof(buf));
            if (n <= 0)
                break;
            EVP_DigestUpdate(s->rx, buf, (size_t)n);
            s->received += (size_t)n;
        }
        se_check_done(s);
        return;
    case SE_DONE:
        return;
    }
}

static void se_write_cb(struct bufferevent *bev, void *arg)
{
    struct se_stream *s = arg;
    if (s->state == SE_DATA && s->run->half_close && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        shutdown(bufferevent_getfd(bev), SHUT_WR);
}

static void se_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct se_stream *s = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        static const unsigned char hello[3] = {5, 1, 2}; /* SOCKS5, one method: username/password */
        bufferevent_write(s->bev, hello, sizeof(hello));
        return;
    }
    if (what & BEV_EVENT_EOF)
        se_finish(s, false, "closed early");
    else
        se_finish(s, false, "connection error");
}

static void se_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct se_run *r = arg;
    (void)fd;
    (void)what;
    for (int i = 0; i < r->n; i++)
        se_finish(&r->streams[i], false, "deadline passed");
}

static void usage(void)
{
    fprintf(stderr, "usage: socks_echo [-n STREAMS] [-b BYTES] [-g GROUPS] [-t SECONDS] [-H] SOCKS_PORT HOST PORT\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct se_run r = {.bytes = 65536, .groups = 1, .n = 1};
    int seconds = 120, opt;
    while ((opt = getopt(argc, argv, "n:b:g:t:H")) != -1) {
        switch (opt) {
        case 'n':
            r.n = atoi(optarg);
            break;
        case 'b':
            r.bytes = (size_t)strtoull(optarg, NULL, 10);
            break;
        case 'g':
            r.groups = atoi(optarg);
            break;
        case 't':
            seconds = atoi(optarg);
            break;
        case 'H':
            r.half_close = true;
            break;
        default:
            usage();
        }
    }
    if (argc - optind != 3 || r.n < 1 || r.n > 10000 || r.groups < 1 || r.bytes < 1 || seconds < 1)
        usage();
    unsigned socks_port = (unsigned)atoi(argv[optind]);
    r.host = argv[optind + 1];
    r.port = (unsigned)atoi(argv[optind + 2]);
    if (strlen(r.host) > 255 || r.port < 1 || r.port > 65535 || socks_port < 1 || socks_port > 65535)
        usage();
    signal(SIGPIPE, SIG_IGN);
    unsigned char tag[4];
    RAND_bytes(tag, sizeof(tag));
    snprintf(r.user_prefix, sizeof(r.user_prefix), "se%02x%02x%02x%02x", tag[0], tag[1], tag[2], tag[3]);
    r.base = event_base_new();
    r.streams = calloc((size_t)r.n, sizeof(*r.streams));
    if (!r.base || !r.streams)
        return 1;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)socks_port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    double t0 = se_now();
    for (int i = 0; i < r.n; i++) {
        struct se_stream *s = &r.streams[i];
        s->run = &r;
        s->index = i;
        s->started = t0;
        s->payload = malloc(r.bytes);
        s->rx = EVP_MD_CTX_new();
        if (!s->payload || !s->rx || RAND_bytes(s->payload, (int)r.bytes) != 1 ||
            EVP_DigestInit_ex(s->rx, EVP_sha256(), NULL) != 1 ||
            EVP_Digest(s->payload, r.bytes, s->tx_digest, NULL, EVP_sha256(), NULL) != 1) {
            fprintf(stderr, "socks_echo: out of memory or OpenSSL failure\n");
            return 1;
        }
        s->bev = bufferevent_socket_new(r.base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(s->bev, se_read_cb, se_write_cb, se_event_cb, s);
        bufferevent_enable(s->bev, EV_READ | EV_WRITE);
        if (bufferevent_socket_connect(s->bev, (struct sockaddr *)&sin, sizeof(sin)) < 0 && !s->finished)
            se_finish(s, false, "cannot connect to the SOCKS port");
    }
    struct event *deadline = evtimer_new(r.base, se_deadline_cb, &r);
    struct timeval tv = {seconds, 0};
    evtimer_add(deadline, &tv);
    if (r.finished < r.n)
        event_base_dispatch(r.base);
    double took = se_now() - t0;
    int ok = 0;
    for (int i = 0; i < r.n; i++) {
        struct se_stream *s = &r.streams[i];
        if (s->ok) {
            char hex[65];
            for (int k = 0; k < 32; k++)
                snprintf(hex + 2 * k, 3, "%02x", s->tx_digest[k]);
            printf("stream %d: ok %zu bytes, sha256 %s\n", i, r.bytes, hex);
            ok++;
        } else {
            printf("stream %d: FAIL %s (%zu/%zu bytes back)\n", i, s->why, s->received, r.bytes);
        }
        OPENSSL_cleanse(s->payload, r.bytes);
        free(s->payload);
        EVP_MD_CTX_free(s->rx);
    }
    printf("ok %d/%d streams, %zu bytes each, %.1f s\n", ok, r.n, r.bytes, took);
    event_free(deadline);
    free(r.streams);
    event_base_free(r.base);
    return ok == r.n ? 0 : 1;
}
