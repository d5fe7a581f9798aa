/* torrc.c — fills the @PLACEHOLDERS@ of the torrc template (see torrc.h). Text only: no file I/O. */
#include "sidecar/tor/torrc.h"

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What every tor onionfront spawns from a built-in template has: its files, its log on stdout, and a
 * control socket with cookie authentication, owned by onionfront (it exits when onionfront does). */
#define TORRC_OWNED_TOR                                                                                       \
    "DataDirectory @DATA_DIR@\n"                                                                              \
    "PidFile @DATA_DIR@/tor.pid\n"                                                                            \
    "RunAsDaemon 0\n"                                                                                         \
    "Log notice stdout\n"                                                                                     \
    "ControlPort unix:@CONTROL_SOCKET@\n"                                                                     \
    "CookieAuthentication 1\n"                                                                                \
    "__OwningControllerProcess @CONTROLLER_PID@\n"

const char torrc_client_template[] =
    "## torrc for one of onionfront's client tors (the probe's, Onionbalance's), written by onionfront at\n"
    "## every start: an ordinary tor client (never the single-onion tor) that fetches and posts descriptors.\n"
    "## The probe's SocksPort: IsolateSOCKSAuth: each probe's own SOCKS username gets its own circuit;\n"
    "## ExtendedErrors: SOCKS5 replies name the onion-service stage that failed. Onionbalance's: none.\n"
    "@SOCKS_LINE@\n"
    "ORPort 0\n"
    TORRC_OWNED_TOR
    "## tor.user: like the service tor, it runs as tor's user, never as root.\n"
    "@USER_LINE@\n"
    "@EXTRA_TORRC@\n";

const char torrc_anonymous_template[] =
    "## torrc for onionfront's anonymous tor, written by onionfront at every start: an ordinary tor that\n"
    "## hosts only the services whose mode is \"anonymous\". They are location-hidden: this tor has no\n"
    "## single-hop options (tor fixes that mode for a process's life, so single onions run on another tor),\n"
    "## and no client port, so it is never used as a client.\n"
    "SocksPort 0\n"
    "TransPort 0\n"
    "NATDPort 0\n"
    "DNSPort 0\n"
    "## Layer-2 guards for its onion-service circuits (guard discovery), whatever the consensus says.\n"
    "VanguardsLiteEnabled 1\n"
    "## No MetricsPort: tor serves it on TCP only, readable by every local user, and it names each\n"
    "## service's onion address, which for a location-hidden service must not leak.\n"
    TORRC_OWNED_TOR
    "@USER_LINE@\n"
    "@EXTRA_TORRC@\n";

/* A path goes into the torrc unquoted: allow only characters that need no quoting. */
static bool torrc_path_is_safe(const char *s)
{
    if (!s || s[0] != '/')
        return false;
    for (const char *c = s; *c; c++) {
        if (*c <= ' ' || *c == '"' || *c == '\\' || *c == '#' || *c == 0x7f)
            return false;
    }
    return true;
}

static bool torrc_line_is_safe(const char *s)
{
    for (const char *c = s; *c; c++) {
        if (*c == '\n' || *c == '\r')
            return false;
    }
    return true;
}

/* Append `path` (named `what` in the message), which goes into the torrc unquoted. Return 0, or -1. */
static int torrc_add_path(struct evbuffer *out, const char *what, const char *path, char *err, size_t errlen)
{
    if (!torrc_path_is_safe(path)) {
        snprintf(err, errlen, "torrc: %s \"%s\" must be an absolute path without whitespace, quotes or '#'",
                 what, path ? path : "");
        return -1;
    }
    return evbuffer_add(out, path, strlen(path));
}

