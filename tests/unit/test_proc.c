/* test_proc.c — children on the event loop: output lines, exit status, bounded termination, and that
 * nothing is left running. Uses /bin/sh as the child; the real loop runs until a done flag is set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sidecar/core/proc.h"

struct ctx {
    struct event_base *base;
    struct proc_mgr *mgr;
    char lines[8][128];
    int n_lines;
    int exited;
    int wstatus;
    pid_t pid;
};

static int setup(void **state)
{
    static struct ctx c;
    memset(&c, 0, sizeof(c));
    c.base = event_base_new();
    c.mgr = proc_mgr_new(c.base);
    *state = &c;
    return c.base && c.mgr ? 0 : -1;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    proc_mgr_free(c->mgr);
    event_base_free(c->base);
    return 0;
}

static void line_cb(struct proc *p, const char *line, void *arg)
{
    struct ctx *c = arg;
    (void)p;
    if (c->n_lines < 8)
        snprintf(c->lines[c->n_lines++], sizeof(c->lines[0]), "%s", line);
}

/* line_cb that also ends the loop: the child has got as far as printing. */
static void ready_cb(struct proc *p, const char *line, void *arg)
{
    struct ctx *c = arg;
    line_cb(p, line, arg);
    event_base_loopbreak(c->base);
}

static void exit_cb(struct proc *p, int wstatus, void *arg)
{
    struct ctx *c = arg;
    c->exited = 1;
    c->wstatus = wstatus;
    c->pid = proc_pid(p);
    proc_free(p);
    event_base_loopexit(c->base, NULL);
}

static void run_loop(struct ctx *c, int bound_s)
{
    struct timeval tv = {bound_s, 0};
    event_base_loopexit(c->base, &tv);
    event_base_dispatch(c->base);
}

static void test_output_and_status(void **state)
{
    struct ctx *c = *state;
    char err[256];
    const char *argv[] = {"/bin/sh", "-c", "echo hello; echo oops >&2; printf 'no newline'; exit 3", NULL};
    struct proc *p = proc_spawn(c->mgr, argv, line_cb, exit_cb, c, err, sizeof(err));
    assert_non_null(p);
    run_loop(c, 10);
    assert_true(c->exited);
    assert_true(WIFEXITED(c->wstatus));
    assert_int_equal(WEXITSTATUS(c->wstatus), 3);
    /* The output pipe may be drained just before or after the reap: all three lines must be there. */
    for (int i = 0; i < 20 && c->n_lines < 3; i++)
        event_base_loop(c->base, EVLOOP_NONBLOCK);
    assert_int_equal(c->n_lines, 3);
    assert_string_equal(c->lines[0], "hello");
    assert_string_equal(c->lines[1], "oops");
    assert_string_equal(c->lines[2], "no newline");
}

/* A child's last words must reach line_cb before exit_cb even when the exit is noticed before the loop
 * has read the pipe (here: proc_poll right after the child is gone, the loop never run). */
static void test_last_words_before_exit(void **state)
{
    struct ctx *c = *state;
    char err[256];
    const char *argv[] = {"/bin/sh", "-c", "echo one; echo 'last words'; exit 4", NULL};
    struct proc *p = proc_spawn(c->mgr, argv, line_cb, exit_cb, c, err, sizeof(err));
    assert_non_null(p);
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    /* Wait for the exit without reaping it (WNOWAIT), so that proc_poll does the reaping. */
    assert_int_equal(waitid(P_PID, (id_t)proc_pid(p), &si, WEXITED | WNOWAIT), 0);
    assert_int_equal(c->n_lines, 0);
    assert_true(proc_poll(p)); /* reaped: exit_cb ran (and freed p) */
    assert_true(c->exited);
    assert_int_equal(WEXITSTATUS(c->wstatus), 4);
    assert_int_equal(c->n_lines, 2);
    assert_string_equal(c->lines[0], "one");
    assert_string_equal(c->lines[1], "last words");
}

