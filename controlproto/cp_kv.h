/* cp_kv.h — QuotedString escaping/unescaping and Keyword=Value argument parsing (control-spec 2.1, 2.3).
 *
 * Owns the lexical layer shared by command encoders and event/reply decoders. Does no I/O, never logs. */
#ifndef CP_KV_H
#define CP_KV_H

#include <stdbool.h>
#include <stddef.h>

/* Return a new NUL-terminated QuotedString for `len` bytes of `in`, with the surrounding DQUOTEs:
 * '"' and '\\' are backslash-escaped. CR, LF and NUL cannot be sent inside a command line: for those
 * return NULL and explain in `err`. The caller frees the result. */
char *cp_quote(const char *in, size_t len, char *err, size_t errlen);

/* Unquote the QuotedString starting at `in` (which must start with '"'), reading at most `len` bytes.
 * Accepts the escapes tor writes (control-spec 2.1.1: \\ \" \' \n \t \r and 1–3 digit octal).
 * On success return 0, set `*out` to a new NUL-terminated string (its length in `*out_len`, it may
 * contain NUL bytes from octal escapes) and `*consumed` to the bytes read including both quotes.
 * Return -1 with a message in `err` on a missing closing quote or a bad escape. */
int cp_unquote(const char *in, size_t len, char **out, size_t *out_len, size_t *consumed, char *err,
               size_t errlen);

/* True if `s` may be sent bare as a keyword/value without quoting (no SP, no '"', no '\\', no controls,
 * not empty). */
bool cp_is_bare_token(const char *s);

struct cp_kv {
    char *key;
    char *value; /* unquoted value; "" for "KEY=" */
};

/* The arguments of one reply or event line, split at spaces: positional words in order, and
 * Keyword=Value pairs (value bare or QuotedString) in order. A word counts as Keyword=Value when it
 * starts with a keyword ([A-Za-z0-9_]+) followed by '='. A positional word starting with '"' is a
 * QuotedString too (it may contain spaces) and is stored unquoted. */
struct cp_args {
    size_t n_pos;
    char **pos;
    size_t n_kv;
    struct cp_kv *kv;
};

/* Parse `line` into `out` (which the caller has zeroed or cleared). Return 0, or -1 with a message in
 * `err` naming the bad token (e.g. an unterminated quote). On error `out` is left cleared. */
int cp_args_parse(const char *line, struct cp_args *out, char *err, size_t errlen);

/* Free what `a` holds and zero it. Safe on a zeroed struct. */
void cp_args_clear(struct cp_args *a);

/* The value of the first pair named `key` (case-sensitive), or NULL. Borrowed from `a`. */
const char *cp_args_get(const struct cp_args *a, const char *key);

/* Split one "key=value" reply line (as in GETINFO answers, where the value runs to the end of the line and
 * is not quoted unless tor quoted it) at the first '='. A value that is exactly one QuotedString (GETCONF
 * quotes values that need it) is unquoted; any other value is returned verbatim. Return 0 and set new
 * strings, or -1 if there is no '=' or the key is empty. */
int cp_split_key_value(const char *line, char **key, char **value, char *err, size_t errlen);

#endif
