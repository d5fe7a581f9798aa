/* proxyproto.h — the PROXY protocol (haproxy's doc/proxy-protocol.txt) as far as onionfront speaks it:
 * parsing the version 1 text line tor sends first on every stream when a service has
 * `HiddenServiceExportCircuitID haproxy`, turning it into tor's circuit identity, and encoding the
 * version 2 binary header onionfront sends to backends that asked for it (port_conf.proxy_protocol).
 *
 * Owns only bytes in and bytes out: no I/O, no logging, no allocation. Errors go to the caller's buffer
 * and never echo the input bytes (the line comes from the network side of tor).
 *
 * What tor sends (tor's export_hs_client_circuit_id(), tor 0.4.9):
 *     PROXY TCP6 fc00:dead:beef:4dad::<gid >> 16 in hex>:<gid & 0xffff in hex> ::1 <gid & 0xffff> <virtport>\r\n
 * e.g. "PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\r\n": the 32-bit global circuit id is the low 32 bits
 * of the source address (within fc00:dead:beef:4dad::/64) and, modulo 65536, the source port; the
 * destination port is the onion service's virtual port. A stream without a circuit gets id 0 and
 * source port 1.
 *
 * What onionfront sends to a backend (proxyproto_v2_encode, PROXYPROTO_V2_LEN bytes):
 *     the 12-byte v2 signature, 0x21 (version 2, PROXY), 0x21 (AF_INET6, STREAM), length 43,
 *     source fc00:dead:beef:4dad::<circuit id> (the same address tor would have given, so a backend
 *     configured for tor's v1 line sees the same identity), destination ::1, source port
 *     circuit id & 0xffff, destination port the virtual port, then one TLV of the application range
 *     (spec 2.2.8): type 0xE0 (PROXYPROTO_TLV_CIRCUIT_ID), length 4, the circuit id as a 32-bit
 *     big-endian number. Backends that ignore TLVs lose nothing: the address carries the same id. */
#ifndef ONIONFRONT_PROXYPROTO_H
#define ONIONFRONT_PROXYPROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROXYPROTO_V1_MAX 107          /* the longest valid v1 line, CRLF included (spec 2.1) */
#define PROXYPROTO_V2_LEN 59           /* 16-byte header + 36 address bytes + 7-byte TLV */
#define PROXYPROTO_TLV_CIRCUIT_ID 0xE0 /* PP2_TYPE_MIN_CUSTOM: tor's global circuit id, 4 bytes BE */

enum proxyproto_family {
    PROXYPROTO_UNKNOWN, /* "PROXY UNKNOWN ...": no address information */
    PROXYPROTO_TCP4,
    PROXYPROTO_TCP6,
};
/* "UNKNOWN", "TCP4", "TCP6". */
const char *proxyproto_family_str(enum proxyproto_family f);

/* One parsed v1 line. Addresses in network byte order: TCP4 uses the first 4 bytes, UNKNOWN leaves
 * everything zero. */
struct proxyproto_v1 {
    enum proxyproto_family family;
    uint8_t src[16], dst[16];
    uint16_t src_port, dst_port;
};

/* Parse a v1 line at the start of `buf` (`len` bytes, need not be NUL-terminated; bytes after the line
 * are not looked at). Strict per spec 2.1: "PROXY", single spaces, TCP4 with dotted quads without
 * leading zeros, TCP6 with hexadecimal groups (one "::" at most, no embedded IPv4), ports 0-65535
 * without leading zeros, CRLF (a lone CR or LF is an error), at most PROXYPROTO_V1_MAX bytes; for
 * UNKNOWN anything printable up to the CRLF is ignored.
 * Return the length of the line including its CRLF (> 0) and fill *out; 0 if the bytes so far are a
 * valid beginning but the CRLF has not arrived yet (call again with more); or -1 with a message in
 * `err` naming the field ("PROXY line: source port: leading zero"). A prefix of a line that can no
 * longer become valid is refused at once, so a peer that speaks anything else is dropped early. */
int proxyproto_v1_parse(const char *buf, size_t len, struct proxyproto_v1 *out, char *err, size_t errlen);

/* tor's circuit identity from a parsed line: require TCP6, a source address in fc00:dead:beef:4dad::/64
 * with bits 64-95 zero, and a source port that is the id's low 16 bits (or 1 for id 0, tor's "no
 * circuit"), and a destination port 1-65535 (a virtual port). Set *circuit_id and *virtual_port (the
 * destination port). Return 0, or -1 with a message saying what did not match. */
int proxyproto_tor_circuit(const struct proxyproto_v1 *h, uint32_t *circuit_id, uint16_t *virtual_port, char *err,
                           size_t errlen);

/* Write the v2 header for `circuit_id` and `virtual_port` (described above) to `out`. Return the number
 * of bytes written (PROXYPROTO_V2_LEN), or 0 if `cap` is too small (nothing written). */
size_t proxyproto_v2_encode(uint32_t circuit_id, uint16_t virtual_port, uint8_t *out, size_t cap);

#endif
