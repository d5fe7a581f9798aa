/* torcaps.h — what a tor binary can do, as far as onionfront's config depends on it: its version and
 * whether it was built with the proof-of-work module. Asked of the binary itself (`tor --version`,
 * `tor --list-modules`) before a config that enables PoW is used, so a tor that would refuse the
 * options, or crash on them (TROVE-2026-020, fixed in 0.4.9.9), is caught with an error naming the field
 * instead of a SETCONF refusal at run time.
 *
 * Owns nothing beyond one short-lived child per probe. Does not log. The parsers are pure. */
#ifndef ONIONFRONT_TORCAPS_H
#define ONIONFRONT_TORCAPS_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct service_conf;

/* The oldest tor that may run a PoW service: 0.4.9.9 fixed a divide-by-zero crash in PoW services. */
#define TORCAPS_POW_MIN_VERSION "0.4.9.9"

struct torcaps {
    unsigned version[4]; /* 0.4.9.11 -> {0, 4, 9, 11} */
    char version_text[32];
    bool pow;            /* "pow: yes" in --list-modules */
};

/* Parse `tor --version` output ("Tor version 0.4.9.11." on its first line; a suffix like "-rc" or
 * " (git-...)" is allowed). Return 0, or -1 with why in err. */
int torcaps_parse_version(const char *text, struct torcaps *caps, char *err, size_t errlen);

/* Parse `tor --list-modules` output (lines "name: yes|no"); sets caps->pow. Return 0, or -1 with why
 * (a line of another form, or no "pow:" line at all). */
int torcaps_parse_modules(const char *text, struct torcaps *caps, char *err, size_t errlen);

/* Compare a.b.c.d versions: <0, 0, >0. */
int torcaps_version_cmp(const unsigned a[4], const unsigned b[4]);

/* Can `caps` run `sc`, the i-th service (the index names the field)? Return 0, or -1 with "<field path>:
 * <why>". */
int torcaps_check_service(const struct torcaps *caps, const struct service_conf *sc, size_t i, char *err,
                          size_t errlen);

/* Can `caps` run `conf`? Return 0, or -1 with "<field path>: <why>" naming the first service whose dos
 * settings this tor cannot take. */
int torcaps_check(const struct torcaps *caps, const struct config *conf, char *err, size_t errlen);

/* Run `binary --version` only (bounded as below) and parse it: does the file run as a tor? Blocks.
 * Return 0 (caps->pow false: not asked), or -1 with why. */
int torcaps_probe_version(const char *binary, struct torcaps *caps, char *err, size_t errlen);

/* Run `binary --version` and `binary --list-modules` (each bounded to a few seconds) and parse them.
 * Blocks. Return 0, or -1 with why. */
int torcaps_probe(const char *binary, struct torcaps *caps, char *err, size_t errlen);

/* When `conf` enables PoW in spawn mode, probe conf->tor.binary and torcaps_check it; otherwise
 * nothing (attach mode: the running tor refuses what it cannot do, and service.c reports it). Return 0,
 * or -1 with why. */
int torcaps_check_config(const struct config *conf, char *err, size_t errlen);

#endif
