/* test_proxy.c — the data path (sidecar/datapath/proxy.c) on a real event loop with real sockets: test clients
 * play tor (they connect to the proxy's unix socket and send a PROXY v1 line first), test backends on
 * 127.0.0.1 (or a unix socket) echo, record, stall, flood, half-close or reset. Checked: byte-exact
 * copying both ways, the PROXY line never forwarded, malformed and missing lines, retry on another
 * backend after refused and timed-out connects (and the passive failure), no usable backend, the
 * per-circuit stream limit, the PROXY v2 header, bounded buffers in both directions, half-close in both
 * directions, resets, reload (ports added and removed while a stream is open), host-name and unix
 * backends, the counters handed to backend.c, and the port's Prometheus families after real streams
 * (checked line by line and by tests/tools/promcheck), the descriptors a config's data path holds
 * (proxy_held_fds: listeners and health checks) and the limit check naming them. The splice path (issue 16): byte-exact random
 * data both ways checked by SHA-256 (0 B to 50 MB) with splice from the first byte, at the default
 * threshold and switched off (proxy_set_splice and ONIONFRONT_SPLICE=0), and the half-close, reset,
 * backpressure and echo tests again with splice from the first byte. No health checker runs here:
 * backends start up and only passive failures take them down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/config/config.h"
#include "sidecar/config/service_socket.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/datapath/proxyproto.h"
#include "tests/fake/hashpeer.h"
#include "tests/fake/tmpdir.h"

#define LINE59 "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\r\n"
#define LINE60 "PROXY TCP6 fc00:dead:beef:4dad::0:3c ::1 60 80\r\n"
#define LINE61 "PROXY TCP6 fc00:dead:beef:4dad::0:3d ::1 61 80\r\n"
#define MAX_CONNS 64

/* ---- test backends ---- */

enum tb_mode {
    TB_ECHO,        /* echo, pass the half-close on */
    TB_RECORD,      /* keep what arrives; close on EOF */
    TB_STALL,       /* accept, never read */
    TB_FLOOD,       /* write tb->flood bytes at once, then keep the connection */
    TB_GREET_HALF,  /* write "hello", half-close at once, keep reading; close on EOF */
    TB_RESET,       /* reset at once (SO_LINGER 0) */
    TB_SPEAK_RESET, /* write "x", then reset once it is out */
    TB_HASH,        /* a hashpeer: send tb->flood seeded bytes, hash what arrives (one connection) */
};

struct tb {
    enum tb_mode mode;
    struct evconnlistener *l;
    uint16_t port;
    char path[108]; /* unix backends */
    int accepted;
    struct evbuffer *received;
    size_t flood;
    struct bufferevent *conns[MAX_CONNS];
    int n_conns;
    struct hashpeer *peer; /* TB_HASH */
};

struct tc { /* a client playing tor */
    struct bufferevent *bev;
    struct evbuffer *received;
    bool eof, error;
};

struct ctx {
    char dir[64];
    struct event_base *base;
    struct event *tick;
    struct config *conf;
    struct proxy *px;
    struct tb tb[4];
    int n_tb;
    char path80[108];
    int added, updated, removed;
    const char *top; /* more top-level config members for start_proxy, ending in a comma, or NULL */
    enum { SPLICE_DEFAULT, SPLICE_ALWAYS, SPLICE_OFF } splice; /* applied by start_proxy */
};

static void tb_reset_close(struct bufferevent *bev)
{
    struct linger lg = {1, 0};
    setsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void tb_drop(struct tb *t, struct bufferevent *bev)
{
    for (int i = 0; i < t->n_conns; i++)
        if (t->conns[i] == bev)
            t->conns[i] = NULL;
    bufferevent_free(bev);
}

static void tb_read_cb(struct bufferevent *bev, void *arg)
{
    struct tb *t = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (t->mode == TB_ECHO)
        evbuffer_add_buffer(bufferevent_get_output(bev), in);
    else
        evbuffer_add_buffer(t->received, in);
}

static void tb_write_cb(struct bufferevent *bev, void *arg)
{
    struct tb *t = arg;
    if (evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return;
    if (t->mode == TB_SPEAK_RESET) {
        tb_reset_close(bev);
        tb_drop(t, bev);
    } else if (t->mode == TB_ECHO && !(bufferevent_get_enabled(bev) & EV_READ)) { /* after its EOF */
        shutdown(bufferevent_getfd(bev), SHUT_WR);
        tb_drop(t, bev);
    }
}

static void tb_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct tb *t = arg;
    if (what & BEV_EVENT_EOF) {
        if (t->mode == TB_ECHO && evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
            bufferevent_disable(bev, EV_READ);
            return; /* tb_write_cb passes the EOF on */
        }
        if (t->mode == TB_ECHO)
            shutdown(bufferevent_getfd(bev), SHUT_WR);
    }
    tb_drop(t, bev);
}

static void tb_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct tb *t = arg;
    (void)sa;
    (void)len;
    t->accepted++;
    if (t->mode == TB_HASH) {
        assert_null(t->peer);
        t->peer = hashpeer_new(evconnlistener_get_base(l), fd, t->flood, 22);
        return;
    }
    if (t->mode == TB_GREET_HALF) { /* a new socket takes 5 bytes at once; then the half-close */
        assert_int_equal(send(fd, "hello", 5, 0), 5);
        shutdown(fd, SHUT_WR);
    }
    struct bufferevent *bev = bufferevent_socket_new(evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
    if (t->n_conns < MAX_CONNS)
        t->conns[t->n_conns++] = bev;
    bufferevent_setcb(bev, tb_read_cb, tb_write_cb, tb_event_cb, t);
    switch (t->mode) {
    case TB_STALL:
        bufferevent_disable(bev, EV_READ);
        break;
    case TB_RESET:
        tb_reset_close(bev);
        tb_drop(t, bev);
        return;
    case TB_FLOOD: {
        char chunk[4096];
        for (size_t i = 0; i < sizeof(chunk); i++)
            chunk[i] = (char)('a' + i % 26);
        for (size_t left = t->flood; left > 0;) {
            size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
            bufferevent_write(bev, chunk, n);
            left -= n;
        }
        break;
    }
    case TB_SPEAK_RESET:
        bufferevent_write(bev, "x", 1);
        break;
    default:
        break;
    }
    bufferevent_enable(bev, t->mode == TB_STALL ? EV_WRITE : EV_READ | EV_WRITE);
}

/* Start a TCP backend on 127.0.0.1 (port chosen by the kernel). */
static struct tb *tb_start(struct ctx *c, enum tb_mode mode)
{
    struct tb *t = &c->tb[c->n_tb++];
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    memset(t, 0, sizeof(*t));
    t->mode = mode;
    t->received = evbuffer_new();
    t->l = evconnlistener_new_bind(c->base, tb_accept_cb, t, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 64,
                                   (struct sockaddr *)&sin, sizeof(sin));
    assert_non_null(t->l);
    socklen_t len = sizeof(sin);
    getsockname(evconnlistener_get_fd(t->l), (struct sockaddr *)&sin, &len);
    t->port = ntohs(sin.sin_port);
    return t;
}

static struct tb *tb_start_unix(struct ctx *c, enum tb_mode mode)
{
    int idx = c->n_tb++;
    struct tb *t = &c->tb[idx];
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    char path[sizeof(t->path)];
    snprintf(path, sizeof(path), "%s/backend%d.sock", c->dir, idx);
    memset(t, 0, sizeof(*t));
    t->mode = mode;
    t->received = evbuffer_new();
    memcpy(t->path, path, sizeof(path));
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", t->path);
    t->l = evconnlistener_new_bind(c->base, tb_accept_cb, t, LEV_OPT_CLOSE_ON_FREE, 64, (struct sockaddr *)&sun,
                                   sizeof(sun));
    assert_non_null(t->l);
    return t;
}

/* A port on 127.0.0.1 where nothing listens. */
static uint16_t free_port(void)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    getsockname(fd, (struct sockaddr *)&sin, &len);
    close(fd);
    return ntohs(sin.sin_port);
}

/* ---- the loop ---- */

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the loop until pred(arg) or `seconds` pass. Returns pred's last value. */
static bool run_until(struct ctx *c, bool (*pred)(void *), void *arg, double seconds)
{
    double end = now_s() + seconds;
    while (!(pred && pred(arg)) && now_s() < end)
        event_base_loop(c->base, EVLOOP_ONCE);
    return pred ? pred(arg) : true;
}

/* Order, not a stopwatch: a timer on the loop, armed before the action whose timeout is under test and
 * due 1 ms sooner than that timeout. libevent runs timers in the order of their deadlines on its own
 * clock and the code arms its timer later, for the full timeout, so this one runs first however slow the
 * machine; `happened` then says whether the timeout's outcome is (wrongly) there already. */
struct marker {
    struct event *ev;
    bool fired, early;
    bool (*happened)(void *);
    void *arg;
};

static void marker_cb(evutil_socket_t fd, short what, void *arg)
{
    struct marker *m = arg;
    (void)fd;
    (void)what;
    m->fired = true;
    m->early = m->happened(m->arg);
}

static void marker_arm(struct ctx *c, struct marker *m, unsigned timeout_ms, bool (*happened)(void *), void *arg)
{
    *m = (struct marker){.happened = happened, .arg = arg};
    m->ev = evtimer_new(c->base, marker_cb, m);
    assert_non_null(m->ev);
    struct timeval tv = {(timeout_ms - 1) / 1000, ((timeout_ms - 1) % 1000) * 1000};
    assert_int_equal(evtimer_add(m->ev, &tv), 0);
}

