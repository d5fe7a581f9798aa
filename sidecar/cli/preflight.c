/* preflight.c — what a start needs beyond a valid config file, looked at without making anything (see
 * preflight.h). */
#include "sidecar/cli/preflight.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controlproto/cp_conn.h"
#include "sidecar/config/config.h"
#include "sidecar/core/fdbudget.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/balance/ob_frontend.h"
#include "sidecar/datapath/proxy.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/tor/torcaps.h"

#define PREFLIGHT_CONTROL_TIMEOUT_MS 5000
#define PREFLIGHT_MADE_FIXED 4 /* state_dir, its keys/, run_dir and one spare, besides each key directory */

struct pf {
    const struct config *c;
    const struct preflight_opts *o;
    struct preflight *out;
    /* directories that exist, or that onionfront makes before it needs the next ones (borrowed paths) */
    const char **made;
    size_t n_made, max_made;
};

static void pf_problem(struct pf *p, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Add "<field>: <text>" to the list (the text alone when `field` is NULL: it starts with its own). */
static void pf_problem(struct pf *p, const char *field, const char *fmt, ...)
{
    struct preflight *out = p->out;
    if (out->n++ >= PREFLIGHT_MAX_PROBLEMS)
        return;
    char *line = out->problems[out->n - 1];
    int n = field ? snprintf(line, PREFLIGHT_PROBLEM_MAX, "%s: ", field) : 0;
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && n < PREFLIGHT_PROBLEM_MAX)
        vsnprintf(line + n, PREFLIGHT_PROBLEM_MAX - (size_t)n, fmt, ap);
    va_end(ap);
}

static bool pf_all(const struct pf *p)
{
    return p->o->scope == PREFLIGHT_ALL;
}

/* This user as "uid N (name)" for messages. */
static void pf_user(uid_t uid, char *out, size_t len)
{
    const struct passwd *pw = getpwuid(uid);
    snprintf(out, len, "uid %lu%s%s%s", (unsigned long)uid, pw ? " (" : "", pw ? pw->pw_name : "", pw ? ")" : "");
}

/* ---- tor ------------------------------------------------------------------------------------------ */

/* spawn: tor.binary runs, and can do what the services ask (torcaps.h). */
static void pf_tor_binary(struct pf *p)
{
    const char *bin = p->c->tor.binary;
    struct stat st;
    struct torcaps caps;
    char why[600];
    if (stat(bin, &st) < 0) {
        if (errno == ENOENT)
            pf_problem(p, "tor.binary", "%s does not exist: install tor (Debian: apt install tor), or set tor.binary "
                       "to where it is", bin);
        else
            pf_problem(p, "tor.binary", "%s: %s", bin, strerror(errno));
        return;
    }
    if (!S_ISREG(st.st_mode) || faccessat(AT_FDCWD, bin, X_OK, AT_EACCESS) < 0) {
        pf_problem(p, "tor.binary", "%s is not an executable file", bin);
        return;
    }
    if (torcaps_probe_version(bin, &caps, why, sizeof(why)) < 0) {
        pf_problem(p, "tor.binary", "%s does not run as a tor: %s", bin, why);
        return;
    }
    if (!config_first_pow_service(p->c))
        return;
    if (torcaps_probe(bin, &caps, why, sizeof(why)) < 0) {
        size_t i = (size_t)(config_first_pow_service(p->c) - p->c->services);
        pf_problem(p, "tor.binary", "cannot tell whether %s supports proof-of-work (services[%zu].dos.pow.enabled): %s",
                   bin, i, why);
        return;
    }
    for (size_t i = 0; i < p->c->n_services; i++)
        if (torcaps_check_service(&caps, &p->c->services[i], i, why, sizeof(why)) < 0)
            pf_problem(p, NULL, "%s", why); /* "services[i].dos.pow.enabled: ...": the field that asks */
}

