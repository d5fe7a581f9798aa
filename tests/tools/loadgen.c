/* loadgen.c — a small HTTP load generator and a matching minimal HTTP server, on libevent, for the data-path
 * benchmark (tests/bench/run.sh, part B): the same server reached directly, through HAProxy and through
 * onionfront's proxy.
 *
 *   loadgen rate TARGET [-c CONC] [-d SECONDS] [-s SIZE] [-p PREFIX] [-w PID]...
 *       CONC connections at a time (default 32), each a NEW connection for ONE request: connect, send
 *       PREFIX (if any) and "GET /bytes/SIZE HTTP/1.0", read the whole answer until the server closes,
 *       check it (status 200, body length = Content-Length = SIZE), close, start the next. New requests
 *       stop after SECONDS (default 3); the ones in flight finish. Prints one line:
 *         requests=N errors=N seconds=S rps=R cpu_s=C
 *       where cpu_s is the utime+stime (from /proc/PID/stat) the -w processes used between the first
 *       connect and the last answer (0 without -w).
 *   loadgen bulk TARGET [-s SIZE] [-p PREFIX] [-w PID]...
 *       One connection, one request for SIZE bytes (default 10^9), read to the end. Prints
 *         bytes=N seconds=S mbps=R cpu_s=C          (mbps: 10^6 bytes per second, first connect to EOF)
 *       and exits 1 if the answer was not complete.
 *   loadgen serve ADDR:PORT
 *       An HTTP/1.0 server: "GET /bytes/N" answers N bytes ('a'..'z' repeated, streamed from one static
 *       buffer, so any N costs no memory), anything else 404; always closes after the answer. Prints
 *       "listening on ADDR:PORT"; exits on SIGTERM/SIGINT.
 *
 * TARGET is HOST:PORT (IPv4/IPv6 literal) or unix:/PATH. PREFIX takes C escapes \r \n \\ (e.g.
 * "PROXY TCP6 fc00:dead:beef:4dad::0:1 ::1 1 80\r\n", the line tor sends with
 * HiddenServiceExportCircuitID haproxy). Not part of the daemon; no global mutable state. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LOADGEN_MAX_WATCH 8
#define LOADGEN_MAX_READ (256 * 1024)    /* per read: bulk transfers need big reads to be cheap */
#define LOADGEN_HEADER_MAX 4096          /* an answer's header must fit in this */
#define SERVE_CHUNK (64 * 1024)          /* the static body buffer */
#define SERVE_HIGH (512 * 1024)          /* refill the output below this */

struct loadgen;

struct lg_conn {
    struct loadgen *lg;
    struct bufferevent *bev;
    bool header_done;
    long long content_length; /* -1 unknown */
    long long body;           /* body bytes read */
    int status;
};

struct loadgen {
    struct event_base *base;
    struct sockaddr_storage addr;
    int addrlen;
    const char *request; /* prefix + GET line, built once */
    size_t request_len;
    long long size;
    int conc;
    double seconds;
    bool bulk;
    bool stopping;  /* no new connections */
    int in_flight;
    unsigned long long requests, errors, bytes;
    double t_start, t_last;
    pid_t watch[LOADGEN_MAX_WATCH];
    int n_watch;
    double cpu_start;
    struct event *stop_ev;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of `pid` in seconds, or -1. Fields 14 and 15 of /proc/PID/stat, after the ")" that ends
 * the command name (which may itself contain spaces or parentheses). */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long ut = 0, st = 0;
    /* after ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(14) stime */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(ut + st) / (double)(hz > 0 ? hz : 100);
}

static double watched_cpu_s(const struct loadgen *lg)
{
    double sum = 0;
    for (int i = 0; i < lg->n_watch; i++) {
        double c = proc_cpu_s(lg->watch[i]);
        if (c >= 0)
            sum += c;
    }
    return sum;
}

/* Decode \r \n \\ in `s` into a new string; *len gets its length. */
static char *unescape(const char *s, size_t *len)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            *o++ = *s == 'r' ? '\r' : *s == 'n' ? '\n' : *s;
        } else {
            *o++ = *s;
        }
    }
    *len = (size_t)(o - out);
    return out;
}

static int parse_target(const char *t, struct sockaddr_storage *ss, int *len)
{
    memset(ss, 0, sizeof(*ss));
    if (strncmp(t, "unix:", 5) == 0) {
        struct sockaddr_un *su = (struct sockaddr_un *)ss;
        if (strlen(t + 5) >= sizeof(su->sun_path))
            return -1;
        su->sun_family = AF_UNIX;
        strcpy(su->sun_path, t + 5);
        *len = (int)sizeof(*su);
        return 0;
    }
    *len = (int)sizeof(*ss);
    return evutil_parse_sockaddr_port(t, (struct sockaddr *)ss, len);
}

