/* promcheck.c — a strict checker for the Prometheus text exposition format 0.0.4, for tests (Debian
 * bookworm's promtool comes only with the whole prometheus server package).
 *
 *   build/tools/promcheck [--no-lint] [FILE]     (stdin without FILE)
 *
 * Grammar (exposition_formats.md, text format 0.0.4), every violation an error:
 *   - every line ends in "\n" (the last one too); "# HELP name text" and "# TYPE name type" name a valid
 *     metric name; HELP text escapes only "\\" and "\n"; type is counter|gauge|histogram|summary|untyped;
 *     other "#" lines are comments; blank lines are ignored;
 *   - HELP and TYPE at most once per family, and before the family's first sample;
 *   - a sample is  name[{label="value",...}] value [timestamp]  with single spaces or tabs between the
 *     parts; metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* not starting with
 *     "__", no label twice in a sample, label values in double quotes escaping only \\ \" \n; values a
 *     decimal float, NaN, +Inf or -Inf; timestamps integers;
 *   - a sample belongs to the family of its TYPE (histogram: name_bucket with an "le" label, name_sum,
 *     name_count; summary: name, name_sum, name_count), otherwise it is an untyped family of its own;
 *     all lines of a family form one group; no series (name + label set) appears twice.
 * Lint (like promtool's, off with --no-lint): every family has HELP; counters end in _total and are
 * not negative; other types do not end in _total; names have no upper-case letters.
 *
 * Prints "line N: problem" for each error and exits 1, or prints a count and exits 0. */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct family {
    char *name;
    char type[16]; /* "" = no TYPE line (untyped) */
    bool help, typed, has_samples, closed;
    unsigned line; /* first line */
};

struct series {
    char *key; /* name \x01 label \x02 value \x01 ... (labels sorted) */
    unsigned line;
};

struct checker {
    bool lint;
    unsigned line;
    unsigned errors;
    struct family *fams;
    size_t n_fams, cap_fams;
    struct family *current; /* family of the previous sample/metadata line */
    struct series *series;
    size_t n_series, cap_series;
};

static void problem(struct checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct checker *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("line %u: ", c->line);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    c->errors++;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "promcheck: out of memory\n");
        exit(2);
    }
    return q;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = xrealloc(NULL, n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static bool is_metric_start(char ch)
{
    return isalpha((unsigned char)ch) || ch == '_' || ch == ':';
}

static bool is_metric_char(char ch)
{
    return is_metric_start(ch) || isdigit((unsigned char)ch);
}

static bool is_label_start(char ch)
{
    return isalpha((unsigned char)ch) || ch == '_';
}

static bool is_label_char(char ch)
{
    return is_label_start(ch) || isdigit((unsigned char)ch);
}

/* Length of the metric name at s, 0 if none. */
static size_t metric_name_len(const char *s)
{
    size_t n = 0;
    if (!is_metric_start(s[0]))
        return 0;
    while (is_metric_char(s[n]))
        n++;
    return n;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static struct family *find_family(struct checker *c, const char *name)
{
    for (size_t i = 0; i < c->n_fams; i++)
        if (strcmp(c->fams[i].name, name) == 0)
            return &c->fams[i];
    return NULL;
}

static struct family *add_family(struct checker *c, const char *name)
{
    if (c->n_fams == c->cap_fams) {
        /* current points into fams: keep it valid across the move */
        size_t cur = c->current ? (size_t)(c->current - c->fams) : (size_t)-1;
        c->cap_fams = c->cap_fams ? c->cap_fams * 2 : 32;
        c->fams = xrealloc(c->fams, c->cap_fams * sizeof(*c->fams));
        if (cur != (size_t)-1)
            c->current = &c->fams[cur];
    }
    struct family *f = &c->fams[c->n_fams++];
    memset(f, 0, sizeof(*f));
    f->name = xstrndup(name, strlen(name));
    f->line = c->line;
    return f;
}

/* Switch to family f for a new line; a family left earlier must not come back. */
static void enter_family(struct checker *c, struct family *f)
{
    if (c->current == f)
        return;
    if (c->current)
        c->current->closed = true;
    if (f->closed)
        problem(c, "lines of family %s are not in one group (it appeared before line %u's group ended)", f->name,
                c->line);
    c->current = f;
}

/* Check an escaped text (HELP: \\ \n; label values: also \"). */
static bool valid_escapes(const char *s, size_t len, bool quote)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\')
            continue;
        if (i + 1 >= len)
            return false;
        char e = s[++i];
        if (!(e == '\\' || e == 'n' || (quote && e == '"')))
            return false;
    }
    return true;
}

