/* config_value.h — the config file's value parsers and checks that know nothing of its schema.
 *
 * Exists so that the rules for a single value (a name, a path, an address, a torrc line, a key) are
 * written once, tested on their own, and usable by modules that take such values from elsewhere (the
 * command line, Onionbalance's config, tor) without pulling in the JSON loader. Owns the length limits
 * these values obey and the parsed address (struct backend_addr). Does not know field paths, defaults or
 * jansson (config.h), log, or touch the file system beyond config_check_readable_file.
 *
 * Functions that explain a refusal write it to the caller's `why` buffer, without a field path: the
 * caller prefixes where the value came from. */
#ifndef ONIONFRONT_CONFIG_VALUE_H
#define ONIONFRONT_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_INTRO_POINTS 20 /* tor: "You can't have more than 20" (a service's, or an instance's) */

#define CONFIG_SERVICE_NAME_MAX 32
#define CONFIG_BACKEND_NAME_MAX 64
#define CONFIG_USER_MAX 32
#define CONFIG_HOST_MAX 253      /* DNS name limit (RFC 1035); IP literals are shorter */
#define CONFIG_UNIX_PATH_MAX 107 /* sizeof(sockaddr_un.sun_path) - 1 on Linux */
#define CONFIG_ADDR_TEXT_MAX 259 /* the longest valid address text: 253-byte host + ":65535" */
#define CONFIG_TORRC_LINE_MAX 1024
#define CONFIG_X25519_B32_LEN 52 /* a 32-byte x25519 key in base32 without padding */

enum backend_addr_kind {
    BACKEND_ADDR_INET, /* host + port */
    BACKEND_ADDR_UNIX, /* path */
};

/* A parsed "target"/"address": "host:port" (IPv4 literal or host name), "[v6]:port", "/abs/path" or
 * "unix:/abs/path". */
struct backend_addr {
    enum backend_addr_kind kind;
    char host[CONFIG_HOST_MAX + 1]; /* INET: host name (as written) or IP literal (canonical form, IPv6
                                       without brackets); "" for UNIX */
    int family;                     /* INET: AF_INET or AF_INET6 for literals, AF_UNSPEC for host names;
                                       AF_UNIX for UNIX */
    uint16_t port;                  /* INET: 1-65535; 0 for UNIX */
    char path[CONFIG_UNIX_PATH_MAX + 1]; /* UNIX: absolute path, "//" collapsed; "" for INET */
    char text[CONFIG_ADDR_TEXT_MAX + 1]; /* the address as written in the config, for logs */
};

/* ---- messages ---- */

/* Copy `len` bytes of `s` into `out` (`outlen` bytes, always NUL-terminated) for a message: printable
 * ASCII as is, '"' and '\\' backslash-escaped, other bytes as \xNN; after `maxshow` input bytes, "..."
 * ends it. Why: a refused value may hold anything, and messages end up in logs and terminals. */
void config_msg_text(char *out, size_t outlen, const char *s, size_t len, size_t maxshow);

/* ---- names: each true if the `n` bytes at `s` are one ---- */

/* Each name rule below in words, for messages (a regex is not an explanation). */
#define CONFIG_SERVICE_NAME_RULE                                                                             \
    "1-32 characters: lowercase letters a-z, digits, '_' and '-', starting with a letter or digit"
#define CONFIG_BACKEND_NAME_RULE "1-64 characters: letters, digits, '_', '.' and '-'"
#define CONFIG_USER_NAME_RULE                                                                                \
    "1-32 characters: lowercase letters a-z, digits, '_' and '-', starting with a letter or '_'"

/* A service (or client) name: ^[a-z0-9][a-z0-9_-]{0,31}$. Why: it becomes a directory name, a metrics
 * label and part of socket paths, so it is held to a set no file system or parser treats specially. */
bool config_is_service_name(const char *s, size_t n);

/* A backend name: ^[A-Za-z0-9_.-]{1,64}$. Why: it appears in status output and metrics labels. */
bool config_is_backend_name(const char *s, size_t n);

/* A user name: ^[a-z_][a-z0-9_-]{0,31}$, the portable POSIX one useradd accepts by default. Why: it is
 * passed to tor's User option. */
bool config_is_user_name(const char *s, size_t n);

/* True if all `n` bytes are printable ASCII other than space. Why: what may go into an HTTP request
 * line or header unquoted. */
bool config_is_visible_ascii(const char *s, size_t n);

/* ---- paths ---- */

/* True if tor's torrc can carry `s` without quoting (the same rule as torrc.c's): no space, control or
 * non-ASCII byte, '"', '\\' or '#'. */
bool config_is_torrc_safe_path(const char *s);

