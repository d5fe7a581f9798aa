/* fake_ctl.c — a scripted fake tor control port for tests (see fake_ctl.h).
 *
 * Owns its temporary directory, listener, client socket, read buffer, pause timer and SAFECOOKIE state.
 * It checks what the client writes only as far as the script says and implements nothing of tor beyond
 * the SAFECOOKIE hashes (control-spec 3.24), computed here independently of controlproto/. */
#include "tests/fake/fake_ctl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define FAKE_CTL_COOKIE_LEN 32

struct fake_ctl {
    struct event_base *base;
    const struct fake_ctl_step *script;
    size_t n, step;
    char dir[64];
    char path[96];
    unsigned short port;
    struct evconnlistener *listener;
    evutil_socket_t fd; /* client, or -1 */
    evutil_socket_t queued[4]; /* connections accepted while a client was open, oldest first */
    size_t n_queued;
    struct event *read_ev;
    struct event *pause_ev;
    struct evbuffer *in;
    bool eof;     /* the current client closed its end */
    bool pausing;
    bool failed;
    size_t conns;
    char failure[512];
    unsigned char cookie[FAKE_CTL_COOKIE_LEN];
    bool have_cookie;
    unsigned char client_hash[32];
    bool have_client_hash;
};

const char *fake_ctl_op_str(enum fake_ctl_op op)
{
    switch (op) {
    case FAKE_CTL_EXPECT: return "EXPECT";
    case FAKE_CTL_EXPECT_PREFIX: return "EXPECT_PREFIX";
    case FAKE_CTL_SEND: return "SEND";
    case FAKE_CTL_PAUSE: return "PAUSE";
    case FAKE_CTL_CLOSE: return "CLOSE";
    case FAKE_CTL_EXPECT_EOF: return "EXPECT_EOF";
    case FAKE_CTL_COOKIE_AUTH: return "COOKIE_AUTH";
    case FAKE_CTL_SAFECOOKIE: return "SAFECOOKIE";
    case FAKE_CTL_SAFECOOKIE_BAD: return "SAFECOOKIE_BAD";
    case FAKE_CTL_SAFECOOKIE_AUTH: return "SAFECOOKIE_AUTH";
    }
    return "?";
}