/* spawn: tor.user names a user, and root starts tor (tor switches users itself). handover.c applies it. */
static void pf_tor_user(struct pf *p)
{
    const char *user = p->c->tor.user;
    char who[96];
    if (!user)
        return;
    if (!getpwnam(user))
        pf_problem(p, "tor.user", "there is no user named \"%s\": create it (Debian's tor package has \"debian-tor\"), "
                   "or remove tor.user so that tor runs as onionfront's own user", user);
    if (p->o->euid != 0) {
        pf_user(p->o->euid, who, sizeof(who));
        pf_problem(p, "tor.user", "\"%s\" needs onionfront to run as root (tor switches to that user only when root "
                   "starts it), but it runs as %s. Run onionfront as root, or remove tor.user so that tor runs as "
                   "onionfront's own user (as systemd/onionfront.service does)", user, who);
    }
}

/* The attached tor's control connection, run until it is ready or closed. */
struct pf_ctl {
    bool done, ready;
    char err[512];
};

static void pf_ctl_state_cb(struct cp_conn *conn, enum cp_conn_state state, const char *err, void *arg)
{
    struct pf_ctl *x = arg;
    (void)conn;
    if (state == CP_CONN_READY)
        x->ready = true;
    else if (state == CP_CONN_CLOSED)
        snprintf(x->err, sizeof(x->err), "%s", err ? err : "the connection closed");
    x->done = x->done || state == CP_CONN_READY || state == CP_CONN_CLOSED;
}

/* Connect and authenticate as tor.c does in attach mode. Return 0, or -1 with why. */
static int pf_ctl_answers(struct pf *p, const char *path, char *why, size_t whylen)
{
    struct event_base *base = p->o->base ? p->o->base : event_base_new();
    unsigned ms = p->o->control_timeout_ms ? p->o->control_timeout_ms : PREFLIGHT_CONTROL_TIMEOUT_MS;
    struct cp_conn_opts co = {.unix_path = path, .auth = CP_AUTH_AUTO};
    struct pf_ctl x = {0};
    struct cp_conn *conn = NULL;
    co.cmd_timeout = (struct timeval){ms / 1000, (ms % 1000) * 1000};
    if (!base) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    conn = cp_conn_new(base, &co, pf_ctl_state_cb, &x, x.err, sizeof(x.err));
    if (conn && cp_conn_connect(conn, x.err, sizeof(x.err)) == 0) {
        /* cp_conn's deadline bounds connect and authentication: its timer keeps the loop busy until then */
        while (!x.done)
            if (event_base_loop(base, EVLOOP_ONCE) != 0) {
                snprintf(x.err, sizeof(x.err), "no answer (event loop stopped)");
                break;
            }
    }
    cp_conn_free(conn);
    if (!p->o->base)
        event_base_free(base);
    if (x.ready)
        return 0;
    snprintf(why, whylen, "%s", x.err[0] ? x.err : "out of memory");
    return -1;
}

/* attach: tor.control_socket is a socket, and tor answers on it. */
static void pf_control_socket(struct pf *p)
{
    const char *path = p->c->tor.control_socket;
    struct stat st;
    char why[600];
    if (stat(path, &st) < 0) {
        if (errno == ENOENT)
            pf_problem(p, "tor.control_socket", "%s does not exist: is tor running, with \"ControlSocket %s\" in its "
                       "torrc? (Debian's tor: systemctl status tor@default)", path, path);
        else
            pf_problem(p, "tor.control_socket", "%s: %s", path, strerror(errno));
        return;
    }
    if (!S_ISSOCK(st.st_mode)) {
        pf_problem(p, "tor.control_socket", "%s is not a socket", path);
        return;
    }
    if (pf_ctl_answers(p, path, why, sizeof(why)) < 0)
        pf_problem(p, "tor.control_socket", "tor does not answer on %s: %s (onionfront's user must be allowed to "
                   "connect and to read tor's control cookie; Debian: add it to the group debian-tor)", path, why);
}

/* ---- directories ---------------------------------------------------------------------------------- */

static void pf_made(struct pf *p, const char *path)
{
    if (p->n_made < p->max_made)
        p->made[p->n_made++] = path;
}

static bool pf_is_made(const struct pf *p, const char *path)
{
    for (size_t i = 0; i < p->n_made; i++)
        if (strcmp(p->made[i], path) == 0)
            return true;
    return false;
}

/* The parent of the normalised absolute `path` into `out`. */
static void pf_parent(const char *path, char *out, size_t len)
{
    snprintf(out, len, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash == out)
        out[1] = '\0';
    else if (slash)
        *slash = '\0';
}