/* True if `s` has only the characters a path in tor's HiddenServicePort "unix:PATH" target may carry
 * (tor splits the value at spaces and would unquote it): A-Z a-z 0-9 / . _ - +. run_dir is held to it
 * at load time, so the data-path sockets under it are always usable. */
bool config_is_plain_path(const char *s);

/* Validate the absolute path `s` (`len` bytes, no NUL among them) and return a new normalised copy
 * ("//" collapsed, a trailing "/" removed) of at most `max` bytes, or NULL with the reason in `why`.
 * "." and ".." components are refused. Why: paths are compared for uniqueness and overlap as text, which
 * only means something once they are in one form. */
char *config_norm_path(const char *s, size_t len, size_t max, char *why, size_t whylen);

/* Return a new string "a/b", without doubling the "/" when `a` ends in one (the root), or NULL when out
 * of memory. Why: default paths are built under state_dir and run_dir, which may be "/". */
char *config_path_join(const char *a, const char *b);

/* True if the normalised path `child` is `parent` or lies below it ("/a/bc" is not below "/a/b"). Why:
 * the overlap checks between directories onionfront and tor write. */
bool config_path_within(const char *child, const char *parent);

/* Check that `path` names a regular file this process may read. Return 0, or -1 with the reason in
 * `why`. A FIFO or device is refused before it is opened: opening one could block or have side effects.
 * Why: a CA file is only read later, by libcurl, where a mistake would show up as failed checks. */
int config_check_readable_file(const char *path, char *why, size_t whylen);

/* ---- addresses ---- */

/* Parse the decimal port in the `n` bytes at `s` (1-65535, at most 5 digits) into `*out`. Return 0, -1 if
 * it is not a number, -2 if it is out of range. Why: the two refusals get different messages. */
int config_parse_port_number(const char *s, size_t n, uint16_t *out);

/* Parse an address ("host:port", "[v6]:port", "/path", "unix:/path"; `len` bytes, no NUL among them) into
 * `*a`. Return 0, or -1 with the reason in `why`; -2 if only the port was out of range. A host of digits
 * and dots must be a valid IPv4 literal (kept in canonical form); host names follow RFC 1123 plus "_".
 * Why: backends, health checks and listeners share one address syntax. */
int config_parse_addr(const char *s, size_t len, struct backend_addr *a, char *why, size_t whylen);

/* An IP network: an address and a prefix length ("10.0.0.0/24", "10.0.0.5" = /32, "fd00::/64", "::1" =
 * /128). */
struct config_cidr {
    int family;       /* AF_INET or AF_INET6 */
    uint8_t addr[16]; /* the network, host bits zero; AF_INET uses the first 4 bytes */
    unsigned prefix;  /* 0-32 or 0-128 */
    char text[48];    /* canonical: "10.0.0.0/24", "::1/128" */
};

/* Parse an IP address or network (`n` bytes: "a.b.c.d[/0-32]" or "v6[/0-128]", no brackets) into `*out`.
 * Return 0, or -1 with the reason in `why`; an address with bits set beyond the prefix is refused,
 * naming the network meant ("10.0.0.5/24": "host bits set: did you mean 10.0.0.0/24?"). Why: allow lists
 * of peers are written this way, and a mistyped mask must not silently widen or narrow one. */
int config_parse_cidr(const char *s, size_t n, struct config_cidr *out, char *why, size_t whylen);

/* True if the IP address `addr` (4 bytes for AF_INET, 16 for AF_INET6) lies in one of the `n` networks.
 * An address of the other family never matches. */
bool config_cidr_match(const struct config_cidr *nets, size_t n, int family, const uint8_t *addr);

/* True if `a` and `b` name the same endpoint: the same unix path, or the same port and host (case
 * ignored). Why: duplicate backends of one port are refused. */
bool config_addr_same(const struct backend_addr *a, const struct backend_addr *b);

/* ---- tor ---- */

/* Check one extra_torrc line (`len` bytes). Return 0, or -1 with the reason in `why`. Refused: empty or
 * over-long lines, control characters other than tab, a trailing "\" (a continuation), a line that does
 * not start with an option name, and options onionfront sets itself or that break single-onion mode
 * (abbreviations included, as tor accepts them). Why: these lines are written into tor's torrc as is. */
int config_check_torrc_line(const char *s, size_t len, char *why, size_t whylen);

/* Decode a base32 x25519 key (52 characters, either case, the unused low bits of the last one zero) into
 * `out` (32 bytes) if not NULL. Return 0, or -1 if `s` (`len` bytes) is not one. Why: client
 * authorization keys are given in the form tor writes them. */
int config_x25519_b32_decode(const char *s, size_t len, unsigned char out[32]);

#endif
