/* onionloc.c — Onion-Location include files and the on_change command (see onionloc.h).
 *
 * Owns a cache of each file's content (so unchanged states write nothing and run nothing), one deferred
 * event that starts on_change after a batch of changes, the running child and its time bound. Does not
 * know how reachability is decided, and never touches web-server configuration beyond its own files. */
#include "sidecar/ops/onionloc.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "sidecar/config/config.h"
#include "sidecar/core/fsutil.h"
#include "sidecar/core/log.h"
#include "sidecar/ops/metrics_http.h"
#include "sidecar/core/proc.h"

#define ONIONLOC_FILE_MAX 1024 /* our own files are < 300 bytes; anything longer is not ours as-is */
#define ONIONLOC_KILL_GRACE_S 5

enum onionloc_kind { ONIONLOC_NGINX, ONIONLOC_APACHE, ONIONLOC_KINDS };

struct onionloc_svc {
    char name[CONFIG_SERVICE_NAME_MAX + 1];
    char *content[ONIONLOC_KINDS]; /* what the file holds, as far as we know; NULL = not read yet */
    bool on;                       /* the header is being advertised (for the log) */
    char url[128];                 /* what GET /onion-location/<name> answers: the URL, "" when withdrawn */
    bool listed;                   /* the service asks to be advertised (services[].onion_location) */
    bool seen;                     /* reported in the current sync */
};

struct onionloc {
    struct event_base *base;
    struct proc_mgr *procs;
    bool enabled;
    char *dir;
    char **argv; /* NULL-terminated copy of on_change, or NULL */

    struct onionloc_svc *svcs;
    size_t n_svcs;

    struct event *run_ev;     /* deferred start of on_change */
    struct event *timeout_ev; /* bound on one run */
    struct proc *child;
    struct metrics_http *http; /* onion_location.listen's endpoint, or NULL */
    bool want_run;            /* a change happened that on_change has not seen yet */
    unsigned runs;
    char last_err[512];       /* the last error logged, so a persistent one is logged once */

    void (*flush_done)(void *arg);
    void *flush_arg;
};

static const char *const onionloc_suffix[ONIONLOC_KINDS] = {ONIONLOC_NGINX_SUFFIX, ONIONLOC_APACHE_SUFFIX};

static void onionloc_free_argv(char **argv)
{
    if (!argv)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

static char **onionloc_copy_argv(const struct onion_location_conf *c)
{
    if (!c->enabled || !c->on_change || c->n_on_change == 0)
        return NULL;
    char **argv = calloc(c->n_on_change + 1, sizeof(*argv));
    if (!argv)
        return NULL;
    for (size_t i = 0; i < c->n_on_change; i++) {
        argv[i] = strdup(c->on_change[i]);
        if (!argv[i]) {
            onionloc_free_argv(argv);
            return NULL;
        }
    }
    return argv;
}

int onionloc_url(const struct service_conf *svc, const char *address, char *out, size_t outlen)
{
    const char *scheme = "http";
    unsigned port = 0; /* 0: the scheme's default */
    bool has80 = false, has443 = false;
    for (size_t i = 0; i < svc->n_ports; i++) {
        has80 |= svc->ports[i].virtual_port == 80;
        has443 |= svc->ports[i].virtual_port == 443;
    }
    if (!has80 && has443)
        scheme = "https";
    else if (!has80 && svc->n_ports > 0)
        port = svc->ports[0].virtual_port;
    int n = port ? snprintf(out, outlen, "%s://%s.onion:%u", scheme, address, port)
                 : snprintf(out, outlen, "%s://%s.onion", scheme, address);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* A v3 address as keys.c produces it: 56 characters of lowercase base32. Anything else would end up in
 * a web server's configuration, so it is checked here too. */
static bool onionloc_address_ok(const char *a)
{
    if (!a || strlen(a) != 56)
        return false;
    for (const char *p = a; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '2' && *p <= '7')))
            return false;
    return true;
}

/* The address visitors are sent to for `e`: an Onionbalance instance's master address (its own would pin
 * visitors to one machine and bypass the balancing), else the service's own (a frontend's own address is
 * the master). */
static const char *onionloc_advertised(const struct onionloc_entry *e)
{
    return e->svc->onionbalance.role == OB_ROLE_INSTANCE ? e->svc->onionbalance.master_address : e->address;
}

/* The service whose virtual ports make `e`'s URL: its own, except for an Onionbalance frontend, which has
 * none (visitors reach the instances' ports): then the first of `entries` that is an instance of it. */
