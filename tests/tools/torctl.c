/* torctl.c — a small control-port client for test scripts, built on controlproto (so it also exercises
 * the library from outside the daemon).
 *
 *   torctl SOCKET [-e EVENTS] [-t SECONDS] [COMMAND ...]
 *
 * Connects to tor's unix control socket, authenticates (SAFECOOKIE/COOKIE/NULL, whatever tor offers),
 * sends each COMMAND in order and prints every reply line as "NNN<sep>text" (data-block lines follow,
 * indented by one space). With -e (comma-separated event names) it subscribes and prints events as
 * "650 ..." lines until -t SECONDS have passed (default 10). Exit status 0 if every command got a 2xx. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_reply.h"

struct torctl {
    struct event_base *base;
    struct cp_conn *conn;
    char **cmds;
    int n_cmds;
    int answered;
    int failures;
    char *events;
    double seconds;
};

static void print_reply(const struct cp_reply *r)
{
    for (size_t i = 0; i < r->n_lines; i++) {
        const struct cp_line *l = &r->lines[i];
        printf("%03d%c%s\n", l->status, l->sep, l->text);
        if (l->data) {
            const char *p = l->data;
            while (*p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                printf(" %.*s\n", (int)n, p);
                p += n + (nl ? 1 : 0);
            }
        }
    }
    fflush(stdout);
}

static void torctl_event_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    (void)c;
    (void)arg;
    print_reply(ev);
}

static void torctl_done(struct torctl *t)
{
    if (t->events) {
        struct timeval tv = {(time_t)t->seconds, (suseconds_t)((t->seconds - (double)(time_t)t->seconds) * 1e6)};
        event_base_loopexit(t->base, &tv);
    } else {
        event_base_loopexit(t->base, NULL);
    }
}

static void torctl_reply_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct torctl *t = arg;
    (void)c;
    if (!r) {
        fprintf(stderr, "torctl: %s\n", err);
        t->failures++;
    } else {
        print_reply(r);
        if (!cp_reply_is_ok(r))
            t->failures++;
    }
    if (++t->answered == t->n_cmds + (t->events ? 1 : 0))
        torctl_done(t);
}

static void torctl_state_cb(struct cp_conn *c, enum cp_conn_state st, const char *err, void *arg)
{
    struct torctl *t = arg;
    char e[256];
    if (st == CP_CONN_CLOSED) {
        if (err)
            fprintf(stderr, "torctl: connection closed: %s\n", err);
        if (err)
            t->failures++;
        event_base_loopexit(t->base, NULL);
        return;
    }
    if (st != CP_CONN_READY)
        return;
    if (t->events) {
        const char *names[32];
        size_t n = 0;
        for (char *tok = strtok(t->events, ","); tok && n < 32; tok = strtok(NULL, ","))
            names[n++] = tok;
        cp_conn_subscribe(c, "*", torctl_event_cb, t);
        char *cmd = cp_cmd_setevents(names, n, e, sizeof(e));
        if (!cmd || cp_conn_send(c, cmd, torctl_reply_cb, t, e, sizeof(e)) < 0) {
            fprintf(stderr, "torctl: %s\n", e);
            t->failures++;
            event_base_loopexit(t->base, NULL);
        }
        free(cmd);
    }
    for (int i = 0; i < t->n_cmds; i++) {
        size_t len = strlen(t->cmds[i]);
        char *cmd = malloc(len + 3);
        memcpy(cmd, t->cmds[i], len);
        memcpy(cmd + len, "\r\n", 3);
        if (cp_conn_send(c, cmd, torctl_reply_cb, t, e, sizeof(e)) < 0) {
            fprintf(stderr, "torctl: %s\n", e);
            t->failures++;
        }
        free(cmd);
    }
    if (t->n_cmds == 0 && !t->events)
        event_base_loopexit(t->base, NULL);
}

int main(int argc, char **argv)
{
    struct torctl t = {.seconds = 10};
    int i = 2;
    if (argc < 2) {
        fprintf(stderr, "usage: torctl SOCKET [-e EVENTS] [-t SECONDS] [COMMAND ...]\n");
        return 2;
    }
    for (; i < argc; i++) {
        if (strcmp(argv[i], "-e") == 0 && i + 1 < argc)
            t.events = argv[++i];
        else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
            t.seconds = atof(argv[++i]);
        else
            break;
    }
    t.cmds = argv + i;
    t.n_cmds = argc - i;
    t.base = event_base_new();
    char err[256];
    struct cp_conn_opts o = {.unix_path = argv[1], .auth = CP_AUTH_AUTO};
    o.cmd_timeout.tv_sec = 30;
    t.conn = cp_conn_new(t.base, &o, torctl_state_cb, &t, err, sizeof(err));
    if (!t.conn || cp_conn_connect(t.conn, err, sizeof(err)) < 0) {
        fprintf(stderr, "torctl: %s\n", err);
        return 1;
    }
    /* Hard bound on the whole run. */
    struct timeval bound = {(time_t)t.seconds + 60, 0};
    event_base_loopexit(t.base, &bound);
    event_base_dispatch(t.base);
    cp_conn_free(t.conn);
    event_base_free(t.base);
    return t.failures ? 1 : 0;
}
