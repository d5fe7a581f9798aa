/* test_sdnotify.c — sidecar/ops/sdnotify.c against a real datagram socket, as systemd would listen: a path
 * socket in a temporary directory and an abstract one; the environment parsing table (malformed values,
 * WATCHDOG_PID for another process); STATUS= sanitising; the watchdog timer on the real event loop,
 * including a health predicate that withholds pings. The receiver asks for SCM_CREDENTIALS, so the test
 * also sees that the kernel names this process as the sender (how systemd applies NotifyAccess=main). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sidecar/ops/sdnotify.h"

struct ctx {
    struct event_base *base;
    char dir[64];
    char path[128];     /* the path socket */
    int rx;             /* the receiving socket, -1 if none */
    bool healthy;       /* answer of the health predicate */
    unsigned asked;     /* how often the predicate was asked */
};

static int setup(void **state)
{
    static struct ctx c;
    memset(&c, 0, sizeof(c));
    c.rx = -1;
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    strcpy(c.dir, "/tmp/test_sdnotify.XXXXXX");
    if (!mkdtemp(c.dir))
        return -1;
    snprintf(c.path, sizeof(c.path), "%s/notify", c.dir);
    c.base = event_base_new();
    *state = &c;
    return c.base ? 0 : -1;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    if (c->rx >= 0)
        close(c->rx);
    unlink(c->path);
    rmdir(c->dir);
    event_base_free(c->base);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    return 0;
}

/* Bind a receiving datagram socket at `name` ("/path" or "@abstract"), with SO_PASSCRED. */
static int rx_bind(const char *name)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    assert_true(len < sizeof(a.sun_path));
    memcpy(a.sun_path, name, len);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    if (name[0] == '@') {
        a.sun_path[0] = '\0';
        alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    int one = 1;
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
    return fd;
}

/* Receive one datagram without waiting. Return its length (text NUL-terminated), or -1 if none. Set
 * *pid to the sender's pid from SCM_CREDENTIALS. */
static ssize_t rx_recv(int fd, char *buf, size_t cap, pid_t *pid)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(struct ucred))];
    } cbuf;
    struct iovec iov = {.iov_base = buf, .iov_len = cap - 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    if (pid) {
        *pid = 0;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
            if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS) {
                struct ucred u;
                memcpy(&u, CMSG_DATA(h), sizeof(u));
                *pid = u.pid;
            }
    }
    return n;
}

static void test_not_under_systemd_is_a_noop(void **state)
{
    struct ctx *c = *state;
    char err[256] = "";
    struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
    assert_non_null(n);
    assert_false(sdnotify_enabled(n));
    assert_int_equal(sdnotify_send(n, "READY=1", err, sizeof(err)), 0);
    assert_int_equal(sdnotify_status(n, "READY=1\n", err, sizeof(err), "x %d", 1), 0);
    assert_int_equal(sdnotify_watchdog_usec(n), 0);
    assert_int_equal(sdnotify_watchdog_start(n, NULL, NULL, err, sizeof(err)), 0);
    assert_int_equal(sdnotify_watchdog_pings(n), 0);
    sdnotify_free(n);
    /* NULL is a no-op everywhere. */
    assert_int_equal(sdnotify_send(NULL, "READY=1", err, sizeof(err)), 0);
    assert_false(sdnotify_enabled(NULL));
    sdnotify_free(NULL);
}

static void send_and_expect(struct ctx *c, const char *env_name)
{
    char err[256] = "", buf[2048];
    pid_t pid = 0;
    assert_int_equal(setenv("NOTIFY_SOCKET", env_name, 1), 0);
    struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
    assert_non_null(n);
    assert_true(sdnotify_enabled(n));
    /* Children (tor) must not inherit the socket. */
    assert_null(getenv("NOTIFY_SOCKET"));

    assert_int_equal(sdnotify_send(n, "READY=1", err, sizeof(err)), 0);
    assert_int_equal(rx_recv(c->rx, buf, sizeof(buf), &pid), 7);
    assert_string_equal(buf, "READY=1");
    assert_int_equal(pid, getpid());

    assert_int_equal(sdnotify_status(n, "STOPPING=1\n", err, sizeof(err), "stopping: %s", "tor\nexited"), 0);
    assert_true(rx_recv(c->rx, buf, sizeof(buf), NULL) > 0);
    assert_string_equal(buf, "STOPPING=1\nSTATUS=stopping: tor exited");
    assert_int_equal(rx_recv(c->rx, buf, sizeof(buf), NULL), -1); /* nothing more */
    sdnotify_free(n);
}

