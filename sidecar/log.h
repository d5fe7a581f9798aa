/* log.h — onionfront's logging: one line per message on stderr (journald adds its own timestamps under
 * systemd; we add ours for the terminal), with a level threshold.
 *
 * The threshold is the one piece of process-wide mutable state besides the event base: it is set at
 * start-up and on reload by main.c only. Library code (controlproto/) never logs; sidecar modules log once
 * where an error is handled. Never pass key material to these functions. */
#ifndef ONIONFRONT_LOG_H
#define ONIONFRONT_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_NOTICE, LOG_LVL_WARN, LOG_LVL_ERROR };

const char *log_level_str(enum log_level l);

/* Parse "debug", "info", "notice", "warn", "error". Return 0, or -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);

/* Set the threshold: messages below it are dropped. */
void log_set_level(enum log_level l);

/* True if a message at level `l` would be written (to skip building expensive debug text). */
int log_enabled(enum log_level l);

void log_msg(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LVL_NOTICE, __VA_ARGS__)
#define log_warnx(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

/* Like log_warnx but appends ": <strerror(errno)>" (relayd's log_warn). */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Log at error level and exit(1). Only for start-up failures and broken invariants. */
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
