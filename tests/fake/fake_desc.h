/* fake_desc.h — the outer layer of a v3 onion-service descriptor for tests (rend-spec-v3 2.4): the lines
 * served.c reads, with a real descriptor-signing-key certificate layout (cert-spec 2.1) around a
 * signing key of 32 bytes all `key_byte`. Enough for parsers; nothing is signed. Linked into every test
 * binary, like tmpdir; no global state. */
#ifndef TESTS_FAKE_DESC_H
#define TESTS_FAKE_DESC_H

#include <stddef.h>
#include <stdint.h>

/* The descriptor text into `out` (`len` bytes; 1 kB is enough), lines ended by `eol` ("\n" or "\r\n").
 * Returns `out`. */
char *fake_desc_body(char *out, size_t len, unsigned char key_byte, uint64_t revision, const char *eol);

#endif
