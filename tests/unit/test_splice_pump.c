/* test_splice_pump.c — sidecar/datapath/splice_pump.c on a real event loop with unix socketpairs: two pumps
 * (a -> b and b -> a) between test peers that send seeded pseudo-random data and hash what arrives
 * (tests/fake/hashpeer). Checked: byte-exact transfers both ways at once (SHA-256; 0, 1, 64 KiB - 1,
 * 64 KiB, 64 KiB + 1 and 50 MB), half-close in each direction while the other goes on, a slow reader
 * on either side (the pipe is the only buffer, and the pump wakes up a bounded number of times per read
 * of the reader: no busy loop), a reset mid-transfer, and a refusal (a source splice cannot read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/datapath/splice_pump.h"
#include "tests/fake/hashpeer.h"

struct dir { /* one pump and what its callbacks saw */
    struct splice_pump *pump;
    int dst;
    size_t moved;
    bool done, failed, at_source;
    int err;
};

struct ctx {
    struct event_base *base;
    int a, pa, pb, b; /* a <-> pa (pumps) pb <-> b */
    struct dir up, down; /* up: pa -> pb, down: pb -> pa */
    size_t max_pending;
};

static void moved_cb(size_t n, void *arg)
{
    ((struct dir *)arg)->moved += n;
}

static void done_cb(void *arg)
{
    struct dir *d = arg;
    d->done = true;
    shutdown(d->dst, SHUT_WR); /* what the proxy does: pass the end on */
}

static void failed_cb(int err, bool at_source, void *arg)
{
    struct dir *d = arg;
    d->failed = true;
    d->err = err;
    d->at_source = at_source;
}

static const struct splice_pump_cbs cbs = {moved_cb, done_cb, failed_cb};

static int setup(void **state)
{
    static struct ctx c;
    int s1[2], s2[2];
    memset(&c, 0, sizeof(c));
    if (!splice_pump_supported())
        return -1; /* Linux with splice: the module's reason to exist */
    c.base = event_base_new();
    if (!c.base || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s1) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s2) < 0)
        return -1;
    c.a = s1[0], c.pa = s1[1], c.pb = s2[0], c.b = s2[1];
    c.up.dst = c.pb;
    c.down.dst = c.pa;
    c.up.pump = splice_pump_new(c.base, c.pa, c.pb, &cbs, &c.up);
    c.down.pump = splice_pump_new(c.base, c.pb, c.pa, &cbs, &c.down);
    if (!c.up.pump || !c.down.pump || splice_pump_start(c.up.pump) < 0 || splice_pump_start(c.down.pump) < 0)
        return -1;
    *state = &c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    splice_pump_free(c->up.pump);
    splice_pump_free(c->down.pump);
    close(c->pa);
    close(c->pb);
    if (c->a >= 0)
        close(c->a);
    if (c->b >= 0)
        close(c->b);
    event_base_free(c->base);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Run the loop until pred(arg) or `seconds` pass, noting the most the pipes held. */
static bool run_until(struct ctx *c, bool (*pred)(void *), void *arg, double seconds)
{
    double end = now_s() + seconds;
    struct timeval tick = {0, 2000};
    while (!pred(arg) && now_s() < end) {
        event_base_loopexit(c->base, &tick);
        event_base_loop(c->base, EVLOOP_ONCE);
        size_t p = splice_pump_pending(c->up.pump) + splice_pump_pending(c->down.pump);
        if (p > c->max_pending)
            c->max_pending = p;
    }
    return pred(arg);
}

struct pair {
    struct hashpeer *pa, *pb;
};

static bool both_got_eof(void *arg)
{
    struct pair *p = arg;
    return hashpeer_got_eof(p->pa) && hashpeer_got_eof(p->pb);
}

/* a sends `up` bytes, b sends `down`, at the same time; both arrive exactly, and both ends pass. */
static void transfer(struct ctx *c, size_t up, size_t down, double seconds)
{
    struct pair p = {hashpeer_new(c->base, c->a, up, 11), hashpeer_new(c->base, c->b, down, 22)};
    c->a = c->b = -1; /* the peers own them now */
    assert_true(run_until(c, both_got_eof, &p, seconds));
    assert_int_equal(hashpeer_check(p.pb, up, 11), 0);
    assert_int_equal(hashpeer_check(p.pa, down, 22), 0);
    assert_true(c->up.done && c->down.done);
    assert_false(c->up.failed || c->down.failed);
    assert_int_equal(c->up.moved, up);
    assert_int_equal(c->down.moved, down);
    hashpeer_free(p.pa);
    hashpeer_free(p.pb);
}

static const size_t sizes[] = {0, 1, 65535, 65536, 65537};

static void test_exact_sizes(void **state)
{
    struct ctx *c = *state;
    static size_t round;
    /* One pair of sizes per set-up; the table runs through all of them (see main). */
    size_t i = round++ % 5;
    transfer(c, sizes[i], sizes[(i + 2) % 5], 20);
}

static void test_exact_50mb(void **state)
{
    transfer(*state, 50u << 20, 50u << 20, 120);
}

struct hc { /* what a raw socket end has read, up to its EOF */
    int fd;
    const char *want;
    char buf[64];
    size_t got;
    bool eof;
};

static bool hc_read(void *arg)
{
    struct hc *h = arg;
    for (ssize_t n; !h->eof && (n = read(h->fd, h->buf + h->got, sizeof(h->buf) - h->got)) >= 0;) {
        h->got += (size_t)n;
        h->eof = n == 0;
    }
    return h->eof;
}