static void fake_ctl_fail(struct fake_ctl *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fake_ctl_fail(struct fake_ctl *f, const char *fmt, ...)
{
    va_list ap;
    int off;

    if (f->failed)
        return;
    f->failed = true;
    off = snprintf(f->failure, sizeof f->failure, "step %zu (%s): ", f->step,
                   f->step < f->n ? fake_ctl_op_str(f->script[f->step].op) : "end");
    va_start(ap, fmt);
    vsnprintf(f->failure + off, sizeof f->failure - (size_t)off, fmt, ap);
    va_end(ap);
}

static void fake_ctl_drop_client(struct fake_ctl *f)
{
    if (f->read_ev) {
        event_free(f->read_ev);
        f->read_ev = NULL;
    }
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
}

/* Take one line from the client. Return 1 and a new string (without CRLF), 0 if none is complete yet, or
 * -1 after recording a mismatch. */
static int fake_ctl_take_line(struct fake_ctl *f, char **line)
{
    size_t len = 0;
    char *l = evbuffer_readln(f->in, &len, EVBUFFER_EOL_LF);

    if (!l)
        return 0;
    if (len == 0 || l[len - 1] != '\r') {
        fake_ctl_fail(f, "line not terminated by CRLF: \"%.200s\"", l);
        free(l);
        return -1;
    }
    l[len - 1] = '\0';
    *line = l;
    return 1;
}

static int fake_ctl_write(struct fake_ctl *f, const char *buf, size_t len)
{
    ssize_t n = send(f->fd, buf, len, MSG_NOSIGNAL);

    if (n < 0 || (size_t)n != len) {
        fake_ctl_fail(f, "send of %zu bytes: %s", len, n < 0 ? strerror(errno) : "short write");
        return -1;
    }
    return 0;
}

/* SEND: replace "@DIR@" and write in one call. */
static void fake_ctl_send_text(struct fake_ctl *f, const char *text)
{
    struct evbuffer *b = evbuffer_new();
    const char *p = text, *at;
    size_t len;

    while ((at = strstr(p, "@DIR@")) != NULL) {
        evbuffer_add(b, p, (size_t)(at - p));
        evbuffer_add(b, f->dir, strlen(f->dir));
        p = at + 5;
    }
    evbuffer_add(b, p, strlen(p));
    len = evbuffer_get_length(b);
    fake_ctl_write(f, (const char *)evbuffer_pullup(b, -1), len);
    evbuffer_free(b);
}

static void fake_ctl_hex(char *out, const unsigned char *buf, size_t len)
{
    size_t n = 0;

    OPENSSL_buf2hexstr_ex(out, 2 * len + 1, &n, buf, len, '\0');
}

static bool fake_ctl_hex_equal(const char *got, const unsigned char *want, size_t len)
{
    char hex[2 * 64 + 1];

    fake_ctl_hex(hex, want, len);
    return OPENSSL_strcasecmp(got, hex) == 0;
}

static void fake_ctl_safecookie(struct fake_ctl *f, const char *line, bool corrupt)
{
    static const char prefix[] = "AUTHCHALLENGE SAFECOOKIE ";
    unsigned char msg[FAKE_CTL_COOKIE_LEN + 64], server_hash[32];
    unsigned int hlen = 0;
    size_t got = 0;
    char hash_hex[65], nonce_hex[65], reply[256];

    if (!f->have_cookie) {
        fake_ctl_fail(f, "no cookie: call fake_ctl_write_cookie first");
        return;
    }
    if (strncmp(line, prefix, sizeof prefix - 1) != 0 || strlen(line + sizeof prefix - 1) != 64 ||
        !OPENSSL_hexstr2buf_ex(msg + FAKE_CTL_COOKIE_LEN, 32, &got, line + sizeof prefix - 1, '\0') ||
        got != 32) {
        fake_ctl_fail(f, "expected \"AUTHCHALLENGE SAFECOOKIE <64 hex>\", got \"%.200s\"", line);
        return;
    }
    memcpy(msg, f->cookie, FAKE_CTL_COOKIE_LEN);
    RAND_bytes(msg + FAKE_CTL_COOKIE_LEN + 32, 32);
    HMAC(EVP_sha256(), "Tor safe cookie authentication server-to-controller hash", 56, msg, sizeof msg,
         server_hash, &hlen);
    HMAC(EVP_sha256(), "Tor safe cookie authentication controller-to-server hash", 56, msg, sizeof msg,
         f->client_hash, &hlen);
    f->have_client_hash = true;
    if (corrupt)
        server_hash[7] ^= 0x10;
    fake_ctl_hex(hash_hex, server_hash, 32);
    fake_ctl_hex(nonce_hex, msg + FAKE_CTL_COOKIE_LEN + 32, 32);
    snprintf(reply, sizeof reply, "250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n", hash_hex, nonce_hex);
    fake_ctl_write(f, reply, strlen(reply));
}

static void fake_ctl_pause_cb(evutil_socket_t fd, short what, void *arg);
static void fake_ctl_read_cb(evutil_socket_t fd, short what, void *arg);

/* Make the oldest queued connection the current client. */
static void fake_ctl_adopt(struct fake_ctl *f)
{
    f->fd = f->queued[0];
    memmove(f->queued, f->queued + 1, (f->n_queued - 1) * sizeof f->queued[0]);
    f->n_queued--;
    f->eof = false;
    evbuffer_drain(f->in, evbuffer_get_length(f->in));
    f->read_ev = event_new(f->base, f->fd, EV_READ | EV_PERSIST, fake_ctl_read_cb, f);
    event_add(f->read_ev, NULL);
}

/* Run steps until one has to wait for input, a connection or a pause. */
static void fake_ctl_advance(struct fake_ctl *f)
{
    while (!f->failed && f->step < f->n) {
        const struct fake_ctl_step *s = &f->script[f->step];
        char *line = NULL;
        int rc;

        if (f->fd < 0 && !f->eof && f->n_queued > 0)
            fake_ctl_adopt(f);

        switch (s->op) {
        case FAKE_CTL_PAUSE: {
            struct timeval tv = { (time_t)(s->ms / 1000), (suseconds_t)(s->ms % 1000) * 1000 };

            if (!f->pausing) {
                f->pausing = true;
                evtimer_add(f->pause_ev, &tv);
            }
            return;
        }
        case FAKE_CTL_SEND:
        case FAKE_CTL_CLOSE:
            if (f->fd < 0) {
                if (f->eof)
                    fake_ctl_fail(f, "the client closed the connection first");
                return; /* not connected yet */
            }
            if (s->op == FAKE_CTL_SEND) {
                fake_ctl_send_text(f, s->text);
            } else {
                fake_ctl_drop_client(f);
                evbuffer_drain(f->in, evbuffer_get_length(f->in));
            }
            break;
        case FAKE_CTL_EXPECT_EOF:
            rc = fake_ctl_take_line(f, &line);
            if (rc > 0) {
                fake_ctl_fail(f, "expected the client to close, got \"%.200s\"", line);
                free(line);
            }
            if (rc != 0 || !f->eof)
                return;
            f->eof = false; /* consumed: later steps wait for a new connection */
            break;
        default: /* the steps that read a line */
            rc = fake_ctl_take_line(f, &line);
            if (rc < 0)
                return;
            if (rc == 0) {
                if (f->eof)
                    fake_ctl_fail(f, "the client closed the connection; expected a line (\"%s\")",
                                  s->text ? s->text : fake_ctl_op_str(s->op));
                return;
            }
            if (s->op == FAKE_CTL_EXPECT && strcmp(line, s->text) != 0)
                fake_ctl_fail(f, "expected \"%s\", got \"%.200s\"", s->text, line);
            else if (s->op == FAKE_CTL_EXPECT_PREFIX && strncmp(line, s->text, strlen(s->text)) != 0)
                fake_ctl_fail(f, "expected a line starting with \"%s\", got \"%.200s\"", s->text, line);
            else if (s->op == FAKE_CTL_COOKIE_AUTH &&
                     (!f->have_cookie || strncmp(line, "AUTHENTICATE ", 13) != 0 ||
                      !fake_ctl_hex_equal(line + 13, f->cookie, FAKE_CTL_COOKIE_LEN)))
                fake_ctl_fail(f, "expected AUTHENTICATE with the cookie in hex, got \"%.200s\"", line);
            else if (s->op == FAKE_CTL_SAFECOOKIE_AUTH &&
                     (!f->have_client_hash || strncmp(line, "AUTHENTICATE ", 13) != 0 ||
                      !fake_ctl_hex_equal(line + 13, f->client_hash, 32)))
                fake_ctl_fail(f, "expected AUTHENTICATE with the SAFECOOKIE client hash, got \"%.200s\"", line);
            else if (s->op == FAKE_CTL_SAFECOOKIE || s->op == FAKE_CTL_SAFECOOKIE_BAD)
                fake_ctl_safecookie(f, line, s->op == FAKE_CTL_SAFECOOKIE_BAD);
            free(line);
            break;
        }
        if (!f->failed)
            f->step++;
    }
}

static void fake_ctl_pause_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fake_ctl *f = arg;

    (void)fd;
    (void)what;
    f->pausing = false;
    f->step++;
    fake_ctl_advance(f);
}

