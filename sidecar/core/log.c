/* log.c — formats and writes log lines to stderr (text, JSON, journald priorities); owns the level
 * threshold and its run-time override, and the per-call-site rate limit (see log.h). Knows no other
 * module; libevent only to take over its log callback. */
#include "sidecar/core/log.h"

#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#include "sidecar/core/clock.h"

#define LOG_LINE_MAX 4096     /* bytes of one message; longer ones are cut */
#define LOG_SITES 128         /* call sites tracked by the rate limit at once */
#define LOG_SITE_PROBE 8      /* slots tried per call site before it goes unlimited */
#define LOG_SITE_TEXT 240     /* bytes of the first held-back message kept for the summary */
#define LOG_FIELD_MAX 64      /* bytes of a field kept for the summary */
#define LOG_OVERRIDE_MAX_S (7u * 24 * 3600)

/* One call site's window. A slot is free when key is 0, or when its window is over and nothing is
 * held back. */
struct log_site {
    uintptr_t key;        /* the format string's address, or a relayed line's hash */
    uint64_t start;       /* window start, ms */
    unsigned count;       /* lines written in this window */
    unsigned long held;   /* lines held back in this window */
    enum log_level level; /* of the first held-back line */
    char text[LOG_SITE_TEXT];
    char service[LOG_FIELD_MAX], backend[LOG_FIELD_MAX], worker[LOG_FIELD_MAX];
};

static struct log_state {
    enum log_level level; /* configured */
    enum log_format format;
    bool journal;
    bool override_on;
    enum log_level override_level;
    uint64_t override_until; /* ms on the clock; 0 = until changed */
    unsigned override_s;
    uint64_t (*now)(void);
    size_t n_held;      /* sites with held lines */
    uint64_t next_flush; /* earliest end of a window with held lines */
    struct log_site sites[LOG_SITES];
} L = {.level = LOG_LVL_INFO, .now = clock_now_ms};