/* ---- client ------------------------------------------------------------------------------------------ */

static void lg_start_one(struct loadgen *lg);

static void lg_finish(struct loadgen *lg)
{
    lg->t_last = now_s();
    if (lg->stopping && lg->in_flight == 0)
        event_base_loopexit(lg->base, NULL);
}

/* End `c`: count it as a request or an error, free it, and (from the loop's callbacks, `restart`) start
 * the next one unless stopping. An immediate failure in lg_start_one does not restart, so a dead target
 * cannot recurse. */
static void lg_conn_end(struct lg_conn *c, bool ok, bool restart)
{
    struct loadgen *lg = c->lg;
    if (ok)
        lg->requests++;
    else
        lg->errors++;
    lg->bytes += (unsigned long long)c->body;
    bufferevent_free(c->bev);
    free(c);
    lg->in_flight--;
    if (restart && !lg->stopping && !lg->bulk)
        lg_start_one(lg);
    if (lg->bulk)
        lg->stopping = true;
    lg_finish(lg);
}

/* Parse the answer's header once it is complete: status and Content-Length. -1 if malformed. */
static int lg_parse_header(struct lg_conn *c, struct evbuffer *in)
{
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        return evbuffer_get_length(in) > LOADGEN_HEADER_MAX ? -1 : 0;
    size_t hlen = (size_t)end.pos + 4;
    char hdr[LOADGEN_HEADER_MAX + 8];
    if (hlen > LOADGEN_HEADER_MAX)
        return -1;
    evbuffer_remove(in, hdr, hlen);
    hdr[hlen] = '\0';
    if (sscanf(hdr, "HTTP/1.%*d %d", &c->status) != 1)
        return -1;
    c->content_length = -1;
    for (char *line = strstr(hdr, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0)
            c->content_length = strtoll(line + 17, NULL, 10);
    }
    c->header_done = true;
    return 1;
}

/* Take what `c` has read: the header once complete, then body bytes. -1 if the header is malformed. */
static int lg_consume(struct lg_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (!c->header_done) {
        int r = lg_parse_header(c, in);
        if (r <= 0)
            return r;
    }
    size_t n = evbuffer_get_length(in);
    c->body += (long long)n;
    evbuffer_drain(in, n);
    return 0;
}

static void lg_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    if (lg_consume(arg) < 0)
        lg_conn_end(arg, false, true);
}

static void lg_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct lg_conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (what & BEV_EVENT_EOF) {
        if (lg_consume(c) < 0) { /* anything left in the input */
            lg_conn_end(c, false, true);
            return;
        }
        bool ok = c->header_done && c->status == 200 && c->body == c->lg->size &&
                  (c->content_length < 0 || c->content_length == c->body);
        lg_conn_end(c, ok, true);
        return;
    }
    lg_conn_end(c, false, true); /* error or timeout */
}

static void lg_start_one(struct loadgen *lg)
{
    struct lg_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        lg->errors++;
        return;
    }
    c->lg = lg;
    c->bev = bufferevent_socket_new(lg->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        free(c);
        lg->errors++;
        return;
    }
    lg->in_flight++;
    bufferevent_set_max_single_read(c->bev, LOADGEN_MAX_READ);
    bufferevent_setcb(c->bev, lg_read_cb, NULL, lg_event_cb, c);
    struct timeval tmo = {30, 0};
    bufferevent_set_timeouts(c->bev, &tmo, &tmo);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    /* Queued before the connect completes; libevent writes it once connected. */
    bufferevent_write(c->bev, lg->request, lg->request_len);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&lg->addr, lg->addrlen) < 0)
        lg_conn_end(c, false, false); /* an immediate failure (e.g. no such unix socket) */
}

static void lg_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    struct loadgen *lg = arg;
    (void)fd;
    (void)what;
    lg->stopping = true;
    if (lg->in_flight == 0)
        event_base_loopexit(lg->base, NULL);
}

