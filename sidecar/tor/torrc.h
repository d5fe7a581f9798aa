/* torrc.h — renders the torrc of onionfront's own tor from templates/torrc.in (compiled into the binary
 * at build time, so an installed onionfront never runs with a template that does not match its code).
 *
 * Owns only text generation and the checks that keep the rendered file safe (no line injection, no
 * option that would undo single-onion mode). Writing the file belongs to tor_process.c, starting tor to
 * tor.c. */
#ifndef ONIONFRONT_TORRC_H
#define ONIONFRONT_TORRC_H

#include <stddef.h>
#include <sys/types.h>

struct torrc_params {
    const char *data_dir;       /* absolute */
    const char *control_socket; /* absolute unix socket path */
    pid_t controller_pid;       /* onionfront's pid: tor exits when it dies */
    const char *user;           /* tor's User option, or NULL */
    const char *const *extra;   /* extra lines (already validated by config.c) */
    size_t n_extra;
    const char *socks_socket;   /* torrc_client_template only: the SocksPort's absolute unix socket path, or
                                   NULL for none ("SocksPort 0": Onionbalance's tor) */
    unsigned metrics_port;      /* torrc_template: tor's MetricsPort on 127.0.0.1, 1-65535; 0 for none */
};

/* The built-in template (templates/torrc.in). */
extern const char torrc_template[];

/* The client tors' template (tor.h's TOR_ROLE_PROBE_CLIENT, TOR_ROLE_OB_CLIENT): an ordinary client with
 * its SocksPort on a unix socket (or none), no ORPort, owned by onionfront and run as tor's User like the
 * service tor. */
extern const char torrc_client_template[];

/* The anonymous services' tor's template (tor.h's TOR_ROLE_ANONYMOUS): an ordinary tor (no single-hop
 * options), no client ports, vanguards-lite on, no MetricsPort, otherwise like the service tor. */
extern const char torrc_anonymous_template[];

/* Render `tmpl` with `p`. Return a new NUL-terminated string, or NULL with a message in `err` naming the
 * parameter that cannot be written safely (a path with whitespace, quotes or control characters; an
 * extra line with a newline; an unknown @PLACEHOLDER@ in the template). */
char *torrc_render(const char *tmpl, const struct torrc_params *p, char *err, size_t errlen);

#endif