/* A missing directory `path` (field `field`): can this user make it (its parent exists, or is made
 * before it, and may be written)? Return true if so. */
static bool pf_creatable(struct pf *p, const char *field, const char *path)
{
    char parent[PATH_MAX], who[96];
    struct stat st;
    pf_parent(path, parent, sizeof(parent));
    if (pf_is_made(p, parent))
        return true;
    /* check-config as the service user before the first start: systemd's StateDirectory= and
     * RuntimeDirectory= make these (the daemon's own start still needs them there). */
    bool systemd_makes = (strcmp(field, "state_dir") == 0 && strcmp(parent, "/var/lib") == 0) ||
                         (strcmp(field, "run_dir") == 0 && strcmp(parent, "/run") == 0);
    if (pf_all(p) && systemd_makes)
        return true;
    int e = stat(parent, &st) < 0 ? errno : 0;
    if (e || !S_ISDIR(st.st_mode)) {
        pf_problem(p, field, "%s does not exist, and cannot be made: its parent %s %s", path, parent,
                   e == ENOENT ? "does not exist" : e ? strerror(e) : "is not a directory");
        return false;
    }
    if (faccessat(AT_FDCWD, parent, W_OK | X_OK, AT_EACCESS) < 0) {
        e = errno;
        pf_user(p->o->euid, who, sizeof(who));
        pf_problem(p, field, "%s does not exist, and %s cannot make it in %s: %s", path, who, parent, strerror(e));
        return false;
    }
    return true;
}

/* With check_owner: is what `path` names (stat `st`) the daemon's user's? A problem if not. */
static bool pf_owned(struct pf *p, const char *field, const char *path, const struct stat *st)
{
    char owner[96], want[96];
    if (!p->o->check_owner || st->st_uid == p->o->owner)
        return true;
    pf_user(st->st_uid, owner, sizeof(owner));
    pf_user(p->o->owner, want, sizeof(want));
    pf_problem(p, field, "%s is owned by %s, not by %s, the user the systemd unit runs onionfront as (chown %lu: %s)",
               path, owner, want, (unsigned long)p->o->owner, path);
    return false;
}

/* A directory onionfront keeps private (fs_ensure_private_dir): an existing one must pass
 * fs_check_private_dir, a missing one be creatable. Noted as made when it will be there. */
static void pf_private_dir(struct pf *p, const char *field, const char *path)
{
    struct stat st;
    char why[600];
    bool ok;
    if (stat(path, &st) == 0) {
        ok = fs_check_private_dir(path, why, sizeof(why)) == 0;
        if (!ok)
            pf_problem(p, field, "%s", why);
        pf_owned(p, field, path, &st); /* it exists: what is under it is checked too */
    } else if (errno == ENOENT) {
        ok = pf_creatable(p, field, path);
    } else {
        pf_problem(p, field, "%s: %s", path, strerror(errno));
        ok = false;
    }
    if (ok)
        pf_made(p, path);
}

/* status.socket: in run_dir, or in a directory that exists (status_server.c makes no other). */
static void pf_status_dir(struct pf *p)
{
    char parent[PATH_MAX];
    struct stat st;
    pf_parent(p->c->status.socket, parent, sizeof(parent));
    if (strcmp(parent, p->c->run_dir) != 0 && (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode)))
        pf_problem(p, "status.socket", "its directory %s does not exist (onionfront makes only run_dir)", parent);
}

