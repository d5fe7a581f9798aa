/* hashpeer.h — a test peer for byte-exact transfers: on one end of a stream socket it sends `n`
 * pseudo-random bytes (generated as the socket takes them, so 50 MB cost no memory), then half-closes,
 * and it hashes (SHA-256) everything it receives until EOF. The expected digest of what a peer with the
 * same seed sends comes from hashpeer_expect. A peer can read slowly (one bounded read per tick) to play
 * a slow reader, counting its reads. Linked into every test binary, like tmpdir; no global state. */
#ifndef TESTS_HASHPEER_H
#define TESTS_HASHPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct hashpeer;

/* A peer on `fd` (made non-blocking; closed by hashpeer_free) that sends `n` bytes of the stream
 * seeded with `seed`. NULL on OOM. */
struct hashpeer *hashpeer_new(struct event_base *base, int fd, size_t n, uint64_t seed);

/* Read at most `bytes` every `tick_ms` instead of whenever data comes (0 bytes: read freely again). */
void hashpeer_set_slow(struct hashpeer *p, size_t bytes, unsigned tick_ms);

/* Everything sent and the half-close done. */
bool hashpeer_sent_all(const struct hashpeer *p);
/* EOF received (all of the peer's bytes are in the digest). */
bool hashpeer_got_eof(const struct hashpeer *p);
/* An error or reset was seen on the socket (then `*err` holds errno when not NULL). */
bool hashpeer_failed(const struct hashpeer *p, int *err);
/* Bytes received so far, and the number of reads that returned bytes. */
size_t hashpeer_received(const struct hashpeer *p);
unsigned long hashpeer_reads(const struct hashpeer *p);

/* The SHA-256 of what was received so far (the hash goes on afterwards). */
void hashpeer_digest(const struct hashpeer *p, uint8_t out[32]);

/* The SHA-256 of the first `n` bytes of the stream seeded with `seed`. */
void hashpeer_expect(size_t n, uint64_t seed, uint8_t out[32]);

/* 0 if exactly `n` bytes were received and they are the stream seeded with `seed`, else -1 (and a
 * line on stderr saying how many bytes came). */
int hashpeer_check(const struct hashpeer *p, size_t n, uint64_t seed);

/* Reset the connection (SO_LINGER 0, then close) and free. */
void hashpeer_reset(struct hashpeer *p);

/* Close the socket and free. NULL is a no-op. */
void hashpeer_free(struct hashpeer *p);

#endif