static void metadata_line(struct checker *c, const char *p)
{
    bool help = strncmp(p, "# HELP ", 7) == 0, type = strncmp(p, "# TYPE ", 7) == 0;
    if (!help && !type)
        return; /* a comment */
    const char *name = p + 7;
    size_t nlen = metric_name_len(name);
    if (nlen == 0 || (name[nlen] != ' ' && name[nlen] != '\0')) {
        problem(c, "%s: invalid metric name", help ? "HELP" : "TYPE");
        return;
    }
    char *fname = xstrndup(name, nlen);
    const char *rest = name[nlen] ? name + nlen + 1 : name + nlen;
    struct family *f = find_family(c, fname);
    if (!f)
        f = add_family(c, fname);
    enter_family(c, f);
    if (f->has_samples)
        problem(c, "%s for %s after its samples", help ? "HELP" : "TYPE", fname);
    if (help) {
        if (f->help)
            problem(c, "second HELP for %s", fname);
        f->help = true;
        if (!valid_escapes(rest, strlen(rest), false))
            problem(c, "HELP for %s: invalid escape (only \\\\ and \\n)", fname);
    } else {
        static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
        bool ok = false;
        for (size_t i = 0; i < 5; i++)
            ok |= strcmp(rest, types[i]) == 0;
        if (f->typed)
            problem(c, "second TYPE for %s", fname);
        if (!ok)
            problem(c, "TYPE for %s: unknown type \"%s\"", fname, rest);
        else
            snprintf(f->type, sizeof(f->type), "%s", rest);
        f->typed = true;
    }
    free(fname);
}

/* A float as Prometheus writes it: decimal, NaN, +Inf, -Inf (also Inf). */
static bool parse_value(const char *s, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (strcmp(buf, "NaN") == 0 || strcmp(buf, "+Inf") == 0 || strcmp(buf, "-Inf") == 0 ||
        strcmp(buf, "Inf") == 0) {
        *out = buf[0] == '-' ? -1 : 0; /* only the sign matters to the checks */
        return true;
    }
    size_t i = 0;
    bool digits = false;
    if (buf[i] == '+' || buf[i] == '-')
        i++;
    while (isdigit((unsigned char)buf[i])) {
        i++;
        digits = true;
    }
    if (buf[i] == '.') {
        i++;
        while (isdigit((unsigned char)buf[i])) {
            i++;
            digits = true;
        }
    }
    if (!digits)
        return false;
    if (buf[i] == 'e' || buf[i] == 'E') {
        i++;
        if (buf[i] == '+' || buf[i] == '-')
            i++;
        if (!isdigit((unsigned char)buf[i]))
            return false;
        while (isdigit((unsigned char)buf[i]))
            i++;
    }
    if (buf[i] != '\0')
        return false;
    *out = strtod(buf, NULL);
    return true;
}

static bool valid_timestamp(const char *s, size_t len)
{
    size_t i = 0;
    if (len > 0 && s[0] == '-')
        i++;
    if (i == len || len - i > 19)
        return false;
    for (; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

struct label {
    char *name, *value;
};

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const struct label *)a)->name, ((const struct label *)b)->name);
}

