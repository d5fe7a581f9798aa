/* cp_reply.c — framing of tor's control-port replies (control-spec 2.3, 2.4): bytes in, complete replies
 * out, in arrival order.
 *
 * Owns: splitting the stream into lines (CRLF or bare LF), the status line syntax ("NNN-", "NNN ",
 * "NNN+"), "+" data blocks (dot-stuffed, ended by a "." line), grouping lines into replies, the line and
 * reply size caps, and wiping everything it held, since replies carry secrets (ADD_ONION's PrivateKey=).
 * Does not own: what a line means (cp_kv.c, cp_event.c), which command a reply answers (cp_conn.c),
 * sockets. Pure: no I/O, never logs.
 *
 * Sizes: a line's length excludes its line ending; a reply's size is what it occupied on the wire (its
 * lines with their line endings, its data blocks with stuffing and the "." terminator) plus
 * CP_REPLY_LINE_OVERHEAD for each status line, so that the cap bounds memory however short the lines. */
#include "controlproto/cp_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

/* How much of an offending line an error message quotes: enough to recognise the line, too little to
 * carry a key ("250-PrivateKey=E" is 16 bytes; the key itself starts later). Data-block lines are never
 * quoted. */
#define CP_REPLY_QUOTE_MAX 16

_Static_assert(CP_REPLY_LINE_OVERHEAD >= 2 * sizeof(struct cp_line) + 32,
               "CP_REPLY_LINE_OVERHEAD must cover a line's struct and its share of the lines array");

struct cp_reply_parser {
    size_t max_line;
    size_t max_reply;

    /* The start of a line whose end has not arrived yet (at most max_line + 1 bytes). */
    char *pend;
    size_t pend_len;
    size_t pend_cap;

    size_t lineno; /* lines completed so far, data-block lines included */

    /* The reply being read, NULL between replies. */
    struct cp_reply *cur;
    size_t cur_cap;        /* allocated entries of cur->lines */
    size_t cur_size;       /* size of cur so far: wire bytes + CP_REPLY_LINE_OVERHEAD per status line */
    size_t cur_first_line; /* lineno of cur's first line */

    /* The data block of cur's last line while in_data. */
    bool in_data;
    char *data;
    size_t data_len;
    size_t data_cap;

    /* Complete replies not yet taken: queue[q_head .. q_len). */
    struct cp_reply **queue;
    size_t q_head;
    size_t q_len;
    size_t q_cap;

    bool failed;
    char fail_msg[256];
};

struct cp_reply_parser *
cp_reply_parser_new(size_t max_line, size_t max_reply)
{
    struct cp_reply_parser *p = OPENSSL_zalloc(sizeof(*p));

    if (p == NULL)
        return NULL;
    p->max_line = max_line != 0 ? max_line : CP_REPLY_DEFAULT_MAX_LINE;
    p->max_reply = max_reply != 0 ? max_reply : CP_REPLY_DEFAULT_MAX_REPLY;
    return p;
}

void
cp_reply_free(struct cp_reply *r)
{
    size_t i;

    if (r == NULL)
        return;
    for (i = 0; i < r->n_lines; i++) {
        struct cp_line *l = &r->lines[i];

        if (l->text != NULL)
            OPENSSL_clear_free(l->text, strlen(l->text));
        if (l->data != NULL)
            OPENSSL_clear_free(l->data, l->data_len);
    }
    OPENSSL_free(r->lines);
    OPENSSL_free(r);
}

/* Drop the partial line, the reply being read and its data block, wiping them. */
static void
cp_reply_parser_drop_partial(struct cp_reply_parser *p)
{
    OPENSSL_clear_free(p->pend, p->pend_cap);
    p->pend = NULL;
    p->pend_len = p->pend_cap = 0;
    OPENSSL_clear_free(p->data, p->data_cap);
    p->data = NULL;
    p->data_len = p->data_cap = 0;
    p->in_data = false;
    cp_reply_free(p->cur);
    p->cur = NULL;
    p->cur_cap = p->cur_size = 0;
}