static const struct service_conf *onionloc_port_source(const struct onionloc_entry *e,
                                                       const struct onionloc_entry *entries, size_t n)
{
    if (e->svc->onionbalance.role != OB_ROLE_FRONTEND || !e->address)
        return e->svc;
    for (size_t i = 0; i < n; i++)
        if (entries[i].svc->onionbalance.role == OB_ROLE_INSTANCE &&
            strcmp(entries[i].svc->onionbalance.master_address, e->address) == 0)
            return entries[i].svc;
    return e->svc;
}

/* `e`'s URL into `out` (128 bytes), or "" (not reachable, or no usable address: the service's own must be
 * known, and the advertised one well-formed). `ports`: onionloc_port_source's. */
static void onionloc_entry_url(const struct onionloc_entry *e, const struct service_conf *ports, char *out,
                               size_t outlen)
{
    if (!e || !e->reachable || !onionloc_address_ok(e->address) || !onionloc_address_ok(onionloc_advertised(e)) ||
        onionloc_url(ports, onionloc_advertised(e), out, outlen) < 0)
        out[0] = '\0';
}

/* The wanted content of one file: the header lines, or "" (onionloc_entry_url gave none). */
static char *onionloc_render(const struct onionloc_entry *e, const struct service_conf *ports,
                             enum onionloc_kind kind)
{
    char url[128], buf[1024];
    onionloc_entry_url(e, ports, url, sizeof(url));
    if (!url[0])
        return strdup("");
    if (kind == ONIONLOC_NGINX)
        snprintf(buf, sizeof(buf),
                 "# onionfront: service %s is reachable; this file is emptied when it is not.\n"
                 "add_header Onion-Location %s$request_uri always;\n",
                 e->svc->name, url);
    else /* the raw request target (path and query), like nginx's $request_uri; nothing for "OPTIONS *" */
        snprintf(buf, sizeof(buf),
                 "# onionfront: service %s is reachable; this file is emptied when it is not.\n"
                 "Header always set Onion-Location \"expr=%%{THE_REQUEST}\" "
                 "\"expr=%%{THE_REQUEST} =~ m#^[A-Z]+ /[^ ]* HTTP/[0-9.]+$#\"\n"
                 "Header always edit Onion-Location \"^[A-Z]+ (/[^ ]*) HTTP/[0-9.]+$\" \"%s$1\"\n",
                 e->svc->name, url);
    return strdup(buf);
}

static void onionloc_note_error(struct onionloc *ol, const char *msg)
{
    if (strcmp(ol->last_err, msg) != 0) {
        log_warnx("onion-location: %s", msg);
        snprintf(ol->last_err, sizeof(ol->last_err), "%s", msg);
    }
}

/* Make one file hold `want` (taken). Return 1 if it changed, 0 if not, -1 with err. */
static int onionloc_put(struct onionloc *ol, struct onionloc_svc *s, enum onionloc_kind kind, char *want,
                        char *err, size_t errlen)
{
    char name[CONFIG_SERVICE_NAME_MAX + 16];
    snprintf(name, sizeof(name), "%s%s", s->name, onionloc_suffix[kind]);
    if (!s->content[kind]) {
        /* First time: what is on disk (from an earlier run) may already be right. */
        char path[4200], buf[ONIONLOC_FILE_MAX + 1];
        size_t len = 0;
        snprintf(path, sizeof(path), "%s/%s", ol->dir, name);
        int rc = fs_read_small(path, buf, ONIONLOC_FILE_MAX, &len, NULL, err, errlen);
        if (rc == 0) {
            buf[len] = '\0';
            if (strlen(buf) == len && strcmp(buf, want) == 0) {
                s->content[kind] = want;
                return 0;
            }
        }
    } else if (strcmp(s->content[kind], want) == 0) {
        free(want);
        return 0;
    }
    if (fs_write_atomic(ol->dir, name, want, strlen(want), 0644, err, errlen) < 0) {
        free(want);
        return -1;
    }
    free(s->content[kind]);
    s->content[kind] = want;
    return 1;
}

/* Bring both files of `s` to the state of `e` (NULL: not reachable; `ports` as onionloc_render's). Return
 * 1 if any changed. */