/* Call once the timeout's outcome is seen: it did not come before the marker. Prints the time taken. */
static void marker_check(struct marker *m, double t0)
{
    print_message("    timeout outcome after %.3f s\n", now_s() - t0);
    assert_true(m->fired);
    assert_false(m->early);
    event_free(m->ev);
}

static bool never(void *arg)
{
    (void)arg;
    return false;
}

static void run_for(struct ctx *c, double seconds)
{
    run_until(c, never, NULL, seconds);
}

struct tb_want {
    struct tb *t;
    size_t n;
};

static bool tb_has(void *arg)
{
    struct tb_want *w = arg;
    return evbuffer_get_length(w->t->received) >= w->n;
}

/* ---- clients ---- */

static void tc_read_cb(struct bufferevent *bev, void *arg)
{
    struct tc *t = arg;
    evbuffer_add_buffer(t->received, bufferevent_get_input(bev));
}

static void tc_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct tc *t = arg;
    (void)bev;
    if (what & BEV_EVENT_EOF)
        t->eof = true;
    else if (what & BEV_EVENT_ERROR)
        t->error = true;
}

static struct tc *tc_open(struct ctx *c, const char *path)
{
    struct tc *t = calloc(1, sizeof(*t));
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    evutil_make_socket_nonblocking(fd);
    t->received = evbuffer_new();
    t->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(t->bev, tc_read_cb, NULL, tc_event_cb, t);
    bufferevent_enable(t->bev, EV_READ | EV_WRITE);
    return t;
}

static void tc_send(struct tc *t, const void *data, size_t len)
{
    bufferevent_write(t->bev, data, len);
}

static void tc_free(struct tc *t)
{
    if (!t)
        return;
    bufferevent_free(t->bev);
    evbuffer_free(t->received);
    free(t);
}

static bool tc_closed(void *arg)
{
    struct tc *t = arg;
    return t->eof || t->error;
}

struct want_bytes {
    struct tc *t;
    size_t n;
};

static bool tc_has(void *arg)
{
    struct want_bytes *w = arg;
    return evbuffer_get_length(w->t->received) >= w->n;
}

static bool tc_eof_with(void *arg)
{
    struct want_bytes *w = arg;
    return w->t->eof && evbuffer_get_length(w->t->received) >= w->n;
}

/* Half-close the client's sending side once its output is written. */
static void tc_shutdown(struct ctx *c, struct tc *t)
{
    while (evbuffer_get_length(bufferevent_get_output(t->bev)) > 0)
        event_base_loop(c->base, EVLOOP_ONCE);
    shutdown(bufferevent_getfd(t->bev), SHUT_WR);
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 2654435761u + 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}

/* ---- proxy setup ---- */

static void hook_added(struct backend_pool *p, void *arg)
{
    (void)p;
    ((struct ctx *)arg)->added++;
}

static void hook_updated(struct backend_pool *p, void *arg)
{
    (void)p;
    ((struct ctx *)arg)->updated++;
}

static void hook_removed(struct backend_pool *p, void *arg)
{
    (void)p;
    ((struct ctx *)arg)->removed++;
}

/* Load `ports_json` (the "ports" array of service "web") and start the proxy on it. */
static void start_proxy(struct ctx *c, const char *ports_json)
{
    char json[4096], err[512];
    snprintf(json, sizeof(json),
             "{\"state_dir\": \"%s/state\", \"run_dir\": \"%s/run\", \"log_level\": \"error\", %s"
             " \"services\": [{\"name\": \"web\", \"ports\": %s}]}",
             c->dir, c->dir, c->top ? c->top : "", ports_json);
    c->conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!c->conf)
        fail_msg("config: %s\n%s", err, json);
    struct proxy_hooks hooks = {hook_added, hook_updated, hook_removed, c};
    c->px = proxy_new(c->base, c->conf, &hooks, err, sizeof(err));
    if (!c->px)
        fail_msg("proxy_new: %s", err);
    if (c->splice == SPLICE_ALWAYS)
        proxy_set_splice(c->px, true, 0);
    else if (c->splice == SPLICE_OFF)
        proxy_set_splice(c->px, false, PROXY_SPLICE_MIN);
    assert_int_equal(service_socket_path(c->conf->run_dir, "web", 80, c->path80, sizeof(c->path80)), 0);
}

/* One port 80 with these backends ("address" weight pairs). */
static void ports_json(char *out, size_t len, const char *extra, int n, const char *const *addr, const int *weight)
{
    int k = snprintf(out, len, "[{\"virtual\": 80, %s \"backends\": [", extra);
    for (int i = 0; i < n; i++)
        k += snprintf(out + k, len - (size_t)k, "%s{\"name\": \"b%d\", \"address\": \"%s\", \"weight\": %d}",
                      i ? ", " : "", i, addr[i], weight ? weight[i] : 1);
    snprintf(out + k, len - (size_t)k, "]}]");
}

/* The usual set-up: one backend of `mode` behind port 80 of service "web", with `extra` port settings
 * (JSON members ending in a comma, or ""). */
static struct tb *start_proxy_to(struct ctx *c, enum tb_mode mode, const char *extra)
{
    struct tb *b = tb_start(c, mode);
    char addr[64], ports[1024];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", b->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), extra, 1, a, NULL);
    start_proxy(c, ports);
    return b;
}

/* Reload: service "web" on `ports` (its "ports" array) through proxy_update. On success the new config
 * replaces c->conf; on failure it is dropped and `err` says why. Returns proxy_update's result. */
static int reload_ports(struct ctx *c, const char *ports, char *err, size_t errlen)
{
    char json[4096];
    snprintf(json, sizeof(json),
             "{\"state_dir\": \"%s/state\", \"run_dir\": \"%s/run\", \"services\": [{\"name\": \"web\", \"ports\": "
             "%s}]}",
             c->dir, c->dir, ports);
    struct config *nc = config_load_string(json, strlen(json), err, errlen);
    if (!nc)
        fail_msg("config: %s\n%s", err, json);
    int rc = proxy_update(c->px, nc, err, errlen);
    if (rc == 0) {
        config_free(c->conf);
        c->conf = nc;
    } else {
        config_free(nc);
    }
    return rc;
}

static json_int_t port_stat(struct ctx *c, uint16_t vport, const char *key)
{
    json_t *arr = proxy_to_json(c->px);
    size_t i;
    json_t *p;
    json_int_t v = -1;
    assert_non_null(arr);
    json_array_foreach(arr, i, p) {
        if (json_integer_value(json_object_get(p, "virtual_port")) == vport &&
            json_is_true(json_object_get(p, "listening")))
            v = json_integer_value(json_object_get(p, key));
    }
    json_decref(arr);
    return v;
}

static struct backend *backend_named(struct ctx *c, const char *name)
{
    struct backend_pool *pool = proxy_find_pool(c->px, "web", 80);
    assert_non_null(pool);
    for (size_t i = 0; i < backend_pool_count(pool); i++)
        if (strcmp(backend_pool_get(pool, i)->conf.name, name) == 0)
            return backend_pool_get(pool, i);
    fail_msg("no backend %s", name);
    return NULL;
}

struct stat_wait {
    struct ctx *c;
    const char *key;
    json_int_t want;
};

static bool stat_is(void *arg)
{
    struct stat_wait *w = arg;
    return port_stat(w->c, 80, w->key) == w->want;
}

