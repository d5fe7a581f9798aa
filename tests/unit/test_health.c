/* test_health.c — active health checks on a real event loop against real local servers: a TCP listener
 * (up), a closed port (refused, down after fall), a listener whose accept queue is full (connect
 * timeout), a listener that accepts but never answers (HTTP read timeout), an evhttp server answering
 * 200 or 503 (http check up/down by status, method/path/Host as configured), https against a plain HTTP
 * server (TLS error), https against a TLS server whose certificates (a test CA, an unrelated CA,
 * self-signed) are made here with OpenSSL (health.ca_file, health.tls_verify), a host name (libcurl
 * connect-only), unix-socket backends for tcp and http, reload and free while checks run, and that checks
 * never block the loop (a timer fires while each check is in flight). Every loop run is bounded by a
 * timer; only 127.0.0.1 and unix sockets are used; files go to a private directory removed afterwards.
 *
 * No timed assertions: results and their order are asserted. Where the code promises "not before"
 * (a deadline, the next check of a schedule), the test reads the code's own clock (clock_now_ms) and
 * asserts only that lower bound, which load can never break (assert_not_before). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/datapath/backend.h"
#include "sidecar/datapath/check_http.h"
#include "sidecar/datapath/check_tcp.h"
#include "sidecar/core/clock.h"
#include "sidecar/datapath/health.h"
#include "sidecar/core/log.h"
#include "tests/fake/tmpdir.h"

#define MAXB 4
#define BOUND_MS 10000 /* every wait for a condition; normally met in well under a second */
#define MAX_HELD 16
#define TLS_NAME "www.example.test" /* the TLS server's certificate is for this name */

struct ctx {
    struct event_base *base;
    struct port_conf port;
    struct backend_conf bc[MAXB];
    struct backend_pool *pool;
    struct health_checker *hc;
    struct event *tick;
    struct event *bound;
    unsigned ticks;
    unsigned ticks_at_accept;            /* c->ticks when a server last accepted a connection */
    bool (*pred)(struct ctx *);
    /* servers */
    struct evconnlistener *listener;     /* closes what it accepts */
    unsigned accepts;
    struct evconnlistener *silent;       /* accepts and holds, never answers */
    int held[MAX_HELD];
    size_t n_held;
    struct evhttp *http;
    int status;                          /* what the evhttp server answers */
    unsigned requests;
    char method[16], uri[256], host[256];
    char dir[64];                        /* for unix sockets and certificates */
    int fill_fds[8];                     /* connections filling an accept queue */
    size_t n_fill;
    int backlog_fd;
    SSL_CTX *tls;                        /* a TLS server presenting `server` */
    struct test_cert {
        EVP_PKEY *key;
        X509 *x;
        char pem[128];                   /* the certificate as a PEM file in dir */
    } ca, other_ca, server;
    struct tls_conn *tls_conns;
    char sni[256];
    unsigned tls_failed, tls_served;
};

struct tls_conn {
    struct ctx *c;
    struct tls_conn *next;
    SSL *ssl;
    int fd;
    struct event *ev;
};

static void tls_conn_free(struct tls_conn *t)
{
    for (struct tls_conn **pp = &t->c->tls_conns; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    event_free(t->ev);
    SSL_free(t->ssl);
    close(t->fd);
    free(t);
}

static int setup(void **state)
{
    static struct ctx c;
    memset(&c, 0, sizeof(c));
    c.backlog_fd = -1;
    signal(SIGPIPE, SIG_IGN); /* the test's servers write to clients that may have gone (as main.c does) */
    log_set_level(getenv("TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_INFO);
    log_set_clock(NULL); /* a fresh rate-limit window: tests count log lines */
    c.base = event_base_new();
    *state = &c;
    return c.base && tmpdir_make(c.dir, sizeof(c.dir), "test_health") == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    health_free(c->hc);
    backend_pool_free(c->pool);
    if (c->http)
        evhttp_free(c->http);
    if (c->listener)
        evconnlistener_free(c->listener);
    if (c->silent)
        evconnlistener_free(c->silent);
    for (size_t i = 0; i < c->n_held; i++)
        close(c->held[i]);
    for (size_t i = 0; i < c->n_fill; i++)
        close(c->fill_fds[i]);
    if (c->backlog_fd >= 0)
        close(c->backlog_fd);
    while (c->tls_conns)
        tls_conn_free(c->tls_conns);
    SSL_CTX_free(c->tls);
    struct test_cert *certs[] = {&c->ca, &c->other_ca, &c->server};
    for (size_t i = 0; i < sizeof(certs) / sizeof(certs[0]); i++) {
        X509_free(certs[i]->x);
        EVP_PKEY_free(certs[i]->key);
    }
    if (c->tick)
        event_free(c->tick);
    if (c->bound)
        event_free(c->bound);
    event_base_free(c->base);
    return tmpdir_remove(c->dir);
}

/* ---- the loop ------------------------------------------------------------------------------------ */

/* `event_ms` is not before `from_ms` + `min_ms`, all read from clock_now_ms, the clock the code keeps its
 * deadlines and schedules on. The code guarantees this order; a slow machine only makes it later. */
static void assert_not_before(uint64_t event_ms, uint64_t from_ms, uint64_t min_ms)
{
    print_message("    %llu ms (not before %llu ms)\n", (unsigned long long)(event_ms - from_ms),
                  (unsigned long long)min_ms);
    assert_true(event_ms >= from_ms + min_ms);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctx *c = arg;
    (void)fd;
    (void)what;
    c->ticks++;
    if (c->pred && c->pred(c))
        event_base_loopbreak(c->base);
}

static void bound_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctx *c = arg;
    (void)fd;
    (void)what;
    event_base_loopbreak(c->base);
}

/* Run the loop until pred (checked every 10 ms) or `bound_ms`. Returns pred's last answer (true if pred
 * is NULL and the bound was reached). `*start_ms` (if not NULL): clock_now_ms() when the run started.
 * The 10 ms timer also shows the loop is not blocked: c->ticks counts its runs. */
static bool run_until(struct ctx *c, bool (*pred)(struct ctx *), unsigned bound_ms, uint64_t *start_ms)
{
    if (!c->tick) {
        c->tick = event_new(c->base, -1, EV_PERSIST, tick_cb, c);
        c->bound = evtimer_new(c->base, bound_cb, c);
    }
    struct timeval ten = {0, 10000};
    struct timeval bound = {bound_ms / 1000, (bound_ms % 1000) * 1000};
    c->pred = pred;
    c->ticks = 0;
    c->ticks_at_accept = 0;
    event_add(c->tick, &ten);
    evtimer_add(c->bound, &bound);
    if (start_ms)
        *start_ms = clock_now_ms();
    event_base_dispatch(c->base);
    event_del(c->tick);
    evtimer_del(c->bound);
    return pred ? pred(c) : true;
}

/* ---- servers ------------------------------------------------------------------------------------- */

static uint16_t fd_port(int fd)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    return ntohs(sin.sin_port);
}

static void close_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct ctx *c = arg;
    (void)l;
    (void)sa;
    (void)len;
    c->accepts++;
    close(fd);
}