static int onionloc_apply(struct onionloc *ol, struct onionloc_svc *s, const struct onionloc_entry *e,
                          const struct service_conf *ports, char *err, size_t errlen)
{
    int changed = 0, failed = 0;
    for (int k = 0; k < ONIONLOC_KINDS; k++) {
        char *want = onionloc_render(e, ports, (enum onionloc_kind)k);
        if (!want) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        char kerr[512];
        int rc = onionloc_put(ol, s, (enum onionloc_kind)k, want, kerr, sizeof(kerr));
        if (rc < 0) {
            if (!failed)
                snprintf(err, errlen, "%s", kerr);
            failed = 1;
        } else if (rc > 0) {
            changed = 1;
        }
    }
    /* The endpoint follows the verdict even when a file cannot be written. */
    onionloc_entry_url(e, ports, s->url, sizeof(s->url));
    s->listed = e && e->svc->onion_location; /* NULL: the service is gone (emptied) */
    bool on = s->content[ONIONLOC_NGINX] && s->content[ONIONLOC_NGINX][0] != '\0';
    if (changed && on != s->on)
        log_info("onion-location: service %s: %s", s->name,
                 on ? "reachable; Onion-Location header on" : "not reachable; Onion-Location header off");
    s->on = on;
    return failed ? -1 : changed;
}

static void onionloc_svc_clear(struct onionloc_svc *s)
{
    for (int k = 0; k < ONIONLOC_KINDS; k++) {
        free(s->content[k]);
        s->content[k] = NULL;
    }
}