/* Append the value of placeholder `name` (without the @s). Return 0, or -1 with err set. */
static int torrc_expand(struct evbuffer *out, const char *name, size_t name_len,
                        const struct torrc_params *p, char *err, size_t errlen)
{
#define IS(lit) (name_len == sizeof(lit) - 1 && memcmp(name, lit, name_len) == 0)
    if (IS("DATA_DIR"))
        return torrc_add_path(out, "data directory", p->data_dir, err, errlen);
    if (IS("CONTROL_SOCKET"))
        return torrc_add_path(out, "control socket", p->control_socket, err, errlen);
    if (IS("SOCKS_SOCKET"))
        return torrc_add_path(out, "SOCKS socket", p->socks_socket, err, errlen);
    if (IS("SOCKS_LINE")) {
        if (!p->socks_socket)
            return evbuffer_add_printf(out, "SocksPort 0") < 0 ? -1 : 0;
        if (evbuffer_add_printf(out, "SocksPort unix:") < 0 ||
            torrc_add_path(out, "SOCKS socket", p->socks_socket, err, errlen) < 0)
            return -1;
        return evbuffer_add_printf(out, " IsolateSOCKSAuth ExtendedErrors") < 0 ? -1 : 0;
    }
    if (IS("METRICS_LINES")) {
        if (!p->metrics_port)
            return evbuffer_add_printf(out, "## (none on this tor)") < 0 ? -1 : 0;
        if (p->metrics_port > 65535) {
            snprintf(err, errlen, "torrc: MetricsPort %u is not a port (1-65535)", p->metrics_port);
            return -1;
        }
        return evbuffer_add_printf(out, "MetricsPort 127.0.0.1:%u\nMetricsPortPolicy accept 127.0.0.1",
                                   p->metrics_port) < 0 ? -1 : 0;
    }
    if (IS("CONTROLLER_PID"))
        return evbuffer_add_printf(out, "%ld", (long)p->controller_pid) < 0 ? -1 : 0;
    if (IS("USER_LINE")) {
        if (!p->user)
            return 0;
        for (const char *c = p->user; *c; c++) {
            if (*c <= ' ' || *c == '"' || *c == '\\' || *c == '#') {
                snprintf(err, errlen, "torrc: user name contains a character torrc cannot carry");
                return -1;
            }
        }
        return evbuffer_add_printf(out, "User %s", p->user) < 0 ? -1 : 0;
    }
    if (IS("EXTRA_TORRC")) {
        for (size_t i = 0; i < p->n_extra; i++) {
            if (!torrc_line_is_safe(p->extra[i])) {
                snprintf(err, errlen, "torrc: extra line %zu contains a line break", i);
                return -1;
            }
            if (evbuffer_add_printf(out, "%s%s", i ? "\n" : "", p->extra[i]) < 0)
                return -1;
        }
        return 0;
    }
#undef IS
    snprintf(err, errlen, "torrc: unknown placeholder @%.*s@ in the template", (int)name_len, name);
    return -1;
}

char *torrc_render(const char *tmpl, const struct torrc_params *p, char *err, size_t errlen)
{
    struct evbuffer *out = evbuffer_new();
    char *result = NULL;
    if (!out) {
        snprintf(err, errlen, "torrc: out of memory");
        return NULL;
    }
    const char *cur = tmpl;
    for (;;) {
        const char *at = strchr(cur, '@');
        if (!at) {
            evbuffer_add(out, cur, strlen(cur));
            break;
        }
        const char *end = strchr(at + 1, '@');
        evbuffer_add(out, cur, (size_t)(at - cur));
        if (!end) {
            snprintf(err, errlen, "torrc: unterminated placeholder in the template");
            goto done;
        }
        if (torrc_expand(out, at + 1, (size_t)(end - at - 1), p, err, errlen) < 0)
            goto done;
        cur = end + 1;
    }
    size_t len = evbuffer_get_length(out);
    result = malloc(len + 1);
    if (!result) {
        snprintf(err, errlen, "torrc: out of memory");
        goto done;
    }
    evbuffer_remove(out, result, len);
    result[len] = '\0';
done:
    evbuffer_free(out);
    return result;
}