static int run_client(struct loadgen *lg)
{
    lg->t_start = now_s();
    lg->t_last = lg->t_start;
    lg->cpu_start = watched_cpu_s(lg);
    if (lg->bulk) {
        lg_start_one(lg);
    } else {
        struct timeval tv = {(time_t)lg->seconds, (suseconds_t)((lg->seconds - (double)(time_t)lg->seconds) * 1e6)};
        lg->stop_ev = evtimer_new(lg->base, lg_stop_cb, lg);
        evtimer_add(lg->stop_ev, &tv);
        for (int i = 0; i < lg->conc && !lg->stopping; i++)
            lg_start_one(lg);
    }
    if (lg->in_flight > 0)
        event_base_dispatch(lg->base);
    double cpu = lg->n_watch ? watched_cpu_s(lg) - lg->cpu_start : 0;
    double secs = lg->t_last - lg->t_start;
    if (secs <= 0)
        secs = 1e-9;
    if (lg->bulk) {
        printf("bytes=%llu seconds=%.4f mbps=%.2f cpu_s=%.3f\n", lg->bytes, secs, (double)lg->bytes / secs / 1e6, cpu);
        return lg->requests == 1 ? 0 : 1;
    }
    printf("requests=%llu errors=%llu seconds=%.4f rps=%.1f cpu_s=%.3f\n", lg->requests, lg->errors, secs,
           (double)lg->requests / secs, cpu);
    return lg->requests > 0 ? 0 : 1;
}

/* ---- server ------------------------------------------------------------------------------------------ */

struct srv {
    struct event_base *base;
    char chunk[SERVE_CHUNK];
};

struct srv_conn {
    struct srv *srv;
    long long left; /* body bytes still to queue; -1 while reading the request */
};

static void srv_conn_free(struct bufferevent *bev, struct srv_conn *sc)
{
    bufferevent_free(bev);
    free(sc);
}

static void srv_fill(struct bufferevent *bev, struct srv_conn *sc)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    while (sc->left > 0 && evbuffer_get_length(out) < SERVE_HIGH) {
        size_t n = sc->left < SERVE_CHUNK ? (size_t)sc->left : SERVE_CHUNK;
        evbuffer_add_reference(out, sc->srv->chunk, n, NULL, NULL); /* static: nothing to free */
        sc->left -= (long long)n;
    }
}

static void srv_write_cb(struct bufferevent *bev, void *arg)
{
    struct srv_conn *sc = arg;
    if (sc->left < 0)
        return;
    srv_fill(bev, sc);
    if (sc->left == 0 && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        srv_conn_free(bev, sc); /* all written: close, the client reads to EOF */
}

static void srv_read_cb(struct bufferevent *bev, void *arg)
{
    struct srv_conn *sc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (sc->left >= 0) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0) {
        if (evbuffer_get_length(in) > LOADGEN_HEADER_MAX)
            srv_conn_free(bev, sc);
        return;
    }
    char line[256];
    size_t n = evbuffer_get_length(in) < sizeof(line) - 1 ? evbuffer_get_length(in) : sizeof(line) - 1;
    evbuffer_copyout(in, line, n);
    line[n] = '\0';
    evbuffer_drain(in, evbuffer_get_length(in));
    long long size = -1;
    char *p = strstr(line, "GET /bytes/");
    if (p == line) {
        char *e;
        errno = 0;
        size = strtoll(p + 11, &e, 10);
        if (errno || e == p + 11 || *e != ' ' || size < 0)
            size = -1;
    }
    struct evbuffer *out = bufferevent_get_output(bev);
    if (size < 0) {
        evbuffer_add_printf(out, "HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n");
        sc->left = 0;
    } else {
        evbuffer_add_printf(out,
                            "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %lld\r\n"
                            "Connection: close\r\n\r\n",
                            size);
        sc->left = size;
        srv_fill(bev, sc);
    }
    bufferevent_setwatermark(bev, EV_WRITE, SERVE_HIGH / 2, 0);
}

static void srv_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct srv_conn *sc = arg;
    if (what & BEV_EVENT_EOF && sc->left >= 0)
        return; /* the client half-closed after its request: answer anyway */
    srv_conn_free(bev, sc);
}

static void srv_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct srv *s = arg;
    (void)l;
    (void)sa;
    (void)len;
    struct srv_conn *sc = calloc(1, sizeof(*sc));
    struct bufferevent *bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!sc || !bev) {
        free(sc);
        if (bev)
            bufferevent_free(bev);
        else
            evutil_closesocket(fd);
        return;
    }
    sc->srv = s;
    sc->left = -1;
    bufferevent_setcb(bev, srv_read_cb, srv_write_cb, srv_event_cb, sc);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void stop_signal_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

