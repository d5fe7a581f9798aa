/* config_value.c — value parsers and checks of the config file that know nothing of its schema.
 *
 * Owns: character classes, name rules, absolute-path normalisation and containment, address and port
 * parsing, IP networks (CIDR), the extra_torrc line rule, base32 x25519 keys, and escaping of untrusted
 * text for messages.
 * Each returns a verdict and, where it explains one, a reason without a field path.
 * Does not: know which field a value came from, apply defaults, use jansson, log, or look at the file
 * system except for config_check_readable_file (a stat and an open). config.c composes these into the
 * schema. */
#include "sidecar/config/config_value.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define ADDR_FORMS "must be host:port, [v6]:port or an absolute unix socket path"

/* ---- messages ---------------------------------------------------------------------------------- */

/* Copy `len` bytes of `s` into `out` for a message: printable ASCII as is, '"' and '\\' escaped with a
 * backslash, other bytes as \xNN; after `maxshow` input bytes, "..." ends it. Input from the file may
 * hold anything, and messages end up in logs and terminals. */
void config_msg_text(char *out, size_t outlen, const char *s, size_t len, size_t maxshow)
{
    size_t o = 0;
    if (outlen == 0)
        return;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i == maxshow) {
            if (o + 4 <= outlen - 1) {
                memcpy(out + o, "...", 3);
                o += 3;
            }
            break;
        }
        if (o + 4 > outlen - 1)
            break;
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch >= 0x20 && ch < 0x7f) {
            out[o++] = (char)ch;
        } else {
            static const char hex[] = "0123456789abcdef";
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
}

/* ---- small string checks ----------------------------------------------------------------------- */

static bool config_is_lower(char ch) { return ch >= 'a' && ch <= 'z'; }
static bool config_is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static bool config_is_alpha(char ch) { return config_is_lower(ch) || (ch >= 'A' && ch <= 'Z'); }

