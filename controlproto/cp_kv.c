/* cp_kv.c — the lexical layer of the control protocol: QuotedString quoting (control-spec 2.1), unquoting
 * with the CString escapes tor really writes (2.1.1), bare-token checks, Keyword=Value argument lists of
 * reply and event lines, and the "key=value" lines of GETINFO/GETCONF answers.
 *
 * Owns only strings. It does not know what any keyword means (cp_event.c, cp_cmd.c), nor how lines are
 * framed (cp_reply.c). Does no I/O, never logs. Every string it frees may have held a secret (ADD_ONION's
 * PrivateKey=), so it is wiped first. */
#include "controlproto/cp_err.h"
#include "controlproto/cp_kv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* Wipe and free a NUL-terminated string. */
static void
cp_kv_str_free(char *s)
{
    if (s == NULL)
        return;
    OPENSSL_cleanse(s, strlen(s));
    free(s);
}

char *
cp_quote(const char *in, size_t len, char *err, size_t errlen)
{
    size_t i, n = 2;
    char *out, *o;

    if (in == NULL && len > 0) {
        cp_seterr(err, errlen, "cp_quote: NULL input");
        return NULL;
    }
    for (i = 0; i < len; i++) {
        /* control-spec 2.1: a command is one line, so CR and LF cannot be carried; NUL ends a C string
         * on tor's side. Either would let a value inject a second command. */
        if (in[i] == '\r' || in[i] == '\n' || in[i] == '\0') {
            cp_seterr(err, errlen, "cannot quote: %s at offset %zu",
                      in[i] == '\r' ? "CR" : in[i] == '\n' ? "LF" : "NUL byte", i);
            return NULL;
        }
        n += (in[i] == '"' || in[i] == '\\') ? 2 : 1;
    }
    if ((out = malloc(n + 1)) == NULL) {
        cp_seterr(err, errlen, "cannot quote: out of memory");
        return NULL;
    }
    o = out;
    *o++ = '"';
    for (i = 0; i < len; i++) {
        /* control-spec 2.1: in QuotedStrings, backslashes and quotes must be escaped. Nothing else is,
         * so tor (which reads \n, \t, \r and octal as C escapes, 2.1.1) cannot misread what we send. */
        if (in[i] == '"' || in[i] == '\\')
            *o++ = '\\';
        *o++ = in[i];
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static int
cp_kv_is_octal(char c)
{
    return c >= '0' && c <= '7';
}

int
cp_unquote(const char *in, size_t len, char **out, size_t *out_len, size_t *consumed, char *err,
           size_t errlen)
{
    size_t i, o = 0;
    char *buf;

    *out = NULL;
    if (out_len != NULL)
        *out_len = 0;
    if (consumed != NULL)
        *consumed = 0;
    if (in == NULL || len == 0 || in[0] != '"') {
        cp_seterr(err, errlen, "quoted string does not start with '\"'");
        return -1;
    }
    /* The unquoted text is never longer than the quoted one. */
    if ((buf = malloc(len)) == NULL) {
        cp_seterr(err, errlen, "cannot unquote: out of memory");
        return -1;
    }
    for (i = 1; i < len; i++) {
        char c = in[i];

        if (c == '"') {
            buf[o] = '\0';
            *out = buf;
            if (out_len != NULL)
                *out_len = o;
            if (consumed != NULL)
                *consumed = i + 1;
            return 0;
        }
        if (c != '\\') {
            buf[o++] = c;
            continue;
        }
        if (i + 1 >= len) {
            cp_seterr(err, errlen, "quoted string ends in a backslash at offset %zu", i);
            goto fail;
        }
        c = in[++i];
        /* control-spec 2.1.1: read \n \t \r and \0 ... \377 as C escapes; a backslash followed by any
         * other character is that character. */
        switch (c) {
        case 'n':
            buf[o++] = '\n';
            break;
        case 't':
            buf[o++] = '\t';
            break;
        case 'r':
            buf[o++] = '\r';
            break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            size_t start = i - 1, k;
            unsigned v = 0;

            for (k = 0; k < 3 && i < len && cp_kv_is_octal(in[i]); k++, i++)
                v = v * 8 + (unsigned)(in[i] - '0');
            i--; /* the loop's i++ steps past the last digit */
            if (v > 0377) {
                cp_seterr(err, errlen, "octal escape \\%.3s at offset %zu is above \\377", in + start + 1,
                          start);
                goto fail;
            }
            buf[o++] = (char)v;
            break;
        }
        default:
            buf[o++] = c;
            break;
        }
    }
    cp_seterr(err, errlen, "quoted string has no closing '\"' (%zu bytes read)", len);
fail:
    OPENSSL_cleanse(buf, o);
    free(buf);
    return -1;
}

bool
cp_is_bare_token(const char *s)
{
    const unsigned char *p;

    if (s == NULL || *s == '\0')
        return false;
    for (p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == ' ' || *p == '"' || *p == '\\' || *p < 0x20 || *p == 0x7f)
            return false;
    }
    return true;
}

static bool
cp_kv_is_keyword_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Append `s` (stolen) to `a`'s positional words. */
static int
cp_args_add_pos(struct cp_args *a, char *s)
{
    char **np = realloc(a->pos, (a->n_pos + 1) * sizeof(*np));

    if (np == NULL)
        return -1;
    a->pos = np;
    a->pos[a->n_pos++] = s;
    return 0;
}

/* Append the pair (`key`, `value`), both stolen, to `a`. */
static int
cp_args_add_kv(struct cp_args *a, char *key, char *value)
{
    struct cp_kv *nkv = realloc(a->kv, (a->n_kv + 1) * sizeof(*nkv));

    if (nkv == NULL)
        return -1;
    a->kv = nkv;
    a->kv[a->n_kv].key = key;
    a->kv[a->n_kv].value = value;
    a->n_kv++;
    return 0;
}

