/* delayfwd.c — a TCP forwarder that adds a fixed one-way delay to every byte, in both directions.
 * The kernel here has no sch_netem, so the benchmarks emulate link latency by putting one of these in
 * front of each relay's ORPort (the relay listens on a NoAdvertise port, advertises this one).
 *
 *   delayfwd DELAY_MS LISTEN_PORT:TARGET_PORT [LISTEN_PORT:TARGET_PORT ...]
 *
 * All on 127.0.0.1. Prints "delayfwd ready" once listening. Each chunk read is held DELAY_MS before it
 * is written on; order is kept; a close from either side closes both after the delayed data is written
 * (tor's OR connections never half-close). Exits on SIGTERM. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

struct chunk {
    TAILQ_ENTRY(chunk) next;
    struct timeval due;
    struct evbuffer *data; /* NULL marks a half-close */
};
TAILQ_HEAD(chunk_q, chunk);

struct pipe_dir { /* one direction: bytes read from `from`, written to `to` after the delay */
    struct bufferevent *from, *to;
    struct chunk_q q;
    struct event *timer;
    struct fwd_conn *conn;
    int closed; /* a close was queued */
};

struct fwd_conn {
    struct fwd *fwd;
    struct bufferevent *client, *server;
    struct pipe_dir up, down; /* up: client -> server */
    int closing; /* a close reached the head of a queue: free once both outputs are flushed */
};

struct fwd {
    struct event_base *base;
    struct timeval delay;
    unsigned short target;
};

static void conn_free(struct fwd_conn *c)
{
    struct pipe_dir *dirs[2] = {&c->up, &c->down};
    for (int i = 0; i < 2; i++) {
        struct chunk *ch;
        while ((ch = TAILQ_FIRST(&dirs[i]->q))) {
            TAILQ_REMOVE(&dirs[i]->q, ch, next);
            if (ch->data)
                evbuffer_free(ch->data);
            free(ch);
        }
        event_free(dirs[i]->timer);
    }
    bufferevent_free(c->client);
    bufferevent_free(c->server);
    free(c);
}

static void dir_arm(struct pipe_dir *d)
{
    struct chunk *ch = TAILQ_FIRST(&d->q);
    if (!ch)
        return;
    struct timeval now, wait;
    gettimeofday(&now, NULL);
    if (timercmp(&ch->due, &now, >))
        timersub(&ch->due, &now, &wait);
    else
        timerclear(&wait);
    event_add(d->timer, &wait);
}

static void dir_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pipe_dir *d = arg;
    struct timeval now;
    (void)fd;
    (void)what;
    gettimeofday(&now, NULL);
    struct chunk *ch;
    while ((ch = TAILQ_FIRST(&d->q)) && !timercmp(&ch->due, &now, >)) {
        TAILQ_REMOVE(&d->q, ch, next);
        if (ch->data) {
            bufferevent_write_buffer(d->to, ch->data);
            evbuffer_free(ch->data);
        } else {
            struct fwd_conn *c = d->conn;
            free(ch);
            c->closing = 1;
            bufferevent_disable(c->client, EV_READ);
            bufferevent_disable(c->server, EV_READ);
            if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0 &&
                evbuffer_get_length(bufferevent_get_output(c->server)) == 0)
                conn_free(c);
            return;
        }
        free(ch);
    }
    dir_arm(d);
}

static void dir_push(struct pipe_dir *d, struct evbuffer *data)
{
    struct chunk *ch = calloc(1, sizeof(*ch));
    struct timeval now;
    gettimeofday(&now, NULL);
    timeradd(&now, &d->conn->fwd->delay, &ch->due);
    ch->data = data;
    int was_empty = TAILQ_EMPTY(&d->q);
    TAILQ_INSERT_TAIL(&d->q, ch, next);
    if (was_empty)
        dir_arm(d);
}