static void hold_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct ctx *c = arg;
    (void)l;
    (void)sa;
    (void)len;
    c->accepts++;
    c->ticks_at_accept = c->ticks;
    if (c->n_held < MAX_HELD)
        c->held[c->n_held++] = fd;
    else
        close(fd);
}

static struct evconnlistener *listen_tcp(struct ctx *c, evconnlistener_cb cb, uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct evconnlistener *l = evconnlistener_new_bind(c->base, cb, c, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                                       16, (struct sockaddr *)&sin, sizeof(sin));
    assert_non_null(l);
    return l;
}

static void unix_sockaddr(struct sockaddr_un *sun, const char *path)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    assert_true(strlen(path) < sizeof(sun->sun_path));
    memcpy(sun->sun_path, path, strlen(path) + 1);
}

static struct evconnlistener *listen_unix(struct ctx *c, evconnlistener_cb cb, const char *path)
{
    struct sockaddr_un sun;
    unix_sockaddr(&sun, path);
    struct evconnlistener *l = evconnlistener_new_bind(c->base, cb, c, LEV_OPT_CLOSE_ON_FREE, 16,
                                                       (struct sockaddr *)&sun, sizeof(sun));
    assert_non_null(l);
    return l;
}

/* A port on 127.0.0.1 nobody listens on: bound once by us, then closed. */
static uint16_t closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    uint16_t port = fd_port(fd);
    close(fd);
    return port;
}

static void http_cb(struct evhttp_request *req, void *arg)
{
    struct ctx *c = arg;
    c->requests++;
    static const struct {
        enum evhttp_cmd_type cmd;
        const char *name;
    } cmds[] = {{EVHTTP_REQ_GET, "GET"}, {EVHTTP_REQ_HEAD, "HEAD"}, {EVHTTP_REQ_OPTIONS, "OPTIONS"}};
    snprintf(c->method, sizeof(c->method), "?");
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (evhttp_request_get_command(req) == cmds[i].cmd)
            snprintf(c->method, sizeof(c->method), "%s", cmds[i].name);
    snprintf(c->uri, sizeof(c->uri), "%s", evhttp_request_get_uri(req));
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
    snprintf(c->host, sizeof(c->host), "%s", host ? host : "");
    struct evbuffer *body = evbuffer_new();
    evbuffer_add_printf(body, "status %d\n", c->status);
    evhttp_send_reply(req, c->status, c->status == 200 ? "OK" : "Nope", body);
    evbuffer_free(body);
}

