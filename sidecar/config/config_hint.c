/* config_hint.c — the likely cause behind a config file's mistake (see config_hint.h). */
#include "sidecar/config/config_hint.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define HINT_KEY_MAX 64 /* longer keys are never near a valid one */

/* What a hand-written JSON file most often gets wrong, found outside strings. */
enum hint_kind {
    HINT_NONE,
    HINT_COMMENT,        /* "//" or a block comment */
    HINT_HASH_COMMENT,   /* "#" (shell, torrc and YAML comments) */
    HINT_TRAILING_COMMA, /* "," then only white space before "}" or "]" */
    HINT_SINGLE_QUOTE,   /* 'a string' */
};

static bool hint_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* The first of the mistakes above in `text`, outside JSON strings; its offset into *at. */
static enum hint_kind hint_scan(const char *text, size_t len, size_t *at)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (in_string) {
            if (ch == '\\')
                i++; /* the escaped character, a quote included */
            else if (ch == '"')
                in_string = false;
            continue;
        }
        *at = i;
        if (ch == '"') {
            in_string = true;
        } else if (ch == '/' && i + 1 < len && (text[i + 1] == '/' || text[i + 1] == '*')) {
            return HINT_COMMENT;
        } else if (ch == '#') {
            return HINT_HASH_COMMENT;
        } else if (ch == '\'') {
            return HINT_SINGLE_QUOTE;
        } else if (ch == ',') {
            size_t j = i + 1;
            while (j < len && hint_space(text[j]))
                j++;
            if (j < len && (text[j] == '}' || text[j] == ']'))
                return HINT_TRAILING_COMMA;
        }
    }
    return HINT_NONE;
}

/* The 1-based line and column of byte `at` (columns count bytes, as jansson's do for ASCII). */
static void hint_line_col(const char *text, size_t at, int *line, int *column)
{
    size_t start = 0;
    *line = 1;
    for (size_t i = 0; i < at; i++)
        if (text[i] == '\n') {
            (*line)++;
            start = i + 1;
        }
    *column = (int)(at - start) + 1;
}

void config_hint_json_error(const char *text, size_t len, const char *jtext, int line, int column, size_t position,
                            char *err, size_t errlen)
{
    size_t at = 0, i = 0;
    if (text) {
        while (i < len && hint_space(text[i]))
            i++;
        if (i == len) {
            snprintf(err, errlen, "the file is empty: a config is one JSON object, { ... } (see "
                     "templates/onionfront.example.json)");
            return;
        }
        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
            snprintf(err, errlen, "the file starts with a UTF-8 byte order mark (the bytes EF BB BF), which JSON does "
                     "not allow: save it as UTF-8 without a BOM (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)");
            return;
        }
        enum hint_kind kind = hint_scan(text, len, &at);
        /* jansson's position is just past the token it choked on: the cause lies before it */
        if (kind != HINT_NONE && at <= position) {
            int l, c;
            hint_line_col(text, at, &l, &c);
            if (kind == HINT_HASH_COMMENT)
                snprintf(err, errlen, "line %d: '#' comments are not JSON (JSON has no comments): remove the comment",
                         l);
            else if (kind == HINT_COMMENT)
                snprintf(err, errlen, "line %d, column %d: a comment, but JSON has no comments (// or /* */): remove "
                         "it", l, c);
            else if (kind == HINT_TRAILING_COMMA)
                snprintf(err, errlen, "line %d, column %d: a comma after the last item of a list or object, which "
                         "JSON does not allow (no trailing comma): remove it", l, c);
            else
                snprintf(err, errlen, "line %d, column %d: a single quote ('), but JSON strings and keys take double "
                         "quotes (\")", l, c);
            return;
        }
    }
    if (line > 0)
        snprintf(err, errlen, "line %d, column %d: %s", line, column, jtext);
    else
        snprintf(err, errlen, "%s", jtext);
}

static char hint_lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* Levenshtein distance of `a` and `b` (each at most HINT_KEY_MAX bytes), letters without case. */
static size_t hint_distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t prev[HINT_KEY_MAX + 1], cur[HINT_KEY_MAX + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (hint_lower(a[i - 1]) != hint_lower(b[j - 1]));
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
    }
    return prev[lb];
}

const char *config_hint_nearest(const char *key, const char *const *allowed)
{
    size_t lk = strlen(key), best_d = 3;
    const char *best = NULL;
    if (lk == 0 || lk > HINT_KEY_MAX)
        return NULL;
    for (size_t i = 0; allowed[i]; i++) {
        size_t la = strlen(allowed[i]);
        if (la > HINT_KEY_MAX)
            continue;
        size_t d = hint_distance(key, lk, allowed[i], la);
        if (d < best_d && d * 2 < lk) {
            best_d = d;
            best = allowed[i];
        }
    }
    return best;
}