bool config_is_service_name(const char *s, size_t n)
{
    if (n < 1 || n > CONFIG_SERVICE_NAME_MAX || !(config_is_lower(s[0]) || config_is_digit(s[0])))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(config_is_lower(s[i]) || config_is_digit(s[i]) || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

/* ^[A-Za-z0-9_.-]{1,64}$ */
bool config_is_backend_name(const char *s, size_t n)
{
    if (n < 1 || n > CONFIG_BACKEND_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(config_is_alpha(s[i]) || config_is_digit(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return false;
    return true;
}

/* ^[a-z_][a-z0-9_-]{0,31}$ (the portable POSIX user name, as useradd accepts it by default) */
bool config_is_user_name(const char *s, size_t n)
{
    if (n < 1 || n > CONFIG_USER_MAX || !(config_is_lower(s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(config_is_lower(s[i]) || config_is_digit(s[i]) || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

static bool config_has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return true;
    return false;
}

/* Printable ASCII without space: what may go into an HTTP request line or header unquoted. */
bool config_is_visible_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

/* A path tor's torrc can carry without quoting (the same rule as torrc.c's). */
bool config_is_torrc_safe_path(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f || *s == '"' || *s == '\\' || *s == '#')
            return false;
    return true;
}

bool config_is_plain_path(const char *s)
{
    for (; *s; s++) {
        bool alnum = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9');
        if (!alnum && !strchr("/._-+", *s))
            return false;
    }
    return true;
}

/* Validate the absolute path `s` (`len` bytes) and return a new normalised copy ("//" collapsed, a
 * trailing "/" removed) of at most `max` bytes, or NULL with the reason in `why`. "." and ".." components
 * are refused: they would make the uniqueness and overlap checks meaningless. */
char *config_norm_path(const char *s, size_t len, size_t max, char *why, size_t whylen)
{
    if (len == 0 || s[0] != '/') {
        snprintf(why, whylen, "must be an absolute path");
        return NULL;
    }
    if (strlen(s) != len || config_has_control(s, len)) {
        snprintf(why, whylen, "must not contain control characters");
        return NULL;
    }
    char *out = malloc(len + 1);
    if (!out) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    size_t o = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && s[i] == '/')
            i++;
        size_t start = i;
        while (i < len && s[i] != '/')
            i++;
        size_t clen = i - start;
        if (clen == 0)
            break;
        if ((clen == 1 && s[start] == '.') || (clen == 2 && s[start] == '.' && s[start + 1] == '.')) {
            free(out);
            snprintf(why, whylen, "must not contain \".\" or \"..\" components");
            return NULL;
        }
        out[o++] = '/';
        memcpy(out + o, s + start, clen);
        o += clen;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    if (o > max) {
        free(out);
        snprintf(why, whylen, "must be at most %zu bytes", max);
        return NULL;
    }
    return out;
}

/* "a" + "/" + "b", without doubling the "/" when `a` is the root. Returns a new string or NULL. */
char *config_path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    size_t lb = strlen(b);
    bool slash = la == 0 || a[la - 1] != '/';
    char *out = malloc(la + (slash ? 1 : 0) + lb + 1);
    if (!out)
        return NULL;
    memcpy(out, a, la);
    if (slash)
        out[la++] = '/';
    memcpy(out + la, b, lb + 1);
    return out;
}

/* True if normalised path `child` is `parent` or lies below it. */
bool config_path_within(const char *child, const char *parent)
{
    size_t lp = strlen(parent);
    if (strcmp(parent, "/") == 0)
        return true;
    return strncmp(child, parent, lp) == 0 && (child[lp] == '\0' || child[lp] == '/');
}

/* Check that the normalised path `path` names a regular file this process may read. Return 0, or -1 with
 * the reason in `why`. A FIFO or device is refused before it is opened: opening one could block or have
 * side effects. */
int config_check_readable_file(const char *path, char *why, size_t whylen)
{
    char shown[220];
    struct stat st;
    int fd = -1;
    config_msg_text(shown, sizeof shown, path, strlen(path), 200);
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            snprintf(why, whylen, "\"%s\" is not a regular file", shown);
            return -1;
        }
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    }
    if (fd < 0) { /* errno from stat or open */
        snprintf(why, whylen, "cannot read \"%s\": %s", shown, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

/* ---- addresses ----------------------------------------------------------------------------------- */

/* Parse a decimal port of at most 5 digits. Return 0, -1 if it is not a number, -2 if out of range. */
int config_parse_port_number(const char *s, size_t n, uint16_t *out)
{
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!config_is_digit(s[i]))
            return -1;
    if (n > 5)
        return -2;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    if (v < 1 || v > 65535)
        return -2;
    *out = (uint16_t)v;
    return 0;
}

/* Check a host name or IPv4 literal and store it (IPv4 in canonical form) in `a`. Digits and dots only
 * means an IPv4 literal, which must then be a valid one ("1.2.3.256" is not a host name). Labels follow
 * RFC 1123, plus "_" which container runtimes use in service names. */
static int config_parse_host(const char *h, size_t n, struct backend_addr *a, char *why, size_t whylen)
{
    char shown[80];
    char buf[CONFIG_HOST_MAX + 1];
    if (n > CONFIG_HOST_MAX) {
        snprintf(why, whylen, "host name must be at most %d bytes", CONFIG_HOST_MAX);
        return -1;
    }
    memcpy(buf, h, n);
    buf[n] = '\0';
    bool numeric = true;
    for (size_t i = 0; i < n; i++)
        if (!config_is_digit(h[i]) && h[i] != '.')
            numeric = false;
    if (numeric) {
        struct in_addr in4;
        if (inet_pton(AF_INET, buf, &in4) != 1) {
            config_msg_text(shown, sizeof shown, h, n, 60);
            snprintf(why, whylen, "\"%s\" is not a valid IPv4 address", shown);
            return -1;
        }
        inet_ntop(AF_INET, &in4, a->host, sizeof a->host);
        a->family = AF_INET;
        return 0;
    }
    size_t label = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || h[i] == '.') {
            if (label == 0 || label > 63 || h[i - label] == '-' || h[i - 1] == '-')
                goto bad;
            label = 0;
            continue;
        }
        if (!(config_is_alpha(h[i]) || config_is_digit(h[i]) || h[i] == '-' || h[i] == '_'))
            goto bad;
        label++;
    }
    memcpy(a->host, buf, n + 1);
    a->family = AF_UNSPEC;
    return 0;
bad:
    config_msg_text(shown, sizeof shown, h, n, 60);
    snprintf(why, whylen, "invalid host name \"%s\"", shown);
    return -1;
}

/* The refusal of a URL `s` (`len` bytes; "://" at `scheme_end`) where an address belongs, naming the
 * host:port it probably meant (the port from the URL, else the scheme's: http 80, https 443). */
static int config_url_as_addr(const char *s, size_t len, const char *scheme_end, char *why, size_t whylen)
{
    char shown[100], meant[CONFIG_ADDR_TEXT_MAX + 24] = "";
    const char *host = scheme_end + 3, *end = host;
    bool plain = true; /* the host part can be quoted as it is (no user@, quote or control character) */
    while (end < s + len && *end != '/' && *end != '?' && *end != '#') {
        if (*end == '@' || *end == '"' || *end == '\\' || (unsigned char)*end <= ' ' || (unsigned char)*end >= 0x7f)
            plain = false;
        end++;
    }
    size_t hlen = plain ? (size_t)(end - host) : 0;
    const char *colon = hlen ? memrchr(host, ':', hlen) : NULL;
    const char *bracket = hlen ? memchr(host, ']', hlen) : NULL;
    bool v6_only = colon && host[0] == '[' && (!bracket || colon < bracket); /* "[::1]" has no port */
    size_t slen = (size_t)(scheme_end - s);
    const char *port = slen == 4 && strncasecmp(s, "http", 4) == 0    ? "80"
                       : slen == 5 && strncasecmp(s, "https", 5) == 0 ? "443"
                                                                      : NULL;
    if (hlen > 0 && hlen < CONFIG_ADDR_TEXT_MAX && colon && !v6_only)
        snprintf(meant, sizeof meant, ", here \"%.*s\"", (int)hlen, host);
    else if (hlen > 0 && hlen < CONFIG_ADDR_TEXT_MAX && port)
        snprintf(meant, sizeof meant, ", here \"%.*s:%s\"", (int)hlen, host, port);
    config_msg_text(shown, sizeof shown, s, len, 64);
    snprintf(why, whylen, "\"%s\" is a URL; write host:port%s (onionfront forwards TCP, not HTTP requests)", shown,
             meant);
    return -1;
}

/* Parse a backend address ("host:port", "[v6]:port", "/path", "unix:/path") into `a`. Return 0, or -1
 * with the reason in `why`; -2 if only the port was out of range. */
int config_parse_addr(const char *s, size_t len, struct backend_addr *a, char *why, size_t whylen)
{
    memset(a, 0, sizeof *a);
    if (len == 0 || strlen(s) != len) {
        snprintf(why, whylen, ADDR_FORMS);
        return -1;
    }
    if (len > CONFIG_ADDR_TEXT_MAX) {
        snprintf(why, whylen, "must be at most %d bytes", CONFIG_ADDR_TEXT_MAX);
        return -1;
    }
    if (s[0] == '/' || strncmp(s, "unix:", 5) == 0) {
        const char *p = s[0] == '/' ? s : s + 5;
        size_t plen = len - (size_t)(p - s);
        if (plen == 0 || p[0] != '/') {
            snprintf(why, whylen, "unix socket path must be absolute");
            return -1;
        }
        char pwhy[96];
        char *norm = config_norm_path(p, plen, CONFIG_UNIX_PATH_MAX, pwhy, sizeof pwhy);
        if (!norm) {
            snprintf(why, whylen, "unix socket path %s", pwhy);
            return -1;
        }
        if (strcmp(norm, "/") == 0) {
            free(norm);
            snprintf(why, whylen, ADDR_FORMS);
            return -1;
        }
        a->kind = BACKEND_ADDR_UNIX;
        a->family = AF_UNIX;
        memcpy(a->path, norm, strlen(norm) + 1);
        free(norm);
        memcpy(a->text, s, len + 1);
        return 0;
    }
    const char *scheme_end = strstr(s, "://");
    if (scheme_end) /* "http://127.0.0.1:8081/": a URL, not an address */
        return config_url_as_addr(s, len, scheme_end, why, whylen);
    a->kind = BACKEND_ADDR_INET;
    const char *port;
    size_t port_len;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close) {
            snprintf(why, whylen, "missing \"]\" after the IPv6 address");
            return -1;
        }
        size_t hlen = (size_t)(close - s - 1);
        char buf[INET6_ADDRSTRLEN];
        struct in6_addr in6;
        if (hlen == 0 || hlen >= sizeof buf) {
            snprintf(why, whylen, "not a valid IPv6 address inside [ ]");
            return -1;
        }
        memcpy(buf, s + 1, hlen);
        buf[hlen] = '\0';
        if (inet_pton(AF_INET6, buf, &in6) != 1) {
            snprintf(why, whylen, "not a valid IPv6 address inside [ ]");
            return -1;
        }
        if (close[1] != ':') {
            snprintf(why, whylen, ADDR_FORMS);
            return -1;
        }
        port = close + 2;
        port_len = len - (size_t)(port - s);
        int rc = config_parse_port_number(port, port_len, &a->port);
        if (rc < 0) {
            snprintf(why, whylen, rc == -2 ? "port must be 1-65535" : ADDR_FORMS);
            return rc == -2 ? -2 : -1;
        }
        inet_ntop(AF_INET6, &in6, a->host, sizeof a->host);
        a->family = AF_INET6;
        memcpy(a->text, s, len + 1);
        return 0;
    }
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s) {
        snprintf(why, whylen, ADDR_FORMS);
        return -1;
    }
    size_t hlen = (size_t)(colon - s);
    if (memchr(s, ':', hlen)) {
        snprintf(why, whylen, "IPv6 addresses must be written in brackets: [v6]:port");
        return -1;
    }
    port = colon + 1;
    port_len = len - hlen - 1;
    int rc = config_parse_port_number(port, port_len, &a->port);
    if (rc < 0) {
        snprintf(why, whylen, rc == -2 ? "port must be 1-65535" : ADDR_FORMS);
        return rc == -2 ? -2 : -1;
    }
    if (config_parse_host(s, hlen, a, why, whylen) < 0)
        return -1;
    memcpy(a->text, s, len + 1);
    return 0;
}

bool config_addr_same(const struct backend_addr *a, const struct backend_addr *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == BACKEND_ADDR_UNIX)
        return strcmp(a->path, b->path) == 0;
    return a->port == b->port && strcasecmp(a->host, b->host) == 0;
}