static struct onionloc_svc *onionloc_find(struct onionloc *ol, const char *name, bool create)
{
    for (size_t i = 0; i < ol->n_svcs; i++)
        if (strcmp(ol->svcs[i].name, name) == 0)
            return &ol->svcs[i];
    if (!create)
        return NULL;
    struct onionloc_svc *grown = realloc(ol->svcs, (ol->n_svcs + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    ol->svcs = grown;
    struct onionloc_svc *s = &ol->svcs[ol->n_svcs++];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    return s;
}

static void onionloc_schedule_run(struct onionloc *ol)
{
    ol->want_run = true;
    event_active(ol->run_ev, EV_TIMEOUT, 0);
}

static bool onionloc_idle(const struct onionloc *ol)
{
    return !ol->child && !ol->want_run;
}

static void onionloc_check_flush(struct onionloc *ol)
{
    if (ol->flush_done && onionloc_idle(ol)) {
        void (*done)(void *) = ol->flush_done;
        ol->flush_done = NULL;
        done(ol->flush_arg);
    }
}

int onionloc_sync(struct onionloc *ol, const struct onionloc_entry *entries, size_t n, char *err,
                  size_t errlen)
{
    if (!ol || !ol->enabled)
        return 0;
    char e1[512] = "";
    int changed = 0, failed = 0;
    /* Create the directory if missing, 0755 whatever the umask (systemd's UMask=0077 would make it 0700):
     * the files are for a web server to read. Its parent may be one the web user can write: fs_ensure_dir
     * never changes a mode by name. */
    if (fs_ensure_dir(ol->dir, 0755, e1, sizeof(e1)) < 0) {
        onionloc_note_error(ol, e1);
        snprintf(err, errlen, "%s", e1);
        return -1;
    }
    for (size_t i = 0; i < ol->n_svcs; i++)
        ol->svcs[i].seen = false;
    for (size_t i = 0; i < n; i++) {
        struct onionloc_svc *s = onionloc_find(ol, entries[i].svc->name, true);
        char kerr[512];
        int rc = s ? onionloc_apply(ol, s, &entries[i], onionloc_port_source(&entries[i], entries, n), kerr,
                                    sizeof(kerr))
                   : -1;
        if (!s)
            snprintf(kerr, sizeof(kerr), "out of memory");
        if (s)
            s->seen = true;
        if (rc < 0 && !failed++)
            snprintf(e1, sizeof(e1), "%s", kerr);
        if (rc > 0)
            changed++;
    }
    /* Services no longer reported (removed by a reload): empty their files and forget them. */
    for (size_t i = 0; i < ol->n_svcs;) {
        struct onionloc_svc *s = &ol->svcs[i];
        if (s->seen) {
            i++;
            continue;
        }
        char kerr[512];
        int rc = onionloc_apply(ol, s, NULL, NULL, kerr, sizeof(kerr));
        if (rc < 0) { /* keep it, and retry next time */
            if (!failed++)
                snprintf(e1, sizeof(e1), "%s", kerr);
            i++;
            continue;
        }
        if (rc > 0)
            changed++;
        onionloc_svc_clear(s);
        ol->svcs[i] = ol->svcs[--ol->n_svcs];
    }
    if (changed > 0)
        onionloc_schedule_run(ol);
    if (failed) {
        onionloc_note_error(ol, e1);
        snprintf(err, errlen, "%s", e1);
        return -1;
    }
    ol->last_err[0] = '\0';
    return changed;
}

/* ---- on_change ---- */

static void onionloc_line_cb(struct proc *p, const char *line, void *arg)
{
    (void)p;
    (void)arg;
    log_info("onion-location: on_change: %s", line);
}

static void onionloc_exit_cb(struct proc *p, int wstatus, void *arg)
{
    struct onionloc *ol = arg;
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        log_info("onion-location: on_change command done");
    else if (WIFEXITED(wstatus))
        log_warnx("onion-location: on_change command %s exited with status %d", ol->argv ? ol->argv[0] : "",
                  WEXITSTATUS(wstatus));
    else
        log_warnx("onion-location: on_change command %s killed by signal %d", ol->argv ? ol->argv[0] : "",
                  WTERMSIG(wstatus));
    event_del(ol->timeout_ev);
    ol->child = NULL;
    proc_free(p);
    if (ol->want_run)
        event_active(ol->run_ev, EV_TIMEOUT, 0);
    else
        onionloc_check_flush(ol);
}

static void onionloc_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct onionloc *ol = arg;
    (void)fd;
    (void)what;
    if (ol->child) {
        log_warnx("onion-location: on_change command still running after %d s; stopping it",
                  ONIONLOC_COMMAND_TIMEOUT_S);
        proc_terminate(ol->child, &(struct timeval){ONIONLOC_KILL_GRACE_S, 0});
    }
}

static void onionloc_run_cb(evutil_socket_t fd, short what, void *arg)
{
    struct onionloc *ol = arg;
    (void)fd;
    (void)what;
    if (ol->child || !ol->want_run)
        return; /* the exit callback starts the next run */
    ol->want_run = false;
    if (!ol->argv) {
        onionloc_check_flush(ol);
        return;
    }
    char err[512];
    ol->child = proc_spawn(ol->procs, (const char *const *)ol->argv, onionloc_line_cb, onionloc_exit_cb, ol,
                           err, sizeof(err));
    if (!ol->child) {
        log_warnx("onion-location: cannot run on_change: %s", err);
        onionloc_check_flush(ol);
        return;
    }
    ol->runs++;
    log_info("onion-location: running on_change %s (pid %ld)", ol->argv[0], (long)proc_pid(ol->child));
    event_add(ol->timeout_ev, &(struct timeval){ONIONLOC_COMMAND_TIMEOUT_S, 0});
}

/* ---- public ---- */

struct onionloc *onionloc_new(struct event_base *base, struct proc_mgr *procs,
                              const struct onion_location_conf *conf)
{
    struct onionloc *ol = calloc(1, sizeof(*ol));
    if (!ol)
        return NULL;
    ol->base = base;
    ol->procs = procs;
    ol->run_ev = event_new(base, -1, 0, onionloc_run_cb, ol);
    ol->timeout_ev = evtimer_new(base, onionloc_timeout_cb, ol);
    if (!ol->run_ev || !ol->timeout_ev) {
        onionloc_free(ol);
        return NULL;
    }
    if (conf->enabled) {
        ol->enabled = true;
        ol->dir = strdup(conf->dir);
        ol->argv = onionloc_copy_argv(conf);
        if (!ol->dir || (conf->n_on_change > 0 && !ol->argv)) {
            onionloc_free(ol);
            return NULL;
        }
    }
    return ol;
}

void onionloc_free(struct onionloc *ol)
{
    if (!ol)
        return;
    if (ol->child)
        proc_free(ol->child);
    metrics_http_free(ol->http);
    if (ol->run_ev)
        event_free(ol->run_ev);
    if (ol->timeout_ev)
        event_free(ol->timeout_ev);
    for (size_t i = 0; i < ol->n_svcs; i++)
        onionloc_svc_clear(&ol->svcs[i]);
    free(ol->svcs);
    free(ol->dir);
    onionloc_free_argv(ol->argv);
    free(ol);
}

/* X-Onion-Location-Path, the web server's request target, if it is one: "/" and then printable ASCII
 * without spaces (it goes into a header), at most ONIONLOC_PATH_MAX bytes; else "". */
#define ONIONLOC_PATH_MAX 4096
static const char *onionloc_request_path(const struct evkeyvalq *in)
{
    const char *p = evhttp_find_header(in, "X-Onion-Location-Path");
    if (!p || p[0] != '/' || strlen(p) > ONIONLOC_PATH_MAX)
        return "";
    for (const char *c = p; *c; c++)
        if (*c <= ' ' || *c >= 0x7f)
            return "";
    return p;
}

/* GET /onion-location/<service>: 200 with the header (and its value as the body), 204 when withdrawn,
 * 404 for a name it does not know and, alike, for a service not advertised (a private or anonymous one):
 * the answer must not tell a scanner which names exist. */
static int onionloc_answer_cb(void *arg, const char *rest, const struct evkeyvalq *in, struct evkeyvalq *headers,
                              struct evbuffer *body)
{
    struct onionloc *ol = arg;
    struct onionloc_svc *s = onionloc_find(ol, rest, false);
    char value[sizeof(s->url) + ONIONLOC_PATH_MAX + 1];
    if (!s || !s->listed)
        return HTTP_NOTFOUND;
    if (!s->url[0])
        return HTTP_NOCONTENT;
    snprintf(value, sizeof(value), "%s%s", s->url, onionloc_request_path(in));
    evhttp_add_header(headers, "Content-Type", "text/plain; charset=utf-8");
    evhttp_add_header(headers, "Onion-Location", value);
    evbuffer_add_printf(body, "%s\n", value);
    return HTTP_OK;
}

/* The listener's guard from `conf` (allow is copied by metrics_http_set_guard). */
static int onionloc_guard(struct onionloc *ol, const struct onion_location_conf *conf, char *err, size_t errlen)
{
    const struct metrics_http_guard g = {conf->allow, conf->n_allow, ONIONLOC_HTTP_PER_SOURCE,
                                         ONIONLOC_HTTP_HEAD_DEADLINE_MS};
    if (metrics_http_set_guard(ol->http, &g) < 0) {
        snprintf(err, errlen, "onion_location.allow: out of memory");
        return -1;
    }
    return 0;
}

int onionloc_listen(struct onionloc *ol, const struct onion_location_conf *conf, char *err, size_t errlen)
{
    if (!conf->enabled || !conf->listen.enabled)
        return 0;
    ol->http = metrics_http_serve(ol->base, &conf->listen, "onion_location", "/onion-location/", onionloc_answer_cb, ol,
                                  err, errlen);
    if (!ol->http)
        return -1;
    metrics_http_set_limits(ol->http, ONIONLOC_HTTP_MAX_CLIENTS, METRICS_HTTP_DEADLINE_MS);
    if (onionloc_guard(ol, conf, err, errlen) < 0) {
        metrics_http_free(ol->http);
        ol->http = NULL;
        return -1;
    }
    return 0;
}

int onionloc_set_config(struct onionloc *ol, const struct onion_location_conf *conf, char *err, size_t errlen)
{
    int rc = 0;
    bool same_dir = ol->enabled && conf->enabled && strcmp(ol->dir, conf->dir) == 0;
    if (ol->enabled && !same_dir) {
        /* Whatever the old directory advertised must go: empty every file we keep there. */
        if (onionloc_sync(ol, NULL, 0, err, errlen) < 0)
            rc = -1;
    }
    char *dir = conf->enabled ? strdup(conf->dir) : NULL;
    char **argv = onionloc_copy_argv(conf);
    if ((conf->enabled && !dir) || (conf->enabled && conf->n_on_change > 0 && !argv)) {
        free(dir);
        onionloc_free_argv(argv);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!same_dir) {
        for (size_t i = 0; i < ol->n_svcs; i++)
            onionloc_svc_clear(&ol->svcs[i]);
        ol->n_svcs = 0;
    }
    free(ol->dir);
    ol->dir = dir;
    /* Turned off with a run still due for the emptied files: keep the old command for that run. */
    if (conf->enabled || !ol->want_run) {
        onionloc_free_argv(ol->argv);
        ol->argv = argv;
    } else {
        onionloc_free_argv(argv);
    }
    ol->enabled = conf->enabled;
    ol->last_err[0] = '\0';
    /* listen itself needs a restart (config_restart_needed); who may use it does not. */
    if (ol->http && conf->enabled && conf->listen.enabled && onionloc_guard(ol, conf, err, errlen) < 0)
        rc = -1;
    return rc;
}

void onionloc_flush(struct onionloc *ol, void (*done)(void *arg), void *arg)
{
    if (!ol || onionloc_idle(ol)) {
        done(arg);
        return;
    }
    ol->flush_done = done;
    ol->flush_arg = arg;
}

unsigned onionloc_command_runs(const struct onionloc *ol)
{
    return ol ? ol->runs : 0;
}