void
cp_reply_parser_free(struct cp_reply_parser *p)
{
    size_t i;

    if (p == NULL)
        return;
    cp_reply_parser_drop_partial(p);
    for (i = p->q_head; i < p->q_len; i++)
        cp_reply_free(p->queue[i]);
    OPENSSL_free(p->queue);
    OPENSSL_free(p);
}

static int cp_reply_fail(struct cp_reply_parser *p, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Put the parser in the failed state with a message, copy it to `err`, return -1. */
static int
cp_reply_fail(struct cp_reply_parser *p, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->fail_msg, sizeof(p->fail_msg), fmt, ap);
    va_end(ap);
    p->failed = true;
    cp_reply_parser_drop_partial(p);
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", p->fail_msg);
    return -1;
}

/* Write the first bytes of a line into `out` for an error message, non-printable bytes as \xNN. */
static const char *
cp_reply_quote_start(const char *s, size_t n, char *out, size_t outlen)
{
    size_t i, o = 0;

    if (n > CP_REPLY_QUOTE_MAX)
        n = CP_REPLY_QUOTE_MAX;
    for (i = 0; i < n && o + 5 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
    }
    out[o] = '\0';
    return out;
}

/* Grow `*buf` (wiping the old copy) so that it holds at least `need` bytes. */
static int
cp_reply_reserve(char **buf, size_t *cap, size_t len, size_t need)
{
    size_t ncap;
    char *nb;

    if (need <= *cap)
        return 0;
    ncap = *cap != 0 ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    if ((nb = OPENSSL_clear_realloc(*buf, len, ncap)) == NULL)
        return -1;
    *buf = nb;
    *cap = ncap;
    return 0;
}

/* Move the finished reply `p->cur` to the queue. */
static int
cp_reply_enqueue(struct cp_reply_parser *p)
{
    if (p->q_head > 0 && p->q_len == p->q_cap) {
        memmove(p->queue, p->queue + p->q_head, (p->q_len - p->q_head) * sizeof(*p->queue));
        p->q_len -= p->q_head;
        p->q_head = 0;
    }
    if (p->q_len == p->q_cap) {
        size_t ncap = p->q_cap != 0 ? p->q_cap * 2 : 8;
        struct cp_reply **nq = OPENSSL_realloc(p->queue, ncap * sizeof(*nq));

        if (nq == NULL)
            return -1;
        p->queue = nq;
        p->q_cap = ncap;
    }
    p->queue[p->q_len++] = p->cur;
    p->cur = NULL;
    p->cur_cap = p->cur_size = 0;
    return 0;
}

/* One line of a data block, without its line ending. */
static int
cp_reply_data_line(struct cp_reply_parser *p, const char *s, size_t n, char *err, size_t errlen)
{
    struct cp_line *l;

    if (n == 1 && s[0] == '.') {
        /* control-spec 2.4: CmdData ends with "." CRLF. The data is NUL-terminated for the caller. */
        if (cp_reply_reserve(&p->data, &p->data_cap, p->data_len, p->data_len + 1) < 0)
            return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno);
        p->data[p->data_len] = '\0';
        l = &p->cur->lines[p->cur->n_lines - 1];
        l->data = p->data;
        l->data_len = p->data_len;
        p->data = NULL;
        p->data_len = p->data_cap = 0;
        p->in_data = false;
        return 0;
    }
    /* control-spec 2.4: leading periods are escaped with an additional period (RFC 2821 4.5.2). */
    if (n > 0 && s[0] == '.') {
        s++;
        n--;
    }
    if (cp_reply_reserve(&p->data, &p->data_cap, p->data_len, p->data_len + n + 2) < 0)
        return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno);
    memcpy(p->data + p->data_len, s, n);
    p->data_len += n;
    p->data[p->data_len++] = '\n';
    return 0;
}

