/* binwatch.c — the tor executable's identity on disk, checked periodically (see binwatch.h).
 *
 * Why stat and not inotify: a package upgrade renames a new file over the old path, and the watched
 * path may be a symlink or sit in a directory onionfront does not own; four fields of stat(2) every 20 s
 * cost nothing and see every way a file can be replaced. */
#include "sidecar/core/binwatch.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct binwatch {
    struct event *timer; /* NULL without a base */
    binwatch_changed_fn fn;
    void *arg;
    char *path;              /* NULL: not watching */
    struct binwatch_id ref;  /* the file the tors run (taken at set_path or the last accepted change) */
    struct binwatch_id seen; /* at the last check */
};

void binwatch_id_of(const char *path, struct binwatch_id *id)
{
    struct stat st;
    memset(id, 0, sizeof(*id));
    if (stat(path, &st) < 0)
        return;
    id->ok = true;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->mtime = st.st_mtim;
    id->size = st.st_size;
}

bool binwatch_id_equal(const struct binwatch_id *a, const struct binwatch_id *b)
{
    return a->ok && b->ok && a->dev == b->dev && a->ino == b->ino && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec && a->size == b->size;
}

static void binwatch_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    binwatch_check(arg);
}

struct binwatch *binwatch_new(struct event_base *base, binwatch_changed_fn fn, void *arg)
{
    struct binwatch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->fn = fn;
    b->arg = arg;
    if (base && !(b->timer = event_new(base, -1, EV_PERSIST, binwatch_timer_cb, b))) {
        free(b);
        return NULL;
    }
    return b;
}

void binwatch_free(struct binwatch *b)
{
    if (!b)
        return;
    if (b->timer)
        event_free(b->timer);
    free(b->path);
    free(b);
}

int binwatch_set_path(struct binwatch *b, const char *path)
{
    char *copy = NULL;
    if (path && !(copy = strdup(path)))
        return -1;
    free(b->path);
    b->path = copy;
    if (b->timer)
        event_del(b->timer);
    if (!path)
        return 0;
    binwatch_id_of(path, &b->ref);
    b->seen = b->ref;
    if (b->timer)
        event_add(b->timer, &(struct timeval){BINWATCH_INTERVAL_S, 0});
    return 0;
}

void binwatch_check(struct binwatch *b)
{
    if (!b->path)
        return;
    struct binwatch_id now;
    binwatch_id_of(b->path, &now);
    bool settled = binwatch_id_equal(&now, &b->seen);
    b->seen = now;
    if (!now.ok || !settled || binwatch_id_equal(&now, &b->ref))
        return;
    if (!b->ref.ok || b->fn(b->arg, b->path) == 0)
        b->ref = now; /* a file that was missing at the start is not a change of the one tor runs */
}