/* The family a sample named `name` belongs to (creating an untyped one if none). */
static struct family *sample_family(struct checker *c, const char *name, bool *is_bucket)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    *is_bucket = false;
    struct family *f = find_family(c, name);
    if (f && (strcmp(f->type, "histogram") != 0))
        return f; /* summary: the quantile series carry the family's own name */
    for (size_t i = 0; i < 3; i++) {
        if (!ends_with(name, suffixes[i]))
            continue;
        char *base = xstrndup(name, strlen(name) - strlen(suffixes[i]));
        struct family *b = find_family(c, base);
        free(base);
        if (b && (strcmp(b->type, "histogram") == 0 || (strcmp(b->type, "summary") == 0 && i > 0))) {
            *is_bucket = i == 0;
            return b;
        }
    }
    if (f) { /* a histogram's own name without suffix */
        problem(c, "histogram %s: sample without _bucket, _sum or _count", name);
        return f;
    }
    return add_family(c, name);
}

static void sample_line(struct checker *c, const char *p)
{
    size_t nlen = metric_name_len(p);
    if (nlen == 0) {
        problem(c, "invalid metric name at the start of a sample");
        return;
    }
    char *name = xstrndup(p, nlen);
    const char *s = p + nlen;
    struct label *labels = NULL;
    size_t n_labels = 0;
    bool ok = true;
    if (*s == '{') {
        s++;
        while (ok && *s != '}') {
            size_t ln = 0;
            if (!is_label_start(s[0])) {
                problem(c, "%s: invalid label name", name);
                ok = false;
                break;
            }
            while (is_label_char(s[ln]))
                ln++;
            if (strncmp(s, "__", 2) == 0)
                problem(c, "%s: label names starting with __ are reserved", name);
            if (s[ln] != '=' || s[ln + 1] != '"') {
                problem(c, "%s: expected =\" after label name", name);
                ok = false;
                break;
            }
            const char *v = s + ln + 2, *e = v;
            while (*e && *e != '"') {
                if (*e == '\\' && e[1])
                    e++;
                e++;
            }
            if (*e != '"') {
                problem(c, "%s: unterminated label value", name);
                ok = false;
                break;
            }
            if (!valid_escapes(v, (size_t)(e - v), true))
                problem(c, "%s: invalid escape in a label value (only \\\\ \\\" \\n)", name);
            labels = xrealloc(labels, (n_labels + 1) * sizeof(*labels));
            labels[n_labels].name = xstrndup(s, ln);
            labels[n_labels].value = xstrndup(v, (size_t)(e - v));
            n_labels++;
            s = e + 1;
            if (*s == ',')
                s++;
            else if (*s != '}') {
                problem(c, "%s: expected , or } after a label", name);
                ok = false;
            }
        }
        if (ok)
            s++;
    }
    double value = 0;
    if (ok) {
        if (*s != ' ' && *s != '\t') {
            problem(c, "%s: expected a space before the value", name);
            ok = false;
        } else {
            s++;
            size_t vl = strcspn(s, " \t");
            if (!parse_value(s, vl, &value)) {
                problem(c, "%s: invalid value \"%.*s\"", name, (int)vl, s);
                ok = false;
            }
            s += vl;
            if (ok && (*s == ' ' || *s == '\t')) {
                s++;
                size_t tl = strlen(s);
                if (!valid_timestamp(s, tl)) {
                    problem(c, "%s: invalid timestamp", name);
                    ok = false;
                }
            }
        }
    }
    if (ok) {
        qsort(labels, n_labels, sizeof(*labels), label_cmp);
        for (size_t i = 1; i < n_labels; i++)
            if (strcmp(labels[i - 1].name, labels[i].name) == 0)
                problem(c, "%s: label %s twice", name, labels[i].name);
        bool is_bucket;
        struct family *f = sample_family(c, name, &is_bucket);
        enter_family(c, f);
        f->has_samples = true;
        if (is_bucket) {
            bool le = false;
            for (size_t i = 0; i < n_labels; i++)
                le |= strcmp(labels[i].name, "le") == 0;
            if (!le)
                problem(c, "%s: histogram bucket without an le label", name);
        }
        if (c->lint && strcmp(f->type, "counter") == 0 && value < 0)
            problem(c, "%s: counter with a negative value", name);
        /* the series key */
        size_t klen = strlen(name) + 1;
        for (size_t i = 0; i < n_labels; i++)
            klen += strlen(labels[i].name) + strlen(labels[i].value) + 2;
        char *key = xrealloc(NULL, klen + 1), *k = key;
        k += sprintf(k, "%s", name);
        for (size_t i = 0; i < n_labels; i++)
            k += sprintf(k, "\x01%s\x02%s", labels[i].name, labels[i].value);
        if (c->n_series == c->cap_series) {
            c->cap_series = c->cap_series ? c->cap_series * 2 : 64;
            c->series = xrealloc(c->series, c->cap_series * sizeof(*c->series));
        }
        c->series[c->n_series].key = key;
        c->series[c->n_series].line = c->line;
        c->n_series++;
    }
    for (size_t i = 0; i < n_labels; i++) {
        free(labels[i].name);
        free(labels[i].value);
    }
    free(labels);
    free(name);
}