static void test_path_socket(void **state)
{
    struct ctx *c = *state;
    c->rx = rx_bind(c->path);
    send_and_expect(c, c->path);
}

static void test_abstract_socket(void **state)
{
    struct ctx *c = *state;
    char name[64];
    snprintf(name, sizeof(name), "@onionfront-test-sdnotify-%ld-%ld", (long)getpid(), (long)random());
    c->rx = rx_bind(name);
    send_and_expect(c, name);
}

static void test_status_is_cut_to_fit(void **state)
{
    struct ctx *c = *state;
    char err[256], buf[4096], big[3000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    c->rx = rx_bind(c->path);
    setenv("NOTIFY_SOCKET", c->path, 1);
    struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
    assert_non_null(n);
    assert_int_equal(sdnotify_status(n, NULL, err, sizeof(err), "%s", big), 0);
    ssize_t len = rx_recv(c->rx, buf, sizeof(buf), NULL);
    assert_int_equal(len, SDNOTIFY_MSG_MAX - 1);
    assert_memory_equal(buf, "STATUS=aaa", 10);
    sdnotify_free(n);
}

/* sdnotify_update: a status line polled every second goes out only on a change, or with a prefix. */
static void test_update_sends_changes(void **state)
{
    struct ctx *c = *state;
    char err[256], buf[2048];
    c->rx = rx_bind(c->path);
    setenv("NOTIFY_SOCKET", c->path, 1);
    struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
    assert_non_null(n);
    sdnotify_update(n, NULL, "running: %d of %d", 1, 2);
    assert_true(rx_recv(c->rx, buf, sizeof(buf), NULL) > 0);
    assert_string_equal(buf, "STATUS=running: 1 of 2");
    sdnotify_update(n, NULL, "running: %d of %d", 1, 2);
    assert_int_equal(rx_recv(c->rx, buf, sizeof(buf), NULL), -1); /* unchanged: nothing */
    sdnotify_update(n, "READY=1\n", "running: %d of %d", 1, 2);
    assert_true(rx_recv(c->rx, buf, sizeof(buf), NULL) > 0);
    assert_string_equal(buf, "READY=1\nSTATUS=running: 1 of 2");
    sdnotify_update(n, NULL, "running: %d of %d", 2, 2);
    assert_true(rx_recv(c->rx, buf, sizeof(buf), NULL) > 0);
    assert_string_equal(buf, "STATUS=running: 2 of 2");
    sdnotify_free(n);
    sdnotify_update(NULL, NULL, "no systemd"); /* a no-op */
}

static void test_send_failure_names_socket(void **state)
{
    struct ctx *c = *state;
    char err[256] = "";
    /* Nobody listens at this path. */
    setenv("NOTIFY_SOCKET", c->path, 1);
    struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
    assert_non_null(n);
    assert_int_equal(sdnotify_send(n, "READY=1", err, sizeof(err)), -1);
    assert_non_null(strstr(err, c->path));
    sdnotify_free(n);
}

/* The environment table: what sdnotify_new accepts, and the watchdog interval it takes. */
static void test_environment_table(void **state)
{
    struct ctx *c = *state;
    char mypid[32], otherpid[32];
    snprintf(mypid, sizeof(mypid), "%ld", (long)getpid());
    snprintf(otherpid, sizeof(otherpid), "%ld", (long)getpid() + 1);
    char toolong[200];
    toolong[0] = '/';
    memset(toolong + 1, 'x', sizeof(toolong) - 2);
    toolong[sizeof(toolong) - 1] = '\0';
    const struct {
        const char *sock, *usec, *pid;
        bool ok;
        uint64_t wd;
        const char *err_has;
    } cases[] = {
        {"@abc", NULL, NULL, true, 0, NULL},
        {"@abc", "30000000", NULL, true, 30000000, NULL},
        {"@abc", "30000000", mypid, true, 30000000, NULL},
        {"@abc", "30000000", otherpid, true, 0, NULL},  /* the watchdog is another process's */
        {NULL, "30000000", NULL, true, 0, NULL},        /* no socket to ping */
        {"", NULL, NULL, true, 0, NULL},                /* empty: as if unset */
        {"relative/sock", NULL, NULL, false, 0, "NOTIFY_SOCKET"},
        {"@", NULL, NULL, false, 0, "NOTIFY_SOCKET"},
        {toolong, NULL, NULL, false, 0, "longer than"},
        {"@abc", "30s", NULL, false, 0, "WATCHDOG_USEC"},
        {"@abc", "", NULL, false, 0, "WATCHDOG_USEC"},
        {"@abc", "99999999999999999999999", NULL, false, 0, "WATCHDOG_USEC"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        if (cases[i].sock)
            setenv("NOTIFY_SOCKET", cases[i].sock, 1);
        if (cases[i].usec)
            setenv("WATCHDOG_USEC", cases[i].usec, 1);
        if (cases[i].pid)
            setenv("WATCHDOG_PID", cases[i].pid, 1);
        struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
        if (cases[i].ok != (n != NULL))
            fail_msg("case %zu: expected %s, got %s (%s)", i, cases[i].ok ? "success" : "failure",
                     n ? "success" : "failure", err);
        if (n) {
            assert_int_equal(sdnotify_watchdog_usec(n), cases[i].wd);
        } else {
            assert_non_null(strstr(err, cases[i].err_has));
        }
        /* Cleared in every case. */
        assert_null(getenv("NOTIFY_SOCKET"));
        assert_null(getenv("WATCHDOG_USEC"));
        assert_null(getenv("WATCHDOG_PID"));
        sdnotify_free(n);
    }
}

static bool health_cb(void *arg)
{
    struct ctx *c = arg;
    c->asked++;
    return c->healthy;
}

static unsigned drain_pings(int fd)
{
    char buf[256];
    unsigned pings = 0;
    while (rx_recv(fd, buf, sizeof(buf), NULL) >= 0) {
        assert_string_equal(buf, "WATCHDOG=1");
        pings++;
    }
    return pings;
}

static void run_loop_ms(struct event_base *base, long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static void test_watchdog_pings_at_half_interval(void **state)
{
    struct ctx *c = *state;
    char err[256] = "";
    c->rx = rx_bind(c->path);
    setenv("NOTIFY_SOCKET", c->path, 1);
    setenv("WATCHDOG_USEC", "200000", 1); /* 0.2 s: a ping every 0.1 s */
    struct sdnotify *n = sdnotify_new(c->base, err, sizeof(err));
    assert_non_null(n);
    assert_int_equal(sdnotify_watchdog_usec(n), 200000);
    c->healthy = true;
    /* The end of the run is a timer armed before the watchdog's, so on the loop's own clock it is due
     * before the watchdog's 6th tick (at 0.6 s): libevent runs timers in the order of their deadlines, so
     * however slow the machine, at most 5 pings come first (fewer if the machine is slow: printed only). */
    struct timeval end = {0, 550000};
    event_base_loopexit(c->base, &end);
    assert_int_equal(sdnotify_watchdog_start(n, health_cb, c, err, sizeof(err)), 0);
    assert_int_equal(drain_pings(c->rx), 1); /* one at once */
    event_base_dispatch(c->base);
    unsigned pings = drain_pings(c->rx);
    print_message("    %u pings in 0.55 s (5 on an idle machine)\n", pings);
    assert_true(pings <= 5);
    assert_int_equal(sdnotify_watchdog_pings(n), 1 + pings);
    /* and they keep coming */
    for (int i = 0; i < 50 && pings < 2; i++) {
        run_loop_ms(c->base, 100);
        pings += drain_pings(c->rx);
    }
    assert_true(pings >= 2);
    assert_int_equal(sdnotify_watchdog_pings(n), 1 + pings);

    /* Unhealthy: the predicate is asked, and no ping goes out. */
    c->healthy = false;
    unsigned asked = c->asked;
    run_loop_ms(c->base, 350);
    assert_true(c->asked > asked);
    assert_int_equal(drain_pings(c->rx), 0);

    /* Healthy again: pings resume. */
    c->healthy = true;
    run_loop_ms(c->base, 250);
    assert_true(drain_pings(c->rx) >= 1);
    sdnotify_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_not_under_systemd_is_a_noop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abstract_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_is_cut_to_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_sends_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_failure_names_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_environment_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_pings_at_half_interval, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
