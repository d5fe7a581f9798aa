/* cp_cmd.h — encoders for the control-port commands onionfront and other controllers send.
 *
 * Each returns a new NUL-terminated command ending in CRLF (multi-line commands end with ".\r\n"), or
 * NULL with a message in `err` when an argument cannot be sent safely: CR/LF/NUL injection, an empty or
 * malformed keyword, a space inside a word that must be bare. Values are quoted when the grammar allows
 * a QuotedString. The caller frees the result; commands carrying secrets (AUTHENTICATE, ADD_ONION with a
 * key) should be wiped with OPENSSL_cleanse before free — cp_conn does that for every command it sends.
 * Does no I/O, never logs. */
#ifndef CP_CMD_H
#define CP_CMD_H

#include <stdbool.h>
#include <stddef.h>

char *cp_cmd_protocolinfo(void);

/* AUTHCHALLENGE SAFECOOKIE <client nonce as hex> */
char *cp_cmd_authchallenge(const unsigned char *client_nonce, size_t nonce_len);

/* AUTHENTICATE <hex of secret> (COOKIE, or SAFECOOKIE's client hash); len 0 gives a bare AUTHENTICATE. */
char *cp_cmd_authenticate_hex(const unsigned char *secret, size_t len);

/* AUTHENTICATE "<password>" for HASHEDPASSWORD. */
char *cp_cmd_authenticate_password(const char *password, char *err, size_t errlen);

/* SETEVENTS name... (n 0 clears all events). Event names must be bare uppercase words. */
char *cp_cmd_setevents(const char *const *events, size_t n, char *err, size_t errlen);

/* GETINFO key... / GETCONF key... (n >= 1). Keys must be bare words. */
char *cp_cmd_getinfo(const char *const *keys, size_t n, char *err, size_t errlen);
char *cp_cmd_getconf(const char *const *keys, size_t n, char *err, size_t errlen);

/* One SETCONF/RESETCONF item. value NULL sends the bare key (reset to default). Keys may repeat
 * (HiddenServiceDir, HiddenServicePort ...) and are sent in order. */
struct cp_conf_item {
    const char *key;
    const char *value;
};

/* SETCONF key="value" ...; values are always sent as QuotedStrings. */
char *cp_cmd_setconf(const struct cp_conf_item *items, size_t n, char *err, size_t errlen);

/* SIGNAL <name> (bare word: RELOAD, SHUTDOWN, HALT, NEWNYM, HEARTBEAT, ACTIVE, DORMANT, ...). */
char *cp_cmd_signal(const char *name, char *err, size_t errlen);

struct cp_onion_port {
    unsigned virt_port;  /* 1-65535 */
    const char *target;  /* "host:port", "port" or "unix:/path"; NULL means the same port on 127.0.0.1 */
};

struct cp_add_onion {
    const char *key_type;  /* "NEW" or "ED25519-V3" */
    const char *key_blob;  /* "BEST"/"ED25519-V3" for NEW, or the base64 key; secret */
    const char *const *flags; /* e.g. "Detach", "DiscardPK", "NonAnonymous" */
    size_t n_flags;
    unsigned max_streams;  /* 0 = not sent */
    const struct cp_onion_port *ports;
    size_t n_ports;        /* >= 1 */
};

/* ADD_ONION KeyType:KeyBlob [Flags=a,b] [MaxStreams=N] Port=virt[,target]... */
char *cp_cmd_add_onion(const struct cp_add_onion *a, char *err, size_t errlen);

/* DEL_ONION <service id> (56 base32 characters, no ".onion"). */
char *cp_cmd_del_onion(const char *service_id, char *err, size_t errlen);

/* CLOSECIRCUIT <id> [IfUnused] (tor's circuit id, as in CIRC events and GETINFO circuit-status; IfUnused:
 * only if no stream is attached). */
char *cp_cmd_closecircuit(unsigned long circuit_id, bool if_unused, char *err, size_t errlen);

/* HSFETCH <address> [SERVER=$fp ...]. `address` is a v3 address (56 base32 characters) without ".onion";
 * tor 0.4.9 refuses the spec's "v2-<descid>" form (513). Servers are "$<40 hex>" or 40 hex digits
 * (a '$' is added). */
char *cp_cmd_hsfetch(const char *address, const char *const *servers, size_t n_servers, char *err,
                     size_t errlen);

/* ONION_CLIENT_AUTH_ADD <address> x25519:<base64 private key> (control-spec 3.30; in memory only: no
 * Permanent flag). It holds a secret: wipe it before free (cp_conn_send wipes its own copy). */
char *cp_cmd_onion_client_auth_add(const char *address, const char *x25519_b64, char *err, size_t errlen);

/* ONION_CLIENT_AUTH_REMOVE <address> (control-spec 3.31; tor also drops the descriptor it cached for it). */
char *cp_cmd_onion_client_auth_remove(const char *address, char *err, size_t errlen);

/* +HSPOST [SERVER=$fp ...] [HSADDRESS=addr] CRLF descriptor CRLF "." CRLF — the data form, with the
 * descriptor dot-stuffed and its line endings normalised to CRLF. `hs_address` may be NULL. */
char *cp_cmd_hspost(const char *const *servers, size_t n_servers, const char *hs_address,
                    const char *descriptor, size_t desc_len, char *err, size_t errlen);

#endif