/* ---- networks ---------------------------------------------------------------------------------- */

#define CIDR_FORMS "must be an IP address or network, e.g. \"10.0.0.5\", \"10.0.0.0/24\" or \"fd00::/64\""

int config_parse_cidr(const char *s, size_t n, struct config_cidr *out, char *why, size_t whylen)
{
    char buf[64];
    const char *slash = memchr(s, '/', n);
    size_t alen = slash ? (size_t)(slash - s) : n;
    memset(out, 0, sizeof(*out));
    if (alen == 0 || alen >= sizeof(buf) || memchr(s, '\0', n)) {
        snprintf(why, whylen, CIDR_FORMS);
        return -1;
    }
    memcpy(buf, s, alen);
    buf[alen] = '\0';
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
    } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
    } else {
        snprintf(why, whylen, CIDR_FORMS);
        return -1;
    }
    unsigned max = out->family == AF_INET ? 32 : 128;
    out->prefix = max;
    if (slash) {
        const char *d = slash + 1;
        size_t dlen = n - alen - 1;
        unsigned v = 0;
        bool ok = dlen > 0 && dlen <= 3 && !(dlen > 1 && d[0] == '0');
        for (size_t i = 0; ok && i < dlen; i++) {
            ok = d[i] >= '0' && d[i] <= '9';
            v = v * 10 + (unsigned)(d[i] - '0');
        }
        if (!ok || v > max) {
            snprintf(why, whylen, "the prefix length must be 0-%u without leading zeros", max);
            return -1;
        }
        out->prefix = v;
    }
    /* Host bits must be zero: "10.0.0.5/24" is a typo for one of two different lists. */
    uint8_t net[16];
    memcpy(net, out->addr, sizeof(net));
    for (unsigned bit = out->prefix; bit < max; bit++)
        net[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
    char shown[INET6_ADDRSTRLEN];
    inet_ntop(out->family, net, shown, sizeof(shown));
    if (memcmp(net, out->addr, sizeof(net)) != 0) {
        snprintf(why, whylen, "host bits set: did you mean %s/%u?", shown, out->prefix);
        return -1;
    }
    snprintf(out->text, sizeof(out->text), "%s/%u", shown, out->prefix);
    return 0;
}