static uint16_t start_http(struct ctx *c)
{
    c->http = evhttp_new(c->base);
    assert_non_null(c->http);
    evhttp_set_gencb(c->http, http_cb, c);
    evhttp_set_allowed_methods(c->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
    struct evhttp_bound_socket *s = evhttp_bind_socket_with_handle(c->http, "127.0.0.1", 0);
    assert_non_null(s);
    c->status = 200;
    return fd_port(evhttp_bound_socket_get_fd(s));
}

/* ---- pools --------------------------------------------------------------------------------------- */

static void backend_inet(struct backend_conf *b, const char *name, const char *host, int family, uint16_t port)
{
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", name);
    b->addr.kind = BACKEND_ADDR_INET;
    b->addr.family = family;
    snprintf(b->addr.host, sizeof(b->addr.host), "%s", host);
    b->addr.port = port;
    snprintf(b->addr.text, sizeof(b->addr.text), "%s:%u", host, (unsigned)port);
    b->weight = 1;
}

static void backend_unix(struct backend_conf *b, const char *name, const char *path)
{
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", name);
    b->addr.kind = BACKEND_ADDR_UNIX;
    b->addr.family = AF_UNIX;
    snprintf(b->addr.path, sizeof(b->addr.path), "%s", path);
    snprintf(b->addr.text, sizeof(b->addr.text), "%s", path);
    b->weight = 1;
}

static void port_init(struct ctx *c, size_t n, enum health_type type)
{
    struct port_conf *p = &c->port;
    memset(p, 0, sizeof(*p));
    p->virtual_port = 80;
    p->backends = c->bc;
    p->n_backends = n;
    p->balance = BALANCE_ROUND_ROBIN;
    p->connect_timeout_ms = 1000;
    p->health.type = type;
    p->health.interval_ms = 200;
    p->health.timeout_ms = 190;
    p->health.rise = 1;
    p->health.fall = 2;
    p->health.method = HEALTH_METHOD_GET;
    snprintf(p->health.path, sizeof(p->health.path), "/");
    p->health.expect_status[0] = 200;
    p->health.n_expect_status = 1;
    p->health.tls_verify = true; /* the config's default */
}

static void start_checks(struct ctx *c)
{
    c->pool = backend_pool_new(c->base, "web", &c->port);
    assert_non_null(c->pool);
    c->hc = health_new(c->base, c->pool);
    assert_non_null(c->hc);
}

static struct backend *B(struct ctx *c, size_t i)
{
    return backend_pool_get(c->pool, i);
}

/* Every completed check reached the funnel exactly once. */
static void assert_one_result_per_check(struct ctx *c)
{
    uint64_t results = 0;
    for (size_t i = 0; i < backend_pool_count(c->pool); i++)
        results += B(c, i)->checks_ok + B(c, i)->checks_failed;
    assert_int_equal(results, health_checks_done(c->hc));
}

static bool b0_down(struct ctx *c)
{
    return B(c, 0)->state == BACKEND_DOWN;
}

static bool b0_up_after_checks(struct ctx *c)
{
    return B(c, 0)->state == BACKEND_UP && B(c, 0)->checks_ok >= 2;
}

static bool b1_down(struct ctx *c)
{
    return B(c, 1)->state == BACKEND_DOWN;
}

static bool b1_up(struct ctx *c)
{
    return B(c, 1)->state == BACKEND_UP;
}

/* ---- tcp ----------------------------------------------------------------------------------------- */

static void test_tcp_up_refused_and_back(void **state)
{
    struct ctx *c = *state;
    c->listener = listen_tcp(c, close_accept_cb, 0);
    uint16_t up_port = fd_port(evconnlistener_get_fd(c->listener));
    uint16_t dead_port = closed_port();
    port_init(c, 2, HEALTH_TCP);
    backend_inet(&c->bc[0], "alive", "127.0.0.1", AF_INET, up_port);
    backend_inet(&c->bc[1], "dead", "127.0.0.1", AF_INET, dead_port);
    start_checks(c);

    uint64_t start;
    assert_true(run_until(c, b1_down, BOUND_MS, &start));
    uint64_t down_at = clock_now_ms();
    assert_int_equal(B(c, 1)->last_result, CHECK_CONNECT_REFUSED);
    assert_true(B(c, 1)->checks_failed >= 2); /* fall = 2 */
    assert_int_equal(B(c, 0)->state, BACKEND_UP);
    assert_true(B(c, 0)->checks_ok >= 1);
    assert_int_equal(B(c, 0)->last_change, 0); /* never changed state */
    assert_true(c->accepts >= 1);
    /* two failures: the second does not start before an interval (less at most 5%) after the first */
    assert_not_before(down_at, start, 200 - 200 / 20);

    /* The dead backend comes back when something listens there. */
    struct evconnlistener *revived = listen_tcp(c, close_accept_cb, dead_port);
    assert_true(run_until(c, b1_up, BOUND_MS, NULL));
    assert_int_equal(B(c, 1)->last_result, CHECK_OK);
    evconnlistener_free(revived);
    assert_one_result_per_check(c);
}

/* Fill the accept queue of a listener that never accepts; return its port. */
static uint16_t full_backlog(struct ctx *c)
{
    c->backlog_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(c->backlog_fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(c->backlog_fd, 0), 0);
    sin.sin_port = htons(fd_port(c->backlog_fd));
    for (size_t i = 0; i < 4; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fd, (struct sockaddr *)&sin, sizeof(sin));
        c->fill_fds[c->n_fill++] = fd;
    }
    usleep(50 * 1000);
    return ntohs(sin.sin_port);
}

static bool b0_failed_once(struct ctx *c)
{
    return B(c, 0)->checks_failed >= 1;
}

static void test_tcp_connect_timeout(void **state)
{
    struct ctx *c = *state;
    /* A listener that never accepts, with its accept queue filled by us: the kernel drops further
     * SYNs, so the check's connect neither succeeds nor fails before the deadline. */
    uint16_t port = full_backlog(c);
    port_init(c, 1, HEALTH_TCP);
    c->port.health.timeout_ms = 60;
    backend_inet(&c->bc[0], "stuck", "127.0.0.1", AF_INET, port);
    start_checks(c);
    assert_true(run_until(c, b0_failed_once, BOUND_MS, NULL));
    assert_int_equal(B(c, 0)->last_result, CHECK_CONNECT_TIMEOUT);
    assert_string_equal(B(c, 0)->last_detail, ""); /* our deadline, not the kernel's ETIMEDOUT */
    assert_true(run_until(c, b0_down, BOUND_MS, NULL));
    assert_one_result_per_check(c);
}

static bool unix_settled(struct ctx *c)
{
    return b0_up_after_checks(c) && B(c, 1)->state == BACKEND_DOWN && B(c, 2)->state == BACKEND_DOWN;
}

static void test_unix_tcp(void **state)
{
    struct ctx *c = *state;
    char live[128], missing[128], stale[128];
    snprintf(live, sizeof(live), "%s/live.sock", c->dir);
    snprintf(missing, sizeof(missing), "%s/missing.sock", c->dir);
    snprintf(stale, sizeof(stale), "%s/stale.sock", c->dir);
    c->listener = listen_unix(c, close_accept_cb, live);
    /* a socket file nobody listens on: connect is refused */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sun;
    unix_sockaddr(&sun, stale);
    assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    close(fd);

    port_init(c, 3, HEALTH_TCP);
    backend_unix(&c->bc[0], "live", live);
    backend_unix(&c->bc[1], "missing", missing);
    backend_unix(&c->bc[2], "stale", stale);
    start_checks(c);
    assert_true(run_until(c, unix_settled, BOUND_MS, NULL));
    assert_int_equal(B(c, 0)->state, BACKEND_UP);
    assert_true(B(c, 0)->checks_ok >= 2);
    assert_true(c->accepts >= 2);
    assert_int_equal(B(c, 1)->last_result, CHECK_CONNECT_ERROR);
    assert_non_null(strstr(B(c, 1)->last_detail, "No such file"));
    assert_int_equal(B(c, 2)->state, BACKEND_DOWN);
    assert_int_equal(B(c, 2)->last_result, CHECK_CONNECT_REFUSED);
    assert_one_result_per_check(c);
}

