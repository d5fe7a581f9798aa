/* log.c — formats and writes log lines to stderr; owns the level threshold (see log.h). */
#include "sidecar/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static enum log_level log_threshold = LOG_LVL_INFO;

static const char *const level_names[] = {"debug", "info", "notice", "warn", "error"};

const char *log_level_str(enum log_level l)
{
    if ((unsigned)l < sizeof(level_names) / sizeof(level_names[0]))
        return level_names[l];
    return "unknown";
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_set_level(enum log_level l)
{
    log_threshold = l;
}

int log_enabled(enum log_level l)
{
    return l >= log_threshold;
}

static void log_vwrite(enum log_level l, const char *suffix, const char *fmt, va_list ap)
{
    char line[4096];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    size_t off = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
    off += (size_t)snprintf(line + off, sizeof(line) - off, ".%03ld [%s] ", (long)(tv.tv_usec / 1000),
                            log_level_str(l));
    int n = vsnprintf(line + off, sizeof(line) - off, fmt, ap);
    if (n > 0)
        off = off + (size_t)n < sizeof(line) ? off + (size_t)n : sizeof(line) - 1;
    if (suffix && off < sizeof(line) - 1)
        off += (size_t)snprintf(line + off, sizeof(line) - off, ": %s", suffix);
    if (off >= sizeof(line))
        off = sizeof(line) - 1;
    /* One fwrite per line so concurrent writers (tor's relayed output) do not interleave mid-line. */
    line[off] = '\n';
    fwrite(line, 1, off + 1, stderr);
    fflush(stderr);
}

void log_msg(enum log_level l, const char *fmt, ...)
{
    if (!log_enabled(l))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(l, NULL, fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    int saved = errno;
    if (!log_enabled(LOG_LVL_WARN))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(LOG_LVL_WARN, strerror(saved), fmt, ap);
    va_end(ap);
}

void fatalx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(LOG_LVL_ERROR, NULL, fmt, ap);
    va_end(ap);
    exit(1);
}