static int setup(void **state)
{
    static struct ctx c;
    memset(&c, 0, sizeof(c));
    if (tmpdir_make(c.dir, sizeof(c.dir), "tpx") < 0)
        return -1;
    c.base = event_base_new();
    c.tick = event_new(c.base, -1, EV_PERSIST, tick_cb, NULL);
    struct timeval tv = {0, 10000};
    event_add(c.tick, &tv);
    log_set_level(getenv("TEST_PROXY_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR);
    *state = &c;
    return c.base ? 0 : -1;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    proxy_free(c->px);
    for (int i = 0; i < c->n_tb; i++) {
        for (int k = 0; k < c->tb[i].n_conns; k++)
            if (c->tb[i].conns[k])
                bufferevent_free(c->tb[i].conns[k]);
        evconnlistener_free(c->tb[i].l);
        hashpeer_free(c->tb[i].peer);
        evbuffer_free(c->tb[i].received);
    }
    config_free(c->conf);
    event_free(c->tick);
    event_base_free(c->base);
    tmpdir_remove(c->dir);
    return 0;
}

/* ---- tests ---- */

static void test_echo_roundtrip(void **state)
{
    struct ctx *c = *state;
    start_proxy_to(c, TB_ECHO, "");
    assert_int_equal(c->added, 1);

    /* The socket is private: 0700 directory. */
    struct stat st;
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/run/proxy", c->dir);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(lstat(c->path80, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));

    size_t n = 300 * 1000;
    uint8_t *payload = malloc(n);
    fill_random(payload, n, 1);
    struct tc *t = tc_open(c, c->path80);
    /* tor's line arrives in pieces, followed at once by data */
    tc_send(t, LINE59, 10);
    run_for(c, 0.05);
    tc_send(t, LINE59 + 10, strlen(LINE59) - 10);
    tc_send(t, payload, n);
    tc_shutdown(c, t);
    struct want_bytes w = {t, n};
    assert_true(run_until(c, tc_eof_with, &w, 10));
    assert_int_equal(evbuffer_get_length(t->received), n); /* the PROXY line was not echoed */
    assert_memory_equal(evbuffer_pullup(t->received, -1), payload, n);
    assert_false(t->error);

    /* The stream ends on both sides; the backend got the byte counts. */
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    assert_int_equal(port_stat(c, 80, "streams_total"), 1);
    struct backend *b = backend_named(c, "b0");
    assert_int_equal(b->active, 0);
    assert_int_equal(b->total_streams, 1);
    assert_int_equal(b->bytes_in, n);
    assert_int_equal(b->bytes_out, n);
    assert_int_equal(port_stat(c, 80, "circuits_active"), 0);
    assert_int_equal(port_stat(c, 80, "buffered_bytes"), 0);
    assert_int_equal(port_stat(c, 80, "bytes_to_backend"), n);
    assert_int_equal(port_stat(c, 80, "bytes_to_tor"), n);
    tc_free(t);
    free(payload);
}

static void test_malformed_header(void **state)
{
    struct ctx *c = *state;
    struct tb *rec = tb_start(c, TB_RECORD);
    char addr[64], ports[1024];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", rec->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);

    static const char *const bad[] = {
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 059 80\r\nhello",
        "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\nhello",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tc *t = tc_open(c, c->path80);
        tc_send(t, bad[i], strlen(bad[i]));
        assert_true(run_until(c, tc_closed, t, 5));
        assert_int_equal(evbuffer_get_length(t->received), 0);
        tc_free(t);
    }
    /* 107 bytes without a CRLF */
    struct tc *t = tc_open(c, c->path80);
    char junk[200];
    memset(junk, '1', sizeof(junk));
    memcpy(junk, "PROXY TCP4 ", 11);
    tc_send(t, junk, sizeof(junk));
    assert_true(run_until(c, tc_closed, t, 5));
    tc_free(t);
    run_for(c, 0.1);
    assert_int_equal(rec->accepted, 0); /* no backend was ever contacted */
    assert_int_equal(port_stat(c, 80, "rejected_header"), 4);
    assert_int_equal(port_stat(c, 80, "streams_active"), 0);
}

static void test_header_timeout(void **state)
{
    struct ctx *c = *state;
    struct tb *rec = start_proxy_to(c, TB_RECORD, "");
    proxy_set_timeouts(c->px, 200, PROXY_FIN_TIMEOUT_MS);
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, "PROXY TCP6", 10); /* and then nothing */
    double t0 = now_s();
    struct marker m;
    marker_arm(c, &m, 200, tc_closed, t);
    assert_true(run_until(c, tc_closed, t, 5));
    marker_check(&m, t0);
    assert_int_equal(rec->accepted, 0);
    assert_int_equal(port_stat(c, 80, "rejected_header"), 1);
    tc_free(t);
}

/* A stream: send the line and `msg`, half-close, expect `msg` echoed and EOF. */
static void echo_stream(struct ctx *c, const char *path, const char *line, const char *msg)
{
    struct tc *t = tc_open(c, path);
    tc_send(t, line, strlen(line));
    tc_send(t, msg, strlen(msg));
    tc_shutdown(c, t);
    struct want_bytes w = {t, strlen(msg)};
    if (!run_until(c, tc_eof_with, &w, 10))
        fail_msg("no echo of \"%s\" (got %zu bytes, eof %d, error %d)", msg, evbuffer_get_length(t->received),
                 t->eof, t->error);
    assert_memory_equal(evbuffer_pullup(t->received, -1), msg, strlen(msg));
    tc_free(t);
}

static void test_retry_after_refused(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = tb_start(c, TB_ECHO);
    char dead[64], live[64], ports[1024];
    snprintf(dead, sizeof(dead), "127.0.0.1:%u", free_port());
    snprintf(live, sizeof(live), "127.0.0.1:%u", echo->port);
    const char *a[] = {dead, live};
    const int w[] = {10, 1}; /* the dead one is first choice */
    ports_json(ports, sizeof(ports), "", 2, a, w);
    start_proxy(c, ports);

    for (int i = 0; i < 5; i++)
        echo_stream(c, c->path80, LINE59, "ping");
    struct backend *b0 = backend_named(c, "b0"), *b1 = backend_named(c, "b1");
    assert_int_equal(b0->state, BACKEND_DOWN);
    assert_int_equal(b0->last_result, CHECK_CONNECT_REFUSED);
    assert_int_equal(b0->failed_connects, 1); /* once down, never tried again */
    assert_int_equal(b0->total_streams, 1);
    assert_int_equal(b0->active, 0);
    assert_int_equal(b1->total_streams, 5);
    assert_int_equal(echo->accepted, 5);
    assert_int_equal(port_stat(c, 80, "connect_failures"), 1);
    assert_int_equal(port_stat(c, 80, "rejected_no_backend"), 0);
}

static void test_retry_after_missing_unix_socket(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = tb_start(c, TB_ECHO);
    char missing[128], live[64], ports[1024];
    /* connect() fails inside the call (ENOENT): libevent reports it synchronously. */
    snprintf(missing, sizeof(missing), "unix:%s/nothing-here.sock", c->dir);
    snprintf(live, sizeof(live), "127.0.0.1:%u", echo->port);
    const char *a[] = {missing, live};
    const int w[] = {10, 1};
    ports_json(ports, sizeof(ports), "", 2, a, w);
    start_proxy(c, ports);
    echo_stream(c, c->path80, LINE59, "around the missing one");
    echo_stream(c, c->path80, LINE59, "and again");
    struct backend *b0 = backend_named(c, "b0");
    assert_int_equal(b0->state, BACKEND_DOWN);
    assert_int_equal(b0->last_result, CHECK_CONNECT_ERROR);
    assert_non_null(strstr(b0->last_detail, "No such file"));
    assert_int_equal(b0->failed_connects, 1);
    assert_int_equal(b0->active, 0);
    assert_int_equal(echo->accepted, 2);
}

static void test_no_backend(void **state)
{
    struct ctx *c = *state;
    char dead[64], ports[1024];
    snprintf(dead, sizeof(dead), "127.0.0.1:%u", free_port());
    const char *a[] = {dead};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);
    /* The first stream tries the backend and fails; the next finds none up and is closed at once. */
    for (int i = 0; i < 2; i++) {
        struct tc *t = tc_open(c, c->path80);
        tc_send(t, LINE59 "hello", strlen(LINE59) + 5);
        double t0 = now_s();
        assert_true(run_until(c, tc_closed, t, 5));
        print_message("    stream %d closed after %.3f s\n", i, now_s() - t0);
        assert_int_equal(evbuffer_get_length(t->received), 0);
        tc_free(t);
    }
    struct backend *b0 = backend_named(c, "b0");
    assert_int_equal(b0->failed_connects, 1);
    assert_int_equal(b0->state, BACKEND_DOWN);
    assert_int_equal(port_stat(c, 80, "rejected_no_backend"), 1);
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 2));
}

static bool b0_failed(void *arg)
{
    const struct backend *b = arg;
    return b->failed_connects > 0;
}

static void test_connect_timeout_then_retry(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = tb_start(c, TB_ECHO);
    /* A listener whose accept queue is full: the kernel drops further SYNs, so connects hang. */
    int hole = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof(sin);
    assert_int_equal(bind(hole, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(hole, 0), 0);
    getsockname(hole, (struct sockaddr *)&sin, &slen);
    int fillers[4];
    for (int i = 0; i < 4; i++) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fillers[i], (struct sockaddr *)&sin, sizeof(sin));
    }
    usleep(100 * 1000);
    char blackhole[64], live[64], ports[1024];
    snprintf(blackhole, sizeof(blackhole), "127.0.0.1:%u", ntohs(sin.sin_port));
    snprintf(live, sizeof(live), "127.0.0.1:%u", echo->port);
    const char *a[] = {blackhole, live};
    const int w[] = {10, 1};
    ports_json(ports, sizeof(ports), "\"connect_timeout_ms\": 300,", 2, a, w);
    start_proxy(c, ports);

    struct backend *b0 = backend_named(c, "b0");
    double t0 = now_s();
    struct marker m;
    marker_arm(c, &m, 300, b0_failed, b0);
    echo_stream(c, c->path80, LINE59, "late but whole");
    assert_int_equal(b0->last_result, CHECK_CONNECT_TIMEOUT);
    assert_int_equal(b0->state, BACKEND_DOWN);
    marker_check(&m, t0); /* the retry on the live backend came after b0's connect timeout, not before */
    assert_int_equal(echo->accepted, 1);
    for (int i = 0; i < 4; i++)
        close(fillers[i]);
    close(hole);
}

/* An echo backend and the proxy's port 80 on it, with the port fields `extra`. */
static struct tb *start_echo_proxy(struct ctx *c, const char *extra)
{
    struct tb *echo = tb_start(c, TB_ECHO);
    char live[64], ports[1024];
    snprintf(live, sizeof(live), "127.0.0.1:%u", echo->port);
    const char *a[] = {live};
    ports_json(ports, sizeof(ports), extra, 1, a, NULL);
    start_proxy(c, ports);
    return echo;
}