static void test_hostname_tcp(void **state)
{
    struct ctx *c = *state;
    c->listener = listen_tcp(c, close_accept_cb, 0);
    /* "localhost" is a host name (AF_UNSPEC): the check goes through libcurl's resolver, never blocking */
    port_init(c, 2, HEALTH_TCP);
    backend_inet(&c->bc[0], "named", "localhost", AF_UNSPEC, fd_port(evconnlistener_get_fd(c->listener)));
    backend_inet(&c->bc[1], "named-dead", "localhost", AF_UNSPEC, closed_port());
    start_checks(c);
    assert_true(run_until(c, b1_down, BOUND_MS, NULL));
    assert_true(run_until(c, b0_up_after_checks, BOUND_MS, NULL));
    assert_int_equal(B(c, 1)->last_result, CHECK_CONNECT_REFUSED);
    assert_true(c->accepts >= 1);
    assert_one_result_per_check(c);
}

/* ---- http ---------------------------------------------------------------------------------------- */

static bool b0_status_503_down(struct ctx *c)
{
    return B(c, 0)->state == BACKEND_DOWN && B(c, 0)->last_result == CHECK_HTTP_STATUS;
}

static void test_http_status_up_down(void **state)
{
    struct ctx *c = *state;
    uint16_t port = start_http(c);
    port_init(c, 1, HEALTH_HTTP);
    c->port.health.method = HEALTH_METHOD_HEAD;
    snprintf(c->port.health.path, sizeof(c->port.health.path), "/healthz?full=1");
    snprintf(c->port.health.host, sizeof(c->port.health.host), "www.example.test");
    c->port.health.expect_status[1] = 204;
    c->port.health.n_expect_status = 2;
    backend_inet(&c->bc[0], "web1", "127.0.0.1", AF_INET, port);
    start_checks(c);

    assert_true(run_until(c, b0_up_after_checks, BOUND_MS, NULL));
    assert_string_equal(c->method, "HEAD");
    assert_string_equal(c->uri, "/healthz?full=1");
    assert_string_equal(c->host, "www.example.test");
    assert_string_equal(B(c, 0)->last_detail, "HTTP 200");

    c->status = 503;
    assert_true(run_until(c, b0_status_503_down, BOUND_MS, NULL));
    assert_string_equal(B(c, 0)->last_detail, "HTTP 503");

    c->status = 204; /* also expected */
    assert_true(run_until(c, b0_up_after_checks, BOUND_MS, NULL));
    assert_int_equal(B(c, 0)->last_result, CHECK_OK);
    assert_true(c->requests >= 4);
    assert_one_result_per_check(c);
}

static void test_http_methods_and_default_host(void **state)
{
    struct ctx *c = *state;
    uint16_t port = start_http(c);
    port_init(c, 1, HEALTH_HTTP);
    c->port.health.method = HEALTH_METHOD_OPTIONS;
    backend_inet(&c->bc[0], "web1", "127.0.0.1", AF_INET, port);
    start_checks(c);
    assert_true(run_until(c, b0_up_after_checks, BOUND_MS, NULL));
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%u", (unsigned)port);
    assert_string_equal(c->method, "OPTIONS");
    assert_string_equal(c->uri, "/");
    assert_string_equal(c->host, want); /* derived from the backend's address */
}

static bool b0_down_after_2(struct ctx *c)
{
    return B(c, 0)->state == BACKEND_DOWN && B(c, 0)->checks_failed >= 2;
}

/* For b0's checks of a server that accepts and holds: the fewest runs of the 10 ms timer between the
 * server's accept and the check's result. A check that held the loop would leave none. */
static unsigned in_flight_ticks_min;
static uint64_t in_flight_seen_failed;

static bool b0_down_after_2_ticking(struct ctx *c)
{
    if (B(c, 0)->checks_failed != in_flight_seen_failed) {
        in_flight_seen_failed = B(c, 0)->checks_failed;
        /* pred runs in every tick, so this is the first tick after the result */
        unsigned between = c->ticks - c->ticks_at_accept - 1;
        if (between < in_flight_ticks_min)
            in_flight_ticks_min = between;
    }
    return b0_down_after_2(c);
}

static void test_http_read_timeout_never_blocks(void **state)
{
    struct ctx *c = *state;
    c->silent = listen_tcp(c, hold_accept_cb, 0);
    port_init(c, 1, HEALTH_HTTP);
    c->port.health.interval_ms = 1100;
    c->port.health.timeout_ms = 1000;
    backend_inet(&c->bc[0], "silent", "127.0.0.1", AF_INET, fd_port(evconnlistener_get_fd(c->silent)));
    start_checks(c);
    uint64_t start;
    in_flight_ticks_min = UINT_MAX;
    in_flight_seen_failed = 0;
    assert_true(run_until(c, b0_down_after_2_ticking, BOUND_MS, &start));
    uint64_t down_at = clock_now_ms();
    assert_int_equal(B(c, 0)->last_result, CHECK_READ_TIMEOUT);
    assert_string_equal(B(c, 0)->last_detail, ""); /* our deadline, not libcurl's safety net */
    assert_true(c->accepts >= 2); /* connected each time: the timeout is the answer's */
    /* The second check starts not before an interval (less jitter) after the first, and ends not before
     * its deadline. */
    assert_not_before(down_at, start, 1100 - 1100 / 20 + 1000);
    /* The loop ran the 10 ms timer while each check was in flight (between the server's accept and the
     * result): a check holding the loop for its 1000 ms would leave none. */
    print_message("    fewest timer runs during a check: %u\n", in_flight_ticks_min);
    assert_true(in_flight_ticks_min >= 1 && in_flight_ticks_min != UINT_MAX);
    assert_one_result_per_check(c);
}