static const char *const level_names[] = {"debug", "info", "notice", "warn", "error"};
static const int level_priorities[] = {7, 6, 5, 4, 3};
static const char *const format_names[] = {"text", "json"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int log_name_index(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return (int)i;
    return -1;
}

const char *log_level_str(enum log_level l)
{
    return (unsigned)l < COUNT(level_names) ? level_names[l] : "unknown";
}

int log_level_parse(const char *s, enum log_level *out)
{
    int i = log_name_index(level_names, COUNT(level_names), s);
    if (i < 0)
        return -1;
    *out = (enum log_level)i;
    return 0;
}

int log_level_priority(enum log_level l)
{
    return (unsigned)l < COUNT(level_priorities) ? level_priorities[l] : 3;
}

const char *log_format_str(enum log_format f)
{
    return (unsigned)f < COUNT(format_names) ? format_names[f] : "unknown";
}

int log_format_parse(const char *s, enum log_format *out)
{
    int i = log_name_index(format_names, COUNT(format_names), s);
    if (i < 0)
        return -1;
    *out = (enum log_format)i;
    return 0;
}

void log_set_level(enum log_level l)
{
    L.level = l;
}

void log_set_format(enum log_format f)
{
    L.format = f;
}

void log_configure(const char *level, const char *format)
{
    enum log_level l;
    enum log_format f;
    if (log_level_parse(level, &l) == 0)
        L.level = l;
    if (log_format_parse(format, &f) == 0)
        L.format = f;
}

bool log_detect_journal(void)
{
    /* systemd.exec(5): JOURNAL_STREAM is "<st_dev>:<st_ino>" of the stream it connected; a child that
     * redirected stderr elsewhere inherits the variable but not the stream, hence the fstat check. */
    const char *e = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    char extra;
    struct stat st;
    L.journal = e && sscanf(e, "%llu:%llu%c", &dev, &ino, &extra) == 2 && fstat(2, &st) == 0 &&
                (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    return L.journal;
}

void log_set_journal(bool on)
{
    L.journal = on;
}

void log_set_clock(uint64_t (*now_ms)(void))
{
    L.now = now_ms ? now_ms : clock_now_ms;
    memset(L.sites, 0, sizeof(L.sites));
    L.n_held = 0;
    L.next_flush = 0;
}

/* ---- writing one line ------------------------------------------------------------------------------ */

/* Copy `in` to `out` (at least 3 * strlen(in) + 1 bytes) as valid UTF-8: each byte that does not start
 * a well-formed sequence (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF)
 * becomes U+FFFD. jansson refuses strings that are not UTF-8. */
static void log_utf8_clean(const char *in, char *out)
{
    const unsigned char *p = (const unsigned char *)in;
    char *o = out;
    while (*p) {
        unsigned char c = p[0];
        size_t n = c < 0x80                 ? 1
                   : c >= 0xc2 && c <= 0xdf ? 2
                   : c >= 0xe0 && c <= 0xef ? 3
                   : c >= 0xf0 && c <= 0xf4 ? 4
                                            : 0;
        bool ok = n > 0;
        for (size_t i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (ok && n == 3)
            ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0);
        if (ok && n == 4)
            ok = !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
        if (!ok) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
            continue;
        }
        memcpy(o, p, n);
        o += n;
        p += n;
    }
    *o = '\0';
}

/* The module of a message: its first word when that is lower-case and ends in ':' or ' '. */
static void log_module(const char *msg, char *out, size_t outlen)
{
    size_t n = 0;
    while (n < outlen - 1 && ((msg[n] >= 'a' && msg[n] <= 'z') || (msg[n] >= '0' && msg[n] <= '9') || msg[n] == '_'))
        n++;
    if (n == 0 || (msg[n] != ':' && msg[n] != ' ')) {
        snprintf(out, outlen, "onionfront");
        return;
    }
    memcpy(out, msg, n);
    out[n] = '\0';
}

/* The JSON object of one message; a new malloc'd compact line without "\n", or NULL on OOM. */
static char *log_json_line(enum log_level l, const struct log_fields *f, const char *msg, const struct timeval *tv)
{
    char when[40], module[32], clean[3 * LOG_LINE_MAX + 1];
    struct tm tm;
    gmtime_r(&tv->tv_sec, &tm);
    size_t off = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + off, sizeof(when) - off, ".%03ldZ", (long)(tv->tv_usec / 1000));
    log_module(msg, module, sizeof(module));
    log_utf8_clean(msg, clean);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "time", when, "level", log_level_str(l), "module", module,
                          "message", clean);
    const char *names[] = {"service", "backend", "worker"};
    const char *values[] = {f ? f->service : NULL, f ? f->backend : NULL, f ? f->worker : NULL};
    for (size_t i = 0; o && i < COUNT(names); i++) {
        if (!values[i] || !values[i][0])
            continue;
        char v[3 * LOG_FIELD_MAX + 1], cut[LOG_FIELD_MAX];
        snprintf(cut, sizeof(cut), "%s", values[i]);
        log_utf8_clean(cut, v);
        json_object_set_new(o, names[i], json_string(v));
    }
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return line;
}

/* Write one finished message (no rate limit, no threshold). One fwrite per line so concurrent writers
 * do not interleave mid-line. */
static void log_emit(enum log_level l, const struct log_fields *f, const char *msg)
{
    char line[LOG_LINE_MAX + 64];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    size_t off = 0;
    if (L.journal)
        off = (size_t)snprintf(line, sizeof(line), "<%d>", log_level_priority(l));
    if (L.format == LOG_FORMAT_JSON) {
        char *json = log_json_line(l, f, msg, &tv);
        if (json) {
            fprintf(stderr, "%.*s%s\n", (int)off, line, json);
            fflush(stderr);
            free(json);
            return;
        }
        /* out of memory: the text line below still says what happened */
    } else if (!L.journal) {
        struct tm tm;
        localtime_r(&tv.tv_sec, &tm);
        off = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
        off += (size_t)snprintf(line + off, sizeof(line) - off, ".%03ld [%s] ", (long)(tv.tv_usec / 1000),
                                log_level_str(l));
    }
    for (const char *p = msg; *p && off < sizeof(line) - 1; p++)
        line[off++] = *p == '\n' || *p == '\r' ? ' ' : *p; /* one message, one line */
    line[off] = '\n';
    fwrite(line, 1, off + 1, stderr);
    fflush(stderr);
}