static void test_circuit_limit(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = start_echo_proxy(c, "\"max_streams_per_circuit\": 2,");

    /* Two streams of circuit 59 open and working. */
    struct tc *open1 = tc_open(c, c->path80), *open2 = tc_open(c, c->path80);
    tc_send(open1, LINE59 "one", strlen(LINE59) + 3);
    tc_send(open2, LINE59 "two", strlen(LINE59) + 3);
    struct want_bytes w1 = {open1, 3}, w2 = {open2, 3};
    assert_true(run_until(c, tc_has, &w1, 5));
    assert_true(run_until(c, tc_has, &w2, 5));
    assert_int_equal(port_stat(c, 80, "circuits_active"), 1);
    /* A third one of the same circuit is closed at once, without reaching a backend. */
    struct tc *third = tc_open(c, c->path80);
    tc_send(third, LINE59 "three", strlen(LINE59) + 5);
    assert_true(run_until(c, tc_closed, third, 5));
    assert_int_equal(evbuffer_get_length(third->received), 0);
    tc_free(third);
    assert_int_equal(echo->accepted, 2);
    assert_int_equal(port_stat(c, 80, "rejected_circuit_limit"), 1);
    /* Another circuit is not affected. */
    echo_stream(c, c->path80, LINE60, "other circuit");
    /* Once one of circuit 59's streams ends, it may open another. */
    tc_shutdown(c, open1);
    assert_true(run_until(c, tc_closed, open1, 5));
    tc_free(open1);
    run_for(c, 0.1);
    echo_stream(c, c->path80, LINE59, "again");
    tc_free(open2);
    struct stat_wait sw = {c, "circuits_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
}

static bool tc_has_or_closed(void *arg)
{
    struct want_bytes *w = arg;
    return tc_has(w) || tc_closed(w->t);
}

/* circuit_stream_rate 1/s, burst 2: six streams of one circuit sent back to back get at least one
 * refused (counted as rejected_circuit_rate) — all six would need 4 s — and the first two served;
 * another circuit is not affected. */
static void test_circuit_rate(void **state)
{
    struct ctx *c = *state;
    start_echo_proxy(c, "\"circuit_stream_rate\": 1, \"circuit_stream_burst\": 2,");
    struct tc *t[6];
    for (int i = 0; i < 6; i++) {
        t[i] = tc_open(c, c->path80);
        tc_send(t[i], LINE59 "hello", strlen(LINE59) + 5);
    }
    int served = 0, refused = 0;
    for (int i = 0; i < 6; i++) {
        struct want_bytes w = {t[i], 5};
        assert_true(run_until(c, tc_has_or_closed, &w, 5));
        if (tc_has(&w))
            served++;
        else if (tc_closed(t[i]) && evbuffer_get_length(t[i]->received) == 0)
            refused++;
    }
    print_message("    %d served, %d refused\n", served, refused);
    assert_int_equal(served + refused, 6);
    assert_true(served >= 2);
    assert_true(refused >= 1);
    assert_int_equal(port_stat(c, 80, "rejected_circuit_rate"), refused);
    assert_int_equal(port_stat(c, 80, "rejected_circuit_limit"), 0);
    echo_stream(c, c->path80, LINE60, "other circuit");
    for (int i = 0; i < 6; i++)
        tc_free(t[i]);
    struct stat_wait sw = {c, "circuits_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
}

/* idle_timeout 1 s: a stream that sends a byte keeps going; one without a byte either way for 1 s is
 * closed, and counted. Order: a marker armed with the byte for 0.9 s runs first — the deadline before
 * the byte was 0.5 s away, so a byte that did not count would close it before the marker. (Not 1 ms
 * sooner: the proxy measures idleness on CLOCK_MONOTONIC while libevent's timers run on the coarse
 * clock, a jiffy behind; a clean-clone run under load saw the close before such a marker.) */
static void test_idle_timeout(void **state)
{
    struct ctx *c = *state;
    start_echo_proxy(c, "\"idle_timeout\": 1,");
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "a", strlen(LINE59) + 1);
    struct want_bytes w = {t, 1};
    assert_true(run_until(c, tc_has, &w, 5));
    run_for(c, 0.5);
    assert_false(tc_closed(t));
    /* a byte now: the stream is not idle for another second from here */
    struct marker m;
    double t0 = now_s();
    marker_arm(c, &m, 900, tc_closed, t);
    tc_send(t, "b", 1);
    assert_true(run_until(c, tc_closed, t, 10));
    marker_check(&m, t0);
    assert_int_equal(evbuffer_get_length(t->received), 2); /* both echoed before */
    assert_int_equal(port_stat(c, 80, "closed_idle"), 1);
    tc_free(t);
}

/* Timers of the loop due between `lo` and `hi` seconds from now (counted into *arg). */
struct timer_window {
    double lo, hi;
    int n;
};

static int timer_in_window_cb(const struct event_base *base, const struct event *ev, void *arg)
{
    struct timer_window *w = arg;
    struct timeval due, now;
    (void)base;
    if (!(event_pending(ev, EV_TIMEOUT, &due) & EV_TIMEOUT))
        return 0;
    gettimeofday(&now, NULL); /* event_pending gives the due time on the wall clock */
    double left = (double)(due.tv_sec - now.tv_sec) + (double)(due.tv_usec - now.tv_usec) / 1e6;
    if (left > w->lo && left <= w->hi)
        w->n++;
    return 0;
}

/* Without idle_timeout a port gets the default, CONFIG_DEFAULT_IDLE_TIMEOUT_S (1 h): an open stream has
 * its idle timer armed that far away (and none with "idle_timeout": 0). Waiting an hour is not needed:
 * test_idle_timeout shows what the timer does. */
static void test_idle_timeout_default(void **state)
{
    struct ctx *c = *state;
    for (int off = 0; off < 2; off++) {
        if (off) {
            proxy_free(c->px);
            c->px = NULL;
            config_free(c->conf);
            c->conf = NULL;
        }
        start_echo_proxy(c, off ? "\"idle_timeout\": 0," : "");
        struct tc *t = tc_open(c, c->path80);
        tc_send(t, LINE59 "a", strlen(LINE59) + 1);
        struct want_bytes w = {t, 1};
        assert_true(run_until(c, tc_has, &w, 5)); /* open: the echo came back */
        struct timer_window tw = {CONFIG_DEFAULT_IDLE_TIMEOUT_S - 600, CONFIG_DEFAULT_IDLE_TIMEOUT_S + 1, 0};
        event_base_foreach_event(c->base, timer_in_window_cb, &tw);
        assert_int_equal(tw.n, off ? 0 : 1);
        tc_free(t);
    }
}

static void test_proxy_protocol_v2(void **state)
{
    struct ctx *c = *state;
    struct tb *rec = start_proxy_to(c, TB_RECORD, "\"proxy_protocol\": true,");
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "GET / HTTP/1.0\r\n\r\n", strlen(LINE59) + 18);
    tc_shutdown(c, t);
    assert_true(run_until(c, tc_closed, t, 5));
    run_for(c, 0.1);
    uint8_t want[PROXYPROTO_V2_LEN + 18];
    assert_int_equal(proxyproto_v2_encode(59, 80, want, sizeof(want)), PROXYPROTO_V2_LEN);
    memcpy(want + PROXYPROTO_V2_LEN, "GET / HTTP/1.0\r\n\r\n", 18);
    assert_int_equal(evbuffer_get_length(rec->received), sizeof(want));
    assert_memory_equal(evbuffer_pullup(rec->received, -1), want, sizeof(want));
    tc_free(t);
}

static void test_no_v2_by_default(void **state)
{
    struct ctx *c = *state;
    struct tb *rec = start_proxy_to(c, TB_RECORD, "");
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "data", strlen(LINE59) + 4);
    tc_shutdown(c, t);
    assert_true(run_until(c, tc_closed, t, 5));
    run_for(c, 0.1);
    assert_int_equal(evbuffer_get_length(rec->received), 4);
    assert_memory_equal(evbuffer_pullup(rec->received, -1), "data", 4);
    tc_free(t);
}

struct buf_wait {
    struct ctx *c;
    json_int_t max_seen;
};

static void test_backpressure_to_backend(void **state)
{
    struct ctx *c = *state;
    struct tb *stall = tb_start(c, TB_STALL);
    char addr[64], ports[1024];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", stall->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59, strlen(LINE59));
    /* 32 MB offered by tor's side to a backend that reads nothing. */
    size_t total = 32u << 20;
    char *chunk = calloc(1, 1 << 20);
    for (size_t i = 0; i < total; i += 1 << 20)
        tc_send(t, chunk, 1 << 20);
    free(chunk);
    json_int_t max_seen = 0;
    for (int i = 0; i < 100; i++) {
        run_for(c, 0.01);
        json_int_t b = port_stat(c, 80, "buffered_bytes");
        if (b > max_seen)
            max_seen = b;
    }
    /* The proxy holds at most its high water mark plus a read or two; the rest stays with the client. */
    assert_true(max_seen > 0);
    assert_true(max_seen <= (json_int_t)(PROXY_HIGH_WATER + 4 * 65536));
    assert_true(evbuffer_get_length(bufferevent_get_output(t->bev)) > total / 2);
    assert_int_equal(port_stat(c, 80, "streams_active"), 1);
    tc_free(t);
}

static void test_backpressure_to_client(void **state)
{
    struct ctx *c = *state;
    struct tb *flood = tb_start(c, TB_FLOOD);
    flood->flood = 16u << 20;
    char addr[64], ports[1024];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", flood->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);
    struct tc *t = tc_open(c, c->path80);
    bufferevent_disable(t->bev, EV_READ); /* a client that stops reading */
    tc_send(t, LINE59, strlen(LINE59));
    json_int_t max_seen = 0;
    for (int i = 0; i < 100; i++) {
        run_for(c, 0.01);
        json_int_t b = port_stat(c, 80, "buffered_bytes");
        if (b > max_seen)
            max_seen = b;
    }
    assert_true(max_seen > 0);
    assert_true(max_seen <= (json_int_t)(PROXY_HIGH_WATER + 4 * 65536));
    /* The reader comes back: all 16 MB arrive, in order. */
    bufferevent_enable(t->bev, EV_READ);
    struct want_bytes w = {t, flood->flood};
    assert_true(run_until(c, tc_has, &w, 20));
    assert_int_equal(evbuffer_get_length(t->received), flood->flood);
    const uint8_t *p = evbuffer_pullup(t->received, -1);
    for (size_t i = 0; i < flood->flood; i += 4096 + 7)
        if (p[i] != (uint8_t)('a' + (i % 4096) % 26))
            fail_msg("byte %zu differs", i);
    tc_free(t);
}

