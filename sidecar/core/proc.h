/* proc.h — child processes on the event loop: spawn with output relayed line by line, one SIGCHLD
 * handler for all children, reaping only our own PIDs (never waitpid(-1)), bounded termination
 * (SIGTERM, then SIGKILL after a grace period; stopped children are continued so they can act on it),
 * and an immediate kill that never blocks. Only proc_free() of a running child waits (for its reap).
 *
 * Owns the children it spawned and the SIGCHLD event. It does not decide when to restart anything:
 * that is the caller's job in its exit callback. */
#ifndef ONIONFRONT_PROC_H
#define ONIONFRONT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/time.h>
#include <sys/types.h>

struct event_base;
struct proc_mgr;
struct proc;

/* Who a child runs as when onionfront (root) starts it as another user: the child drops its
 * supplementary groups (setgroups to `gid` alone), then sets its group and user ids (real, effective and
 * saved) to `gid` and `uid` before exec, and exits with status 127 after writing one line naming the
 * step if any of that fails. It also sets no_new_privs (a setuid binary cannot give it root back). */
struct proc_user {
    uid_t uid;
    gid_t gid;
};

/* Called with each line the child writes to stdout or stderr (without the newline). */
typedef void (*proc_line_cb)(struct proc *p, const char *line, void *arg);
/* Called once when the child has been reaped; `wstatus` as from waitpid(). The proc stays valid until
 * proc_free(). */
typedef void (*proc_exit_cb)(struct proc *p, int wstatus, void *arg);

/* Keep this process's memory to itself, for any process that holds secret keys (the daemon, the
 * commands that sign with a service's key): not dumpable (no core dump, no ptrace or /proc/PID/mem by
 * other processes of the same user) and a core size limit of 0 (the soft limit; the hard one stays, so
 * a child may raise it again). Return 0, or -1 with errno set. */
int proc_protect_secrets(void);

/* Set up the daemon's process before anything else: proc_protect_secrets (a failure is logged), SIGPIPE
 * ignored, and SIGCHLD, SIGTERM, SIGINT and
 * SIGHUP unblocked (a mask a parent left blocked survives exec). */
void proc_prepare_daemon(void);

/* Raise RLIMIT_NOFILE's soft limit to its hard limit (fdbudget.h: the descriptor budget is taken from
 * it); logs the change, or why not. After the log is configured. */
void proc_raise_fd_limit(void);

struct proc_mgr *proc_mgr_new(struct event_base *base);
/* Free the manager. Children still running are killed (SIGKILL) and reaped. NULL is a no-op. */
void proc_mgr_free(struct proc_mgr *m);

/* Every spawn below gives the child exactly three descriptors: stdin, stdout and stderr. Whatever else
 * onionfront holds (backend connections, libcurl's sockets, listeners), close-on-exec or not, is closed
 * in the child before exec, so a tor started during a roll never holds a connection open. */

/* Spawn argv[0] (an absolute path) with stdin from /dev/null and stdout+stderr to a pipe read on the
 * loop. Return the new proc, or NULL with a message in err. */
struct proc *proc_spawn(struct proc_mgr *m, const char *const argv[], proc_line_cb line_cb,
                        proc_exit_cb exit_cb, void *arg, char *err, size_t errlen);

/* proc_spawn, the child running as `user` (struct proc_user; NULL: as onionfront, like proc_spawn). For
 * a program that cannot drop privileges itself (Onionbalance); tor does it with its User option. A
 * failure to switch users shows as the child's line and its exit status 127, not here. */
struct proc *proc_spawn_as(struct proc_mgr *m, const char *const argv[], const struct proc_user *user,
                           proc_line_cb line_cb, proc_exit_cb exit_cb, void *arg, char *err, size_t errlen);

/* The spawn behind proc_spawn, for a caller that waits for the child itself (a short probe): run
 * argv[0] (absolute) with stdin from /dev/null, stdout and stderr on `out_fd`, a clean signal mask and
 * default dispositions. Return 0 with *pid set, or an errno value. The child is not tracked here. */
int proc_spawn_fd(const char *const argv[], int out_fd, pid_t *pid);

pid_t proc_pid(const struct proc *p);
bool proc_is_running(const struct proc *p);

/* Send `sig` to the child if it is still running. Return 0 or -1. */
int proc_signal(struct proc *p, int sig);

/* Ask the child to exit: SIGTERM now, followed by SIGCONT (a stopped child acts on SIGTERM only once it
 * runs again), then SIGKILL (and SIGCONT) after `grace`. exit_cb reports the end. */
void proc_terminate(struct proc *p, const struct timeval *grace);

/* Kill the child now (SIGKILL, and SIGCONT for a stopped one) without waiting: exit_cb reports the end
 * when SIGCHLD has been handled, and until then proc_is_running() stays true. Never blocks. */
void proc_kill(struct proc *p);

/* Reap the child now if it has already ended (waitpid WNOHANG), calling exit_cb from inside this call.
 * Return true if it was reaped (now or earlier); exit_cb may have freed `p`, so do not use it after a
 * true return. Lets a caller that noticed the child's death another way (its pipe or socket closed)
 * learn the exit status before SIGCHLD is handled. Never blocks. */
bool proc_poll(struct proc *p);

/* Free the proc. A child still running is killed with SIGKILL and reaped first (blocking briefly), so
 * nothing is ever left behind. exit_cb is not called from here. NULL is a no-op. */
void proc_free(struct proc *p);

#endif
