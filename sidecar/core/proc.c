/* proc.c — child processes on the event loop (see proc.h). */
#include "sidecar/core/proc.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sidecar/core/fdbudget.h"
#include "sidecar/core/log.h"

extern char **environ;

#define PROC_LAST_WORDS_READS 16 /* at most 16 x 64 KiB read at exit */

struct proc {
    struct proc_mgr *mgr;
    struct proc *next;
    pid_t pid;
    bool running;
    struct bufferevent *out;  /* read end of the child's stdout/stderr pipe */
    struct event *kill_ev;    /* SIGKILL after the grace period of proc_terminate */
    proc_line_cb line_cb;
    proc_exit_cb exit_cb;
    void *arg;
};

struct proc_mgr {
    struct event_base *base;
    struct event *sigchld_ev;
    struct proc *children;
};

static void proc_unlink(struct proc *p)
{
    for (struct proc **pp = &p->mgr->children; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            return;
        }
    }
}

static void proc_flush_lines(struct proc *p, bool eof)
{
    if (!p->out)
        return;
    struct evbuffer *in = bufferevent_get_input(p->out);
    char *line;
    size_t n;
    while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF)) != NULL) {
        if (p->line_cb)
            p->line_cb(p, line, p->arg);
        free(line);
    }
    /* A line longer than 64 KiB, or a last line without newline at EOF: deliver what we have. */
    size_t left = evbuffer_get_length(in);
    if (left > 65536 || (eof && left > 0)) {
        line = malloc(left + 1);
        if (line) {
            evbuffer_remove(in, line, left);
            line[left] = '\0';
            if (p->line_cb)
                p->line_cb(p, line, p->arg);
            free(line);
        } else {
            evbuffer_drain(in, left);
        }
    }
}

static void proc_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    proc_flush_lines(arg, false);
}

static void proc_out_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct proc *p = arg;
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        proc_flush_lines(p, true);
        bufferevent_free(p->out);
        p->out = NULL;
    }
}

static void proc_reaped(struct proc *p, int wstatus)
{
    p->running = false;
    if (p->kill_ev)
        event_del(p->kill_ev);
    if (p->out) {
        /* The exit can be noticed before the loop has read the pipe: read what the child wrote before it
         * died straight from the fd, so its last words (tor's [err] line, say) reach the log before the
         * exit callback, which usually frees p. Non-blocking, so a grandchild still holding the pipe
         * cannot stall us; bounded, so one still writing cannot keep us here. */
        struct evbuffer *in = bufferevent_get_input(p->out);
        evutil_socket_t fd = bufferevent_getfd(p->out);
        /* A socket bufferevent keeps its input's end frozen except while it reads itself; do the same. */
        evbuffer_unfreeze(in, 0);
        for (int i = 0; i < PROC_LAST_WORDS_READS && evbuffer_read(in, fd, 65536) > 0; i++)
            ;
        evbuffer_freeze(in, 0);
        proc_flush_lines(p, true);
    }
    if (p->exit_cb)
        p->exit_cb(p, wstatus, p->arg);
}

static void proc_sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
    struct proc_mgr *m = arg;
    (void)sig;
    (void)what;
    /* Reap only our own children; restart the scan after each callback since it may free procs. */
    bool again = true;
    while (again) {
        again = false;
        for (struct proc *p = m->children; p; p = p->next) {
            if (!p->running)
                continue;
            int wstatus;
            pid_t r = waitpid(p->pid, &wstatus, WNOHANG);
            if (r == p->pid) {
                proc_reaped(p, wstatus);
                again = true;
                break;
            }
        }
    }
}

struct proc_mgr *proc_mgr_new(struct event_base *base)
{
    struct proc_mgr *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->base = base;
    m->sigchld_ev = evsignal_new(base, SIGCHLD, proc_sigchld_cb, m);
    if (!m->sigchld_ev || event_add(m->sigchld_ev, NULL) < 0) {
        if (m->sigchld_ev)
            event_free(m->sigchld_ev);
        free(m);
        return NULL;
    }
    return m;
}

void proc_mgr_free(struct proc_mgr *m)
{
    if (!m)
        return;
    while (m->children)
        proc_free(m->children);
    event_free(m->sigchld_ev);
    free(m);
}

