/* check_http.c — HTTP(S) and connect-only checks on libcurl's multi socket API (see check_http.h). */
#include "sidecar/core/clock.h"
#include "sidecar/datapath/check_http.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define CHECK_HTTP_BODY_MAX 65536 /* a health page larger than this is cut off: the status is known */
#define CHECK_HTTP_CURL_SLACK_MS 1000 /* libcurl's own timeout: a safety net 1 s behind ours */
#define CHECK_HTTP_CA_FILE_CACHE_S 60 /* libcurl reuses its parsed health.ca_file at most this long */

struct check_http_loop {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;      /* curl's timeout (CURLMOPT_TIMERFUNCTION) */
    struct check_http *checks; /* in flight */
};

struct check_http {
    struct check_http_loop *loop;
    struct check_http *prev, *next;
    CURL *easy;
    struct curl_slist *connect_to;
    struct curl_slist *headers;
    struct event *deadline_ev;
    uint64_t deadline_ms; /* clock_now_ms() at the start + the timeout; deadline_ev only wakes us */
    enum health_type type;
    uint16_t expect_status[CONFIG_MAX_EXPECT_STATUS];
    size_t n_expect_status;
    curl_socket_t fd; /* the transfer's latest connection socket (CURLOPT_SOCKOPTFUNCTION; not the
                         resolver's wake-up socket), or CURL_SOCKET_BAD */
    size_t body_bytes;
    bool body_cut; /* we stopped the transfer after CHECK_HTTP_BODY_MAX bytes */
    char errbuf[CURL_ERROR_SIZE];
    check_done_cb cb;
    check_http_raw_cb raw_cb; /* a caller's transfer (check_http_run): reported through this instead */
    void *arg;
};

/* ---- one check --------------------------------------------------------------------------------- */

static void check_http_release(struct check_http *c)
{
    struct check_http_loop *l = c->loop;
    if (c->prev)
        c->prev->next = c->next;
    else if (l->checks == c)
        l->checks = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->easy) {
        /* Removing the handle closes its connection: curl's socket callback drops the socket's event. */
        curl_multi_remove_handle(l->multi, c->easy);
        curl_easy_cleanup(c->easy);
    }
    curl_slist_free_all(c->connect_to);
    curl_slist_free_all(c->headers);
    if (c->deadline_ev)
        event_free(c->deadline_ev);
    free(c);
}

/* The one completion: free the check, then report (so the callback may start the next check). */
static void check_http_finish(struct check_http *c, enum check_result r, const char *detail)
{
    check_done_cb cb = c->cb;
    void *arg = c->arg;
    char copy[CURL_ERROR_SIZE];
    snprintf(copy, sizeof(copy), "%s", detail ? detail : "");
    check_http_release(c);
    cb(r, copy, arg);
}

/* Whether the TCP connection (or unix socket) was established: curl's connect time covers the whole
 * connect (TLS included, for https), so ask the socket itself too. */
static bool check_http_connected(struct check_http *c)
{
    curl_off_t t = 0;
    if (curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME_T, &t) == CURLE_OK && t > 0)
        return true;
    struct sockaddr_storage peer;
    socklen_t len = sizeof(peer);
    return c->fd != CURL_SOCKET_BAD && getpeername(c->fd, (struct sockaddr *)&peer, &len) == 0;
}

/* The one completion of a caller's transfer: report with the handle still there, then free. */
static void check_http_raw_finish(struct check_http *c, CURLcode rc)
{
    c->raw_cb(c->easy, rc, c->errbuf, c->arg);
    check_http_release(c);
}

/* A timeout: ours (detail "") or libcurl's safety net (detail: libcurl's message). */
static void check_http_timed_out(struct check_http *c, const char *detail)
{
    if (c->raw_cb)
        check_http_raw_finish(c, CURLE_OPERATION_TIMEDOUT);
    else if (check_http_connected(c))
        check_http_finish(c, c->type == HEALTH_TCP ? CHECK_CONNECT_TIMEOUT : CHECK_READ_TIMEOUT, detail);
    else
        check_http_finish(c, CHECK_CONNECT_TIMEOUT, detail);
}

/* Report every check whose deadline (on clock_now_ms, from its start) has passed; first thing in each
 * of the loop's callbacks. */
