/* test_unixsock.c — unixsock_clear_stale, on real sockets in a temporary directory: a socket file nobody
 * listens on is removed; a listener is left alone, also (above all) one whose backlog is full, which
 * answers a non-blocking connect with EAGAIN; a file that is not a socket is refused and kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sidecar/core/unixsock.h"

#define MAX_CLIENTS 256 /* bound on the connects that fill a backlog of 0 */

struct fixture {
    char dir[64];
    char path[96]; /* shorter than sun_path */
    int listener;
    int clients[MAX_CLIENTS];
    size_t n_clients;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_unixsock.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
    f->listener = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (size_t i = 0; i < f->n_clients; i++)
        close(f->clients[i]);
    if (f->listener >= 0)
        close(f->listener);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A unix stream socket bound at f->path; listening with `backlog` unless it is negative. */
static int bound_socket(struct fixture *f, int backlog)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (backlog >= 0)
        assert_int_equal(listen(fd, backlog), 0);
    return fd;
}

static void test_nothing_there(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    bool removed = true;
    assert_int_equal(unixsock_clear_stale(f->path, &removed, err, sizeof(err)), 0);
    assert_false(removed);
}

static void test_socket_without_listener_is_stale(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    bool removed = false;
    close(bound_socket(f, 5)); /* the process that listened is gone; its file stays */
    assert_true(exists(f->path));
    assert_int_equal(unixsock_clear_stale(f->path, &removed, err, sizeof(err)), 0);
    assert_true(removed);
    assert_false(exists(f->path));
}

static void test_live_listener_is_kept(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    bool removed = true;
    f->listener = bound_socket(f, 5);
    assert_int_equal(unixsock_clear_stale(f->path, &removed, err, sizeof(err)), -1);
    assert_false(removed);
    assert_non_null(strstr(err, f->path));
    assert_non_null(strstr(err, "listening on it"));
    assert_true(exists(f->path));
}

static void test_listener_with_full_backlog_is_kept(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
    f->listener = bound_socket(f, 0); /* never accepts: its backlog fills */
    bool full = false;
    while (!full && f->n_clients < MAX_CLIENTS) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(c >= 0);
        f->clients[f->n_clients++] = c;
        if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            assert_int_equal(errno, EAGAIN); /* the state under test: a live listener says "try again" */
            full = true;
        }
    }
    assert_true(full);
    assert_int_equal(unixsock_clear_stale(f->path, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "listening on it"));
    assert_true(exists(f->path));
}

static void test_non_socket_is_refused(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    bool removed = true;
    int fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(unixsock_clear_stale(f->path, &removed, err, sizeof(err)), -1);
    assert_false(removed);
    assert_non_null(strstr(err, f->path));
    assert_non_null(strstr(err, "is not a socket"));
    assert_true(exists(f->path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_there, setup, teardown),
        cmocka_unit_test_setup_teardown(test_socket_without_listener_is_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_listener_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listener_with_full_backlog_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_socket_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