int proc_spawn_fd(const char *const argv[], int out_fd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    /* After the dup2s: nothing of ours above stderr reaches the child (proc_child_close_fds). */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    /* The child must not inherit our blocked/handled signal state (libevent's handlers are reset on
     * exec, but a blocked mask would be inherited). */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(pid, argv[0], &fa, &attr, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc;
}

/* In the forked child, after stdin/stdout/stderr are in place: close every other descriptor, so a
 * socket or file opened without O_CLOEXEC (by us or a library) never outlives us in tor. glibc's
 * closefrom is close_range(3, ~0U, 0), or where the kernel lacks it a walk of /proc/self/fd. No child
 * needs another descriptor; one that did would have to be moved below 3 before this. */
static void proc_child_close_fds(void)
{
    closefrom(3);
}

/* Append `s` to the child's message in `buf` (async-signal-safe: no stdio after fork). */
static size_t proc_child_append(char *buf, size_t len, size_t cap, const char *s)
{
    while (*s && len + 1 < cap)
        buf[len++] = *s++;
    buf[len] = '\0';
    return len;
}

static size_t proc_child_append_num(char *buf, size_t len, size_t cap, unsigned long n)
{
    char digits[24];
    size_t i = sizeof(digits) - 1;
    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + n % 10);
        n /= 10;
    } while (n && i > 0);
    return proc_child_append(buf, len, cap, digits + i);
}

/* In the forked child: say which step failed on stdout (the parent's pipe), then exit 127. */
static _Noreturn void proc_child_fail(const char *argv0, const struct proc_user *u, const char *step, int e)
{
    char buf[512];
    size_t n = proc_child_append(buf, 0, sizeof(buf), "onionfront: cannot run ");
    n = proc_child_append(buf, n, sizeof(buf), argv0);
    n = proc_child_append(buf, n, sizeof(buf), " as uid ");
    n = proc_child_append_num(buf, n, sizeof(buf), (unsigned long)u->uid);
    n = proc_child_append(buf, n, sizeof(buf), " gid ");
    n = proc_child_append_num(buf, n, sizeof(buf), (unsigned long)u->gid);
    n = proc_child_append(buf, n, sizeof(buf), ": ");
    n = proc_child_append(buf, n, sizeof(buf), step);
    n = proc_child_append(buf, n, sizeof(buf), " failed (errno ");
    n = proc_child_append_num(buf, n, sizeof(buf), (unsigned long)e);
    n = proc_child_append(buf, n, sizeof(buf), ")\n");
    ssize_t w = write(1, buf, n);
    (void)w;
    _exit(127);
}

/* proc_spawn_fd for a child that runs as `u`: posix_spawn cannot change users, so fork, switch in the
 * child (groups first: after setresuid the child could not change them any more), then exec. All
 * signals are blocked around the fork so that none reaches libevent's handlers in the child before it
 * has reset them to their defaults. Return 0 with *pid set, or an errno value. */
static int proc_spawn_fd_as(const char *const argv[], int out_fd, const struct proc_user *u, pid_t *pid)
{
    if (access(argv[0], X_OK) < 0)
        return errno; /* as posix_spawn would report it, before any child exists */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    pid_t child = fork();
    if (child == 0) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        for (int sig = 1; sig < NSIG; sig++)
            sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP and unused numbers */
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
            proc_child_fail(argv[0], u, "redirecting stdin/stdout/stderr", errno);
        proc_child_close_fds();
        if (setgroups(0, NULL) < 0)
            proc_child_fail(argv[0], u, "setgroups", errno);
        if (setresgid(u->gid, u->gid, u->gid) < 0)
            proc_child_fail(argv[0], u, "setresgid", errno);
        if (setresuid(u->uid, u->uid, u->uid) < 0)
            proc_child_fail(argv[0], u, "setresuid", errno);
        if (u->uid != 0 && setuid(0) == 0)
            proc_child_fail(argv[0], u, "dropping root for good", EPERM);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            proc_child_fail(argv[0], u, "prctl(PR_SET_NO_NEW_PRIVS)", errno);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(argv[0], (char *const *)argv, environ);
        proc_child_fail(argv[0], u, "exec", errno);
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (child < 0)
        return e;
    *pid = child;
    return 0;
}

struct proc *proc_spawn(struct proc_mgr *m, const char *const argv[], proc_line_cb line_cb,
                        proc_exit_cb exit_cb, void *arg, char *err, size_t errlen)
{
    return proc_spawn_as(m, argv, NULL, line_cb, exit_cb, arg, err, errlen);
}