static void hc_check(struct hc *h)
{
    assert_int_equal(h->got, strlen(h->want));
    assert_memory_equal(h->buf, h->want, h->got);
}

/* `first` says something and half-closes; `second` gets it with the EOF, and only then answers, which
 * still arrives, followed by its own EOF. */
static void half_close(struct ctx *c, int first, int second)
{
    assert_int_equal(write(first, "ping", 4), 4);
    shutdown(first, SHUT_WR);
    struct hc h1 = {.fd = second, .want = "ping"};
    assert_true(run_until(c, hc_read, &h1, 10));
    hc_check(&h1);
    assert_false(c->up.done && c->down.done); /* one direction has ended, the other goes on */
    assert_int_equal(write(second, "pong!", 5), 5);
    shutdown(second, SHUT_WR);
    struct hc h2 = {.fd = first, .want = "pong!"};
    assert_true(run_until(c, hc_read, &h2, 10));
    hc_check(&h2);
    assert_true(c->up.done && c->down.done);
}

static void test_half_close_from_a(void **state)
{
    struct ctx *c = *state;
    half_close(c, c->a, c->b);
}

static void test_half_close_from_b(void **state)
{
    struct ctx *c = *state;
    half_close(c, c->b, c->a);
}

/* The receiving peer reads 16 KiB every 2 ms: the pipe never holds more than one splice's worth, and
 * the sending pump wakes up a bounded number of times per read (a pump that spun while the pipe is
 * full would wake up thousands of times per read). */
static void slow_reader(struct ctx *c, bool slow_b)
{
    size_t n = 4u << 20;
    struct pair p = {hashpeer_new(c->base, c->a, slow_b ? n : 0, 11), hashpeer_new(c->base, c->b, slow_b ? 0 : n, 22)};
    c->a = c->b = -1;
    struct hashpeer *reader = slow_b ? p.pb : p.pa;
    struct dir *d = slow_b ? &c->up : &c->down;
    hashpeer_set_slow(reader, 16 * 1024, 2);
    assert_true(run_until(c, both_got_eof, &p, 60));
    assert_int_equal(hashpeer_check(reader, n, slow_b ? 11 : 22), 0);
    unsigned long wakeups = splice_pump_wakeups(d->pump), reads = hashpeer_reads(reader);
    print_message("    %s reader: %lu reads, pump woke %lu times, pipe held at most %zu bytes\n", slow_b ? "b" : "a",
                  reads, wakeups, c->max_pending);
    assert_true(c->max_pending <= 64 * 1024);
    assert_true(wakeups <= 3 * reads + 64);
    hashpeer_free(p.pa);
    hashpeer_free(p.pb);
}

static void test_slow_reader_b(void **state)
{
    slow_reader(*state, true);
}

static void test_slow_reader_a(void **state)
{
    slow_reader(*state, false);
}

static bool any_failed(void *arg)
{
    struct ctx *c = arg;
    return c->up.failed || c->down.failed;
}

/* b reads a little, then resets: a pump reports it (reading b's side or writing to it), and stops. */
static void test_reset_mid_transfer(void **state)
{
    struct ctx *c = *state;
    struct hashpeer *pa = hashpeer_new(c->base, c->a, 20u << 20, 11);
    c->a = -1;
    char buf[4096];
    size_t got = 0;
    while (got < 100000) {
        event_base_loop(c->base, EVLOOP_NONBLOCK);
        ssize_t k = read(c->b, buf, sizeof(buf));
        if (k > 0)
            got += (size_t)k;
    }
    struct linger lg = {1, 0};
    setsockopt(c->b, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(c->b);
    c->b = -1;
    assert_true(run_until(c, any_failed, c, 10));
    struct dir *d = c->up.failed ? &c->up : &c->down;
    print_message("    %s pump: %s at the %s\n", d == &c->up ? "a->b" : "b->a", strerror(d->err),
                  d->at_source ? "source" : "destination");
    assert_true(d->err == EPIPE || d->err == ECONNRESET);
    assert_true(d == &c->up ? !d->at_source : d->at_source); /* both: the side of b */
    assert_false(splice_pump_is_refusal(d->err));
    assert_false(c->up.done);
    hashpeer_free(pa);
}

/* splice cannot read an eventfd: the pump reports a refusal at the source, with nothing lost. */
static void test_refusal(void **state)
{
    struct ctx *c = *state;
    int efd = eventfd(1, EFD_NONBLOCK); /* readable at once */
    assert_true(efd >= 0);
    struct dir d = {.dst = c->pb};
    d.pump = splice_pump_new(c->base, efd, c->pb, &cbs, &d);
    assert_non_null(d.pump);
    assert_int_equal(splice_pump_start(d.pump), 0);
    for (int i = 0; i < 100 && !d.failed; i++)
        event_base_loop(c->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_true(d.failed);
    assert_true(d.at_source);
    assert_true(splice_pump_is_refusal(d.err));
    struct evbuffer *out = evbuffer_new();
    assert_int_equal(splice_pump_take(d.pump, out), 0);
    assert_int_equal(evbuffer_get_length(out), 0);
    evbuffer_free(out);
    splice_pump_free(d.pump);
    close(efd);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemon does (proc.c) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exact_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_50mb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_from_a, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_from_b, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_reader_b, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_reader_a, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_mid_transfer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