/* onion_location.dir: a directory onionfront writes the include files into (made 0755 if missing). */
static void pf_onion_location_dir(struct pf *p)
{
    const char *dir = p->c->onion_location.dir;
    struct stat st;
    char who[96];
    if (!p->c->onion_location.enabled || !dir)
        return;
    if (stat(dir, &st) < 0) {
        if (errno == ENOENT)
            pf_creatable(p, "onion_location.dir", dir);
        else
            pf_problem(p, "onion_location.dir", "%s: %s", dir, strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        pf_problem(p, "onion_location.dir", "%s exists and is not a directory", dir);
    } else if (pf_all(p) && /* a start goes on without the files: onionloc.c logs each failed write */
               faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
        int e = errno;
        pf_user(p->o->euid, who, sizeof(who));
        pf_problem(p, "onion_location.dir", "%s cannot write files in %s: %s (under systemd's ProtectSystem=strict, "
                   "add ReadWritePaths=%s)", who, dir, strerror(e), dir);
    }
}

/* ---- services ------------------------------------------------------------------------------------- */

/* Each service's key directory (service_id_check_key), and a missing one's place. */
static void pf_keys(struct pf *p)
{
    char field[64], why[PREFLIGHT_PROBLEM_MAX - 64];
    struct stat st;
    for (size_t i = 0; i < p->c->n_services; i++) {
        const struct service_conf *sc = &p->c->services[i];
        snprintf(field, sizeof(field), "services[%zu].key_dir", i);
        int rc = service_id_check_key(p->c, sc, why, sizeof(why));
        if (rc < 0 || (rc == 0 && pf_all(p)))
            pf_problem(p, field, "%s", why);
        if (rc == 1 && stat(sc->key_dir, &st) < 0 && errno == ENOENT && pf_creatable(p, field, sc->key_dir))
            pf_made(p, sc->key_dir);
        char key[PATH_MAX];
        snprintf(key, sizeof(key), "%s/hs_ed25519_secret_key", sc->key_dir);
        if (stat(sc->key_dir, &st) == 0)
            pf_owned(p, field, sc->key_dir, &st);
        if (lstat(key, &st) == 0)
            pf_owned(p, field, key, &st);
    }
}

/* The listeners and health checks fit under the descriptor limit (proxy.h). */
static void pf_fd_limit(struct pf *p)
{
    char why[PREFLIGHT_PROBLEM_MAX - 16];
    rlim_t hard = p->o->nofile_hard ? p->o->nofile_hard : fdbudget_hard_limit();
    if (proxy_check_fd_limit(p->c, hard, why, sizeof(why)) < 0)
        pf_problem(p, "services", "%s", why);
}

/* An Onionbalance frontend runs Onionbalance (ob_frontend.h). */
static void pf_onionbalance(struct pf *p)
{
    for (size_t i = 0; pf_all(p) && i < p->c->n_services; i++) {
        char field[64];
        if (p->c->services[i].onionbalance.role != OB_ROLE_FRONTEND)
            continue;
        snprintf(field, sizeof(field), "services[%zu].onionbalance", i);
        if (faccessat(AT_FDCWD, OB_FRONTEND_BINARY, X_OK, AT_EACCESS) < 0)
            pf_problem(p, field, "a frontend runs %s, which is %s (Debian: apt install onionbalance)",
                       OB_FRONTEND_BINARY, errno == ENOENT ? "not installed" : strerror(errno));
    }
}

size_t preflight_run(const struct config *c, const struct preflight_opts *o, struct preflight *out)
{
    struct pf p = {.c = c, .o = o, .out = out, .max_made = PREFLIGHT_MADE_FIXED + c->n_services};
    char keys[PATH_MAX];
    out->n = 0;
    p.made = calloc(p.max_made, sizeof(*p.made));
    if (!p.made) {
        pf_problem(&p, NULL, "out of memory");
        return out->n;
    }
    if (c->tor.mode == TOR_MODE_SPAWN) {
        pf_tor_binary(&p);
        pf_tor_user(&p);
    } else if (pf_all(&p)) {
        pf_control_socket(&p);
    }
    /* In the order onionfront makes them: state_dir and its keys/ (service_id.c), the key directories,
     * run_dir (status_server.c, proxy.c, tor.c), the others. */
    pf_private_dir(&p, "state_dir", c->state_dir);
    snprintf(keys, sizeof(keys), "%s%skeys", c->state_dir, strcmp(c->state_dir, "/") ? "/" : "");
    if (pf_is_made(&p, c->state_dir))
        pf_private_dir(&p, "state_dir", keys);
    pf_keys(&p);
    pf_private_dir(&p, "run_dir", c->run_dir);
    pf_status_dir(&p);
    pf_onion_location_dir(&p);
    pf_fd_limit(&p);
    pf_onionbalance(&p);
    free(p.made);
    return out->n;
}
