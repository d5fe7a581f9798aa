/* cp_reply.h — tor control-port replies: bytes in, complete replies out.
 *
 * Owns the framing of control-spec section 2.3/2.4: mid lines "250-", data lines "250+" followed by a
 * dot-stuffed data block ending in ".", end lines "250 ", and asynchronous 6xx events (single and
 * multi-line) which may arrive between a command and its reply. Accepts CRLF and bare LF.
 * Does no I/O and never logs; it does not interpret what the lines mean (see cp_kv.h, cp_event.h). */
#ifndef CP_REPLY_H
#define CP_REPLY_H

#include <stdbool.h>
#include <stddef.h>

/* Default caps: a line longer than CP_REPLY_DEFAULT_MAX_LINE, or a reply larger than
 * CP_REPLY_DEFAULT_MAX_REPLY bytes, is a protocol error. A reply's size is what it costs in memory, not
 * on the wire: its bytes plus CP_REPLY_LINE_OVERHEAD for every status line (the struct cp_line, its
 * share of the growing lines array and the allocator's bookkeeping of its text). A reply of millions
 * of empty "250-" lines is 6 wire bytes each but about 60 bytes of memory; counting wire bytes alone let
 * 2.8 million of them through a 16 MiB cap and take 171 MB. */
#define CP_REPLY_DEFAULT_MAX_LINE (64 * 1024)
#define CP_REPLY_DEFAULT_MAX_REPLY (16 * 1024 * 1024)

struct cp_line {
    int status;     /* three-digit status code of this line */
    char sep;       /* '-', ' ' or '+' */
    char *text;     /* the line after "NNN<sep>", without CRLF, NUL-terminated */
    char *data;     /* '+' lines only: the data block, dot-unstuffed, lines joined by "\n" (each line,
                       including the last, ends in "\n"); NUL-terminated. NULL for other lines. */
    size_t data_len;
};

/* A reply owns all its strings (allocated with OpenSSL's allocator so they can be wiped): copy what you
 * keep, never free or steal a field; free the whole reply with cp_reply_free(). Lines of a command reply
 * may carry different codes (control-spec 3.8: MAPADDRESS mixes 512 and 250); the lines of an event all
 * carry the same 6xx code, and event and command-reply lines never share a reply. */
struct cp_reply {
    int status;          /* status code of the end line */
    bool is_event;       /* status 6xx: an asynchronous event, not the answer to a command */
    size_t n_lines;
    struct cp_line *lines; /* lines[n_lines - 1] is the end line (sep ' ') */
};

/* The cost counted for a status line beyond its bytes: its struct cp_line, twice (the lines array grows
 * by doubling), and 32 bytes of the allocator's bookkeeping of its text — 96 on LP64 (cp_reply.c
 * checks that it is no less there); a fixed number, so that a cap means the same everywhere. */
#define CP_REPLY_LINE_OVERHEAD 96

struct cp_reply_parser;

/* Create a parser with the given caps (0 picks the default). Returns NULL on allocation failure. */
struct cp_reply_parser *cp_reply_parser_new(size_t max_line, size_t max_reply);

/* Free the parser and any replies it still holds. NULL is a no-op. */
void cp_reply_parser_free(struct cp_reply_parser *p);

/* Feed `len` bytes to `p`. Complete replies are queued for cp_reply_parser_next().
 * Return 0, or -1 and write a message naming what was wrong (and the offending line's start) into
 * `err`; after an error the parser stays failed and every later feed returns -1 (close the connection).
 * Replies completed before the error can still be taken. */
int cp_reply_parser_feed(struct cp_reply_parser *p, const char *buf, size_t len, char *err, size_t errlen);

/* Take the oldest complete reply, or NULL if none. The caller owns it (cp_reply_free). */
struct cp_reply *cp_reply_parser_next(struct cp_reply_parser *p);

/* Free a reply. NULL is a no-op. Text and data are wiped first: replies may carry secrets
 * (ADD_ONION's PrivateKey=). */
void cp_reply_free(struct cp_reply *r);

/* True for 2xx replies. */
bool cp_reply_is_ok(const struct cp_reply *r);

/* The text of the end line (e.g. "OK", or an error message); never NULL for a parsed reply. */
const char *cp_reply_message(const struct cp_reply *r);

#endif