static void test_spawn_failure_names_program(void **state)
{
    struct ctx *c = *state;
    char err[256] = "";
    const char *argv[] = {"/nonexistent/tor", NULL};
    assert_null(proc_spawn(c->mgr, argv, NULL, NULL, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/tor"));
}

static void test_terminate_escalates_to_kill(void **state)
{
    struct ctx *c = *state;
    char err[256];
    /* Ignores SIGTERM (the disposition survives exec): only the SIGKILL after the grace ends it. */
    const char *argv[] = {"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 60", NULL};
    struct proc *p = proc_spawn(c->mgr, argv, ready_cb, exit_cb, c, err, sizeof(err));
    assert_non_null(p);
    run_loop(c, 10); /* until the trap is set: "ready" (however slow the machine) */
    assert_int_equal(c->n_lines, 1);
    struct timeval grace = {0, 300 * 1000};
    proc_terminate(p, &grace);
    run_loop(c, 10);
    assert_true(c->exited);
    assert_true(WIFSIGNALED(c->wstatus));
    assert_int_equal(WTERMSIG(c->wstatus), SIGKILL);
    assert_int_equal(kill(c->pid, 0), -1); /* gone and reaped */
}

static void test_free_kills_running_child(void **state)
{
    struct ctx *c = *state;
    char err[256];
    const char *argv[] = {"/bin/sleep", "60", NULL};
    struct proc *p = proc_spawn(c->mgr, argv, NULL, exit_cb, c, err, sizeof(err));
    assert_non_null(p);
    pid_t pid = proc_pid(p);
    assert_true(proc_is_running(p));
    proc_free(p);
    assert_int_equal(kill(pid, 0), -1);
    assert_false(c->exited); /* exit_cb is not called from proc_free */
}

/* proc_spawn_as: the child runs as the given user with no other group and no_new_privs, and keeps its
 * output pipe. As root (make test) the switch must work; as anyone else it must fail in the child with
 * a line naming the step, never run the program as the caller. */
static void test_spawn_as_other_user(void **state)
{
    struct ctx *c = *state;
    char err[256];
    const struct proc_user nobody = {65534, 65534};
    const char *argv[] = {"/bin/sh", "-c",
                          "echo \"$(id -u) $(id -g) $(id -G)\"; grep '^NoNewPrivs:' /proc/self/status; exit 5", NULL};
    struct proc *p = proc_spawn_as(c->mgr, argv, &nobody, line_cb, exit_cb, c, err, sizeof(err));
    assert_non_null(p);
    run_loop(c, 10);
    assert_true(c->exited);
    for (int i = 0; i < 20 && c->n_lines < (geteuid() == 0 ? 2 : 1); i++)
        event_base_loop(c->base, EVLOOP_NONBLOCK);
    if (geteuid() == 0) {
        assert_int_equal(WEXITSTATUS(c->wstatus), 5);
        assert_int_equal(c->n_lines, 2);
        assert_string_equal(c->lines[0], "65534 65534 65534");
        assert_string_equal(c->lines[1], "NoNewPrivs:\t1");
    } else {
        assert_int_equal(WEXITSTATUS(c->wstatus), 127);
        assert_int_equal(c->n_lines, 1);
        assert_non_null(strstr(c->lines[0], "cannot run /bin/sh as uid 65534 gid 65534: setgroups failed"));
    }
}

/* A program that does not exist is refused at once, as by proc_spawn. */
static void test_spawn_as_missing_program(void **state)
{
    struct ctx *c = *state;
    char err[256] = "";
    const struct proc_user nobody = {65534, 65534};
    const char *argv[] = {"/nonexistent/onionbalance", NULL};
    assert_null(proc_spawn_as(c->mgr, argv, &nobody, NULL, NULL, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "/nonexistent/onionbalance"));
}

/* The child holds stdin, stdout and stderr and nothing else of ours: a socket and a file opened
 * without close-on-exec (as libevent's bufferevent_socket_connect and libcurl open theirs) stay behind.
 * `ls` runs as the shell's child and lists the shell's descriptors, so its own directory handle is not
 * among them. Through `user` (NULL: posix_spawn) or the fork path of proc_spawn_as. */
static void check_child_fds(struct ctx *c, const struct proc_user *user)
{
    char err[256];
    int file = open("/dev/null", O_RDONLY); /* no O_CLOEXEC, on purpose */
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(file > 2 && sock > 2);
    const char *argv[] = {"/bin/sh", "-c", "ls /proc/$$/fd; exit 0", NULL};
    struct proc *p = proc_spawn_as(c->mgr, argv, user, line_cb, exit_cb, c, err, sizeof(err));
    assert_non_null(p);
    run_loop(c, 10);
    close(file);
    close(sock);
    assert_true(c->exited);
    for (int i = 0; i < 20 && c->n_lines < 3; i++)
        event_base_loop(c->base, EVLOOP_NONBLOCK);
    assert_int_equal(WEXITSTATUS(c->wstatus), 0);
    static const char *const stdio[] = {"0", "1", "2"};
    for (int i = 0; i < c->n_lines; i++)
        if (i >= 3 || strcmp(c->lines[i], stdio[i]) != 0)
            fail_msg("the child has descriptor %s open (only 0, 1 and 2 expected)", c->lines[i]);
    assert_int_equal(c->n_lines, 3);
}

static void test_child_gets_only_stdio(void **state)
{
    check_child_fds(*state, NULL);
}

/* The same through the fork path (a child that switches users; here to our own, which needs root). */
static void test_child_as_user_gets_only_stdio(void **state)
{
    if (geteuid() != 0)
        skip();
    const struct proc_user self = {0, 0};
    check_child_fds(*state, &self);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_output_and_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_words_before_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_failure_names_program, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminate_escalates_to_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_kills_running_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_as_other_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_as_missing_program, setup, teardown),
        cmocka_unit_test_setup_teardown(test_child_gets_only_stdio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_child_as_user_gets_only_stdio, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