static void check_http_expire(struct check_http_loop *l)
{
    uint64_t now = clock_now_ms();
    bool again = true;
    while (again) {
        again = false;
        /* Restart after each report: its callback may start or cancel checks. */
        for (struct check_http *c = l->checks; c; c = c->next) {
            if (now >= c->deadline_ms) {
                check_http_timed_out(c, "");
                again = true;
                break;
            }
        }
    }
}

static void check_http_done(struct check_http *c, CURLcode rc)
{
    long os_errno = 0;
    curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &os_errno);
    const char *why = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
    char detail[64];

    if (rc == CURLE_WRITE_ERROR && c->body_cut)
        rc = CURLE_OK;
    switch (rc) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        check_http_finish(c, CHECK_RESOLVE_ERROR, why);
        return;
    case CURLE_COULDNT_CONNECT:
        if (os_errno == ECONNREFUSED)
            check_http_finish(c, CHECK_CONNECT_REFUSED, strerror((int)os_errno));
        else
            check_http_finish(c, CHECK_CONNECT_ERROR, os_errno ? strerror((int)os_errno) : why);
        return;
    case CURLE_OPERATION_TIMEDOUT:
        /* libcurl's own timeout, CHECK_HTTP_CURL_SLACK_MS after ours on a clock that started later: only
         * if ours was missed. Its message tells it apart. */
        check_http_timed_out(c, why);
        return;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        if (os_errno == ECONNRESET) {
            check_http_finish(c, CHECK_RESET, "");
            return;
        }
        check_http_finish(c, CHECK_HTTP_ERROR, why);
        return;
    default:
        check_http_finish(c, CHECK_HTTP_ERROR, why);
        return;
    }
    if (c->type == HEALTH_TCP) {
        check_http_finish(c, CHECK_OK, "");
        return;
    }
    long status = 0;
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    snprintf(detail, sizeof(detail), "HTTP %ld", status);
    if (status <= 0) {
        check_http_finish(c, CHECK_HTTP_ERROR, "no HTTP status");
        return;
    }
    for (size_t i = 0; i < c->n_expect_status; i++) {
        if (c->expect_status[i] == status) {
            check_http_finish(c, CHECK_OK, detail);
            return;
        }
    }
    check_http_finish(c, CHECK_HTTP_STATUS, detail);
}

/* Report the transfers curl has finished. */
static void check_http_harvest(struct check_http_loop *l)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(l->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct check_http *c = NULL;
        CURLcode rc = msg->data.result; /* msg does not survive curl_multi_remove_handle */
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
        if (c && c->raw_cb)
            check_http_raw_finish(c, rc);
        else if (c)
            check_http_done(c, rc);
    }
}

/* ---- the multi socket glue --------------------------------------------------------------------- */

static void check_http_socket_event_cb(evutil_socket_t fd, short what, void *arg)
{
    struct check_http_loop *l = arg;
    check_http_expire(l);
    int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(l->multi, fd, action, &running);
    check_http_harvest(l);
}

static void check_http_timer_event_cb(evutil_socket_t fd, short what, void *arg)
{
    struct check_http_loop *l = arg;
    (void)fd;
    (void)what;
    check_http_expire(l);
    int running = 0;
    curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_http_harvest(l);
}

/* CURLMOPT_SOCKETFUNCTION: keep one persistent event per socket, watching what curl asks for. */
static int check_http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct check_http_loop *l = userp;
    struct event *ev = socketp;
    struct check_http *c = NULL;
    if (easy)
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&c);
    if (what == CURL_POLL_REMOVE) {
        if (c && c->fd == s)
            c->fd = CURL_SOCKET_BAD;
        if (ev)
            event_free(ev);
        return 0;
    }
    short kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (!ev) {
        ev = event_new(l->base, s, kind, check_http_socket_event_cb, l);
        if (!ev)
            return -1;
        curl_multi_assign(l->multi, s, ev);
    } else {
        event_del(ev);
        event_assign(ev, l->base, s, kind, check_http_socket_event_cb, l);
    }
    return event_add(ev, NULL) == 0 ? 0 : -1;
}

/* CURLMOPT_TIMERFUNCTION: one timer; -1 stops it, 0 means "as soon as possible" (from the loop: curl
 * must not be re-entered from here). */
static int check_http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct check_http_loop *l = userp;
    (void)multi;
    if (timeout_ms < 0) {
        evtimer_del(l->timer);
        return 0;
    }
    struct timeval tv = clock_tv_ms((uint64_t)timeout_ms);
    return evtimer_add(l->timer, &tv) == 0 ? 0 : -1;
}