/* One status line ("NNN" sep text), without its line ending. */
static int
cp_reply_status_line(struct cp_reply_parser *p, const char *s, size_t n, char *err, size_t errlen)
{
    char q[CP_REPLY_QUOTE_MAX * 4 + 1];
    struct cp_line *l;
    int status;
    char sep;

    if (n < 4)
        return cp_reply_fail(p, err, errlen, "line %zu: too short for a status line: \"%s\"", p->lineno,
                             cp_reply_quote_start(s, n, q, sizeof(q)));
    /* control-spec 2.3: StatusCode = 3DIGIT */
    if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9')
        return cp_reply_fail(p, err, errlen, "line %zu: status code is not three digits: \"%s\"", p->lineno,
                             cp_reply_quote_start(s, n, q, sizeof(q)));
    status = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
    sep = s[3];
    if (sep != '-' && sep != ' ' && sep != '+')
        return cp_reply_fail(p, err, errlen,
                             "line %zu: separator after status %03d is not '-', ' ' or '+': \"%s\"",
                             p->lineno, status, cp_reply_quote_start(s, n, q, sizeof(q)));
    if (memchr(s, '\0', n) != NULL)
        return cp_reply_fail(p, err, errlen, "line %zu: NUL byte in status line \"%s\"", p->lineno,
                             cp_reply_quote_start(s, n, q, sizeof(q)));
    if (p->cur != NULL) {
        int first = p->cur->lines[0].status;

        /* control-spec 2.3: lines of one reply share a status code unless specified otherwise; 3.8 lets
         * MAPADDRESS mix codes (512-... then 250 ...), so command replies may mix. An event (6xx) and a
         * command reply never interleave, and an event keeps its code. */
        if ((first / 100 == 6) != (status / 100 == 6))
            return cp_reply_fail(p, err, errlen,
                                 "line %zu: status %03d inside the %s that began with %03d at line %zu: "
                                 "\"%s\"",
                                 p->lineno, status, first / 100 == 6 ? "event" : "reply", first,
                                 p->cur_first_line, cp_reply_quote_start(s, n, q, sizeof(q)));
        if (first / 100 == 6 && status != first)
            return cp_reply_fail(p, err, errlen,
                                 "line %zu: status changed from %03d to %03d inside an event: \"%s\"",
                                 p->lineno, first, status, cp_reply_quote_start(s, n, q, sizeof(q)));
    } else if ((p->cur = OPENSSL_zalloc(sizeof(*p->cur))) == NULL) {
        return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno);
    }
    if (p->cur->n_lines == p->cur_cap) {
        size_t ncap = p->cur_cap != 0 ? p->cur_cap * 2 : 4;
        struct cp_line *nl = OPENSSL_realloc(p->cur->lines, ncap * sizeof(*nl));

        if (nl == NULL)
            return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno);
        p->cur->lines = nl;
        p->cur_cap = ncap;
    }
    l = &p->cur->lines[p->cur->n_lines];
    memset(l, 0, sizeof(*l));
    if ((l->text = OPENSSL_strndup(s + 4, n - 4)) == NULL)
        return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno);
    l->status = status;
    l->sep = sep;
    p->cur->n_lines++;
    if (sep == '+') {
        p->in_data = true; /* control-spec 2.3: DataReplyLine = StatusCode "+" ReplyLine CmdData */
    } else if (sep == ' ') {
        p->cur->status = status;
        p->cur->is_event = status / 100 == 6;
        if (cp_reply_enqueue(p) < 0)
            return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno);
    }
    return 0;
}

/* One complete line: `n` bytes without the line ending, which was `eol` bytes long. */
static int
cp_reply_line(struct cp_reply_parser *p, const char *s, size_t n, size_t eol, char *err, size_t errlen)
{
    p->lineno++;
    if (p->cur == NULL)
        p->cur_first_line = p->lineno;
    p->cur_size += n + eol + (p->in_data ? 0 : CP_REPLY_LINE_OVERHEAD);
    if (p->cur_size > p->max_reply)
        return cp_reply_fail(p, err, errlen,
                             "line %zu: the reply that began at line %zu is larger than %zu bytes "
                             "(%zu lines; each status line counts %zu bytes beyond its text)",
                             p->lineno, p->cur_first_line, p->max_reply, p->lineno - p->cur_first_line + 1,
                             (size_t)CP_REPLY_LINE_OVERHEAD);
    if (p->in_data)
        return cp_reply_data_line(p, s, n, err, errlen);
    return cp_reply_status_line(p, s, n, err, errlen);
}