static int run_server(const char *addr)
{
    struct sockaddr_storage ss;
    int sslen;
    if (parse_target(addr, &ss, &sslen) < 0 || ss.ss_family == AF_UNIX) {
        fprintf(stderr, "loadgen serve: bad address %s (want HOST:PORT)\n", addr);
        return 2;
    }
    struct srv *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    for (size_t i = 0; i < sizeof(s->chunk); i++)
        s->chunk[i] = (char)('a' + (i % 26));
    s->base = event_base_new();
    struct evconnlistener *l = evconnlistener_new_bind(s->base, srv_accept_cb, s,
                                                       LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 1024,
                                                       (struct sockaddr *)&ss, sslen);
    if (!l) {
        fprintf(stderr, "loadgen serve: cannot listen on %s: %s\n", addr, strerror(errno));
        event_base_free(s->base);
        free(s);
        return 1;
    }
    struct event *st = evsignal_new(s->base, SIGTERM, stop_signal_cb, s->base);
    struct event *si = evsignal_new(s->base, SIGINT, stop_signal_cb, s->base);
    event_add(st, NULL);
    event_add(si, NULL);
    printf("listening on %s\n", addr);
    fflush(stdout);
    event_base_dispatch(s->base);
    evconnlistener_free(l);
    event_free(st);
    event_free(si);
    event_base_free(s->base);
    free(s);
    return 0;
}

/* ---- main -------------------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: loadgen rate TARGET [-c CONC] [-d SECONDS] [-s SIZE] [-p PREFIX] [-w PID]...\n"
                    "       loadgen bulk TARGET [-s SIZE] [-p PREFIX] [-w PID]...\n"
                    "       loadgen serve HOST:PORT\n"
                    "TARGET: HOST:PORT or unix:/PATH\n");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(argv[1], "serve") == 0)
        return run_server(argv[2]);
    if (strcmp(argv[1], "rate") != 0 && strcmp(argv[1], "bulk") != 0) {
        usage();
        return 2;
    }
    struct loadgen lg = {.conc = 32, .seconds = 3, .bulk = strcmp(argv[1], "bulk") == 0};
    lg.size = lg.bulk ? 1000000000LL : 1024;
    if (parse_target(argv[2], &lg.addr, &lg.addrlen) < 0) {
        fprintf(stderr, "loadgen: bad target %s\n", argv[2]);
        return 2;
    }
    const char *prefix = "";
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc) {
            usage();
            return 2;
        }
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (strcmp(argv[i - 1], "-c") == 0) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 10000)
                return fprintf(stderr, "loadgen: -c must be 1-10000\n"), 2;
            lg.conc = (int)n;
        } else if (strcmp(argv[i - 1], "-d") == 0) {
            lg.seconds = strtod(v, &end);
            if (*end || lg.seconds <= 0 || lg.seconds > 3600)
                return fprintf(stderr, "loadgen: -d must be 0-3600 s\n"), 2;
        } else if (strcmp(argv[i - 1], "-s") == 0) {
            lg.size = strtoll(v, &end, 10);
            if (*end || errno || lg.size < 0)
                return fprintf(stderr, "loadgen: bad -s\n"), 2;
        } else if (strcmp(argv[i - 1], "-p") == 0) {
            prefix = v;
        } else if (strcmp(argv[i - 1], "-w") == 0) {
            long pid = strtol(v, &end, 10);
            if (*end || pid < 1 || pid > INT_MAX || lg.n_watch == LOADGEN_MAX_WATCH)
                return fprintf(stderr, "loadgen: bad -w (at most %d)\n", LOADGEN_MAX_WATCH), 2;
            lg.watch[lg.n_watch++] = (pid_t)pid;
        } else {
            usage();
            return 2;
        }
    }
    size_t plen;
    char *pfx = unescape(prefix, &plen);
    char get[128];
    int glen = snprintf(get, sizeof(get), "GET /bytes/%lld HTTP/1.0\r\nHost: bench\r\n\r\n", lg.size);
    char *req = malloc(plen + (size_t)glen + 1);
    if (!pfx || !req)
        return 1;
    memcpy(req, pfx, plen);
    memcpy(req + plen, get, (size_t)glen + 1);
    free(pfx);
    lg.request = req;
    lg.request_len = plen + (size_t)glen;
    lg.base = event_base_new();
    int rc = run_client(&lg);
    if (lg.stop_ev)
        event_free(lg.stop_ev);
    event_base_free(lg.base);
    free(req);
    return rc;
}