bool config_cidr_match(const struct config_cidr *nets, size_t n, int family, const uint8_t *addr)
{
    for (size_t i = 0; i < n; i++) {
        const struct config_cidr *c = &nets[i];
        unsigned full = c->prefix / 8, rest = c->prefix % 8;
        if (c->family != family || memcmp(c->addr, addr, full) != 0)
            continue;
        if (rest && ((c->addr[full] ^ addr[full]) & (uint8_t)(0xffu << (8 - rest))))
            continue;
        return true;
    }
    return false;
}

/* ---- torrc lines --------------------------------------------------------------------------------- */

/* Options onionfront sets itself, or that break single-onion mode (a SocksPort is refused by tor in this
 * mode). Matched case-insensitively, and also as abbreviations: tor accepts any unambiguous-looking
 * prefix of an option name ("SocksP 9050" sets SocksPort, with a deprecation warning). */
static const char *const config_torrc_owned[] = {
    "SocksPort",     "TransPort",     "NATDPort",   "DNSPort",
    "HTTPTunnelPort", "ControlPort",  "ControlSocket", "DataDirectory",
    "CookieAuthentication", "CookieAuthFile", "RunAsDaemon", "User",
    NULL,
};
/* Whole families: any option starting with these (or an abbreviation of the prefix itself). */
static const char *const config_torrc_owned_prefix[] = {"HiddenService", "MetricsPort", "__", NULL};