/* Read one value starting at `s`: a QuotedString when it starts with '"' (it must then be followed by SP
 * or the end of the line), else the bytes up to the next SP. Set `*val` to a new string and return the
 * number of bytes read, or -1 with `err` filled; `what` names the token in messages. */
static long
cp_args_read_value(const char *s, const char *what, char **val, char *err, size_t errlen)
{
    size_t n;

    if (*s == '"') {
        char uerr[128];
        size_t vlen;

        if (cp_unquote(s, strlen(s), val, &vlen, &n, uerr, sizeof(uerr)) < 0) {
            cp_seterr(err, errlen, "%s: %s", what, uerr);
            return -1;
        }
        if (memchr(*val, '\0', vlen) != NULL) {
            /* Our strings are NUL-terminated: a \0 escape would silently cut the value short. */
            cp_seterr(err, errlen, "%s: quoted value contains a NUL byte", what);
            cp_kv_str_free(*val);
            *val = NULL;
            return -1;
        }
        if (s[n] != '\0' && s[n] != ' ') {
            cp_seterr(err, errlen, "%s: no space after the closing quote", what);
            cp_kv_str_free(*val);
            *val = NULL;
            return -1;
        }
        return (long)n;
    }
    n = strcspn(s, " ");
    if ((*val = strndup(s, n)) == NULL) {
        cp_seterr(err, errlen, "%s: out of memory", what);
        return -1;
    }
    return (long)n;
}

int
cp_args_parse(const char *line, struct cp_args *out, char *err, size_t errlen)
{
    const char *s = line;
    size_t word = 0;

    memset(out, 0, sizeof(*out));
    if (line == NULL) {
        cp_seterr(err, errlen, "cp_args_parse: NULL line");
        return -1;
    }
    for (;;) {
        char what[96];
        size_t klen = 0;
        long n;
        char *val;

        while (*s == ' ')
            s++;
        if (*s == '\0')
            return 0;
        word++;
        while (cp_kv_is_keyword_char(s[klen]))
            klen++;
        if (klen > 0 && s[klen] == '=') {
            char *key = strndup(s, klen);

            if (key == NULL) {
                cp_seterr(err, errlen, "word %zu: out of memory", word);
                goto fail;
            }
            snprintf(what, sizeof(what), "word %zu (%.*s=)", word, (int)(klen > 32 ? 32 : klen), s);
            if ((n = cp_args_read_value(s + klen + 1, what, &val, err, errlen)) < 0) {
                free(key);
                goto fail;
            }
            if (cp_args_add_kv(out, key, val) < 0) {
                free(key);
                cp_kv_str_free(val);
                cp_seterr(err, errlen, "%s: out of memory", what);
                goto fail;
            }
            s += klen + 1 + (size_t)n;
        } else {
            /* A positional word starting with '"' is a QuotedString (e.g. ADDRMAP's Expiry, 4.1.7), which
             * may contain spaces. */
            snprintf(what, sizeof(what), "word %zu", word);
            if ((n = cp_args_read_value(s, what, &val, err, errlen)) < 0)
                goto fail;
            if (cp_args_add_pos(out, val) < 0) {
                cp_kv_str_free(val);
                cp_seterr(err, errlen, "%s: out of memory", what);
                goto fail;
            }
            s += n;
        }
    }
fail:
    cp_args_clear(out);
    return -1;
}

void
cp_args_clear(struct cp_args *a)
{
    size_t i;

    if (a == NULL)
        return;
    for (i = 0; i < a->n_pos; i++)
        cp_kv_str_free(a->pos[i]);
    for (i = 0; i < a->n_kv; i++) {
        cp_kv_str_free(a->kv[i].key);
        cp_kv_str_free(a->kv[i].value);
    }
    free(a->pos);
    free(a->kv);
    memset(a, 0, sizeof(*a));
}

const char *
cp_args_get(const struct cp_args *a, const char *key)
{
    size_t i;

    if (a == NULL || key == NULL)
        return NULL;
    for (i = 0; i < a->n_kv; i++) {
        if (strcmp(a->kv[i].key, key) == 0)
            return a->kv[i].value;
    }
    return NULL;
}

int
cp_split_key_value(const char *line, char **key, char **value, char *err, size_t errlen)
{
    const char *eq;
    const char *v;
    size_t vlen;

    *key = NULL;
    *value = NULL;
    if (line == NULL || (eq = strchr(line, '=')) == NULL) {
        cp_seterr(err, errlen, "no '=' in \"%.32s\"", line != NULL ? line : "");
        return -1;
    }
    if (eq == line) {
        cp_seterr(err, errlen, "empty key before '=' in \"%.32s\"", line);
        return -1;
    }
    v = eq + 1;
    vlen = strlen(v);
    if ((*key = strndup(line, (size_t)(eq - line))) == NULL)
        goto oom;
    if (*v == '"') {
        /* GETCONF quotes a value that needs it: unquote only when one QuotedString spans the rest of the
         * line; anything else (GETINFO's free-form values) is returned verbatim. */
        char *uq;
        size_t uq_len, used;

        if (cp_unquote(v, vlen, &uq, &uq_len, &used, NULL, 0) == 0) {
            if (used == vlen && memchr(uq, '\0', uq_len) == NULL) {
                *value = uq;
                return 0;
            }
            OPENSSL_cleanse(uq, uq_len);
            free(uq);
        }
    }
    if ((*value = strndup(v, vlen)) == NULL)
        goto oom;
    return 0;
oom:
    free(*key);
    *key = NULL;
    cp_seterr(err, errlen, "cp_split_key_value: out of memory");
    return -1;
}
