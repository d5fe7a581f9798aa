/* cp_err.h — the one way controlproto reports errors: a message written into the caller's buffer.
 * Internal to the library (controlproto never logs). */
#ifndef CP_ERR_H
#define CP_ERR_H

#include <stddef.h>

/* Format a message into `err` (at most `errlen` bytes, NUL-terminated). NULL or 0-size buffers are
 * allowed and ignored. */
void cp_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