/* ---- deadlines of single checks ------------------------------------------------------------------ */

struct one_check {
    bool done;
    enum check_result r;
    char detail[128];
    uint64_t end_ms; /* clock_now_ms() at the result */
};

static void one_check_cb(enum check_result r, const char *detail, void *arg)
{
    struct one_check *o = arg;
    assert_false(o->done); /* exactly one completion */
    o->done = true;
    o->r = r;
    snprintf(o->detail, sizeof(o->detail), "%s", detail);
    o->end_ms = clock_now_ms();
}

static struct one_check *pending_check;

static bool one_check_done(struct ctx *c)
{
    (void)c;
    return pending_check->done;
}

static void test_deadline_from_start(void **state)
{
    struct ctx *c = *state;
    char err[128];
    c->silent = listen_tcp(c, hold_accept_cb, 0);
    struct backend_conf silent, stuck;
    backend_inet(&silent, "silent", "127.0.0.1", AF_INET, fd_port(evconnlistener_get_fd(c->silent)));
    backend_inet(&stuck, "stuck", "127.0.0.1", AF_INET, full_backlog(c));
    port_init(c, 1, HEALTH_HTTP);
    c->port.health.timeout_ms = 150;

    /* http: connected, no answer: READ_TIMEOUT from our deadline (detail ""), not from libcurl's safety
     * net 1 s later (its detail is libcurl's message), and not before the deadline on the code's clock. */
    struct check_http_loop *l = check_http_loop_new(c->base, err, sizeof(err));
    assert_non_null(l);
    struct one_check o = {0};
    pending_check = &o;
    uint64_t start = clock_now_ms();
    assert_non_null(check_http_start(l, &silent.addr, &c->port.health, one_check_cb, &o, err, sizeof(err)));
    assert_false(o.done); /* never from inside start */
    assert_true(run_until(c, one_check_done, BOUND_MS, NULL));
    assert_int_equal(o.r, CHECK_READ_TIMEOUT);
    assert_string_equal(o.detail, "");
    assert_not_before(o.end_ms, start, 150);

    /* connect-only through libcurl (the host-name path) to a listener that cannot accept */
    struct one_check o2 = {0};
    pending_check = &o2;
    c->port.health.type = HEALTH_TCP;
    start = clock_now_ms();
    assert_non_null(check_http_start(l, &stuck.addr, &c->port.health, one_check_cb, &o2, err, sizeof(err)));
    assert_true(run_until(c, one_check_done, BOUND_MS, NULL));
    assert_int_equal(o2.r, CHECK_CONNECT_TIMEOUT);
    assert_string_equal(o2.detail, "");
    assert_not_before(o2.end_ms, start, 150);

    /* check_tcp to the same: our deadline (detail ""), not the kernel's ETIMEDOUT minutes later (detail
     * "Connection timed out", and beyond BOUND_MS) */
    struct one_check o3 = {0};
    pending_check = &o3;
    start = clock_now_ms();
    assert_non_null(check_tcp_start(c->base, &stuck.addr, 150, one_check_cb, &o3, err, sizeof(err)));
    assert_false(o3.done);
    assert_true(run_until(c, one_check_done, BOUND_MS, NULL));
    assert_int_equal(o3.r, CHECK_CONNECT_TIMEOUT);
    assert_string_equal(o3.detail, "");
    assert_not_before(o3.end_ms, start, 150);

    /* cancelled checks never call back, and freeing the loop cancels what is running */
    struct one_check o4 = {0}, o5 = {0};
    struct check_tcp *t = check_tcp_start(c->base, &silent.addr, 150, one_check_cb, &o4, err, sizeof(err));
    c->port.health.type = HEALTH_HTTP;
    assert_non_null(check_http_start(l, &silent.addr, &c->port.health, one_check_cb, &o5, err, sizeof(err)));
    check_tcp_cancel(t);
    check_http_loop_free(l);
    run_until(c, NULL, 300, NULL);
    assert_false(o4.done);
    assert_false(o5.done);
    pending_check = NULL;
}

/* Answers every connection with a plain-text HTTP error at once, whatever was sent. */
static void plain_answer_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct ctx *c = arg;
    (void)l;
    (void)sa;
    (void)len;
    static const char answer[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    c->accepts++;
    ssize_t n = write(fd, answer, sizeof(answer) - 1);
    (void)n;
    close(fd);
}

static bool b0_http_error(struct ctx *c)
{
    return B(c, 0)->last_result == CHECK_HTTP_ERROR;
}

static bool b1_read_timeout(struct ctx *c)
{
    return B(c, 1)->last_result == CHECK_READ_TIMEOUT;
}

static void test_https_errors(void **state)
{
    struct ctx *c = *state;
    /* b0: a plain-HTTP server where TLS is expected (handshake error); b1: a server that accepts and never
     * answers, so the TLS handshake stalls after the TCP connect (a read timeout, not a connect timeout).
     * Generous timeouts: the first https check of a checker loads the CA bundle (slow under ASan). */
    c->listener = listen_tcp(c, plain_answer_cb, 0);
    c->silent = listen_tcp(c, hold_accept_cb, 0);
    port_init(c, 2, HEALTH_HTTPS);
    c->port.health.interval_ms = 1500;
    c->port.health.timeout_ms = 1200;
    c->port.health.fall = 1;
    backend_inet(&c->bc[0], "tls", "127.0.0.1", AF_INET, fd_port(evconnlistener_get_fd(c->listener)));
    backend_inet(&c->bc[1], "tls-silent", "127.0.0.1", AF_INET, fd_port(evconnlistener_get_fd(c->silent)));
    start_checks(c);
    assert_true(run_until(c, b0_http_error, 15000, NULL));
    assert_non_null(strstr(B(c, 0)->last_detail, "wrong version number"));
    assert_int_equal(B(c, 0)->state, BACKEND_DOWN);
    assert_true(run_until(c, b1_read_timeout, 15000, NULL));
    assert_int_equal(B(c, 1)->state, BACKEND_DOWN);
    assert_one_result_per_check(c);
}