static void fake_ctl_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fake_ctl *f = arg;
    int n = evbuffer_read(f->in, fd, 4096);

    (void)what;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        f->eof = true;
        fake_ctl_drop_client(f);
    }
    fake_ctl_advance(f);
}

static void fake_ctl_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen,
                               void *arg)
{
    struct fake_ctl *f = arg;

    (void)l;
    (void)sa;
    (void)socklen;
    f->conns++;
    if (f->n_queued == sizeof f->queued / sizeof f->queued[0]) {
        close(fd);
        return;
    }
    /* A client that reconnects at once may be accepted before its old connection's EOF is read: queue it
     * until the script is done with the current one. */
    f->queued[f->n_queued++] = fd;
    fake_ctl_advance(f);
}

struct fake_ctl *fake_ctl_new(struct event_base *base, bool tcp, const struct fake_ctl_step *script, size_t n,
                              char *err, size_t errlen)
{
    struct fake_ctl *f = calloc(1, sizeof *f);
    const unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;

    if (!f) {
        snprintf(err, errlen, "fake_ctl_new: out of memory");
        return NULL;
    }
    f->base = base;
    f->script = script;
    f->n = n;
    f->fd = -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/fake_ctl.XXXXXX");
    if (!mkdtemp(f->dir)) {
        snprintf(err, errlen, "fake_ctl_new: mkdtemp: %s", strerror(errno));
        free(f);
        return NULL;
    }
    f->in = evbuffer_new();
    f->pause_ev = evtimer_new(base, fake_ctl_pause_cb, f);
    if (tcp) {
        struct sockaddr_in sin;
        socklen_t len = sizeof sin;

        memset(&sin, 0, sizeof sin);
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        f->listener = evconnlistener_new_bind(base, fake_ctl_accept_cb, f, flags, 8, (struct sockaddr *)&sin,
                                              (int)sizeof sin);
        if (f->listener &&
            getsockname(evconnlistener_get_fd(f->listener), (struct sockaddr *)&sin, &len) == 0)
            f->port = ntohs(sin.sin_port);
    } else {
        struct sockaddr_un sun_addr;

        memset(&sun_addr, 0, sizeof sun_addr);
        sun_addr.sun_family = AF_UNIX;
        snprintf(f->path, sizeof f->path, "%s/sock", f->dir);
        snprintf(sun_addr.sun_path, sizeof sun_addr.sun_path, "%s", f->path);
        f->listener = evconnlistener_new_bind(base, fake_ctl_accept_cb, f, flags & ~LEV_OPT_REUSEABLE, 8,
                                              (struct sockaddr *)&sun_addr, (int)sizeof sun_addr);
    }
    if (!f->in || !f->pause_ev || !f->listener || (tcp && f->port == 0)) {
        snprintf(err, errlen, "fake_ctl_new: cannot listen on %s: %s", tcp ? "127.0.0.1" : f->path,
                 strerror(errno));
        fake_ctl_free(f);
        return NULL;
    }
    return f;
}

