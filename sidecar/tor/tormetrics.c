/* tormetrics.c — tor's MetricsPort exposition text, parsed strictly (see tormetrics.h). */
#include "sidecar/tor/tormetrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/core/onion_address.h"

/* The one table: field, tor's family, onionfront's name, counter or gauge, and whether several tors'
 * values combine as the highest (else the sum). */
static const struct {
    const char *family, *name;
    bool counter, highest;
} tormetrics_fields[TORMETRICS_N] = {
    [TORMETRICS_POW_EFFORT] = {"tor_hs_pow_suggested_effort", "pow_suggested_effort", false, true},
    [TORMETRICS_POW_QUEUE] = {"tor_hs_rdv_pow_pqueue_count", "pow_queue_length", false, false},
    [TORMETRICS_INTRO_RECEIVED] = {"tor_hs_intro_num_total", "introductions_received", true, false},
    [TORMETRICS_INTRO_REJECTED] = {"tor_hs_intro_rejected_intro_req_count", "introductions_rejected", true, false},
    [TORMETRICS_INTRO_ESTABLISHED] = {"tor_hs_intro_established_count", "intro_circuits", false, false},
    [TORMETRICS_REND_CREATED] = {"tor_hs_rdv_num_total", "rendezvous_created", true, false},
    [TORMETRICS_REND_ESTABLISHED] = {"tor_hs_rdv_established_count", "rendezvous_established", false, false},
    [TORMETRICS_REND_ERRORS] = {"tor_hs_rdv_error_count", "rendezvous_errors", true, false},
};

void tormetrics_service_add(struct tormetrics_service *sum, const struct tormetrics_service *one)
{
    for (int f = 0; one && f < TORMETRICS_N; f++) {
        if (!one->has[f])
            continue;
        if (!sum->has[f])
            sum->value[f] = one->value[f];
        else if (tormetrics_fields[f].highest)
            sum->value[f] = fmax(sum->value[f], one->value[f]);
        else
            sum->value[f] += one->value[f];
        sum->has[f] = true;
    }
}

const char *tormetrics_field_str(enum tormetrics_field f)
{
    return f < TORMETRICS_N ? tormetrics_fields[f].name : "?";
}

const char *tormetrics_field_family(enum tormetrics_field f)
{
    return f < TORMETRICS_N ? tormetrics_fields[f].family : "?";
}

bool tormetrics_field_is_counter(enum tormetrics_field f)
{
    return f < TORMETRICS_N && tormetrics_fields[f].counter;
}

/* One sample line, split: the name and labels point into the line (label values unescaped into `buf`). */
struct tormetrics_line {
    const char *name;
    size_t name_len;
    const char *label[TORMETRICS_LABELS_MAX]; /* names, NUL-terminated in buf */
    const char *value_of[TORMETRICS_LABELS_MAX];
    size_t n_labels;
    double value;
    char buf[TORMETRICS_LINE_MAX * 2];
};

static int tormetrics_fail(char *err, size_t errlen, size_t lineno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int tormetrics_fail(char *err, size_t errlen, size_t lineno, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "line %zu: %s", lineno, what);
    return -1;
}

static bool tormetrics_is_name_char(char ch, bool first, bool colon)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || (colon && ch == ':') ||
           (!first && ch >= '0' && ch <= '9');
}

/* The length of a name at `p` (metric names may have ':', label names not); 0 if none. */
static size_t tormetrics_name_len(const char *p, const char *end, bool colon)
{
    size_t n = 0;
    while (p + n < end && tormetrics_is_name_char(p[n], n == 0, colon))
        n++;
    return n;
}