static int series_cmp(const void *a, const void *b)
{
    const struct series *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    return r ? r : (x->line > y->line) - (x->line < y->line);
}

static void check_text(struct checker *c, const char *text, size_t len)
{
    size_t off = 0;
    while (off < len) {
        c->line++;
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl) {
            problem(c, "the last line does not end in \\n");
            nl = text + len;
        }
        char *line = xstrndup(text + off, (size_t)(nl - (text + off)));
        if (memchr(text + off, '\0', (size_t)(nl - (text + off))))
            problem(c, "NUL byte in the line");
        else if (line[0] == '#')
            metadata_line(c, line);
        else if (line[0] != '\0' && strspn(line, " \t") != strlen(line))
            sample_line(c, line);
        free(line);
        off = (size_t)(nl - text) + 1;
    }
    c->line = 0;
    qsort(c->series, c->n_series, sizeof(*c->series), series_cmp);
    for (size_t i = 1; i < c->n_series; i++)
        if (strcmp(c->series[i - 1].key, c->series[i].key) == 0) {
            c->line = c->series[i].line;
            char *k = c->series[i].key;
            for (char *q = k; *q; q++)
                if (*q == '\x01' || *q == '\x02')
                    *q = *q == '\x01' ? ' ' : '=';
            problem(c, "duplicate series %s (first on line %u)", k, c->series[i - 1].line);
        }
    if (!c->lint)
        return;
    for (size_t i = 0; i < c->n_fams; i++) {
        struct family *f = &c->fams[i];
        c->line = f->line;
        if (!f->help)
            problem(c, "%s: no HELP", f->name);
        if (strcmp(f->type, "counter") == 0 && !ends_with(f->name, "_total"))
            problem(c, "%s: counter names end in _total", f->name);
        if (strcmp(f->type, "counter") != 0 && ends_with(f->name, "_total"))
            problem(c, "%s: only counters end in _total", f->name);
        for (const char *q = f->name; *q; q++)
            if (isupper((unsigned char)*q)) {
                problem(c, "%s: names are snake_case", f->name);
                break;
            }
    }
}

int main(int argc, char **argv)
{
    struct checker c = {.lint = true};
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-lint") == 0)
            c.lint = false;
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else {
            fprintf(stderr, "usage: promcheck [--no-lint] [FILE]\n");
            return 2;
        }
    }
    FILE *f = path ? fopen(path, "rb") : stdin;
    if (!f) {
        perror(path);
        return 2;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (cap - len < 65536)
            text = xrealloc(text, cap = cap ? cap * 2 : 65536);
        n = fread(text + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    if (path)
        fclose(f);
    if (len == 0)
        printf("(empty input)\n");
    check_text(&c, text ? text : "", len);
    size_t samples = c.n_series;
    if (c.errors == 0)
        printf("OK: %zu families, %zu samples\n", c.n_fams, samples);
    for (size_t i = 0; i < c.n_series; i++)
        free(c.series[i].key);
    for (size_t i = 0; i < c.n_fams; i++)
        free(c.fams[i].name);
    free(c.series);
    free(c.fams);
    free(text);
    return c.errors ? 1 : 0;
}