/* The line starting with `p->pend` and continuing with `buf` is known to exceed the line cap. */
static int
cp_reply_too_long(struct cp_reply_parser *p, const char *buf, size_t len, char *err, size_t errlen)
{
    char start[CP_REPLY_QUOTE_MAX];
    char q[CP_REPLY_QUOTE_MAX * 4 + 1];
    size_t n = p->pend_len < sizeof(start) ? p->pend_len : sizeof(start);

    /* Quote the same prefix however the line was split: a line only gets here once more than max_line
     * bytes of it have arrived. */
    if (n > 0)
        memcpy(start, p->pend, n);
    if (n < sizeof(start)) {
        size_t more = len < sizeof(start) - n ? len : sizeof(start) - n;

        memcpy(start + n, buf, more);
        n += more;
    }
    if (n > p->max_line)
        n = p->max_line;
    if (p->in_data)
        return cp_reply_fail(p, err, errlen, "line %zu: data-block line longer than %zu bytes", p->lineno + 1,
                             p->max_line);
    return cp_reply_fail(p, err, errlen, "line %zu: longer than %zu bytes: \"%s...\"", p->lineno + 1,
                         p->max_line, cp_reply_quote_start(start, n, q, sizeof(q)));
}

int
cp_reply_parser_feed(struct cp_reply_parser *p, const char *buf, size_t len, char *err, size_t errlen)
{
    if (p->failed) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "parser failed earlier: %s", p->fail_msg);
        return -1;
    }
    while (len > 0) {
        const char *nl = memchr(buf, '\n', len);
        size_t seg = nl != NULL ? (size_t)(nl - buf) : len; /* bytes before the LF (or all of them) */
        size_t total = p->pend_len + seg;
        char last;
        size_t content;

        /* The byte before the LF, or the last byte so far; a CR there may belong to a CRLF. */
        last = seg > 0 ? buf[seg - 1] : p->pend_len > 0 ? p->pend[p->pend_len - 1] : '\0';
        content = total - (last == '\r' ? 1 : 0);
        if (content > p->max_line)
            return cp_reply_too_long(p, buf, len, err, errlen);
        if (nl == NULL) {
            if (cp_reply_reserve(&p->pend, &p->pend_cap, p->pend_len, total) < 0)
                return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno + 1);
            memcpy(p->pend + p->pend_len, buf, len);
            p->pend_len = total;
            return 0;
        }
        /* control-spec 2.1: tor sends CRLF; a bare LF is accepted too. */
        if (p->pend_len == 0) {
            if (cp_reply_line(p, buf, content, total - content + 1, err, errlen) < 0)
                return -1;
        } else {
            if (cp_reply_reserve(&p->pend, &p->pend_cap, p->pend_len, total) < 0)
                return cp_reply_fail(p, err, errlen, "line %zu: out of memory", p->lineno + 1);
            memcpy(p->pend + p->pend_len, buf, seg);
            p->pend_len = total;
            if (cp_reply_line(p, p->pend, content, total - content + 1, err, errlen) < 0)
                return -1;
            OPENSSL_cleanse(p->pend, p->pend_len);
            p->pend_len = 0;
        }
        buf += seg + 1;
        len -= seg + 1;
    }
    return 0;
}

struct cp_reply *
cp_reply_parser_next(struct cp_reply_parser *p)
{
    struct cp_reply *r;

    if (p == NULL || p->q_head == p->q_len)
        return NULL;
    r = p->queue[p->q_head++];
    if (p->q_head == p->q_len)
        p->q_head = p->q_len = 0;
    return r;
}

bool
cp_reply_is_ok(const struct cp_reply *r)
{
    return r != NULL && r->status >= 200 && r->status < 300;
}

const char *
cp_reply_message(const struct cp_reply *r)
{
    if (r == NULL || r->n_lines == 0)
        return "";
    return r->lines[r->n_lines - 1].text;
}