/* A sample value: a decimal or hexadecimal-free float, or +Inf, -Inf, NaN exactly. */
static int tormetrics_number(const char *p, size_t n, double *out)
{
    char tmp[64];
    if (n == 0 || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    if (strcmp(tmp, "+Inf") == 0 || strcmp(tmp, "-Inf") == 0 || strcmp(tmp, "NaN") == 0) {
        *out = tmp[0] == 'N' ? NAN : tmp[0] == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    for (size_t i = 0; i < n; i++) /* digits, sign, point, exponent: no "inf", "nan", "0x" */
        if (!strchr("0123456789+-.eE", tmp[i]))
            return -1;
    char *e = NULL;
    *out = strtod(tmp, &e);
    return e == tmp + n ? 0 : -1;
}

/* Parse one sample line `p`..`end` (no newline) into `l`. */
static int tormetrics_sample(const char *p, const char *end, struct tormetrics_line *l, size_t lineno, char *err,
                             size_t errlen)
{
    l->name = p;
    l->name_len = tormetrics_name_len(p, end, true);
    l->n_labels = 0;
    if (l->name_len == 0)
        return tormetrics_fail(err, errlen, lineno, "no metric name");
    p += l->name_len;
    size_t o = 0;
    if (p < end && *p == '{') {
        p++;
        while (p < end && *p != '}') {
            size_t n = tormetrics_name_len(p, end, false);
            if (n == 0)
                return tormetrics_fail(err, errlen, lineno, "bad label name");
            if (l->n_labels == TORMETRICS_LABELS_MAX)
                return tormetrics_fail(err, errlen, lineno, "more than %d labels", TORMETRICS_LABELS_MAX);
            l->label[l->n_labels] = l->buf + o;
            memcpy(l->buf + o, p, n);
            o += n;
            l->buf[o++] = '\0';
            p += n;
            if (end - p < 2 || p[0] != '=' || p[1] != '"')
                return tormetrics_fail(err, errlen, lineno, "label %s: expected =\"", l->label[l->n_labels]);
            p += 2;
            l->value_of[l->n_labels] = l->buf + o;
            for (;;) {
                if (p >= end)
                    return tormetrics_fail(err, errlen, lineno, "label value not closed");
                if (*p == '"')
                    break;
                if (*p == '\\') {
                    if (p + 1 >= end || !strchr("\\\"n", p[1]))
                        return tormetrics_fail(err, errlen, lineno, "bad escape in a label value");
                    l->buf[o++] = p[1] == 'n' ? '\n' : p[1];
                    p += 2;
                } else {
                    l->buf[o++] = *p++;
                }
            }
            l->buf[o++] = '\0';
            p++; /* the closing quote */
            for (size_t j = 0; j < l->n_labels; j++)
                if (strcmp(l->label[j], l->label[l->n_labels]) == 0)
                    return tormetrics_fail(err, errlen, lineno, "label %s twice", l->label[j]);
            l->n_labels++;
            if (p < end && *p == ',')
                p++;
            else if (p < end && *p != '}')
                return tormetrics_fail(err, errlen, lineno, "expected , or } after a label");
        }
        if (p >= end)
            return tormetrics_fail(err, errlen, lineno, "labels not closed");
        p++; /* } */
    }
    if (p >= end || *p != ' ')
        return tormetrics_fail(err, errlen, lineno, "expected a space before the value");
    p++;
    const char *v = p;
    while (p < end && *p != ' ')
        p++;
    if (tormetrics_number(v, (size_t)(p - v), &l->value) < 0)
        return tormetrics_fail(err, errlen, lineno, "bad value \"%.*s\"", (int)(p - v < 40 ? p - v : 40), v);
    if (p < end) { /* an optional timestamp: an integer of milliseconds */
        const char *t = ++p;
        if (t < end && *t == '-')
            t++;
        if (t == end)
            return tormetrics_fail(err, errlen, lineno, "bad timestamp");
        for (; t < end; t++)
            if (*t < '0' || *t > '9')
                return tormetrics_fail(err, errlen, lineno, "bad timestamp");
    }
    return 0;
}

/* A comment line: "# HELP name text", "# TYPE name type" (checked) or any other "# ..." / "#". */
static int tormetrics_comment(const char *p, const char *end, size_t lineno, char *err, size_t errlen)
{
    static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped", NULL};
    size_t len = (size_t)(end - p);
    bool help = len >= 7 && memcmp(p, "# HELP ", 7) == 0, type = len >= 7 && memcmp(p, "# TYPE ", 7) == 0;
    if (!help && !type)
        return len == 1 || p[1] == ' ' ? 0 : tormetrics_fail(err, errlen, lineno, "a comment must start with \"# \"");
    p += 7;
    size_t n = tormetrics_name_len(p, end, true);
    if (n == 0)
        return tormetrics_fail(err, errlen, lineno, "# %s without a metric name", help ? "HELP" : "TYPE");
    p += n;
    if (help)
        return p == end || *p == ' ' ? 0 : tormetrics_fail(err, errlen, lineno, "bad metric name in # HELP");
    if (p == end || *p != ' ')
        return tormetrics_fail(err, errlen, lineno, "# TYPE without a type");
    p++;
    for (size_t i = 0; types[i]; i++)
        if ((size_t)(end - p) == strlen(types[i]) && memcmp(p, types[i], strlen(types[i])) == 0)
            return 0;
    return tormetrics_fail(err, errlen, lineno, "unknown type \"%.*s\"", (int)(end - p < 20 ? end - p : 20), p);
}

static bool tormetrics_is_onion(const char *s)
{
    if (strlen(s) != ONION_ADDRESS_LEN)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '2' && *s <= '7')))
            return false;
    return true;
}

/* Where `address` is, or would go, in m->by_onion: the first position whose service does not sort before
 * it. *found tells whether that service is `address`. */
