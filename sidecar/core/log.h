/* log.h — onionfront's logging: one line per message on stderr, with a level threshold, in one of two
 * formats, rate-limited per call site.
 *
 *   text    "2026-12-03 10:00:00.123 [warn] proxy alpha:80: ..." — for a terminal or a file.
 *   json    {"time":"2026-12-03T10:00:00.123Z","level":"warn","module":"proxy","message":"proxy alpha:80:
 *           ...","service":"alpha"} — one object per line for Loki/Elasticsearch. "module" is the word
 *           before the message's first ':' or ' ' when it is lower-case ("tor", "proxy", "service"), else
 *           "onionfront"; "service", "backend" and "worker" are present when the call site gave them
 *           (log_*_f with struct log_fields). Message bytes that are not UTF-8 become U+FFFD.
 *   journal When stderr is the journal (JOURNAL_STREAM names its device and inode, as systemd sets it),
 *           each line starts with its syslog priority, "<4>proxy alpha:80: ..." (sd-daemon(3)), and the
 *           text format drops its timestamp and level word (journald records both).
 *
 * Rate limit: each call site (its format string; a relayed line's text) writes at most LOG_RATE_BURST
 * lines per LOG_RATE_WINDOW_MS of the monotonic clock (LOG_RATE_BURST_DEBUG at debug level: debug is
 * turned on to see every stream, yet must not fill a disk either); the rest are counted and reported
 * in one line "<the first held-back message> ... repeated N more times" once the window is over
 * (written with the next message of any site, or by log_flush).
 *
 * The threshold, format, journal flag, run-time override and the rate-limit table are the one piece of
 * process-wide mutable state besides the event base: they are set by main.c (start-up, reload) and the
 * status socket's log-level command. Library code (controlproto/) never logs; sidecar modules log once
 * where an error is handled. Never pass key material to these functions. */
#ifndef ONIONFRONT_LOG_H
#define ONIONFRONT_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_NOTICE, LOG_LVL_WARN, LOG_LVL_ERROR };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

#define LOG_RATE_BURST 10        /* lines per call site and window */
#define LOG_RATE_BURST_DEBUG 1000 /* the same for debug lines, which an operator asked for on purpose */
#define LOG_RATE_WINDOW_MS 1000u /* the window, on the monotonic clock */

const char *log_level_str(enum log_level l);
/* Parse "debug", "info", "notice", "warn", "error". Return 0, or -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);
/* The syslog priority of a level: debug 7, info 6, notice 5, warn 4, error 3. */
int log_level_priority(enum log_level l);

const char *log_format_str(enum log_format f);
/* Parse "text" or "json". Return 0, or -1. */
int log_format_parse(const char *s, enum log_format *out);

/* Set the configured threshold: messages below it are dropped (a log-level override comes first while
 * it lasts). */
void log_set_level(enum log_level l);
void log_set_format(enum log_format f);
/* The config's "log_level" and "log_format" at start-up and reload (names as log_level_parse and
 * log_format_parse take them; an unknown name leaves that setting as it is). */
void log_configure(const char *level, const char *format);

/* Journal mode from the environment: on if JOURNAL_STREAM is "<dev>:<inode>" of stderr (fstat(2)),
 * else off. Call once at start-up. Returns the mode. */
bool log_detect_journal(void);
/* Force journal mode on or off (tests). */
void log_set_journal(bool on);

/* The status socket's "log-level LEVEL [SECONDS]": log at `level` ("debug" ... "error") from now on,
 * or for `seconds` (> 0) and then back to the configured level; "config" ends an override now. A
 * reload changes the configured level, not an override. Return 0 with what was done in `msg` (also
 * logged at notice), or -1 with why not. */
int log_override(const char *level, unsigned seconds, char *msg, size_t msglen);
/* The level in force now (the override's or the configured one). */
enum log_level log_current_level(void);

/* True if a message at level `l` would be written (to skip building expensive debug text). */
int log_enabled(enum log_level l);

/* What a message is about, for the JSON format's fields; NULL members are left out. */
struct log_fields {
    const char *service;
    const char *backend;
    const char *worker;
};
#define LOG_SERVICE(name) (&(const struct log_fields){.service = (name)})
#define LOG_BACKEND(svc, name) (&(const struct log_fields){.service = (svc), .backend = (name)})

void log_msg(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* log_msg with fields (`f` may be NULL). */
void log_msgf(enum log_level l, const struct log_fields *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LVL_NOTICE, __VA_ARGS__)
#define log_warnx(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_debug_f(f, ...) log_msgf(LOG_LVL_DEBUG, f, __VA_ARGS__)
#define log_info_f(f, ...) log_msgf(LOG_LVL_INFO, f, __VA_ARGS__)
#define log_notice_f(f, ...) log_msgf(LOG_LVL_NOTICE, f, __VA_ARGS__)
#define log_warnx_f(f, ...) log_msgf(LOG_LVL_WARN, f, __VA_ARGS__)
#define log_error_f(f, ...) log_msgf(LOG_LVL_ERROR, f, __VA_ARGS__)

/* Like log_warnx but appends ": <strerror(errno)>" (relayd's log_warn). */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line of another program's output (tor's), as "<origin>: <line>" at level `l`. Rate-limited by the
 * line's text after tor's "[level] " tag, so only repeats of the same message are held back. */
void log_relay(enum log_level l, const char *origin, const char *line);

/* Send libevent's own messages (evhttp's "Error from accept() call" ...) through this log, rate-limited
 * like the rest (event_set_log_callback). */
void log_route_libevent(void);

/* Write the "repeated N more times" lines of every call site whose window is over (and, with `all`,
 * of those still in their window). */
void log_flush(bool all);

/* Replace the monotonic clock of the rate limit and of log-level's timeout (tests); NULL restores it.
 * Also forgets every call site's window. */
void log_set_clock(uint64_t (*now_ms)(void));

/* Log at error level and exit(1). Only for start-up failures and broken invariants. */
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