/* ---- the rate limit -------------------------------------------------------------------------------- */

static uint64_t log_now(void)
{
    return L.now();
}

static void log_site_summary(struct log_site *s)
{
    char msg[LOG_SITE_TEXT + 64];
    struct log_fields f = {s->service[0] ? s->service : NULL, s->backend[0] ? s->backend : NULL,
                           s->worker[0] ? s->worker : NULL};
    snprintf(msg, sizeof(msg), "%s ... repeated %lu more time%s", s->text, s->held, s->held == 1 ? "" : "s");
    log_emit(s->level, &f, msg);
    s->held = 0;
    L.n_held--;
}

void log_flush(bool all)
{
    if (!L.n_held)
        return;
    uint64_t now = log_now(), next = UINT64_MAX;
    for (size_t i = 0; i < LOG_SITES && L.n_held; i++) {
        struct log_site *s = &L.sites[i];
        if (!s->held)
            continue;
        if (all || now - s->start >= LOG_RATE_WINDOW_MS)
            log_site_summary(s);
        else if (s->start + LOG_RATE_WINDOW_MS < next)
            next = s->start + LOG_RATE_WINDOW_MS;
    }
    L.next_flush = next;
}

/* The slot of `key`, claimed if new; NULL when every slot it may use is busy (then it is not limited). */
static struct log_site *log_site_get(uintptr_t key, uint64_t now)
{
    struct log_site *free_slot = NULL;
    size_t h = (size_t)((key ^ (key >> 17)) * 0x9e3779b97f4a7c15ull >> 32);
    for (size_t i = 0; i < LOG_SITE_PROBE; i++) {
        struct log_site *s = &L.sites[(h + i) % LOG_SITES];
        if (s->key == key)
            return s;
        if (!free_slot && (s->key == 0 || (!s->held && now - s->start >= LOG_RATE_WINDOW_MS)))
            free_slot = s;
    }
    if (free_slot)
        *free_slot = (struct log_site){.key = key, .start = now};
    return free_slot;
}

static void log_copy_field(char *dst, const char *src)
{
    snprintf(dst, LOG_FIELD_MAX, "%s", src ? src : "");
}

/* Write `msg` unless its call site `key` has written LOG_RATE_BURST lines in this window. */
static void log_submit(enum log_level l, uintptr_t key, const struct log_fields *f, const char *msg)
{
    uint64_t now = log_now();
    if (L.n_held && now >= L.next_flush)
        log_flush(false);
    struct log_site *s = log_site_get(key, now);
    if (s) {
        if (now - s->start >= LOG_RATE_WINDOW_MS) {
            s->start = now; /* log_flush above wrote what this site held */
            s->count = 0;
        }
        if (s->count >= (l == LOG_LVL_DEBUG ? LOG_RATE_BURST_DEBUG : LOG_RATE_BURST)) {
            if (!s->held++) {
                L.n_held++;
                if (!L.next_flush || L.n_held == 1 || s->start + LOG_RATE_WINDOW_MS < L.next_flush)
                    L.next_flush = s->start + LOG_RATE_WINDOW_MS;
                s->level = l;
                snprintf(s->text, sizeof(s->text), "%s", msg);
                log_copy_field(s->service, f ? f->service : NULL);
                log_copy_field(s->backend, f ? f->backend : NULL);
                log_copy_field(s->worker, f ? f->worker : NULL);
            }
            return;
        }
        s->count++;
    }
    log_emit(l, f, msg);
}

/* ---- threshold and override ------------------------------------------------------------------------ */