static void test_half_close_from_backend(void **state)
{
    struct ctx *c = *state;
    struct tb *g = start_proxy_to(c, TB_GREET_HALF, "");
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59, strlen(LINE59));
    /* The backend's "hello" and its half-close reach tor's side ... */
    struct want_bytes w = {t, 5};
    assert_true(run_until(c, tc_eof_with, &w, 5));
    assert_memory_equal(evbuffer_pullup(t->received, -1), "hello", 5);
    assert_false(t->error);
    /* ... while the other direction still works. */
    tc_send(t, "still here", 10);
    tc_shutdown(c, t);
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    struct tb_want bw = {g, 10};
    assert_true(run_until(c, tb_has, &bw, 5));
    assert_int_equal(evbuffer_get_length(g->received), 10);
    assert_memory_equal(evbuffer_pullup(g->received, -1), "still here", 10);
    tc_free(t);
}

static void test_half_close_from_client(void **state)
{
    struct ctx *c = *state;
    start_proxy_to(c, TB_ECHO, "");
    /* The client half-closes before the backend is even connected: data and EOF still get through,
     * and the echo (sent after the backend saw the EOF) comes back. */
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "early", strlen(LINE59) + 5);
    tc_shutdown(c, t);
    struct want_bytes w = {t, 5};
    assert_true(run_until(c, tc_eof_with, &w, 5));
    assert_memory_equal(evbuffer_pullup(t->received, -1), "early", 5);
    tc_free(t);
}

static void test_fin_timeout(void **state)
{
    struct ctx *c = *state;
    start_proxy_to(c, TB_STALL, "");
    proxy_set_timeouts(c->px, PROXY_HEADER_TIMEOUT_MS, 300);
    /* tor's side ends; the backend never answers nor closes: the stream goes after the fin timeout. */
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "GET / HTTP/1.0\r\n\r\n", strlen(LINE59) + 18);
    struct stat_wait open = {c, "streams_active", 1};
    assert_true(run_until(c, stat_is, &open, 5));
    run_for(c, 0.2);
    struct stat_wait sw = {c, "streams_active", 0};
    double t0 = now_s();
    struct marker m;
    marker_arm(c, &m, 300, stat_is, &sw);
    tc_shutdown(c, t);
    assert_true(run_until(c, stat_is, &sw, 5));
    marker_check(&m, t0);
    assert_int_equal(backend_named(c, "b0")->active, 0);
    tc_free(t);
}

/* A child process plays a second tor: it connects to `path`, sends tor's line, and holds the stream
 * until a byte arrives on the pipe it is given (or the pipe closes); then it exits. */
static pid_t other_tor_start(const char *path, int *release_fd)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
            write(fd, LINE60, strlen(LINE60)) != (ssize_t)strlen(LINE60))
            _exit(1);
        char b;
        (void)!read(p[0], &b, 1);
        _exit(0);
    }
    close(p[0]);
    *release_fd = p[1];
    return pid;
}

struct pid_want {
    struct ctx *c;
    long pid;
    unsigned n;
};

static bool streams_from_pid_are(void *arg)
{
    struct pid_want *w = arg;
    return proxy_streams_from_pid(w->c->px, w->pid) == w->n;
}

/* proxy_streams_from_pid (the rolling restart's drain): streams count by the process that connected
 * them, only while tor's side is open. */
static void test_streams_from_pid(void **state)
{
    struct ctx *c = *state;
    start_proxy_to(c, TB_STALL, "");
    long self = (long)getpid();
    assert_int_equal(proxy_streams_from_pid(c->px, self), 0);
    assert_int_equal(proxy_streams_from_pid(NULL, self), 0);

    /* One stream from this process ("tor 1"), one from a child ("tor 2"). */
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "GET / HTTP/1.0\r\n\r\n", strlen(LINE59) + 18);
    int release;
    pid_t child = other_tor_start(c->path80, &release);
    struct stat_wait both = {c, "streams_active", 2};
    assert_true(run_until(c, stat_is, &both, 5));
    struct pid_want mine = {c, self, 1}, other = {c, (long)child, 1};
    assert_true(run_until(c, streams_from_pid_are, &mine, 5));
    assert_true(run_until(c, streams_from_pid_are, &other, 5));
    assert_int_equal(proxy_streams_from_pid(c->px, 0), 0);
    assert_int_equal(proxy_streams_from_pid(c->px, -1), 0);

    /* Tor's side ends: that stream no longer counts, though the stalled backend keeps it open. */
    tc_shutdown(c, t);
    mine.n = 0;
    assert_true(run_until(c, streams_from_pid_are, &mine, 5));
    assert_int_equal(port_stat(c, 80, "streams_active"), 2);
    assert_int_equal(proxy_streams_from_pid(c->px, (long)child), 1);

    /* The child ends (as a tor that is killed): its stream goes. */
    close(release);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    other.n = 0;
    assert_true(run_until(c, streams_from_pid_are, &other, 5));
    tc_free(t);
}

static void test_reset_before_first_byte(void **state)
{
    struct ctx *c = *state;
    start_proxy_to(c, TB_RESET, "");
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "x", strlen(LINE59) + 1);
    assert_true(run_until(c, tc_closed, t, 5));
    tc_free(t);
    struct backend *b0 = backend_named(c, "b0");
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    assert_int_equal(b0->state, BACKEND_DOWN);
    assert_int_equal(b0->last_result, CHECK_RESET);
}

static void test_reset_after_first_byte(void **state)
{
    struct ctx *c = *state;
    struct tb *sr = tb_start(c, TB_SPEAK_RESET);
    char addr[64], ports[1024];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", sr->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59, strlen(LINE59));
    assert_true(run_until(c, tc_closed, t, 5));
    tc_free(t);
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    struct backend *b0 = backend_named(c, "b0");
    assert_int_equal(b0->state, BACKEND_UP); /* it answered: a reset then is the application's business */
    assert_int_equal(b0->active, 0);
    assert_int_equal(b0->bytes_in, 1);
}

static void test_unix_and_hostname_backends(void **state)
{
    struct ctx *c = *state;
    struct tb *ux = tb_start_unix(c, TB_ECHO);
    struct tb *named = tb_start(c, TB_ECHO);
    char ports[2048];
    snprintf(ports, sizeof(ports),
             "[{\"virtual\": 80, \"target\": \"unix:%s\"},"
             " {\"virtual\": 81, \"target\": \"localhost:%u\"}]",
             ux->path, named->port);
    start_proxy(c, ports);
    assert_int_equal(c->added, 2);
    echo_stream(c, c->path80, LINE59, "over a unix socket");
    char path81[108];
    assert_int_equal(service_socket_path(c->conf->run_dir, "web", 81, path81, sizeof(path81)), 0);
    echo_stream(c, path81, "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 81\r\n", "by host name");
    assert_int_equal(ux->accepted, 1);
    assert_int_equal(named->accepted, 1);
}

/* Port 80 with one echo backend (its address into `addr`), and a stream through it that has echoed
 * "before" and stays open. */
static struct tc *open_echo_stream(struct ctx *c, char *addr, size_t addrlen)
{
    struct tb *echo = tb_start(c, TB_ECHO);
    char ports[1024];
    snprintf(addr, addrlen, "127.0.0.1:%u", echo->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);
    struct tc *t = tc_open(c, c->path80);
    tc_send(t, LINE59 "before", strlen(LINE59) + 6);
    struct want_bytes w = {t, 6};
    assert_true(run_until(c, tc_has, &w, 5));
    return t;
}

static void test_update(void **state)
{
    struct ctx *c = *state;
    char addr[64], ports[1024], err[512];
    /* A stream on port 80 is open when the reload removes port 80 and adds 8080. */
    struct tc *t = open_echo_stream(c, addr, sizeof(addr));

    snprintf(ports, sizeof(ports), "[{\"virtual\": 8080, \"target\": \"%s\"}]", addr);
    assert_int_equal(reload_ports(c, ports, err, sizeof(err)), 0);
    assert_int_equal(c->added, 2);
    assert_int_equal(c->removed, 1);
    assert_int_equal(c->updated, 0);
    char path8080[108];
    struct stat st;
    assert_int_equal(service_socket_path(c->conf->run_dir, "web", 8080, path8080, sizeof(path8080)), 0);
    assert_int_equal(lstat(path8080, &st), 0);
    assert_int_equal(lstat(c->path80, &st), -1); /* no new streams on the removed port */
    assert_null(proxy_find_pool(c->px, "web", 80));
    assert_non_null(proxy_find_pool(c->px, "web", 8080));

    /* The open stream goes on, then ends; the removed port disappears with it. */
    tc_send(t, " after", 6);
    tc_shutdown(c, t);
    struct want_bytes w2 = {t, 12};
    assert_true(run_until(c, tc_eof_with, &w2, 5));
    assert_memory_equal(evbuffer_pullup(t->received, -1), "before after", 12);
    tc_free(t);
    run_for(c, 0.1);
    json_t *arr = proxy_to_json(c->px);
    assert_int_equal(json_array_size(arr), 1);
    json_decref(arr);
    echo_stream(c, path8080, "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 8080\r\n", "new port");

    /* Same ports, new weight: the pool is updated in place, no listener changes. */
    snprintf(ports, sizeof(ports),
             "[{\"virtual\": 8080, \"backends\": [{\"name\": \"web-8080-0\", \"address\": \"%s\", \"weight\": 7}]}]",
             addr);
    assert_int_equal(reload_ports(c, ports, err, sizeof(err)), 0);
    assert_int_equal(c->added, 2);
    assert_int_equal(c->removed, 1);
    assert_int_equal(c->updated, 1); /* only the port that stayed */
    struct backend_pool *pool = proxy_find_pool(c->px, "web", 8080);
    assert_int_equal(backend_pool_get(pool, 0)->conf.weight, 7);
    assert_int_equal(backend_pool_get(pool, 0)->total_streams, 1); /* kept its counters */
}