struct proc *proc_spawn_as(struct proc_mgr *m, const char *const argv[], const struct proc_user *user,
                           proc_line_cb line_cb, proc_exit_cb exit_cb, void *arg, char *err, size_t errlen)
{
    int fds[2] = {-1, -1};
    struct proc *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "spawn %s: out of memory", argv[0]);
        return NULL;
    }
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "spawn %s: pipe: %s", argv[0], strerror(errno));
        free(p);
        return NULL;
    }
    int rc = user ? proc_spawn_fd_as(argv, fds[1], user, &p->pid) : proc_spawn_fd(argv, fds[1], &p->pid);
    close(fds[1]);
    if (rc != 0) {
        snprintf(err, errlen, "spawn %s: %s", argv[0], strerror(rc));
        close(fds[0]);
        free(p);
        return NULL;
    }
    p->mgr = m;
    p->running = true;
    p->line_cb = line_cb;
    p->exit_cb = exit_cb;
    p->arg = arg;
    evutil_make_socket_nonblocking(fds[0]);
    p->out = bufferevent_socket_new(m->base, fds[0], BEV_OPT_CLOSE_ON_FREE);
    if (p->out) {
        bufferevent_setcb(p->out, proc_read_cb, NULL, proc_out_event_cb, p);
        bufferevent_enable(p->out, EV_READ);
    } else {
        close(fds[0]);
    }
    p->next = m->children;
    m->children = p;
    return p;
}

pid_t proc_pid(const struct proc *p)
{
    return p->pid;
}

bool proc_is_running(const struct proc *p)
{
    return p->running;
}

int proc_signal(struct proc *p, int sig)
{
    if (!p->running)
        return -1;
    return kill(p->pid, sig);
}

static void proc_kill_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proc *p = arg;
    (void)fd;
    (void)what;
    if (p->running) {
        kill(p->pid, SIGKILL);
        kill(p->pid, SIGCONT);
    }
}

void proc_terminate(struct proc *p, const struct timeval *grace)
{
    if (!p->running)
        return;
    kill(p->pid, SIGTERM);
    kill(p->pid, SIGCONT); /* a stopped (SIGSTOP, hung) child would keep SIGTERM pending forever */
    if (!p->kill_ev)
        p->kill_ev = evtimer_new(p->mgr->base, proc_kill_cb, p);
    if (p->kill_ev)
        evtimer_add(p->kill_ev, grace);
}

void proc_kill(struct proc *p)
{
    if (!p->running)
        return;
    kill(p->pid, SIGKILL);
    kill(p->pid, SIGCONT);
}

bool proc_poll(struct proc *p)
{
    if (!p->running)
        return true;
    int wstatus;
    pid_t r = waitpid(p->pid, &wstatus, WNOHANG);
    if (r != p->pid)
        return false;
    proc_reaped(p, wstatus);
    return true;
}

void proc_free(struct proc *p)
{
    if (!p)
        return;
    if (p->running) {
        kill(p->pid, SIGKILL);
        kill(p->pid, SIGCONT);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        p->running = false;
    }
    proc_unlink(p);
    if (p->kill_ev)
        event_free(p->kill_ev);
    if (p->out)
        bufferevent_free(p->out);
    free(p);
}

int proc_protect_secrets(void)
{
    if (prctl(PR_SET_DUMPABLE, 0) < 0)
        return -1;
    struct rlimit core;
    if (getrlimit(RLIMIT_CORE, &core) < 0)
        return -1;
    core.rlim_cur = 0;
    return setrlimit(RLIMIT_CORE, &core);
}

void proc_prepare_daemon(void)
{
    /* Keys pass through this process's memory. */
    if (proc_protect_secrets() < 0)
        log_warn("onionfront: keeping core dumps and ptrace away from its keys (prctl, setrlimit)");
    signal(SIGPIPE, SIG_IGN);
    /* A blocked mask survives exec: a parent that left SIGTERM or SIGHUP blocked would make the operator's
     * stop and reload wait forever, SIGCHLD blocked would leave tor's exit unreaped. */
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, SIGCHLD);
    sigaddset(&ours, SIGTERM);
    sigaddset(&ours, SIGINT);
    sigaddset(&ours, SIGHUP);
    sigprocmask(SIG_UNBLOCK, &ours, NULL);
}

void proc_raise_fd_limit(void)
{
    char err[256];
    rlim_t was, now;
    if (fdbudget_raise_limit(&was, &now, err, sizeof(err)) < 0)
        log_notice("onionfront: %s", err);
    else if (now != was)
        log_info("onionfront: file descriptor limit raised from %llu to %llu", (unsigned long long)was,
                 (unsigned long long)now);
}