struct check_http_loop *check_http_loop_new(struct event_base *base, char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "check_http: curl_global_init failed");
        return NULL;
    }
    struct check_http_loop *l = calloc(1, sizeof(*l));
    if (!l) {
        curl_global_cleanup();
        snprintf(err, errlen, "check_http: out of memory");
        return NULL;
    }
    l->base = base;
    l->multi = curl_multi_init();
    l->timer = evtimer_new(base, check_http_timer_event_cb, l);
    if (!l->multi || !l->timer) {
        check_http_loop_free(l);
        snprintf(err, errlen, "check_http: cannot create the curl multi handle");
        return NULL;
    }
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, check_http_socket_cb);
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, check_http_timer_cb);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
    return l;
}

void check_http_loop_free(struct check_http_loop *l)
{
    if (!l)
        return;
    while (l->checks)
        check_http_release(l->checks);
    if (l->multi)
        curl_multi_cleanup(l->multi);
    if (l->timer)
        event_free(l->timer);
    free(l);
    curl_global_cleanup();
}

/* ---- starting a check -------------------------------------------------------------------------- */

static size_t check_http_body_cb(char *ptr, size_t size, size_t nmemb, void *userp)
{
    struct check_http *c = userp;
    (void)ptr;
    c->body_bytes += size * nmemb;
    if (c->body_bytes > CHECK_HTTP_BODY_MAX) {
        c->body_cut = true;
        return 0; /* stop: CURLE_WRITE_ERROR, which check_http_done reads as "status known" */
    }
    return size * nmemb;
}

/* CURLOPT_SOCKOPTFUNCTION: remember the connection's socket, to tell a read from a connect timeout. */
static int check_http_sockopt_cb(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
    struct check_http *c = clientp;
    if (purpose == CURLSOCKTYPE_IPCXN)
        c->fd = fd;
    return CURL_SOCKOPT_OK;
}

/* A host that can stand in a URL's authority as it is: name or IP characters, an optional port, IPv6
 * brackets. Anything else goes into a Host header instead. */
static bool check_http_url_safe_host(const char *h)
{
    if (!*h)
        return false;
    for (; *h; h++) {
        char c = *h;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_' || c == ':' || c == '[' || c == ']'))
            return false;
    }
    return true;
}

static void check_http_inet_authority(char *out, size_t outlen, const struct backend_addr *addr)
{
    if (addr->family == AF_INET6)
        snprintf(out, outlen, "[%s]:%u", addr->host, (unsigned)addr->port);
    else
        snprintf(out, outlen, "%s:%u", addr->host, (unsigned)addr->port);
}