static void test_update_refused_keeps_state(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = tb_start(c, TB_ECHO);
    char addr[64], ports[1024], err[512];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", echo->port);
    const char *a[] = {addr};
    ports_json(ports, sizeof(ports), "", 1, a, NULL);
    start_proxy(c, ports);
    /* Something that is not a socket sits where port 81's socket would go. */
    char path81[108];
    assert_int_equal(service_socket_path(c->conf->run_dir, "web", 81, path81, sizeof(path81)), 0);
    FILE *f = fopen(path81, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(ports, sizeof(ports), "[{\"virtual\": 81, \"target\": \"%s\"}]", addr);
    assert_int_equal(reload_ports(c, ports, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a socket"));
    /* Nothing changed: port 80 still serves, no hooks ran. */
    assert_int_equal(c->added, 1);
    assert_int_equal(c->removed, 0);
    echo_stream(c, c->path80, LINE59, "still 80");
}

static void test_foreign_line_served_without_identity(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = start_proxy_to(c, TB_ECHO, "\"max_streams_per_circuit\": 1,");
    /* Valid PROXY lines that are not tor's form get no circuit (and so no limit). */
    echo_stream(c, c->path80, "PROXY TCP4 10.0.0.1 10.0.0.2 1234 80\r\n", "v4");
    echo_stream(c, c->path80, "PROXY UNKNOWN\r\n", "unknown");
    assert_int_equal(port_stat(c, 80, "rejected_circuit_limit"), 0);
    assert_int_equal(echo->accepted, 2);
}

static void test_many_concurrent_streams(void **state)
{
    struct ctx *c = *state;
    struct tb *e1 = tb_start(c, TB_ECHO), *e2 = tb_start(c, TB_ECHO);
    char a1[64], a2[64], ports[1024];
    snprintf(a1, sizeof(a1), "127.0.0.1:%u", e1->port);
    snprintf(a2, sizeof(a2), "127.0.0.1:%u", e2->port);
    const char *a[] = {a1, a2};
    ports_json(ports, sizeof(ports), "\"balance\": \"least_conn\",", 2, a, NULL);
    start_proxy(c, ports);
    enum { N = 40, LEN = 200 * 1000 };
    struct tc *t[N];
    uint8_t *payload[N];
    for (int i = 0; i < N; i++) {
        char line[80];
        payload[i] = malloc(LEN);
        fill_random(payload[i], LEN, (uint64_t)i + 100);
        snprintf(line, sizeof(line), "PROXY TCP6 fc00:dead:beef:4dad::0:%x ::1 %d 80\r\n", 1000 + i, 1000 + i);
        t[i] = tc_open(c, c->path80);
        tc_send(t[i], line, strlen(line));
        tc_send(t[i], payload[i], LEN);
    }
    for (int i = 0; i < N; i++) {
        struct want_bytes w = {t[i], LEN};
        assert_true(run_until(c, tc_has, &w, 20));
        assert_int_equal(evbuffer_get_length(t[i]->received), LEN);
        assert_memory_equal(evbuffer_pullup(t[i]->received, -1), payload[i], LEN);
    }
    assert_int_equal(e1->accepted + e2->accepted, N);
    assert_true(e1->accepted > 0 && e2->accepted > 0);
    assert_int_equal(port_stat(c, 80, "circuits_active"), N);
    for (int i = 0; i < N; i++) {
        tc_free(t[i]);
        free(payload[i]);
    }
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    assert_int_equal(port_stat(c, 80, "circuits_active"), 0);
}

/* ---- metrics ---- */

/* The proxy's families as text (malloc'd). */
static char *proxy_metrics_text(struct ctx *c)
{
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(proxy_metrics(c->px, m), 0);
    char *text = strdup(metrics_text(m, NULL));
    assert_non_null(text);
    metrics_free(m);
    return text;
}

/* How many whole lines of `text` are `line`. */
static size_t count_lines(const char *text, const char *line)
{
    size_t n = 0, len = strlen(line);
    for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
        if ((p == text || p[-1] == '\n') && p[len] == '\n')
            n++;
    return n;
}

/* `text` has the sample `series value` exactly once. */
static void assert_sample(const char *text, const char *series, unsigned long long value)
{
    char line[256];
    snprintf(line, sizeof(line), "%s %llu", series, value);
    if (count_lines(text, line) != 1)
        fail_msg("expected the line \"%s\" once in:\n%s", line, text);
}

/* tests/tools/promcheck (ONIONFRONT_PROMCHECK, default build/tools/promcheck from the source tree,
 * which `make unit` builds) accepts `text`, lint included. */
static void assert_promcheck(struct ctx *c, const char *text)
{
    const char *tool = getenv("ONIONFRONT_PROMCHECK");
    char file[128], cmd[512];
    if (!tool)
        tool = "build/tools/promcheck";
    if (access(tool, X_OK) != 0)
        fail_msg("%s: %s (run from the source tree after make unit, or set ONIONFRONT_PROMCHECK)", tool,
                 strerror(errno));
    snprintf(file, sizeof(file), "%s/metrics.prom", c->dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof(cmd), "'%s' '%s' >'%s.out' 2>&1", tool, file, file);
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof(cmd), "cat '%s.out'", file);
        (void)system(cmd);
        fail_msg("promcheck rejected the exposition (status %d):\n%s", rc, text);
    }
}

#define WEB80 "{service=\"web\",port=\"80\""
#define WEB81 "{service=\"web\",port=\"81\""

/* Port 80: a refused backend first choice, then an echo one, one stream per circuit; port 81: only a
 * refused backend. Every counter of the status JSON shows in its family with the value the streams
 * made, bytes while the stream still runs. */
static void test_metrics_after_streams(void **state)
{
    struct ctx *c = *state;
    struct tb *echo = tb_start(c, TB_ECHO);
    char dead[64], live[64], ports[1024], path81[108];
    snprintf(dead, sizeof(dead), "127.0.0.1:%u", free_port());
    snprintf(live, sizeof(live), "127.0.0.1:%u", echo->port);
    snprintf(ports, sizeof(ports),
             "[{\"virtual\": 80, \"max_streams_per_circuit\": 1, \"backends\": ["
             "{\"name\": \"b0\", \"address\": \"%s\", \"weight\": 10}, {\"name\": \"b1\", \"address\": \"%s\"}]},"
             " {\"virtual\": 81, \"backends\": [{\"name\": \"d\", \"address\": \"%s\"}]}]",
             dead, live, dead);
    start_proxy(c, ports);
    assert_int_equal(service_socket_path(c->conf->run_dir, "web", 81, path81, sizeof(path81)), 0);

    /* Before any stream: every family once, zeros for both ports. */
    char *text = proxy_metrics_text(c);
    static const char *const families[] = {
        "onionfront_proxy_streams_total counter",         "onionfront_proxy_active_streams gauge",
        "onionfront_proxy_active_circuits gauge",          "onionfront_proxy_rejected_streams_total counter",
        "onionfront_proxy_connect_failures_total counter", "onionfront_proxy_bytes_total counter",
        "onionfront_proxy_buffered_bytes gauge",
    };
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        char type[128];
        snprintf(type, sizeof(type), "# TYPE %s", families[i]);
        assert_int_equal(count_lines(text, type), 1);
    }
    assert_sample(text, "onionfront_proxy_streams_total" WEB80 "}", 0);
    assert_sample(text, "onionfront_proxy_streams_total" WEB81 "}", 0);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB81 ",reason=\"no_backend\"}", 0);
    assert_promcheck(c, text);
    free(text);

    /* One stream open on circuit 59: echoed, counted while it runs (the backend's own byte counters
     * wait for the stream's end). */
    struct tc *open1 = tc_open(c, c->path80);
    tc_send(open1, LINE59 "hello", strlen(LINE59) + 5);
    struct want_bytes w = {open1, 5};
    assert_true(run_until(c, tc_has, &w, 5));
    assert_int_equal(backend_named(c, "b1")->bytes_out, 0);
    text = proxy_metrics_text(c);
    assert_sample(text, "onionfront_proxy_active_streams" WEB80 "}", 1);
    assert_sample(text, "onionfront_proxy_active_circuits" WEB80 "}", 1);
    assert_sample(text, "onionfront_proxy_connect_failures_total" WEB80 "}", 1); /* b0 refused, then b1 */
    assert_sample(text, "onionfront_proxy_bytes_total" WEB80 ",direction=\"to_backend\"}", 5);
    assert_sample(text, "onionfront_proxy_bytes_total" WEB80 ",direction=\"to_tor\"}", 5);
    free(text);

    /* A second stream of circuit 59 is over the limit. */
    struct tc *over = tc_open(c, c->path80);
    tc_send(over, LINE59 "no", strlen(LINE59) + 2);
    assert_true(run_until(c, tc_closed, over, 5));
    tc_free(over);
    tc_shutdown(c, open1);
    assert_true(run_until(c, tc_closed, open1, 5));
    tc_free(open1);
    /* Two more streams on circuit 60, and two without a valid PROXY line: one not a PROXY line, one
     * ended by its client halfway through the line. */
    echo_stream(c, c->path80, LINE60, "ping");
    echo_stream(c, c->path80, LINE60, "pong");
    struct tc *bad = tc_open(c, c->path80);
    tc_send(bad, "GET / HTTP/1.1\r\n\r\n", 18);
    assert_true(run_until(c, tc_closed, bad, 5));
    tc_free(bad);
    bad = tc_open(c, c->path80);
    tc_send(bad, "PROXY TCP6", 10);
    tc_shutdown(c, bad);
    assert_true(run_until(c, tc_closed, bad, 5));
    tc_free(bad);
    /* Port 81: the first stream finds its only backend refusing (a connect failure), the next finds no
     * backend up (rejected). */
    for (int i = 0; i < 2; i++) {
        struct tc *t = tc_open(c, path81);
        tc_send(t, "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 81\r\nx", strlen(LINE59) + 1);
        assert_true(run_until(c, tc_closed, t, 5));
        tc_free(t);
    }
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    assert_int_equal(port_stat(c, 81, "streams_active"), 0);

    text = proxy_metrics_text(c);
    assert_sample(text, "onionfront_proxy_streams_total" WEB80 "}", 6);
    assert_sample(text, "onionfront_proxy_active_streams" WEB80 "}", 0);
    assert_sample(text, "onionfront_proxy_active_circuits" WEB80 "}", 0);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB80 ",reason=\"header\"}", 2);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB80 ",reason=\"circuit_limit\"}", 1);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB80 ",reason=\"no_backend\"}", 0);
    assert_sample(text, "onionfront_proxy_connect_failures_total" WEB80 "}", 1);
    assert_sample(text, "onionfront_proxy_bytes_total" WEB80 ",direction=\"to_backend\"}", 13);
    assert_sample(text, "onionfront_proxy_bytes_total" WEB80 ",direction=\"to_tor\"}", 13);
    assert_sample(text, "onionfront_proxy_buffered_bytes" WEB80 "}", 0);
    assert_sample(text, "onionfront_proxy_streams_total" WEB81 "}", 2);
    assert_sample(text, "onionfront_proxy_active_streams" WEB81 "}", 0);
    assert_sample(text, "onionfront_proxy_connect_failures_total" WEB81 "}", 1);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB81 ",reason=\"no_backend\"}", 1);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB81 ",reason=\"header\"}", 0);
    assert_sample(text, "onionfront_proxy_bytes_total" WEB81 ",direction=\"to_backend\"}", 0);
    /* The same numbers as the status JSON. */
    assert_int_equal(port_stat(c, 80, "bytes_to_backend"), 13);
    assert_int_equal(port_stat(c, 80, "bytes_to_tor"), 13);
    assert_int_equal(port_stat(c, 80, "streams_total"), 6);
    /* The backend's own counters agree now that every stream has ended. */
    assert_int_equal(backend_named(c, "b1")->bytes_out, 13);
    assert_promcheck(c, text);
    free(text);
}