static struct pipe_dir *dir_of(struct fwd_conn *c, struct bufferevent *from)
{
    return from == c->client ? &c->up : &c->down;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct fwd_conn *c = arg;
    struct evbuffer *data = evbuffer_new();
    bufferevent_read_buffer(bev, data);
    dir_push(dir_of(c, bev), data);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct fwd_conn *c = arg;
    (void)bev;
    if (c->closing && evbuffer_get_length(bufferevent_get_output(c->client)) == 0 &&
        evbuffer_get_length(bufferevent_get_output(c->server)) == 0)
        conn_free(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct fwd_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (what & BEV_EVENT_EOF) {
        struct pipe_dir *d = dir_of(c, bev);
        if (!d->closed) {
            d->closed = 1;
            bufferevent_disable(bev, EV_READ);
            dir_push(d, NULL);
        }
        return;
    }
    if (what & BEV_EVENT_ERROR)
        conn_free(c);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    struct fwd *f = arg;
    (void)l;
    (void)sa;
    (void)len;
    struct fwd_conn *c = calloc(1, sizeof(*c));
    c->fwd = f;
    c->client = bufferevent_socket_new(f->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->server = bufferevent_socket_new(f->base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct pipe_dir *dirs[2] = {&c->up, &c->down};
    for (int i = 0; i < 2; i++) {
        TAILQ_INIT(&dirs[i]->q);
        dirs[i]->conn = c;
        dirs[i]->timer = evtimer_new(f->base, dir_timer_cb, dirs[i]);
    }
    c->up.from = c->client;
    c->up.to = c->server;
    c->down.from = c->server;
    c->down.to = c->client;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(f->target)};
    sin.sin_addr.s_addr = htonl(0x7f000001);
    bufferevent_setcb(c->client, read_cb, write_cb, event_cb, c);
    bufferevent_setcb(c->server, read_cb, write_cb, event_cb, c);
    if (bufferevent_socket_connect(c->server, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
        conn_free(c);
        return;
    }
    bufferevent_enable(c->client, EV_READ | EV_WRITE);
    bufferevent_enable(c->server, EV_READ | EV_WRITE);
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: delayfwd DELAY_MS LISTEN_PORT:TARGET_PORT ...\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    long ms = strtol(argv[1], NULL, 10);
    int n = argc - 2;
    struct fwd *fwds = calloc((size_t)n, sizeof(*fwds));
    struct evconnlistener **ls = calloc((size_t)n, sizeof(*ls));
    for (int i = 0; i < n; i++) {
        unsigned lp, tp;
        if (sscanf(argv[i + 2], "%u:%u", &lp, &tp) != 2 || !lp || lp > 65535 || !tp || tp > 65535) {
            fprintf(stderr, "delayfwd: bad pair %s\n", argv[i + 2]);
            return 2;
        }
        fwds[i].base = base;
        fwds[i].delay.tv_sec = ms / 1000;
        fwds[i].delay.tv_usec = (ms % 1000) * 1000;
        fwds[i].target = (unsigned short)tp;
        struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((unsigned short)lp)};
        sin.sin_addr.s_addr = htonl(0x7f000001);
        ls[i] = evconnlistener_new_bind(base, accept_cb, &fwds[i], LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 128,
                                        (struct sockaddr *)&sin, sizeof(sin));
        if (!ls[i]) {
            fprintf(stderr, "delayfwd: cannot listen on 127.0.0.1:%u\n", lp);
            return 1;
        }
    }
    struct event *st = evsignal_new(base, SIGTERM, stop_cb, base);
    struct event *si = evsignal_new(base, SIGINT, stop_cb, base);
    event_add(st, NULL);
    event_add(si, NULL);
    printf("delayfwd ready\n");
    fflush(stdout);
    event_base_dispatch(base);
    for (int i = 0; i < n; i++)
        evconnlistener_free(ls[i]);
    event_free(st);
    event_free(si);
    free(ls);
    free(fwds);
    event_base_free(base);
    return 0;
}