/* Check one extra_torrc line. Return 0 or -1 with the reason in `why`. */
int config_check_torrc_line(const char *s, size_t len, char *why, size_t whylen)
{
    if (len == 0) {
        snprintf(why, whylen, "must not be empty");
        return -1;
    }
    if (len > CONFIG_TORRC_LINE_MAX) {
        snprintf(why, whylen, "must be at most %d bytes", CONFIG_TORRC_LINE_MAX);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            snprintf(why, whylen, "must not contain CR, LF or other control characters");
            return -1;
        }
    }
    /* torrc: a line ending in "\" continues on the next one, which would swallow the line after it. */
    if (s[len - 1] == '\\') {
        snprintf(why, whylen, "must not end with \"\\\" (a torrc line continuation)");
        return -1;
    }
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i == len) {
        snprintf(why, whylen, "must not be empty");
        return -1;
    }
    /* torrc: "+Option" appends to and "/Option" clears an option set elsewhere. */
    if (s[i] == '+' || s[i] == '/')
        i++;
    size_t w = i;
    while (i < len && (config_is_alpha(s[i]) || config_is_digit(s[i]) || s[i] == '_'))
        i++;
    size_t wlen = i - w;
    if (wlen == 0 || (i < len && s[i] != ' ' && s[i] != '\t')) {
        snprintf(why, whylen, "must start with a torrc option name");
        return -1;
    }
    const char *word = s + w;
    bool owned = false;
    for (size_t k = 0; config_torrc_owned[k] && !owned; k++)
        owned = wlen <= strlen(config_torrc_owned[k]) && strncasecmp(word, config_torrc_owned[k], wlen) == 0;
    for (size_t k = 0; config_torrc_owned_prefix[k] && !owned; k++) {
        size_t pl = strlen(config_torrc_owned_prefix[k]);
        owned = strncasecmp(word, config_torrc_owned_prefix[k], wlen < pl ? wlen : pl) == 0;
    }
    if (owned) {
        if (wlen == 4 && strncasecmp(word, "User", 4) == 0)
            snprintf(why, whylen, "option \"%.*s\" is managed by onionfront (use tor.user)", (int)wlen, word);
        else
            snprintf(why, whylen, "option \"%.*s\" is managed by onionfront or breaks single-onion mode",
                     (int)wlen, word);
        return -1;
    }
    return 0;
}

/* ---- keys ---------------------------------------------------------------------------------------- */

int config_x25519_b32_decode(const char *s, size_t len, unsigned char out[32])
{
    unsigned char buf[33] = {0};
    unsigned bits = 0, acc = 0;
    size_t o = 0;
    if (len != CONFIG_X25519_B32_LEN)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        unsigned v;
        if (ch >= 'a' && ch <= 'z')
            v = (unsigned)(ch - 'a');
        else if (ch >= 'A' && ch <= 'Z')
            v = (unsigned)(ch - 'A');
        else if (ch >= '2' && ch <= '7')
            v = (unsigned)(ch - '2') + 26;
        else
            return -1;
        acc = (acc << 5) | v;
        bits += 5;
        if (bits >= 8) {
            buf[o++] = (unsigned char)(acc >> (bits - 8));
            bits -= 8;
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0) /* 52 * 5 = 260 bits: the last 4 must be zero, or it is not a canonical 32-byte key */
        return -1;
    if (out)
        memcpy(out, buf, 32);
    return 0;
}
