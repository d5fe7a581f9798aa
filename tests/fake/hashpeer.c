/* hashpeer.c — the byte-exact test peer (see hashpeer.h): a bufferevent, a xorshift byte generator
 * and an incremental SHA-256. */
#include "tests/fake/hashpeer.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HASHPEER_CHUNK (64 * 1024)

struct hashgen {
    uint64_t x;
};

struct hashpeer {
    struct bufferevent *bev;
    struct event *tick;
    struct hashgen gen;
    size_t to_send, sent, received, slow_bytes;
    unsigned slow_ms;
    unsigned long reads;
    EVP_MD_CTX *rx;
    bool shut, eof, failed;
    int err;
};

static void hashgen_init(struct hashgen *g, uint64_t seed)
{
    g->x = seed * 2654435761u + 88172645463325252ull;
}

static void hashgen_fill(struct hashgen *g, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g->x ^= g->x << 13;
        g->x ^= g->x >> 7;
        g->x ^= g->x << 17;
        p[i] = (uint8_t)g->x;
    }
}

/* Top the output up to one chunk; half-close once all is written. */
static void hashpeer_fill(struct hashpeer *p)
{
    struct evbuffer *out = bufferevent_get_output(p->bev);
    while (p->sent < p->to_send && evbuffer_get_length(out) < HASHPEER_CHUNK) {
        uint8_t buf[4096];
        size_t n = p->to_send - p->sent < sizeof(buf) ? p->to_send - p->sent : sizeof(buf);
        hashgen_fill(&p->gen, buf, n);
        evbuffer_add(out, buf, n);
        p->sent += n;
    }
    if (p->sent == p->to_send && evbuffer_get_length(out) == 0 && !p->shut) {
        shutdown(bufferevent_getfd(p->bev), SHUT_WR);
        p->shut = true;
    }
}

static void hashpeer_take(struct hashpeer *p)
{
    struct evbuffer *in = bufferevent_get_input(p->bev);
    size_t n = evbuffer_get_length(in);
    if (n == 0)
        return;
    p->reads++;
    for (size_t k; (k = evbuffer_get_contiguous_space(in)) > 0;) {
        EVP_DigestUpdate(p->rx, evbuffer_pullup(in, (ev_ssize_t)k), k);
        evbuffer_drain(in, k);
    }
    p->received += n;
}

static void hashpeer_read_cb(struct bufferevent *bev, void *arg)
{
    struct hashpeer *p = arg;
    hashpeer_take(p);
    if (p->slow_bytes)
        bufferevent_disable(bev, EV_READ); /* until the next tick */
}

static void hashpeer_write_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    hashpeer_fill(arg);
}

static void hashpeer_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct hashpeer *p = arg;
    if ((what & BEV_EVENT_EOF) && (what & BEV_EVENT_READING)) {
        hashpeer_take(p);
        p->eof = true;
        return;
    }
    p->failed = true;
    p->err = EVUTIL_SOCKET_ERROR();
    bufferevent_disable(bev, EV_READ | EV_WRITE);
}

static void hashpeer_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hashpeer *p = arg;
    (void)fd;
    (void)what;
    if (!p->eof && !p->failed)
        bufferevent_enable(p->bev, EV_READ);
}

struct hashpeer *hashpeer_new(struct event_base *base, int fd, size_t n, uint64_t seed)
{
    struct hashpeer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    evutil_make_socket_nonblocking(fd);
    p->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    p->tick = event_new(base, -1, EV_PERSIST, hashpeer_tick_cb, p);
    p->rx = EVP_MD_CTX_new();
    if (!p->bev || !p->tick || !p->rx || EVP_DigestInit_ex(p->rx, EVP_sha256(), NULL) != 1) {
        hashpeer_free(p);
        return NULL;
    }
    hashgen_init(&p->gen, seed);
    p->to_send = n;
    bufferevent_setcb(p->bev, hashpeer_read_cb, hashpeer_write_cb, hashpeer_event_cb, p);
    bufferevent_enable(p->bev, EV_READ | EV_WRITE);
    hashpeer_fill(p);
    return p;
}

void hashpeer_set_slow(struct hashpeer *p, size_t bytes, unsigned tick_ms)
{
    p->slow_bytes = bytes;
    p->slow_ms = tick_ms;
    event_del(p->tick);
    if (bytes == 0) {
        bufferevent_setwatermark(p->bev, EV_READ, 0, 0);
        bufferevent_enable(p->bev, EV_READ);
        return;
    }
    bufferevent_setwatermark(p->bev, EV_READ, 0, bytes);
    struct timeval tv = {tick_ms / 1000, (tick_ms % 1000) * 1000};
    event_add(p->tick, &tv);
}

bool hashpeer_sent_all(const struct hashpeer *p)
{
    return p->shut;
}

bool hashpeer_got_eof(const struct hashpeer *p)
{
    return p->eof;
}

bool hashpeer_failed(const struct hashpeer *p, int *err)
{
    if (err)
        *err = p->err;
    return p->failed;
}

size_t hashpeer_received(const struct hashpeer *p)
{
    return p->received;
}

unsigned long hashpeer_reads(const struct hashpeer *p)
{
    return p->reads;
}

void hashpeer_digest(const struct hashpeer *p, uint8_t out[32])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned len = 32;
    EVP_MD_CTX_copy_ex(c, p->rx);
    EVP_DigestFinal_ex(c, out, &len);
    EVP_MD_CTX_free(c);
}

void hashpeer_expect(size_t n, uint64_t seed, uint8_t out[32])
{
    struct hashgen g;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned len = 32;
    hashgen_init(&g, seed);
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    for (size_t done = 0; done < n;) {
        uint8_t buf[4096];
        size_t k = n - done < sizeof(buf) ? n - done : sizeof(buf);
        hashgen_fill(&g, buf, k);
        EVP_DigestUpdate(c, buf, k);
        done += k;
    }
    EVP_DigestFinal_ex(c, out, &len);
    EVP_MD_CTX_free(c);
}

int hashpeer_check(const struct hashpeer *p, size_t n, uint64_t seed)
{
    uint8_t want[32], got[32];
    hashpeer_expect(n, seed, want);
    hashpeer_digest(p, got);
    if (p->received == n && memcmp(got, want, 32) == 0)
        return 0;
    fprintf(stderr, "hashpeer: %zu bytes received, %zu expected%s\n", p->received, n,
            p->received == n ? ", and they differ" : "");
    return -1;
}

void hashpeer_reset(struct hashpeer *p)
{
    struct linger lg = {1, 0};
    setsockopt(bufferevent_getfd(p->bev), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    hashpeer_free(p);
}

void hashpeer_free(struct hashpeer *p)
{
    if (!p)
        return;
    if (p->bev)
        bufferevent_free(p->bev);
    if (p->tick)
        event_free(p->tick);
    EVP_MD_CTX_free(p->rx);
    free(p);
}
