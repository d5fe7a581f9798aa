/* tor_process.c — what a tor is made of outside its control connection (see tor_int.h): where its files
 * go, the torrc it is started with and its command line, and recognising and ending a tor left by an
 * earlier run on the same DataDirectory.
 *
 * Owns no state of its own: each function reads or fills the supervisor's record. It does not move the
 * state machine (tor.c does, and calls in here); nothing here calls back into tor.c. */
#include "sidecar/tor/tor_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/core/proc.h"
#include "sidecar/identity/instance.h"
#include "sidecar/tor/torrc.h"

#define TOR_LEFTOVER_TERM_MS 10000
#define TOR_LEFTOVER_KILL_MS 5000

/* A client tor's file prefix ("probe": <state_dir>/probe-tor, probe-torrc, <run_dir>/probe/), or NULL for
 * a tor that runs services (single-onion or anonymous). */
const char *tor_client_name(const struct tor_sup *t)
{
    return t->role == TOR_ROLE_PROBE_CLIENT ? "probe" : t->role == TOR_ROLE_OB_CLIENT ? "ob" : NULL;
}

/* tor.binary, or Debian's tor for a probe client beside an attached tor (tor.binary is then unset). */
const char *tor_binary(const struct tor_sup *t)
{
    return t->conf->tor.binary ? t->conf->tor.binary : "/usr/bin/tor";
}

/* tor's command line as onionfront starts it (argv, NULL-terminated): one place, for the launch and for
 * recognising a tor left by an earlier run. */
void tor_argv(const struct tor_sup *t, const char *argv[6])
{
    argv[0] = tor_binary(t);
    argv[1] = "-f";
    argv[2] = t->torrc_path;
    argv[3] = "--defaults-torrc";
    argv[4] = "/dev/null";
    argv[5] = NULL;
}

/* Is the process behind `pidfd` (pid `pid`) a tor that an earlier onionfront on this config started?
 * tor.pid, where the pid comes from, lies in the DataDirectory, which tor's User may write, so the pid is
 * only a candidate. It counts only if all of these hold: its executable is the file tor.binary names
 * (same device and inode: an editor or a shell holding the torrc's name is not tor); its command line
 * is exactly the one tor_launch gives (our torrc, which lives where only onionfront's user can write);
 * it runs as tor's user or as ours (so whatever the pid file says, onionfront never signals a process
 * of a third user, nor one of its own user that tor's User merely named). The checks read /proc by pid;
 * they are tied to the process the pidfd holds by checking afterwards that it has not ended (a pid is
 * not reused before its process is reaped), and the signals go through the pidfd. */
static bool tor_leftover_is_ours(const struct tor_sup *t, int pidfd, long pid)
{
    char path[64], buf[4096];
    struct stat exe, bin;
    snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
    if (stat(path, &exe) < 0 || stat(tor_binary(t), &bin) < 0 || exe.st_dev != bin.st_dev ||
        exe.st_ino != bin.st_ino)
        return false;

    const char *argv[6];
    char want[PATH_MAX * 2 + 64];
    size_t wlen = 0;
    tor_argv(t, argv);
    for (size_t i = 0; argv[i]; i++) {
        size_t n = strlen(argv[i]) + 1;
        if (wlen + n > sizeof(want))
            return false;
        memcpy(want + wlen, argv[i], n);
        wlen += n;
    }
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f)
        fclose(f);
    if (n != wlen || memcmp(buf, want, wlen) != 0)
        return false;

    uid_t tor_uid = geteuid();
    if (t->conf->tor.user) {
        const struct passwd *pw = getpwnam(t->conf->tor.user);
        if (!pw)
            return false;
        tor_uid = pw->pw_uid;
    }
    long ruid = -1, euid = -1;
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    if ((f = fopen(path, "re")) != NULL) {
        while (fgets(buf, sizeof(buf), f))
            if (sscanf(buf, "Uid: %ld %ld", &ruid, &euid) == 2)
                break;
        fclose(f);
    }
    bool uid_ok = ruid == euid && (ruid == (long)geteuid() || ruid == (long)tor_uid);
    return uid_ok && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