/* A reload that removes port 80 while a stream drains on it, then one that adds port 80 again: the
 * draining port never shows, so no series appears twice; the new port starts from zero. */
static void test_metrics_port_readded(void **state)
{
    struct ctx *c = *state;
    char addr[64], ports[1024], err[512];
    struct tc *t = open_echo_stream(c, addr, sizeof(addr));

    static const char *const reloads[] = {
        "[{\"virtual\": 8080, \"target\": \"%s\"}]",
        "[{\"virtual\": 8080, \"target\": \"%s\"}, {\"virtual\": 80, \"target\": \"%s\"}]",
    };
    for (size_t i = 0; i < 2; i++) {
        snprintf(ports, sizeof(ports), reloads[i], addr, addr);
        assert_int_equal(reload_ports(c, ports, err, sizeof(err)), 0);
        char *text = proxy_metrics_text(c);
        assert_sample(text, "onionfront_proxy_streams_total{service=\"web\",port=\"8080\"}", 0);
        assert_int_equal(strstr(text, WEB80) != NULL, i == 1);
        if (i == 1) {
            /* The new port 80, not the draining one (1 stream, 6 bytes each way so far). */
            assert_sample(text, "onionfront_proxy_streams_total" WEB80 "}", 0);
            assert_sample(text, "onionfront_proxy_active_streams" WEB80 "}", 0);
            assert_sample(text, "onionfront_proxy_bytes_total" WEB80 ",direction=\"to_tor\"}", 0);
        }
        assert_promcheck(c, text);
        free(text);
    }
    json_t *arr = proxy_to_json(c->px);
    assert_int_equal(json_array_size(arr), 3); /* 8080, the new 80 and the draining 80 */
    json_decref(arr);
    /* The draining stream still works. */
    tc_send(t, " after", 6);
    tc_shutdown(c, t);
    struct want_bytes w2 = {t, 12};
    assert_true(run_until(c, tc_eof_with, &w2, 5));
    tc_free(t);
}

/* No proxy: the families without samples, and a second call on the same writer is refused. */
static void test_metrics_no_proxy(void **state)
{
    (void)state;
    struct metrics *m = metrics_new();
    assert_non_null(m);
    assert_int_equal(proxy_metrics(NULL, m), 0);
    const char *text = metrics_text(m, NULL);
    assert_int_equal(count_lines(text, "# TYPE onionfront_proxy_bytes_total counter"), 1);
    assert_null(strstr(text, "{"));
    assert_int_equal(proxy_metrics(NULL, m), -1);
    metrics_free(m);
}

/* limits.max_open_streams: over all ports, whatever the circuit; a stream beyond it is closed at once
 * and counted, and once one ends another may open. */
static void test_global_stream_cap(void **state)
{
    struct ctx *c = *state;
    c->top = "\"limits\": {\"max_open_streams\": 2},";
    struct tb *echo = start_proxy_to(c, TB_ECHO, "");
    struct tc *open1 = tc_open(c, c->path80), *open2 = tc_open(c, c->path80);
    tc_send(open1, LINE59 "one", strlen(LINE59) + 3);
    tc_send(open2, LINE60 "two", strlen(LINE60) + 3);
    struct want_bytes w1 = {open1, 3}, w2 = {open2, 3};
    assert_true(run_until(c, tc_has, &w1, 5));
    assert_true(run_until(c, tc_has, &w2, 5));
    struct tc *third = tc_open(c, c->path80);
    tc_send(third, LINE61 "three", strlen(LINE61) + 5);
    assert_true(run_until(c, tc_closed, third, 5));
    assert_int_equal(evbuffer_get_length(third->received), 0);
    tc_free(third);
    assert_int_equal(echo->accepted, 2);
    assert_int_equal(port_stat(c, 80, "rejected_stream_limit"), 1);
    assert_int_equal(port_stat(c, 80, "streams_total"), 3);
    char *text = proxy_metrics_text(c);
    assert_sample(text, "onionfront_proxy_rejected_streams_total" WEB80 ",reason=\"stream_limit\"}", 1);
    free(text);
    tc_shutdown(c, open1);
    assert_true(run_until(c, tc_closed, open1, 5));
    tc_free(open1);
    struct stat_wait sw = {c, "streams_active", 1};
    assert_true(run_until(c, stat_is, &sw, 5));
    echo_stream(c, c->path80, LINE61, "again");
    tc_free(open2);
}

/* Without a setting, streams per circuit are limited by default, and the global cap is derived from the
 * descriptor limit. */
static void test_default_limits(void **state)
{
    struct ctx *c = *state;
    start_proxy_to(c, TB_ECHO, "");
    assert_int_equal(c->conf->services[0].ports[0].max_streams_per_circuit, CONFIG_DEFAULT_MAX_STREAMS_PER_CIRCUIT);
    assert_int_equal(c->conf->limits.max_open_streams, 0);
    echo_stream(c, c->path80, LINE59, "works");
}

/* What a config's data path holds (fdbudget.h): a listener per port of every service, a check per backend
 * of a port with checks (health type none: none); the limit check names them. */
static void test_held_fds(void **state)
{
    (void)state;
    static const char json[] =
        "{\"state_dir\": \"/var/lib/of\", \"run_dir\": \"/run/of\", \"services\": ["
        "{\"name\": \"web\", \"ports\": ["
        "{\"virtual\": 80, \"backends\": [{\"address\": \"127.0.0.1:1\"}, {\"address\": \"127.0.0.1:2\"}]},"
        "{\"virtual\": 81, \"health\": {\"type\": \"none\"}, \"backends\": [{\"address\": \"127.0.0.1:3\"},"
        " {\"address\": \"127.0.0.1:4\"}, {\"address\": \"127.0.0.1:5\", \"weight\": 0}]}]},"
        "{\"name\": \"api\", \"ports\": [{\"virtual\": 443, \"target\": \"127.0.0.1:6\","
        " \"health\": {\"type\": \"http\"}}]}]}";
    char err[600];
    struct config *conf = config_load_string(json, strlen(json), err, sizeof(err));
    if (!conf)
        fail_msg("config: %s", err);
    struct fdbudget_held held = proxy_held_fds(conf);
    assert_int_equal(held.listeners, 3);
    assert_int_equal(held.checks, 3);
    rlim_t fits = FDBUDGET_RESERVE + FDBUDGET_METRICS_CLIENTS + FDBUDGET_ONIONLOC_CLIENTS + FDBUDGET_STATUS_CLIENTS + 6 +
                  2 * FDBUDGET_STREAMS_MIN;
    assert_int_equal(proxy_check_fd_limit(conf, fits, err, sizeof(err)), 0);
    assert_int_equal(proxy_check_fd_limit(conf, fits - 1, err, sizeof(err)), -1);
    if (!strstr(err, ": 3 listening sockets (one per service port) and 3 health checks"))
        fail_msg("%s", err);
    config_free(conf);
}