/* ---- certificates and a TLS server ------------------------------------------------------------- */

static int tls_sni_cb(SSL *ssl, int *alert, void *arg)
{
    struct ctx *c = arg;
    (void)alert;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    snprintf(c->sni, sizeof(c->sni), "%s", name ? name : "");
    return SSL_TLSEXT_ERR_OK;
}

static void cert_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    assert_non_null(ext);
    assert_int_equal(X509_add_ext(x, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

/* Make `out`: a new key and a certificate for `cn`, valid for an hour, issued by `issuer` (self-signed if
 * NULL), written to `file` in c->dir. A CA may sign certificates; any other names `cn` in its
 * subjectAltName, as servers' certificates must. */
static void cert_make(struct ctx *c, struct test_cert *out, const char *cn, bool ca, const struct test_cert *issuer,
                      const char *file)
{
    static long serial;
    out->key = EVP_EC_gen("P-256");
    out->x = X509_new();
    assert_non_null(out->key);
    assert_non_null(out->x);
    X509 *x = out->x;
    X509 *signer = issuer ? issuer->x : x;
    assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
    ASN1_INTEGER_set(X509_get_serialNumber(x), ++serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, out->key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(signer));
    if (ca) {
        cert_add_ext(x, signer, NID_basic_constraints, "critical,CA:TRUE");
        cert_add_ext(x, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        char san[300];
        snprintf(san, sizeof(san), "DNS:%s", cn);
        cert_add_ext(x, signer, NID_subject_alt_name, san);
    }
    assert_true(X509_sign(x, issuer ? issuer->key : out->key, EVP_sha256()) > 0);
    snprintf(out->pem, sizeof(out->pem), "%s/%s", c->dir, file);
    FILE *f = fopen(out->pem, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    assert_int_equal(fclose(f), 0);
}

static void tls_conn_cb(evutil_socket_t fd, short what, void *arg)
{
    struct tls_conn *t = arg;
    struct ctx *c = t->c;
    (void)fd;
    (void)what;
    int r = SSL_accept(t->ssl);
    if (r == 1) {
        char buf[4096];
        r = SSL_read(t->ssl, buf, sizeof(buf));
        if (r > 0) {
            static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            SSL_write(t->ssl, answer, sizeof(answer) - 1);
            c->tls_served++;
            tls_conn_free(t);
            return;
        }
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return;
    c->tls_failed++;
    tls_conn_free(t);
}

static void tls_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct ctx *c = arg;
    (void)l;
    (void)sa;
    (void)len;
    c->accepts++;
    struct tls_conn *t = calloc(1, sizeof(*t));
    t->c = c;
    t->fd = fd;
    t->ssl = SSL_new(c->tls);
    SSL_set_fd(t->ssl, fd);
    SSL_set_accept_state(t->ssl);
    t->ev = event_new(c->base, fd, EV_READ | EV_PERSIST, tls_conn_cb, t);
    event_add(t->ev, NULL);
    t->next = c->tls_conns;
    c->tls_conns = t;
}

/* Serve https on 127.0.0.1 with c->server's certificate (answering 200 to any request); returns the port. */
static uint16_t tls_server_start(struct ctx *c)
{
    c->tls = SSL_CTX_new(TLS_server_method());
    assert_non_null(c->tls);
    assert_int_equal(SSL_CTX_use_certificate(c->tls, c->server.x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(c->tls, c->server.key), 1);
    SSL_CTX_set_tlsext_servername_callback(c->tls, tls_sni_cb);
    SSL_CTX_set_tlsext_servername_arg(c->tls, c);
    c->listener = listen_tcp(c, tls_accept_cb, 0);
    return fd_port(evconnlistener_get_fd(c->listener));
}

/* (Under heavy load the first check may time out while libcurl loads the CA bundle; the next is quick.) */
static bool b0_tls_checked(struct ctx *c)
{
    return B(c, 0)->last_result == CHECK_HTTP_ERROR && c->tls_failed >= 1;
}

/* (checks_ok: last_result starts as CHECK_OK, and the server counts a request before the check ends.) */
static bool b0_tls_ok(struct ctx *c)
{
    return B(c, 0)->checks_ok >= 1 && B(c, 0)->last_result == CHECK_OK;
}

enum ca_choice {
    CA_SYSTEM,      /* no ca_file: the system's CAs */
    CA_OWN,         /* the CA that issued the server's certificate (when it is not self-signed) */
    CA_SERVER_CERT, /* the server's certificate itself */
    CA_UNRELATED,   /* a CA that issued nothing here */
};

struct https_case {
    bool self_signed;  /* the server's certificate; else issued by the test CA */
    enum ca_choice ca; /* health.ca_file */
    bool tls_verify;
    bool named;        /* health.host is TLS_NAME; else the URL, and so the name checked, is 127.0.0.1 */
    bool healthy;      /* expected: up with HTTP 200, or down on a certificate error before any request */
};

/* Start checking one TLS backend with the case's settings. */
static void https_case_start(struct ctx *c, const struct https_case *k)
{
    cert_make(c, &c->ca, "onionfront test CA", true, NULL, "ca.pem");
    cert_make(c, &c->other_ca, "unrelated test CA", true, NULL, "other-ca.pem");
    cert_make(c, &c->server, TLS_NAME, false, k->self_signed ? NULL : &c->ca, "server.pem");
    uint16_t port = tls_server_start(c);
    port_init(c, 1, HEALTH_HTTPS);
    c->port.health.interval_ms = 1500;
    c->port.health.timeout_ms = 1200;
    c->port.health.fall = 1;
    c->port.health.tls_verify = k->tls_verify;
    const char *ca_file[] = {[CA_SYSTEM] = "", [CA_OWN] = c->ca.pem, [CA_SERVER_CERT] = c->server.pem,
                             [CA_UNRELATED] = c->other_ca.pem};
    snprintf(c->port.health.ca_file, sizeof(c->port.health.ca_file), "%s", ca_file[k->ca]);
    if (k->named)
        snprintf(c->port.health.host, sizeof(c->port.health.host), TLS_NAME);
    backend_inet(&c->bc[0], "tls", "127.0.0.1", AF_INET, port);
    start_checks(c);
}

/* Wait for the case's expected verdict. */
static void https_case_verdict(struct ctx *c, const struct https_case *k)
{
    if (k->healthy) {
        assert_true(run_until(c, b0_tls_ok, 15000, NULL));
        assert_int_equal(B(c, 0)->state, BACKEND_UP);
        assert_string_equal(B(c, 0)->last_detail, "HTTP 200");
        assert_true(c->tls_served >= 1);
    } else {
        assert_true(run_until(c, b0_tls_checked, 15000, NULL));
        assert_non_null(strstr(B(c, 0)->last_detail, "certificate"));
        assert_int_equal(B(c, 0)->state, BACKEND_DOWN);
        assert_int_equal(c->tls_served, 0); /* refused before any request was sent */
    }
    assert_one_result_per_check(c);
}

static void run_https_case(struct ctx *c, const struct https_case *k)
{
    https_case_start(c, k);
    https_case_verdict(c, k);
}

static void test_https_verifies_certificate(void **state)
{
    struct ctx *c = *state;
    /* default verification: a self-signed certificate is refused */
    run_https_case(c, &(struct https_case){.self_signed = true, .ca = CA_SYSTEM, .tls_verify = true, .named = true});
    /* the name, not the address, went into SNI (and so into verification) */
    assert_string_equal(c->sni, TLS_NAME);
}

static void test_https_ca_file_own_ca(void **state)
{
    run_https_case(*state, &(struct https_case){.ca = CA_OWN, .tls_verify = true, .named = true, .healthy = true});
}

static void test_https_ca_file_self_signed(void **state)
{
    run_https_case(*state, &(struct https_case){.self_signed = true, .ca = CA_SERVER_CERT, .tls_verify = true,
                                                .named = true, .healthy = true});
}

static void test_https_ca_file_unrelated_ca(void **state)
{
    run_https_case(*state, &(struct https_case){.ca = CA_UNRELATED, .tls_verify = true, .named = true});
}

/* ca_file replaces the CAs, not the name check: the URL names 127.0.0.1, the certificate TLS_NAME. */
static void test_https_ca_file_checks_name(void **state)
{
    run_https_case(*state, &(struct https_case){.ca = CA_OWN, .tls_verify = true, .named = false});
}

/* Send stderr (the log) to the file `path` until stderr_restore; returns the saved descriptor. cmocka
 * reports to stderr too, so check results only after stderr_restore. */
static int stderr_redirect(const char *path)
{
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    return saved;
}

static void stderr_restore(int saved)
{
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
}

/* The lines of the file `path` that contain `needle`. */
static unsigned lines_containing(const char *path, const char *needle)
{
    char line[1024];
    unsigned n = 0;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static bool b0_ok_thrice(struct ctx *c)
{
    return B(c, 0)->checks_ok >= 3 && c->tls_served >= 3;
}

static bool b0_ok_four_times(struct ctx *c)
{
    return B(c, 0)->checks_ok >= 4 && c->tls_served >= 4;
}

/* Set tls_verify as a reload would. */
static void reload_tls_verify(struct ctx *c, bool verify)
{
    char err[128];
    c->port.health.tls_verify = verify;
    assert_int_equal(backend_pool_update(c->pool, &c->port, err, sizeof(err)), 0);
    health_update(c->hc);
}

/* Neither the issuer nor the name is checked; one warning when that is applied, not one per check. */
static void test_https_no_verify(void **state)
{
    struct ctx *c = *state;
    const struct https_case k = {.self_signed = true, .ca = CA_SYSTEM, .tls_verify = false, .healthy = true};
    char log[128];
    snprintf(log, sizeof(log), "%s/log", c->dir);
    int saved = stderr_redirect(log);
    https_case_start(c, &k);
    bool thrice = run_until(c, b0_ok_thrice, 15000, NULL);
    /* reloads: nothing changed (no warning), verification on (none), off again (one); the loop does
     * not run in between, so no check runs with verification on */
    health_update(c->hc);
    reload_tls_verify(c, true);
    reload_tls_verify(c, false);
    bool again = run_until(c, b0_ok_four_times, 15000, NULL);
    stderr_restore(saved);
    assert_true(thrice);
    assert_true(again);
    https_case_verdict(c, &k);
    assert_int_equal(lines_containing(log, "tls_verify is false: certificate checks are off"), 2);
}

static void test_http_over_unix_socket(void **state)
{
    struct ctx *c = *state;
    char path[128], missing[128];
    snprintf(path, sizeof(path), "%s/http.sock", c->dir);
    snprintf(missing, sizeof(missing), "%s/gone.sock", c->dir);
    c->http = evhttp_new(c->base);
    evhttp_set_gencb(c->http, http_cb, c);
    c->status = 200;
    struct sockaddr_un sun;
    unix_sockaddr(&sun, path);
    struct evconnlistener *l = evconnlistener_new_bind(c->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE, 16,
                                                       (struct sockaddr *)&sun, sizeof(sun));
    assert_non_null(l);
    assert_non_null(evhttp_bind_listener(c->http, l)); /* the evhttp owns it now */

    port_init(c, 2, HEALTH_HTTP);
    snprintf(c->port.health.path, sizeof(c->port.health.path), "/status");
    backend_unix(&c->bc[0], "fpm", path);
    backend_unix(&c->bc[1], "gone", missing);
    start_checks(c);
    assert_true(run_until(c, b1_down, BOUND_MS, NULL));
    assert_true(run_until(c, b0_up_after_checks, BOUND_MS, NULL));
    assert_string_equal(c->uri, "/status");
    assert_string_equal(c->host, "localhost");
    assert_int_equal(B(c, 1)->last_result, CHECK_CONNECT_ERROR);
    c->status = 500;
    assert_true(run_until(c, b0_down, BOUND_MS, NULL));
    assert_string_equal(B(c, 0)->last_detail, "HTTP 500");
    assert_one_result_per_check(c);
}

/* ---- lifecycle ----------------------------------------------------------------------------------- */

static void test_none_checks_nothing(void **state)
{
    struct ctx *c = *state;
    port_init(c, 1, HEALTH_NONE);
    backend_inet(&c->bc[0], "x", "127.0.0.1", AF_INET, closed_port());
    start_checks(c);
    run_until(c, NULL, 300, NULL);
    assert_int_equal(health_checks_done(c->hc), 0);
    assert_int_equal(B(c, 0)->state, BACKEND_UP);
}

static bool b0_checked_twice(struct ctx *c)
{
    return B(c, 0)->checks_ok + B(c, 0)->checks_failed >= 2;
}

static bool two_accepted(struct ctx *c)
{
    return c->accepts >= 2;
}

static void test_reload_while_checking(void **state)
{
    struct ctx *c = *state;
    c->silent = listen_tcp(c, hold_accept_cb, 0);
    c->listener = listen_tcp(c, close_accept_cb, 0);
    uint16_t silent = fd_port(evconnlistener_get_fd(c->silent));
    uint16_t alive = fd_port(evconnlistener_get_fd(c->listener));
    port_init(c, 2, HEALTH_HTTP);
    c->port.health.timeout_ms = 5000; /* longer than the whole test: a check of `silent` stays in flight */
    backend_inet(&c->bc[0], "a", "127.0.0.1", AF_INET, silent);
    backend_inet(&c->bc[1], "b", "127.0.0.1", AF_INET, silent);
    start_checks(c);
    assert_true(run_until(c, two_accepted, BOUND_MS, NULL)); /* both checks connected: in flight */
    assert_int_equal(health_checks_done(c->hc), 0);

    /* Remove b mid-check (its check is abandoned: no result ever arrives for it), move a to a listener
     * that closes at once, add c, switch to tcp checks. */
    struct backend_conf next[2];
    backend_inet(&next[0], "a", "127.0.0.1", AF_INET, alive);
    backend_inet(&next[1], "c", "127.0.0.1", AF_INET, alive);
    struct port_conf port = c->port;
    port.backends = next;
    port.health.type = HEALTH_TCP;
    char err[128];
    struct backend *a = B(c, 0);
    assert_int_equal(backend_pool_update(c->pool, &port, err, sizeof(err)), 0);
    health_update(c->hc);
    assert_ptr_equal(B(c, 0), a);
    assert_non_null(B(c, 0)->check_state);
    assert_non_null(B(c, 1)->check_state);
    uint64_t done_before = health_checks_done(c->hc);
    assert_true(run_until(c, b0_checked_twice, BOUND_MS, NULL));
    assert_true(B(c, 1)->checks_ok >= 1);
    assert_int_equal(B(c, 0)->state, BACKEND_UP);
    assert_int_equal(B(c, 0)->last_result, CHECK_OK);
    assert_true(health_checks_done(c->hc) > done_before);

    /* Free with checks in flight: nothing may call back afterwards (ASan would see it). */
    port.health.type = HEALTH_HTTP;
    next[0].addr.port = silent;
    assert_int_equal(backend_pool_update(c->pool, &port, err, sizeof(err)), 0);
    health_update(c->hc);
    run_until(c, NULL, 30, NULL);
    health_free(c->hc);
    c->hc = NULL;
    run_until(c, NULL, 200, NULL);
}

static bool all_checked(struct ctx *c)
{
    return health_checks_done(c->hc) >= MAXB;
}

static void test_many_backends_spread(void **state)
{
    struct ctx *c = *state;
    c->listener = listen_tcp(c, close_accept_cb, 0);
    uint16_t p = fd_port(evconnlistener_get_fd(c->listener));
    port_init(c, MAXB, HEALTH_TCP);
    c->port.health.interval_ms = 60000;
    c->port.health.timeout_ms = 500;
    for (size_t i = 0; i < MAXB; i++) {
        char name[8];
        snprintf(name, sizeof(name), "s%zu", i);
        backend_inet(&c->bc[i], name, "127.0.0.1", AF_INET, p);
    }
    start_checks(c);
    /* First checks start within min(interval / 10, 1 s), each backend once; the next ones not before
     * 57 s, long after BOUND_MS: when all have a result, each has exactly one. */
    assert_true(run_until(c, all_checked, BOUND_MS, NULL));
    assert_int_equal(health_checks_done(c->hc), MAXB);
    for (size_t i = 0; i < MAXB; i++)
        assert_int_equal(B(c, i)->checks_ok, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tcp_up_refused_and_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_connect_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unix_tcp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostname_tcp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_status_up_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_methods_and_default_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_read_timeout_never_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_from_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_verifies_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_ca_file_own_ca, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_ca_file_self_signed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_ca_file_unrelated_ca, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_ca_file_checks_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_no_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_over_unix_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_none_checks_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_while_checking, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_backends_spread, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