void fake_ctl_free(struct fake_ctl *f)
{
    DIR *d;
    struct dirent *e;
    char p[512];

    if (!f)
        return;
    fake_ctl_drop_client(f);
    while (f->n_queued > 0)
        close(f->queued[--f->n_queued]);
    if (f->listener)
        evconnlistener_free(f->listener);
    if (f->pause_ev)
        event_free(f->pause_ev);
    if (f->in)
        evbuffer_free(f->in);
    d = opendir(f->dir);
    if (d) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    OPENSSL_cleanse(f->cookie, sizeof f->cookie);
    free(f);
}

const char *fake_ctl_dir(const struct fake_ctl *f)
{
    return f->dir;
}

const char *fake_ctl_unix_path(const struct fake_ctl *f)
{
    return f->path[0] ? f->path : NULL;
}

unsigned short fake_ctl_port(const struct fake_ctl *f)
{
    return f->port;
}

int fake_ctl_write_cookie(struct fake_ctl *f, const char *name, const unsigned char *cookie, size_t len,
                          char *err, size_t errlen)
{
    char p[512];
    int fd;
    ssize_t w;

    snprintf(p, sizeof p, "%s/%s", f->dir, name);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "fake_ctl_write_cookie: %s: %s", p, strerror(errno));
        return -1;
    }
    w = write(fd, cookie, len);
    close(fd);
    if (w < 0 || (size_t)w != len) {
        snprintf(err, errlen, "fake_ctl_write_cookie: %s: short write", p);
        return -1;
    }
    if (len == FAKE_CTL_COOKIE_LEN) {
        memcpy(f->cookie, cookie, len);
        f->have_cookie = true;
    }
    return 0;
}

bool fake_ctl_done(const struct fake_ctl *f)
{
    return !f->failed && f->step == f->n;
}

const char *fake_ctl_failure(const struct fake_ctl *f)
{
    return f->failed ? f->failure : NULL;
}

size_t fake_ctl_connections(const struct fake_ctl *f)
{
    return f->conns;
}

static void fake_ctl_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(bool *)arg = true;
}

int fake_ctl_run_until(struct event_base *base, bool (*done)(void *arg), void *arg, unsigned timeout_ms)
{
    bool expired = false;
    struct timeval tv = { (time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000 };
    struct event *t = evtimer_new(base, fake_ctl_deadline_cb, &expired);

    if (!t)
        return -1;
    evtimer_add(t, &tv);
    while (!done(arg) && !expired)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
    return done(arg) ? 0 : -1;
}