static int check_http_setup(struct check_http *c, const struct backend_addr *addr, const struct health_conf *hc,
                            char *err, size_t errlen)
{
    CURL *e = c->easy;
    const char *scheme = hc->type == HEALTH_HTTPS ? "https" : "http";
    const char *path = hc->type == HEALTH_TCP ? "/" : hc->path;
    char authority[CONFIG_HOST_MAX + 16];
    char url[CONFIG_HOST_MAX + CONFIG_HTTP_PATH_MAX + 32];
    bool named = hc->type != HEALTH_TCP && hc->host[0] != '\0';

    if (named && check_http_url_safe_host(hc->host)) {
        /* The URL carries the name (Host header, SNI, certificate name); CONNECT_TO sends the connection
         * to the backend whatever host and port the URL names (empty HOST and PORT match any). */
        snprintf(authority, sizeof(authority), "%s", hc->host);
        if (addr->kind == BACKEND_ADDR_INET) {
            char target[CONFIG_HOST_MAX + 16];
            char rule[CONFIG_HOST_MAX + 24];
            check_http_inet_authority(target, sizeof(target), addr);
            snprintf(rule, sizeof(rule), "::%s", target);
            if (!(c->connect_to = curl_slist_append(NULL, rule)))
                goto oom;
        }
    } else {
        if (addr->kind == BACKEND_ADDR_INET)
            check_http_inet_authority(authority, sizeof(authority), addr);
        else
            snprintf(authority, sizeof(authority), "localhost");
        if (named) {
            char header[CONFIG_HTTP_HOST_MAX + 8];
            snprintf(header, sizeof(header), "Host: %s", hc->host);
            if (!(c->headers = curl_slist_append(NULL, header)))
                goto oom;
        }
    }
    snprintf(url, sizeof(url), "%s://%s%s", scheme, authority, path);

    CURLcode rc = CURLE_OK;
#define SETOPT(opt, val)                                                                                        \
    do {                                                                                                        \
        if (rc == CURLE_OK)                                                                                     \
            rc = curl_easy_setopt(e, opt, val);                                                                 \
    } while (0)
    SETOPT(CURLOPT_URL, url);
    SETOPT(CURLOPT_PRIVATE, (char *)c);
    SETOPT(CURLOPT_ERRORBUFFER, c->errbuf);
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    SETOPT(CURLOPT_SOCKOPTFUNCTION, check_http_sockopt_cb);
    SETOPT(CURLOPT_SOCKOPTDATA, c);
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_PROXY, ""); /* never through a proxy from the environment */
    SETOPT(CURLOPT_FRESH_CONNECT, 1L); /* every check is a new connection, like a new stream */
    SETOPT(CURLOPT_FORBID_REUSE, 1L);
    SETOPT(CURLOPT_TIMEOUT_MS, (long)hc->timeout_ms + CHECK_HTTP_CURL_SLACK_MS);
    SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)hc->timeout_ms + CHECK_HTTP_CURL_SLACK_MS);
    if (addr->kind == BACKEND_ADDR_UNIX)
        SETOPT(CURLOPT_UNIX_SOCKET_PATH, addr->path);
    if (c->connect_to)
        SETOPT(CURLOPT_CONNECT_TO, c->connect_to);
    if (hc->type == HEALTH_TCP) {
        SETOPT(CURLOPT_CONNECT_ONLY, 1L);
    } else {
        SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        SETOPT(CURLOPT_PATH_AS_IS, 1L);
        SETOPT(CURLOPT_USERAGENT, "onionfront-health-check");
        SETOPT(CURLOPT_WRITEFUNCTION, check_http_body_cb);
        SETOPT(CURLOPT_WRITEDATA, c);
        if (c->headers)
            SETOPT(CURLOPT_HTTPHEADER, c->headers);
        if (hc->method == HEALTH_METHOD_HEAD)
            SETOPT(CURLOPT_NOBODY, 1L);
        else if (hc->method == HEALTH_METHOD_OPTIONS)
            SETOPT(CURLOPT_CUSTOMREQUEST, "OPTIONS");
        if (hc->type == HEALTH_HTTPS) {
            /* tls_verify false: the operator's choice, warned about once when the settings are applied
             * (health.c), not here for every check. */
            SETOPT(CURLOPT_SSL_VERIFYPEER, hc->tls_verify ? 1L : 0L);
            SETOPT(CURLOPT_SSL_VERIFYHOST, hc->tls_verify ? 2L : 0L);
            /* Verify against the CA bundle only (Debian's libcurl also defaults to the hashed directory
             * /etc/ssl/certs, with the same CAs): libcurl caches a bundle-only store in the multi handle,
             * but with a CA directory set it parses the whole bundle again for every connection, tens of
             * milliseconds of CPU on the loop per https check. */
            SETOPT(CURLOPT_CAPATH, NULL);
            if (hc->ca_file[0]) {
                /* Instead of the system bundle, not in addition to it. libcurl keeps the parsed store
                 * by the file's name; its default of a day would hide a replaced file that long. */
                SETOPT(CURLOPT_CAINFO, hc->ca_file);
                SETOPT(CURLOPT_CA_CACHE_TIMEOUT, (long)CHECK_HTTP_CA_FILE_CACHE_S);
            }
        }
    }
#undef SETOPT
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "check_http: %s: %s", addr->text, curl_easy_strerror(rc));
        return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "check_http: %s: out of memory", addr->text);
    return -1;
}

/* The wake-up for the check's own deadline. Its timer may fire before the deadline on our clock
 * (libevent's clock lags it, see clock.h): then it is re-armed for what is left. Otherwise this check is
 * reported first, then any other that is due. */
static void check_http_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct check_http *c = arg;
    struct check_http_loop *l = c->loop;
    (void)fd;
    (void)what;
    if (clock_now_ms() < c->deadline_ms) {
        struct timeval tv = clock_until(c->deadline_ms);
        if (evtimer_add(c->deadline_ev, &tv) == 0)
            return;
        check_http_finish(c, CHECK_HTTP_ERROR, "cannot add the deadline timer");
    } else {
        check_http_timed_out(c, "");
    }
    check_http_expire(l);
}

