/* binwatch.h — notice when the tor executable on disk changes, as when a package upgrade replaces
 * /usr/bin/tor: every BINWATCH_INTERVAL_S seconds stat the path (device, inode, modification time,
 * size). A file that differs from the one the tors were started from and is still the same at the next
 * check (so a copy in progress is not taken) is reported once through a callback, which may decline it
 * (a rolling restart already running, a file that does not run): then it is offered again at the next
 * check. A path that cannot be stat'ed (between an unlink and a rename) is only waited for.
 *
 * Owns one timer and the identities it compares. Not what a change means (workerset.c rolls the tors);
 * never logs. */
#ifndef ONIONFRONT_BINWATCH_H
#define ONIONFRONT_BINWATCH_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

struct event_base;
struct binwatch;

#define BINWATCH_INTERVAL_S 20 /* a change is reported 20-40 s after it happened */

/* What identifies the file's contents without reading it. */
struct binwatch_id {
    bool ok; /* stat succeeded */
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    off_t size;
};

/* Fill *id for `path` (id->ok false if stat fails). */
void binwatch_id_of(const char *path, struct binwatch_id *id);
/* Same file (both stat'ed, all four equal)? */
bool binwatch_id_equal(const struct binwatch_id *a, const struct binwatch_id *b);

/* The file at `path` changed and settled. Return 0 to take it (it becomes the new reference), or -1 to be
 * asked again at the next check. */
typedef int (*binwatch_changed_fn)(void *arg, const char *path);

/* A watcher reporting to `fn` (`base` drives the timer; NULL: the caller calls binwatch_check). Watches
 * nothing until binwatch_set_path. NULL on OOM. */
struct binwatch *binwatch_new(struct event_base *base, binwatch_changed_fn fn, void *arg);
void binwatch_free(struct binwatch *b); /* NULL is a no-op */

/* Watch `path` (copied), taking the file there now as the reference; NULL stops watching. Return 0, or -1
 * on OOM (the old path stays). */
int binwatch_set_path(struct binwatch *b, const char *path);

/* One check now (the timer's work). */
void binwatch_check(struct binwatch *b);

#endif
