/* metrics.c — the Prometheus text format 0.0.4 writer (see metrics.h).
 *
 * Owns the text being built (an open_memstream buffer) and the list of families started, so that each
 * family's # HELP and # TYPE appear once. Does not know any metric: modules append their own. Does not
 * serve anything (status_server.c does). */
#include "sidecar/core/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics {
    FILE *f;        /* writes into text/size */
    char *text;
    size_t size;
    char **families; /* names started so far */
    size_t n_families, cap_families;
    const char *current; /* borrowed from families[] */
    enum metrics_type current_type;
    bool failed;    /* a write failed (out of memory): the text is incomplete */
};

static const char *metrics_type_str(enum metrics_type t)
{
    switch (t) {
    case METRICS_COUNTER:
        return "counter";
    case METRICS_GAUGE:
        return "gauge";
    case METRICS_HISTOGRAM:
        return "histogram";
    case METRICS_SUMMARY:
        return "summary";
    case METRICS_UNTYPED:
        return "untyped";
    }
    return NULL;
}

struct metrics *metrics_new(void)
{
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->f = open_memstream(&m->text, &m->size);
    if (!m->f) {
        free(m);
        return NULL;
    }
    return m;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    fclose(m->f);
    free(m->text);
    for (size_t i = 0; i < m->n_families; i++)
        free(m->families[i]);
    free(m->families);
    free(m);
}

/* Prometheus data model: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*
 * (and names starting with "__" are reserved). */
static bool metrics_name_valid(const char *s, bool colon)
{
    if (!s || !*s)
        return false;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

/* Text format 0.0.4: in HELP, backslash and newline are escaped; in label values also the double quote. */
static void metrics_escape(FILE *f, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if (quote && *s == '"')
            fputs("\\\"", f);
        else
            fputc(*s, f);
    }
}

static int metrics_check(struct metrics *m)
{
    if (ferror(m->f))
        m->failed = true;
    return m->failed ? -1 : 0;
}

int metrics_family(struct metrics *m, const char *name, enum metrics_type type, const char *help)
{
    if (m->failed || !metrics_name_valid(name, true) || !metrics_type_str(type))
        return -1;
    for (size_t i = 0; i < m->n_families; i++)
        if (strcmp(m->families[i], name) == 0)
            return -1;
    if (m->n_families == m->cap_families) {
        size_t cap = m->cap_families ? m->cap_families * 2 : 16;
        char **fam = realloc(m->families, cap * sizeof(*fam));
        if (!fam)
            return -1;
        m->families = fam;
        m->cap_families = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1;
    m->families[m->n_families++] = copy;
    m->current = copy;
    m->current_type = type;
    fprintf(m->f, "# HELP %s ", name);
    metrics_escape(m->f, help ? help : "", false);
    fprintf(m->f, "\n# TYPE %s %s\n", name, metrics_type_str(type));
    return metrics_check(m);
}

/* `name` is the family's own series, or for histograms and summaries one of its suffixed series. */
static bool metrics_series_of_current(const struct metrics *m, const char *name)
{
    size_t n = strlen(m->current);
    if (strncmp(name, m->current, n) != 0)
        return false;
    const char *suffix = name + n;
    if (*suffix == '\0')
        return true;
    if (m->current_type == METRICS_HISTOGRAM && strcmp(suffix, "_bucket") == 0)
        return true;
    return (m->current_type == METRICS_HISTOGRAM || m->current_type == METRICS_SUMMARY) &&
           (strcmp(suffix, "_sum") == 0 || strcmp(suffix, "_count") == 0);
}

static void metrics_value(FILE *f, double v)
{
    if (isnan(v))
        fputs("NaN", f);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", f);
    else if (v == floor(v) && fabs(v) < 9007199254740992.0) /* integers exactly, without exponent */
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.17g", v);
}

int metrics_sample(struct metrics *m, const char *name, const char *const *labels, double value)
{
    if (m->failed || !m->current || !metrics_series_of_current(m, name))
        return -1;
    if (labels) {
        for (size_t i = 0; labels[i]; i += 2) {
            if (!metrics_name_valid(labels[i], false) || strncmp(labels[i], "__", 2) == 0 || !labels[i + 1])
                return -1;
        }
    }
    fputs(name, m->f);
    if (labels && labels[0]) {
        fputc('{', m->f);
        for (size_t i = 0; labels[i]; i += 2) {
            fprintf(m->f, "%s%s=\"", i ? "," : "", labels[i]);
            metrics_escape(m->f, labels[i + 1], true);
            fputc('"', m->f);
        }
        fputc('}', m->f);
    }
    fputc(' ', m->f);
    metrics_value(m->f, value);
    fputc('\n', m->f);
    return metrics_check(m);
}

const char *metrics_text(const struct metrics *m, size_t *len)
{
    /* open_memstream updates text/size (and keeps a NUL after the data) on fflush. */
    fflush(m->f);
    if (len)
        *len = m->size;
    return m->text ? m->text : "";
}