/* A check on `l` with its easy handle and deadline timer, not yet running; NULL if out of memory. */
static struct check_http *check_http_alloc(struct check_http_loop *l, CURL *easy, void *arg, uint64_t timeout_ms)
{
    struct check_http *c = calloc(1, sizeof(*c));
    if (!c) {
        curl_easy_cleanup(easy);
        return NULL;
    }
    c->loop = l;
    c->arg = arg;
    c->fd = CURL_SOCKET_BAD;
    c->deadline_ms = clock_now_ms() + timeout_ms;
    c->easy = easy;
    c->deadline_ev = evtimer_new(l->base, check_http_deadline_cb, c);
    if (!c->easy || !c->deadline_ev) {
        check_http_release(c);
        return NULL;
    }
    return c;
}

/* Arm the deadline and hand the transfer to curl. Return 0, or -1 with a message (`c` is freed then). */
/* CURLOPT_OPENSOCKETFUNCTION: libcurl's own socket() has no SOCK_CLOEXEC (sockopen.h says why it must). */
static curl_socket_t check_http_open_cb(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)clientp;
    (void)purpose;
    int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int check_http_launch(struct check_http *c, const char *what, char *err, size_t errlen)
{
    struct check_http_loop *l = c->loop;
    /* Every transfer on the loop (checks, the probe, tor's metrics) goes through here. */
    if (curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETFUNCTION, check_http_open_cb) != CURLE_OK) {
        snprintf(err, errlen, "check_http: %s: cannot set up the transfer", what);
        check_http_release(c);
        return -1;
    }
    struct timeval tv = clock_until(c->deadline_ms);
    if (evtimer_add(c->deadline_ev, &tv) != 0) {
        snprintf(err, errlen, "check_http: %s: cannot add the deadline timer", what);
        check_http_release(c);
        return -1;
    }
    /* Adding the handle only arms curl's timer: the transfer starts from the loop. */
    CURLMcode mrc = curl_multi_add_handle(l->multi, c->easy);
    if (mrc != CURLM_OK) {
        snprintf(err, errlen, "check_http: %s: %s", what, curl_multi_strerror(mrc));
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
        check_http_release(c);
        return -1;
    }
    c->next = l->checks;
    if (l->checks)
        l->checks->prev = c;
    l->checks = c;
    return 0;
}

struct check_http *check_http_start(struct check_http_loop *l, const struct backend_addr *addr,
                                    const struct health_conf *hc, check_done_cb cb, void *arg, char *err,
                                    size_t errlen)
{
    struct check_http *c = check_http_alloc(l, curl_easy_init(), arg, hc->timeout_ms);
    if (!c) {
        snprintf(err, errlen, "check_http: %s: out of memory", addr->text);
        return NULL;
    }
    c->cb = cb;
    c->type = hc->type;
    c->n_expect_status = hc->n_expect_status < CONFIG_MAX_EXPECT_STATUS ? hc->n_expect_status
                                                                          : CONFIG_MAX_EXPECT_STATUS;
    memcpy(c->expect_status, hc->expect_status, c->n_expect_status * sizeof(c->expect_status[0]));
    if (check_http_setup(c, addr, hc, err, errlen) != 0) {
        check_http_release(c);
        return NULL;
    }
    return check_http_launch(c, addr->text, err, errlen) < 0 ? NULL : c;
}

struct check_http *check_http_run(struct check_http_loop *l, CURL *easy, unsigned timeout_ms, check_http_raw_cb cb,
                                  void *arg, char *err, size_t errlen)
{
    struct check_http *c = check_http_alloc(l, easy, arg, timeout_ms);
    if (!c) {
        snprintf(err, errlen, "check_http: out of memory");
        return NULL;
    }
    c->raw_cb = cb;
    if (curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *)c) != CURLE_OK ||
        curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, c->errbuf) != CURLE_OK) {
        snprintf(err, errlen, "check_http: cannot set up the transfer");
        check_http_release(c);
        return NULL;
    }
    return check_http_launch(c, "transfer", err, errlen) < 0 ? NULL : c;
}

void check_http_cancel(struct check_http *c)
{
    if (c)
        check_http_release(c);
}