/* Wait up to `ms` for the process behind `pidfd` to end (the pidfd becomes readable; a zombie counts:
 * it holds no files or locks any more, and only its parent can reap it). */
static bool tor_wait_gone(int pidfd, int ms)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int rc;
    while ((rc = poll(&p, 1, ms)) < 0 && errno == EINTR)
        ;
    return rc > 0;
}

static void tor_pidfd_signal(int pidfd, int sig)
{
    syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* If a tor from an earlier run of onionfront still runs on our DataDirectory (onionfront was killed and
 * tor has not noticed yet, or it is stopped), end it: two tors must never share a DataDirectory. Then
 * make sure no other process holds tor's DataDirectory lock. Blocks (up to 15 s): call it only at
 * start-up, never from the loop. */
int tor_replace_leftover(struct tor_sup *t, char *err, size_t errlen)
{
    char path[PATH_MAX + 16], buf[32], rerr[256];
    size_t n = 0;
    long pid = 0;
    /* fs_read_small: a symlink or FIFO planted as tor.pid is refused, never followed or waited on. */
    snprintf(path, sizeof(path), "%s/tor.pid", t->data_dir);
    if (fs_read_small(path, buf, sizeof(buf) - 1, &n, NULL, rerr, sizeof(rerr)) == 0) {
        buf[n] = '\0';
        pid = strtol(buf, NULL, 10);
    }
    int pidfd = pid > 1 && pid != (long)getpid() ? (int)syscall(SYS_pidfd_open, (pid_t)pid, 0) : -1;
    if (pidfd >= 0 && !tor_wait_gone(pidfd, 0) && tor_leftover_is_ours(t, pidfd, pid)) {
        log_notice("%s: a tor from an earlier onionfront run (pid %ld) still uses %s; stopping it", t->label, pid,
                   t->data_dir);
        tor_pidfd_signal(pidfd, SIGTERM);
        tor_pidfd_signal(pidfd, SIGCONT); /* a stopped tor acts on SIGTERM only once it runs */
        if (!tor_wait_gone(pidfd, TOR_LEFTOVER_TERM_MS)) {
            log_warnx("%s: pid %ld ignored SIGTERM for %d s; killing it", t->label, pid, TOR_LEFTOVER_TERM_MS / 1000);
            tor_pidfd_signal(pidfd, SIGKILL);
            tor_pidfd_signal(pidfd, SIGCONT);
            if (!tor_wait_gone(pidfd, TOR_LEFTOVER_KILL_MS)) {
                snprintf(err, errlen, "a tor (pid %ld) from an earlier run still uses %s and would not stop",
                         pid, t->data_dir);
                close(pidfd);
                return -1;
            }
        }
        log_info("%s: the earlier tor (pid %ld) is gone", t->label, pid);
    } else if (pid > 1 && pidfd >= 0) {
        log_info("%s: %s/tor.pid names pid %ld, which is not a tor this onionfront started; leaving it alone", t->label,
                 t->data_dir, pid);
    }
    if (pidfd >= 0)
        close(pidfd);
    /* tor holds flock(LOCK_EX) on <DataDirectory>/lock while it runs (tor's lockfile.c): if someone still
     * holds it, a tor we did not recognise (no or another tor.pid) uses the directory. */
    snprintf(path, sizeof(path), "%s/lock", t->data_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0) {
        int rc = flock(fd, LOCK_EX | LOCK_NB);
        int e = errno;
        close(fd); /* releases our lock at once */
        if (rc < 0 && e == EWOULDBLOCK) {
            snprintf(err, errlen, "%s is locked: another tor is running on DataDirectory %s (not one this "
                     "onionfront started, or its tor.pid is gone); stop it first", path, t->data_dir);
            return -1;
        }
    }
    return 0;
}

/* A TCP port on 127.0.0.1 that is free now (the kernel's pick for a bound socket, closed again) for
 * tor's MetricsPort: tor 0.4.9 takes no "auto" there. Another process could take it before tor binds;
 * then tor fails to start and the restart picks again. Return the port, or 0 with a message. */
static unsigned tor_pick_loopback_port(char *err, size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        snprintf(err, errlen, "no free port on 127.0.0.1 for tor's MetricsPort: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return 0;
    }
    close(fd);
    return ntohs(sa.sin_port);
}

int tor_write_torrc(struct tor_sup *t, char *err, size_t errlen)
{
    struct torrc_params p = {
        .data_dir = t->data_dir,
        .control_socket = t->control_socket,
        .socks_socket = t->socks_socket[0] ? t->socks_socket : NULL, /* Onionbalance's tor: none */
        .controller_pid = getpid(),
        /* Every tor runs as tor's user (the client tors too: handover_apply_client gave them their
         * directories), never as root. */
        .user = t->conf->tor.user,
        .extra = (const char *const *)t->conf->tor.extra_torrc,
        .n_extra = t->conf->tor.n_extra_torrc,
    };
    const char *client = tor_client_name(t);
    char name[16];
    snprintf(name, sizeof(name), "%s%storrc", client ? client : "", client ? "-" : "");
    t->metrics_port = 0;
    if (!client && t->role == TOR_ROLE_SERVICE && t->metrics_allowed &&
        !(p.metrics_port = t->metrics_port = tor_pick_loopback_port(err, errlen)))
        return -1;
    const char *tmpl = client ? torrc_client_template
                       : t->role == TOR_ROLE_ANONYMOUS ? torrc_anonymous_template
                                                       : torrc_template;
    char *text = torrc_render(tmpl, &p, err, errlen);
    if (!text)
        return -1;
    int rc = fs_write_atomic(t->torrc_dir, name, text, strlen(text), 0600, err, errlen);
    free(text);
    return rc;
}

/* Where this tor's files go: instance.h's paths for a service tor; for a client tor named N (probe, ob)
 * <state_dir>/N-tor, <state_dir>/N-torrc and its sockets in <run_dir>/N/ (0700, like the control socket's
 * directory); only the probe's has a SocksPort. */
int tor_paths(struct tor_sup *t, struct instance_paths *ip, char *err, size_t errlen)
{
    const struct config *c = t->conf;
    if (t->role == TOR_ROLE_ANONYMOUS)
        return instance_anonymous_paths(c, ip, err, errlen);
    const char *client = tor_client_name(t);
    if (!client)
        return instance_paths(c, t->instance, ip, err, errlen);
    memset(ip, 0, sizeof(*ip));
    int n = snprintf(ip->control_dir, sizeof(ip->control_dir), "%s/%s", c->run_dir, client);
    if (n < 0 || (size_t)n + sizeof("/control.sock") > sizeof(ip->control_dir) ||
        snprintf(ip->data_dir, sizeof(ip->data_dir), "%s/%s-tor", c->state_dir, client) >= (int)sizeof(ip->data_dir) ||
        snprintf(ip->torrc_dir, sizeof(ip->torrc_dir), "%s", c->state_dir) >= (int)sizeof(ip->torrc_dir) ||
        snprintf(ip->control_socket, sizeof(ip->control_socket), "%s/control.sock", ip->control_dir) >=
            (int)sizeof(ip->control_socket) ||
        (t->role == TOR_ROLE_PROBE_CLIENT &&
         snprintf(t->socks_socket, sizeof(t->socks_socket), "%s/socks.sock", ip->control_dir) >=
             (int)sizeof(t->socks_socket))) {
        snprintf(err, errlen, "run_dir or state_dir is too long");
        return -1;
    }
    return 0;
}