static enum log_level log_threshold(void)
{
    if (L.override_on && L.override_until && log_now() >= L.override_until) {
        char msg[160];
        L.override_on = false;
        snprintf(msg, sizeof(msg), "log: level back to %s after %u s of log-level %s", log_level_str(L.level),
                 L.override_s, log_level_str(L.override_level));
        log_emit(LOG_LVL_NOTICE, NULL, msg);
    }
    return L.override_on ? L.override_level : L.level;
}

enum log_level log_current_level(void)
{
    return log_threshold();
}

int log_enabled(enum log_level l)
{
    return l >= log_threshold();
}

int log_override(const char *level, unsigned seconds, char *msg, size_t msglen)
{
    enum log_level l;
    if (level && strcmp(level, "config") == 0) {
        L.override_on = false;
        snprintf(msg, msglen, "log level %s (the configured level)", log_level_str(L.level));
    } else if (!level || log_level_parse(level, &l) < 0) {
        snprintf(msg, msglen, "level: must be debug, info, notice, warn, error or config");
        return -1;
    } else if (seconds > LOG_OVERRIDE_MAX_S) {
        snprintf(msg, msglen, "seconds: must be at most %u", LOG_OVERRIDE_MAX_S);
        return -1;
    } else {
        L.override_on = true;
        L.override_level = l;
        L.override_s = seconds;
        L.override_until = seconds ? log_now() + (uint64_t)seconds * 1000u : 0;
        if (seconds)
            snprintf(msg, msglen, "log level %s for %u s, then %s (the configured level)", level, seconds,
                     log_level_str(L.level));
        else
            snprintf(msg, msglen, "log level %s until the next log-level command or restart", level);
    }
    /* Always written, whatever the new level: the operator's change is part of the record. */
    char line[320];
    snprintf(line, sizeof(line), "log: %s", msg);
    log_emit(LOG_LVL_NOTICE, NULL, line);
    return 0;
}

/* ---- entry points ---------------------------------------------------------------------------------- */

static void log_vsubmit(enum log_level l, const struct log_fields *f, const char *suffix, const char *fmt,
                        va_list ap)
{
    char msg[LOG_LINE_MAX];
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t off = n < 0 ? 0 : (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
    msg[off] = '\0';
    if (suffix)
        snprintf(msg + off, sizeof(msg) - off, ": %s", suffix);
    log_submit(l, (uintptr_t)fmt, f, msg);
}

void log_msg(enum log_level l, const char *fmt, ...)
{
    if (!log_enabled(l))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vsubmit(l, NULL, NULL, fmt, ap);
    va_end(ap);
}

void log_msgf(enum log_level l, const struct log_fields *f, const char *fmt, ...)
{
    if (!log_enabled(l))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vsubmit(l, f, NULL, fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    int saved = errno;
    if (!log_enabled(LOG_LVL_WARN))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vsubmit(LOG_LVL_WARN, NULL, strerror(saved), fmt, ap);
    va_end(ap);
}

void log_relay(enum log_level l, const char *origin, const char *line)
{
    if (!log_enabled(l))
        return;
    /* FNV-1a of the origin and the text after tor's "[level] " tag (its timestamp differs per line). */
    const char *tag = strstr(line, "] ");
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = origin; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    for (const char *p = tag ? tag : line; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    char msg[LOG_LINE_MAX];
    snprintf(msg, sizeof(msg), "%s: %s", origin, line);
    log_submit(l, (uintptr_t)(h | 1), NULL, msg);
}

static void log_libevent_cb(int severity, const char *msg)
{
    enum log_level l = severity == EVENT_LOG_DEBUG ? LOG_LVL_DEBUG
                       : severity == EVENT_LOG_MSG ? LOG_LVL_INFO
                       : severity == EVENT_LOG_WARN ? LOG_LVL_WARN
                                                    : LOG_LVL_ERROR;
    log_relay(l, "libevent", msg);
}

void log_route_libevent(void)
{
    event_set_log_callback(log_libevent_cb);
}

void fatalx(const char *fmt, ...)
{
    char msg[LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_flush(true);
    log_emit(LOG_LVL_ERROR, NULL, msg);
    exit(1);
}
