/* onion_address.h — the v3 onion address, the one piece of tor's vocabulary that every wing speaks:
 * computing it from an ed25519 public key, comparing two of them, and tor's base32 (addresses and
 * client-authorization keys).
 *
 * Owns: the address format (address-spec / rend-spec-v3 6) and base32. Does not own: key directories
 * (keys.h), client-auth files (clientauth.h). Pure functions: no I/O, no logging, no state; so the
 * descriptor tracker, verification, tor's metrics and the Onionbalance files can name a service
 * without depending on key-directory I/O. */
#ifndef ONIONFRONT_ONION_ADDRESS_H
#define ONIONFRONT_ONION_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#define ONION_ADDRESS_LEN 56                       /* base32 characters, without ".onion" */
#define ONION_ADDRESS_SIZE (ONION_ADDRESS_LEN + 1) /* with the NUL */

/* Compute the v3 onion address of `pk` (address-spec: base32(PUBKEY | CHECKSUM | VERSION), CHECKSUM =
 * SHA3-256(".onion checksum" | PUBKEY | VERSION)[:2], VERSION = 3) into `out`, without ".onion".
 * Return 0, or -1 if the hash fails. */
int onion_address_from_pubkey(const unsigned char pk[32], char out[ONION_ADDRESS_SIZE]);

/* True if `a` and `b` are the same onion address: the same characters (base32 is case-insensitive), each
 * with or without ".onion". The one comparison of addresses: tor's events, the config and the keys meet
 * here. */
bool onion_address_equal(const char *a, const char *b);

/* Order `a` and `b` (each with or without ".onion", base32 case-insensitive) for sorted look-ups: <0, 0 or
 * >0 as strcmp; 0 exactly when onion_address_equal. */
int onion_address_cmp(const char *a, const char *b);

/* RFC 4648 base32 of `len` bytes of `in` into `out` (len * 8 / 5 rounded up, plus the NUL), lowercase, no
 * padding; unused low bits of the last character are zero (35 bytes -> 56 chars, 32 -> 52). */
void onion_address_base32(const unsigned char *in, size_t len, char *out);

#endif
