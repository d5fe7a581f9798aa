/* torwarn.h — the level onionfront logs each line of tor's own log at, and which of tor's warnings it
 * expects. An operator's `journalctl -p warning` should show what needs attention: the warnings tor
 * prints because onionfront set it up that way on purpose, or because onionfront removed a service, are
 * logged at notice (listed in docs/troubleshooting.md); every other warning of tor stays a warning.
 * The list lives here and nowhere else: the integration tests ask the product (`[notice]` lines), they
 * keep no copy of it. Pure: no I/O, no state. */
#ifndef ONIONFRONT_TORWARN_H
#define ONIONFRONT_TORWARN_H

#include <stdbool.h>

#include "sidecar/core/log.h"

/* What onionfront knows of the tor whose line it relays. */
struct torwarn_ctx {
    bool single_onion;    /* a single-onion service tor: non-anonymous mode on purpose */
    bool hosts_services;  /* a service tor of either mode: onionfront adds and removes its services */
    bool client;          /* a client tor onionfront runs (the probe's, Onionbalance's) */
    bool drops_root;      /* started as root with User: tor drops its privileges itself */
    bool testing_network; /* its torrc sets TestingTorNetwork 1 (a private test network, never production) */
};

/* Why a warning of tor's is expected; TORWARN_UNEXPECTED for every line not in the list. */
enum torwarn_kind {
    TORWARN_UNEXPECTED,
    TORWARN_NON_ANONYMOUS_MODE, /* tor's own words for single onion mode (onionfront warns once itself) */
    TORWARN_STARTED_AS_ROOT,    /* tor started as root to drop to tor.user */
    TORWARN_TEST_NETWORK,       /* TestingTorNetwork and the DirAuthority lines of a private network */
    TORWARN_REMOVED_SERVICE,    /* a circuit of a service that was removed while the circuit was built */
    TORWARN_CLIENT_CACHE_BUG,   /* tor's own accounting bug in a client's descriptor cache (harmless) */
};

/* The kind of tor's warning `text` (the message after "[warn] ") on a tor described by `ctx`. Pure. */
enum torwarn_kind torwarn_classify(const char *text, const struct torwarn_ctx *ctx);

/* A short name of `k` for docs and tests ("non-anonymous-mode", ...). */
const char *torwarn_kind_str(enum torwarn_kind k);

/* The level of one line of tor's own log ("Dec 03 10:00:00.000 [warn] ..."): its "[err]", "[warn]",
 * "[notice]", "[info]" or "[debug]" tag; notice for a line without one. Pure. */
enum log_level tor_line_level(const char *line);

/* The level onionfront logs tor's `line` at: tor_line_level's, except a warning torwarn_classify expects
 * on this tor, which is notice. Pure. */
enum log_level tor_line_relay_level(const char *line, const struct torwarn_ctx *ctx);

#endif