static size_t tormetrics_search(const struct tormetrics *m, const char *address, bool *found)
{
    size_t lo = 0, hi = m->n;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = onion_address_cmp(m->svc[m->by_onion[mid]].onion, address);
        if (r == 0) {
            *found = true;
            return mid;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The service `onion` in `m`, added if new (and indexed); NULL at the cap or out of memory. */
static struct tormetrics_service *tormetrics_service(struct tormetrics *m, const char *onion, size_t *cap)
{
    bool found;
    size_t pos = tormetrics_search(m, onion, &found);
    if (found)
        return &m->svc[m->by_onion[pos]];
    if (m->n == TORMETRICS_SERVICES_MAX)
        return NULL;
    if (m->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct tormetrics_service *s = realloc(m->svc, nc * sizeof(*s));
        if (!s)
            return NULL;
        m->svc = s;
        size_t *idx = realloc(m->by_onion, nc * sizeof(*idx));
        if (!idx)
            return NULL;
        m->by_onion = idx;
        *cap = nc;
    }
    memmove(&m->by_onion[pos + 1], &m->by_onion[pos], (m->n - pos) * sizeof(*m->by_onion));
    m->by_onion[pos] = m->n;
    struct tormetrics_service *s = &m->svc[m->n++];
    memset(s, 0, sizeof(*s));
    snprintf(s->onion, sizeof(s->onion), "%s", onion);
    return s;
}

/* Keep `l` if it is a sample of a field's family. */
static int tormetrics_keep(struct tormetrics *m, size_t *cap, const struct tormetrics_line *l, size_t lineno,
                           char *err, size_t errlen)
{
    for (int f = 0; f < TORMETRICS_N; f++) {
        const char *fam = tormetrics_fields[f].family;
        if (strlen(fam) != l->name_len || memcmp(fam, l->name, l->name_len) != 0)
            continue;
        const char *onion = NULL;
        for (size_t j = 0; j < l->n_labels; j++)
            if (strcmp(l->label[j], "onion") == 0)
                onion = l->value_of[j];
        if (!onion || !tormetrics_is_onion(onion))
            return tormetrics_fail(err, errlen, lineno, "%s without an onion=\"<56 base32 characters>\" label", fam);
        struct tormetrics_service *s = tormetrics_service(m, onion, cap);
        if (!s)
            return tormetrics_fail(err, errlen, lineno, "more than %d services (or out of memory)",
                                   TORMETRICS_SERVICES_MAX);
        s->value[f] = s->has[f] ? s->value[f] + l->value : l->value;
        s->has[f] = true;
    }
    return 0;
}

struct tormetrics *tormetrics_parse(const char *text, size_t len, char *err, size_t errlen)
{
    struct tormetrics *m = calloc(1, sizeof(*m));
    struct tormetrics_line *l = malloc(sizeof(*l));
    size_t cap = 0, lineno = 0;
    int rc = !m || !l ? tormetrics_fail(err, errlen, 0, "out of memory") : 0;
    if (rc == 0 && len > TORMETRICS_TEXT_MAX)
        rc = tormetrics_fail(err, errlen, 0, "more than %u bytes", TORMETRICS_TEXT_MAX);
    if (rc == 0 && len > 0 && text[len - 1] != '\n')
        rc = tormetrics_fail(err, errlen, 0, "the text does not end with a newline");
    for (size_t pos = 0; rc == 0 && pos < len;) {
        const char *p = text + pos, *nl = memchr(p, '\n', len - pos);
        const char *end = nl; /* the last byte is a newline: every line has one */
        lineno++;
        pos = (size_t)(nl - text) + 1;
        if (end - p > TORMETRICS_LINE_MAX)
            rc = tormetrics_fail(err, errlen, lineno, "longer than %d bytes", TORMETRICS_LINE_MAX);
        else if (memchr(p, '\0', (size_t)(end - p)) || memchr(p, '\r', (size_t)(end - p)))
            rc = tormetrics_fail(err, errlen, lineno, "a NUL or CR byte");
        else if (p == end)
            rc = tormetrics_fail(err, errlen, lineno, "an empty line");
        else if (*p == '#')
            rc = tormetrics_comment(p, end, lineno, err, errlen);
        else
            rc = tormetrics_sample(p, end, l, lineno, err, errlen) < 0 ||
                 tormetrics_keep(m, &cap, l, lineno, err, errlen) < 0;
    }
    free(l);
    if (rc != 0) {
        tormetrics_free(m);
        return NULL;
    }
    return m;
}

void tormetrics_free(struct tormetrics *m)
{
    if (!m)
        return;
    free(m->svc);
    free(m->by_onion);
    free(m);
}

const struct tormetrics_service *tormetrics_find(const struct tormetrics *m, const char *address)
{
    bool found = false;
    size_t pos = m && address ? tormetrics_search(m, address, &found) : 0;
    return found ? &m->svc[m->by_onion[pos]] : NULL;
}
