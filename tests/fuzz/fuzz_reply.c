/* fuzz_reply.c — libFuzzer target for the control-port reply parser (cp_reply.c) and the lexical helpers
 * that read tor's lines (cp_kv.c).
 *
 * Input: two control bytes (line cap, reply cap and chunking seed), then bytes "from tor". The bytes are
 * fed once whole and once in chunks; both deliveries must give the same replies and the same error
 * (a difference traps). Every line of every reply also goes through cp_args_parse, cp_split_key_value
 * and cp_unquote, and quoting a line's text then unquoting it must give the text back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_kv.h"
#include "controlproto/cp_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A growable record of everything one delivery produced. */
struct record {
    char *buf;
    size_t len;
    size_t cap;
};

static void
record_add(struct record *rec, const void *p, size_t n)
{
    if (rec->len + n > rec->cap) {
        size_t ncap = rec->cap != 0 ? rec->cap : 256;

        while (ncap < rec->len + n)
            ncap *= 2;
        rec->buf = realloc(rec->buf, ncap);
        if (rec->buf == NULL)
            abort();
        rec->cap = ncap;
    }
    memcpy(rec->buf + rec->len, p, n);
    rec->len += n;
}

/* Run the lexical helpers over one line's text; they must not crash, leak or disagree with each other. */
static void
fuzz_line_text(const char *text)
{
    struct cp_args args;
    char err[256];
    char *k, *v, *q, *uq;
    const char *quote;
    size_t uq_len, used, i;

    memset(&args, 0, sizeof(args));
    if (cp_args_parse(text, &args, err, sizeof(err)) == 0) {
        for (i = 0; i < args.n_kv; i++) {
            if (cp_args_get(&args, args.kv[i].key) == NULL)
                __builtin_trap();
        }
    }
    cp_args_clear(&args);
    if (cp_split_key_value(text, &k, &v, err, sizeof(err)) == 0) {
        free(k);
        free(v);
    }
    if ((quote = strchr(text, '"')) != NULL &&
        cp_unquote(quote, strlen(quote), &uq, &uq_len, &used, err, sizeof(err)) == 0) {
        if (used > strlen(quote) || uq_len >= used)
            __builtin_trap();
        free(uq);
    }
    (void)cp_is_bare_token(text);
    if ((q = cp_quote(text, strlen(text), err, sizeof(err))) != NULL) {
        if (cp_unquote(q, strlen(q), &uq, &uq_len, &used, err, sizeof(err)) != 0 || used != strlen(q) ||
            uq_len != strlen(text) || memcmp(uq, text, uq_len) != 0)
            __builtin_trap();
        free(uq);
        free(q);
    }
}

static void
drain(struct cp_reply_parser *p, struct record *rec, bool check_lines)
{
    struct cp_reply *r;
    size_t i;

    while ((r = cp_reply_parser_next(p)) != NULL) {
        if (r->n_lines == 0 || r->lines[r->n_lines - 1].sep != ' ' || r->status != r->lines[r->n_lines - 1].status)
            __builtin_trap();
        record_add(rec, &r->status, sizeof(r->status));
        record_add(rec, &r->n_lines, sizeof(r->n_lines));
        for (i = 0; i < r->n_lines; i++) {
            const struct cp_line *l = &r->lines[i];

            record_add(rec, &l->status, sizeof(l->status));
            record_add(rec, &l->sep, 1);
            record_add(rec, l->text, strlen(l->text) + 1);
            if ((l->sep == '+') != (l->data != NULL))
                __builtin_trap();
            if (l->data != NULL) {
                if (l->data[l->data_len] != '\0')
                    __builtin_trap();
                record_add(rec, &l->data_len, sizeof(l->data_len));
                record_add(rec, l->data, l->data_len);
            }
            if (check_lines)
                fuzz_line_text(l->text);
        }
        cp_reply_free(r);
    }
}

/* Feed `in` whole (seed 0) or in chunks of 1..16 bytes chosen by `seed`; record the replies and error. */
static void
deliver(const char *in, size_t len, size_t max_line, size_t max_reply, uint32_t seed, struct record *rec)
{
    struct cp_reply_parser *p = cp_reply_parser_new(max_line, max_reply);
    char err[256];
    size_t off = 0;

    if (p == NULL)
        abort();
    while (off < len) {
        size_t n = len - off;

        if (seed != 0) {
            seed = seed * 1103515245u + 12345u;
            n = 1 + (seed >> 16) % 16;
            if (n > len - off)
                n = len - off;
        }
        if (cp_reply_parser_feed(p, in + off, n, err, sizeof(err)) < 0) {
            drain(p, rec, seed == 0);
            record_add(rec, "E", 1);
            record_add(rec, err, strlen(err));
            break;
        }
        off += n;
        drain(p, rec, seed == 0);
    }
    cp_reply_parser_free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct record whole = {0}, chunked = {0};
    size_t max_line, max_reply;
    uint32_t seed;

    if (size < 2)
        return 0;
    /* Small caps most of the time, so that the cap paths are reached; 0 is the default. */
    max_line = data[0] == 0xff ? 0 : 1 + data[0] % 96;
    max_reply = data[1] == 0xff ? 0 : 1 + (size_t)data[1] * 8;
    seed = 1u + data[0] + ((uint32_t)data[1] << 8);
    deliver((const char *)data + 2, size - 2, max_line, max_reply, 0, &whole);
    deliver((const char *)data + 2, size - 2, max_line, max_reply, seed, &chunked);
    if (whole.len != chunked.len || (whole.len != 0 && memcmp(whole.buf, chunked.buf, whole.len) != 0))
        __builtin_trap(); /* the result depends on how the bytes were split */
    free(whole.buf);
    free(chunked.buf);
    return 0;
}