/* ---- splice (issue 16) ---- */

/* tor's side as a hashpeer: connect, the PROXY line, then `n` seeded bytes (seed 11). */
static struct hashpeer *hp_open(struct ctx *c, size_t n)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", c->path80);
    assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    assert_int_equal(write(fd, LINE59, strlen(LINE59)), (ssize_t)strlen(LINE59));
    struct hashpeer *p = hashpeer_new(c->base, fd, n, 11);
    assert_non_null(p);
    return p;
}

struct hp_pair {
    struct hashpeer *client;
    struct tb *backend;
};

static bool hp_both_eof(void *arg)
{
    struct hp_pair *p = arg;
    return hashpeer_got_eof(p->client) && p->backend->peer && hashpeer_got_eof(p->backend->peer);
}

/* One stream: `up` bytes from tor's side, `down` from the backend, at the same time, both half-closed
 * after; both arrive exactly and the stream ends. */
static void hp_transfer(struct ctx *c, struct tb *b, size_t up, size_t down)
{
    b->flood = down;
    struct hp_pair p = {hp_open(c, up), b};
    assert_true(run_until(c, hp_both_eof, &p, 120));
    assert_int_equal(hashpeer_check(b->peer, up, 11), 0);
    assert_int_equal(hashpeer_check(p.client, down, 22), 0);
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    hashpeer_free(p.client);
    hashpeer_free(b->peer);
    b->peer = NULL;
}

/* Every pair of sizes (0, 1, 64 KiB - 1, 64 KiB, 64 KiB + 1, both ways) and 50 MB both ways, on one
 * port; returns how many streams there were. The byte counters match. */
static json_int_t hp_all_sizes(struct ctx *c)
{
    static const size_t sizes[] = {0, 1, 65535, 65536, 65537};
    struct tb *b = start_proxy_to(c, TB_HASH, "");
    json_int_t streams = 0;
    uint64_t up = 0, down = 0;
    for (size_t i = 0; i < 5; i++) {
        hp_transfer(c, b, sizes[i], sizes[(i + 2) % 5]);
        up += sizes[i];
        down += sizes[(i + 2) % 5];
        streams++;
    }
    hp_transfer(c, b, 50u << 20, 50u << 20);
    up += 50u << 20;
    down += 50u << 20;
    streams++;
    assert_int_equal(port_stat(c, 80, "bytes_to_backend"), up);
    assert_int_equal(port_stat(c, 80, "bytes_to_tor"), down);
    struct backend *b0 = backend_named(c, "b0");
    assert_int_equal(b0->bytes_out, up);
    assert_int_equal(b0->bytes_in, down);
    assert_int_equal(port_stat(c, 80, "buffered_bytes"), 0);
    print_message("    %lld of %lld streams spliced\n", (long long)port_stat(c, 80, "streams_spliced"),
                  (long long)streams);
    return streams;
}

static void test_exact_spliced(void **state)
{
    struct ctx *c = *state;
    c->splice = SPLICE_ALWAYS;
    json_int_t n = hp_all_sizes(c);
    assert_int_equal(port_stat(c, 80, "streams_spliced"), n); /* every one, from its first byte */
}

static void test_exact_default_threshold(void **state)
{
    struct ctx *c = *state;
    hp_all_sizes(c); /* which ones move to splice depends on timing (every buffer empty): printed */
}

static void test_exact_splice_off(void **state)
{
    struct ctx *c = *state;
    c->splice = SPLICE_OFF;
    hp_all_sizes(c);
    assert_int_equal(port_stat(c, 80, "streams_spliced"), 0);
}

static void test_splice_off_by_environment(void **state)
{
    struct ctx *c = *state;
    setenv("ONIONFRONT_SPLICE", "0", 1);
    struct tb *b = start_proxy_to(c, TB_HASH, "");
    unsetenv("ONIONFRONT_SPLICE");
    hp_transfer(c, b, 1u << 20, 4u << 20);
    assert_int_equal(port_stat(c, 80, "streams_spliced"), 0);
}

/* A slow reader on either side of a spliced stream: everything arrives, and the proxy holds at most
 * its two pipes' worth (printed: the most it held). */
static void splice_slow_reader(struct ctx *c, bool slow_client)
{
    c->splice = SPLICE_ALWAYS;
    struct tb *b = start_proxy_to(c, TB_HASH, "");
    size_t n = 4u << 20;
    b->flood = slow_client ? n : 0;
    struct hp_pair p = {hp_open(c, slow_client ? 0 : n), b};
    json_int_t max_seen = 0;
    while (!b->peer)
        event_base_loop(c->base, EVLOOP_ONCE);
    hashpeer_set_slow(slow_client ? p.client : b->peer, 16 * 1024, 2);
    for (int i = 0; i < 6000 && !hp_both_eof(&p); i++) {
        event_base_loop(c->base, EVLOOP_ONCE);
        json_int_t buffered = port_stat(c, 80, "buffered_bytes");
        if (buffered > max_seen)
            max_seen = buffered;
    }
    assert_true(run_until(c, hp_both_eof, &p, 60));
    assert_int_equal(hashpeer_check(slow_client ? p.client : b->peer, n, slow_client ? 22 : 11), 0);
    print_message("    slow %s: the proxy held at most %lld bytes\n", slow_client ? "tor side" : "backend",
                  (long long)max_seen);
    assert_true(max_seen <= 2 * 65536);
    assert_int_equal(port_stat(c, 80, "streams_spliced"), 1);
    hashpeer_free(p.client);
}

static void test_splice_slow_client(void **state)
{
    splice_slow_reader(*state, true);
}

static void test_splice_slow_backend(void **state)
{
    splice_slow_reader(*state, false);
}

struct hp_got {
    struct tb *b;
    size_t n;
};

static bool hp_backend_has(void *arg)
{
    struct hp_got *g = arg;
    return g->b->peer && hashpeer_received(g->b->peer) >= g->n;
}

static bool hp_closed(void *arg)
{
    struct hashpeer *p = arg;
    return hashpeer_got_eof(p) || hashpeer_failed(p, NULL);
}

/* The backend resets a spliced stream mid-transfer: tor's side is closed, the stream ends. */
static void test_splice_backend_reset_mid_transfer(void **state)
{
    struct ctx *c = *state;
    c->splice = SPLICE_ALWAYS;
    struct tb *b = start_proxy_to(c, TB_HASH, "");
    struct hashpeer *client = hp_open(c, 64u << 20);
    struct hp_got g = {b, 1u << 20};
    assert_true(run_until(c, hp_backend_has, &g, 20));
    hashpeer_reset(b->peer);
    b->peer = NULL;
    assert_true(run_until(c, hp_closed, client, 10));
    struct stat_wait sw = {c, "streams_active", 0};
    assert_true(run_until(c, stat_is, &sw, 5));
    assert_int_equal(port_stat(c, 80, "streams_spliced"), 1);
    assert_int_equal(backend_named(c, "b0")->active, 0);
    hashpeer_free(client);
}

/* The older tests again, with splice from the first byte. */
#define SPLICED(name)                                                                                          \
    static void name##_spliced(void **state)                                                                   \
    {                                                                                                          \
        ((struct ctx *)*state)->splice = SPLICE_ALWAYS;                                                        \
        name(state);                                                                                           \
        assert_true(port_stat(*state, 80, "streams_spliced") >= 1);                                            \
    }
SPLICED(test_echo_roundtrip)
SPLICED(test_backpressure_to_backend)
SPLICED(test_backpressure_to_client)
SPLICED(test_half_close_from_backend)
SPLICED(test_half_close_from_client)
SPLICED(test_fin_timeout)
SPLICED(test_reset_after_first_byte)
SPLICED(test_proxy_protocol_v2)

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemon does: a peer gone mid-write is an error, not a signal */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_echo_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_missing_unix_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout_then_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_circuit_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_global_stream_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_proxy_protocol_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_v2_by_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure_to_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure_to_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_from_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_from_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fin_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streams_from_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_circuit_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_before_first_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_after_first_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unix_and_hostname_backends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_refused_keeps_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_line_served_without_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_concurrent_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_after_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_port_readded, setup, teardown),
        cmocka_unit_test(test_metrics_no_proxy),
        cmocka_unit_test(test_held_fds),
        cmocka_unit_test_setup_teardown(test_exact_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_default_threshold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_splice_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice_off_by_environment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice_slow_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice_slow_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice_backend_reset_mid_transfer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_echo_roundtrip_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure_to_backend_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure_to_client_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_from_backend_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_from_client_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fin_timeout_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_after_first_byte_spliced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_proxy_protocol_v2_spliced, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
