/* cp_cmd.c — encoders for the control-port commands a controller of onion services sends
 * (control-spec section 3).
 *
 * Owns the bytes of each command: argument validation (no CR/LF/NUL anywhere, no spaces or quotes in
 * words that must be bare), QuotedString values where the grammar allows them (through cp_quote), the
 * CRLF line ending, and HSPOST's data block (CRLF normalisation and dot-stuffing, control-spec 2.4
 * CmdData). It does not send anything, does not decide which commands to send, and never logs.
 * Every intermediate buffer is wiped before it is freed, because AUTHENTICATE and ADD_ONION carry
 * secrets; error messages name the offending argument but never repeat its value. */
#include "controlproto/cp_err.h"
#include "controlproto/cp_cmd.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "controlproto/cp_kv.h"

#define CP_CMD_MAX_PORT 65535u
#define CP_CMD_ONION_LEN 56
#define CP_CMD_FP_LEN 40

/* A growing command buffer. Every reallocation copies and wipes the old block, so no copy of a secret is
 * left behind in freed memory. */
struct cmd_buf {
    char *p;
    size_t len;
    size_t cap;
    bool failed;
};

static void cmd_buf_add(struct cmd_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (n > SIZE_MAX - b->len - 1) {
        b->failed = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        char *np;

        while (cap < b->len + n + 1)
            cap = cap > SIZE_MAX / 2 ? b->len + n + 1 : cap * 2;
        np = malloc(cap);
        if (np == NULL) {
            b->failed = true;
            return;
        }
        if (b->p != NULL) {
            memcpy(np, b->p, b->len);
            OPENSSL_cleanse(b->p, b->cap);
            free(b->p);
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void cmd_buf_str(struct cmd_buf *b, const char *s)
{
    cmd_buf_add(b, s, strlen(s));
}

static void cmd_buf_wipe(struct cmd_buf *b)
{
    if (b->p != NULL) {
        OPENSSL_cleanse(b->p, b->cap);
        free(b->p);
    }
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Return the finished command, or NULL (wiping the buffer) if an allocation failed. */
static char *cmd_buf_finish(struct cmd_buf *b, char *err, size_t errlen)
{
    char *out;

    if (b->failed || b->p == NULL) {
        cmd_buf_wipe(b);
        cp_seterr(err, errlen, "out of memory");
        return NULL;
    }
    out = b->p;
    b->p = NULL;
    return out;
}

static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alnum(char c) { return is_upper(c) || is_lower(c) || is_digit(c); }
static bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static bool is_base32(char c) { return is_lower(c) || (c >= '2' && c <= '7'); }

/* True if `s` holds CR or LF: such an argument would end the command line early and let the rest be read
 * as a second command. (A NUL cannot be inside a C string; byte-counted inputs check it themselves.) */
static bool has_line_break(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* Validate a word made only of characters accepted by `ok`. Fill err with `field` and `what` if not. */
static int check_word(const char *field, const char *s, bool (*ok)(char), const char *what, char *err,
                      size_t errlen)
{
    const char *q;

    if (s == NULL) {
        cp_seterr(err, errlen, "%s: missing", field);
        return -1;
    }
    if (has_line_break(s)) {
        cp_seterr(err, errlen, "%s: contains CR or LF", field);
        return -1;
    }
    if (*s == '\0') {
        cp_seterr(err, errlen, "%s: empty", field);
        return -1;
    }
    for (q = s; *q != '\0'; q++) {
        if (!ok(*q)) {
            cp_seterr(err, errlen, "%s: invalid character at offset %zu (must be %s)", field, (size_t)(q - s),
                    what);
            return -1;
        }
    }
    return 0;
}

static bool ok_event_char(char c) { return is_upper(c) || c == '_'; }
static bool ok_keyword_char(char c) { return is_alnum(c) || c == '_'; }
/* A word that must be sent bare: printable ASCII without SP, '"' or '\\'. */
static bool ok_info_char(char c)
{
    unsigned char u = (unsigned char)c;
    return u > 0x20 && u < 0x7f && c != '"' && c != '\\';
}
static bool ok_flag_char(char c) { return is_alnum(c); }
static bool ok_key_type_char(char c) { return is_alnum(c) || c == '-'; }
/* base64 of a key, or a generator name such as "ED25519-V3" */
static bool ok_key_blob_char(char c) { return is_alnum(c) || c == '+' || c == '/' || c == '=' || c == '-'; }
/* HiddenServicePort target: "host:port", "[v6]:port", "port", "unix:/path" — no SP, ',', quotes */
static bool ok_target_char(char c) { return ok_info_char(c) && c != ','; }

/* Check a v3 onion service id: exactly 56 base32 characters [a-z2-7], no ".onion". */
static int check_onion(const char *field, const char *s, char *err, size_t errlen)
{
    size_t i;

    if (s == NULL) {
        cp_seterr(err, errlen, "%s: missing", field);
        return -1;
    }
    if (has_line_break(s)) {
        cp_seterr(err, errlen, "%s: contains CR or LF", field);
        return -1;
    }
    for (i = 0; s[i] != '\0'; i++) {
        if (!is_base32(s[i])) {
            cp_seterr(err, errlen, "%s: invalid character at offset %zu (must be %d base32 characters a-z2-7, "
                    "without \".onion\")", field, i, CP_CMD_ONION_LEN);
            return -1;
        }
    }
    if (i != CP_CMD_ONION_LEN) {
        cp_seterr(err, errlen, "%s: %zu characters, must be %d base32 characters a-z2-7", field, i,
                CP_CMD_ONION_LEN);
        return -1;
    }
    return 0;
}

/* Append " SERVER=$<40 hex>" for each server, given as "$<40 hex>" or 40 hex digits (sent uppercase). */
static int add_servers(struct cmd_buf *b, const char *const *servers, size_t n, char *err, size_t errlen)
{
    size_t i, j;

    if (n > 0 && servers == NULL) {
        cp_seterr(err, errlen, "servers: NULL with n_servers %zu", n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const char *s = servers[i];
        char fp[CP_CMD_FP_LEN + 1];

        if (s == NULL) {
            cp_seterr(err, errlen, "servers[%zu]: missing", i);
            return -1;
        }
        if (has_line_break(s)) {
            cp_seterr(err, errlen, "servers[%zu]: contains CR or LF", i);
            return -1;
        }
        if (*s == '$')
            s++;
        for (j = 0; s[j] != '\0' && j <= CP_CMD_FP_LEN; j++) {
            if (!is_hex(s[j]))
                break;
        }
        if (j != CP_CMD_FP_LEN || s[j] != '\0') {
            cp_seterr(err, errlen, "servers[%zu]: must be \"$\" and %d hex digits", i, CP_CMD_FP_LEN);
            return -1;
        }
        for (j = 0; j < CP_CMD_FP_LEN; j++)
            fp[j] = (s[j] >= 'a' && s[j] <= 'f') ? (char)(s[j] - 'a' + 'A') : s[j];
        fp[CP_CMD_FP_LEN] = '\0';
        cmd_buf_str(b, " SERVER=$");
        cmd_buf_str(b, fp);
    }
    return 0;
}

/* Build "<verb> <hex of data>\r\n"; the hex copy is wiped. len 0 gives "<verb>\r\n". */
static char *cmd_with_hex(const char *verb, const unsigned char *data, size_t len)
{
    struct cmd_buf b = {0};
    char *hex = NULL;
    size_t hexcap = 0, hexlen = 0;

    cmd_buf_str(&b, verb);
    if (len > 0) {
        if (data == NULL || len > (SIZE_MAX - 1) / 2 || len > (size_t)LONG_MAX) {
            cmd_buf_wipe(&b);
            return NULL;
        }
        hexcap = len * 2 + 1;
        hex = malloc(hexcap);
        if (hex == NULL || !OPENSSL_buf2hexstr_ex(hex, hexcap, &hexlen, data, (long)len, '\0')) {
            if (hex != NULL) {
                OPENSSL_cleanse(hex, hexcap);
                free(hex);
            }
            cmd_buf_wipe(&b);
            return NULL;
        }
        cmd_buf_str(&b, " ");
        cmd_buf_str(&b, hex);
        OPENSSL_cleanse(hex, hexcap);
        free(hex);
    }
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, NULL, 0);
}

/* Build "<verb>" + " word" for each word (validated by check) + CRLF. */
static char *cmd_with_words(const char *verb, const char *field, const char *const *words, size_t n,
                            bool (*ok)(char), const char *what, char *err, size_t errlen)
{
    struct cmd_buf b = {0};
    char name[64];
    size_t i;

    if (n > 0 && words == NULL) {
        cp_seterr(err, errlen, "%s: NULL with n %zu", field, n);
        return NULL;
    }
    cmd_buf_str(&b, verb);
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s[%zu]", field, i);
        if (check_word(name, words[i], ok, what, err, errlen) < 0) {
            cmd_buf_wipe(&b);
            return NULL;
        }
        cmd_buf_str(&b, " ");
        cmd_buf_str(&b, words[i]);
    }
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

/* Return "PROTOCOLINFO 1\r\n" (control-spec 3.21; PIVERSION 1 is the only version). */
char *cp_cmd_protocolinfo(void)
{
    return strdup("PROTOCOLINFO 1\r\n");
}

/* Return "AUTHCHALLENGE SAFECOOKIE <hex nonce>\r\n" (control-spec 3.24), or NULL if the nonce is empty. */
char *cp_cmd_authchallenge(const unsigned char *client_nonce, size_t nonce_len)
{
    if (client_nonce == NULL || nonce_len == 0)
        return NULL; /* ClientNonce = 2*HEXDIG: at least one byte */
    return cmd_with_hex("AUTHCHALLENGE SAFECOOKIE", client_nonce, nonce_len);
}

/* Return "AUTHENTICATE <hex>\r\n", or "AUTHENTICATE\r\n" for len 0 (control-spec 3.5). Secret: the caller
 * wipes the result. */
char *cp_cmd_authenticate_hex(const unsigned char *secret, size_t len)
{
    return cmd_with_hex("AUTHENTICATE", secret, len);
}

/* Return "AUTHENTICATE \"<password>\"\r\n" (control-spec 3.5, HASHEDPASSWORD). Secret. */
char *cp_cmd_authenticate_password(const char *password, char *err, size_t errlen)
{
    struct cmd_buf b = {0};
    char qerr[128];
    char *q;

    if (password == NULL) {
        cp_seterr(err, errlen, "password: missing");
        return NULL;
    }
    if (has_line_break(password)) {
        cp_seterr(err, errlen, "password: contains CR or LF");
        return NULL;
    }
    /* cp_quote's own message might quote the value; ours never does. */
    q = cp_quote(password, strlen(password), qerr, sizeof qerr);
    OPENSSL_cleanse(qerr, sizeof qerr);
    if (q == NULL) {
        cp_seterr(err, errlen, "password: cannot be quoted");
        return NULL;
    }
    cmd_buf_str(&b, "AUTHENTICATE ");
    cmd_buf_str(&b, q);
    cmd_buf_str(&b, "\r\n");
    OPENSSL_cleanse(q, strlen(q));
    free(q);
    return cmd_buf_finish(&b, err, errlen);
}

/* Return "SETEVENTS[ NAME...]\r\n" (control-spec 3.4); names are EventCodes restricted to [A-Z_]. */
char *cp_cmd_setevents(const char *const *events, size_t n, char *err, size_t errlen)
{
    return cmd_with_words("SETEVENTS", "events", events, n, ok_event_char, "uppercase letters or '_'", err,
                          errlen);
}

/* Return "GETINFO key...\r\n" (control-spec 3.9). Keys are bare printable words ("ns/id/$FP"). */
char *cp_cmd_getinfo(const char *const *keys, size_t n, char *err, size_t errlen)
{
    if (n == 0) {
        cp_seterr(err, errlen, "keys: GETINFO needs at least one key");
        return NULL;
    }
    return cmd_with_words("GETINFO", "keys", keys, n, ok_info_char,
                          "printable ASCII without space, '\"' or '\\\\'", err, errlen);
}

/* Return "GETCONF key...\r\n" (control-spec 3.3). Keys are option names [A-Za-z0-9_]. */
char *cp_cmd_getconf(const char *const *keys, size_t n, char *err, size_t errlen)
{
    if (n == 0) {
        cp_seterr(err, errlen, "keys: GETCONF needs at least one key");
        return NULL;
    }
    return cmd_with_words("GETCONF", "keys", keys, n, ok_keyword_char, "letters, digits or '_'", err, errlen);
}

/* Return "SETCONF key=\"value\" key ...\r\n" (control-spec 3.1), items in the given order. */
char *cp_cmd_setconf(const struct cp_conf_item *items, size_t n, char *err, size_t errlen)
{
    struct cmd_buf b = {0};
    char name[48], qerr[128];
    size_t i;

    if (n == 0 || items == NULL) {
        cp_seterr(err, errlen, "items: SETCONF needs at least one item");
        return NULL;
    }
    cmd_buf_str(&b, "SETCONF");
    for (i = 0; i < n; i++) {
        char *q;

        snprintf(name, sizeof name, "items[%zu].key", i);
        if (check_word(name, items[i].key, ok_keyword_char, "letters, digits or '_'", err, errlen) < 0)
            goto fail;
        cmd_buf_str(&b, " ");
        cmd_buf_str(&b, items[i].key);
        if (items[i].value == NULL)
            continue;
        if (has_line_break(items[i].value)) {
            cp_seterr(err, errlen, "items[%zu].value (%s): contains CR or LF", i, items[i].key);
            goto fail;
        }
        q = cp_quote(items[i].value, strlen(items[i].value), qerr, sizeof qerr);
        if (q == NULL) {
            cp_seterr(err, errlen, "items[%zu].value (%s): cannot be quoted", i, items[i].key);
            goto fail;
        }
        cmd_buf_str(&b, "=");
        cmd_buf_str(&b, q);
        OPENSSL_cleanse(q, strlen(q));
        free(q);
    }
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
fail:
    cmd_buf_wipe(&b);
    return NULL;
}

/* Return "SIGNAL <name>\r\n" (control-spec 3.7); the name is a bare word [A-Za-z0-9_]. */
char *cp_cmd_signal(const char *name, char *err, size_t errlen)
{
    struct cmd_buf b = {0};

    if (check_word("signal", name, ok_keyword_char, "letters, digits or '_'", err, errlen) < 0)
        return NULL;
    cmd_buf_str(&b, "SIGNAL ");
    cmd_buf_str(&b, name);
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

/* Return "ADD_ONION KeyType:KeyBlob [Flags=a,b] [MaxStreams=N] Port=virt[,target]...\r\n"
 * (control-spec 3.27). Secret when a key is given: the caller wipes the result. */
char *cp_cmd_add_onion(const struct cp_add_onion *a, char *err, size_t errlen)
{
    struct cmd_buf b = {0};
    char name[48], num[32];
    size_t i;

    if (a == NULL) {
        cp_seterr(err, errlen, "add_onion: missing");
        return NULL;
    }
    if (check_word("key_type", a->key_type, ok_key_type_char, "letters, digits or '-'", err, errlen) < 0)
        return NULL;
    /* The blob may be a private key: the message names the field and offset, never the value. */
    if (check_word("key_blob", a->key_blob, ok_key_blob_char, "base64 or a key type name", err, errlen) < 0)
        return NULL;
    if (a->n_flags > 0 && a->flags == NULL) {
        cp_seterr(err, errlen, "flags: NULL with n_flags %zu", a->n_flags);
        return NULL;
    }
    if (a->max_streams > CP_CMD_MAX_PORT) {
        cp_seterr(err, errlen, "max_streams: %u is out of range 0-65535", a->max_streams);
        return NULL;
    }
    if (a->n_ports == 0 || a->ports == NULL) {
        cp_seterr(err, errlen, "ports: at least one Port= is required");
        return NULL;
    }

    cmd_buf_str(&b, "ADD_ONION ");
    cmd_buf_str(&b, a->key_type);
    cmd_buf_str(&b, ":");
    cmd_buf_str(&b, a->key_blob);
    for (i = 0; i < a->n_flags; i++) {
        snprintf(name, sizeof name, "flags[%zu]", i);
        if (check_word(name, a->flags[i], ok_flag_char, "letters or digits", err, errlen) < 0)
            goto fail;
        cmd_buf_str(&b, i == 0 ? " Flags=" : ",");
        cmd_buf_str(&b, a->flags[i]);
    }
    if (a->max_streams > 0) {
        snprintf(num, sizeof num, " MaxStreams=%u", a->max_streams);
        cmd_buf_str(&b, num);
    }
    for (i = 0; i < a->n_ports; i++) {
        const struct cp_onion_port *p = &a->ports[i];

        if (p->virt_port < 1 || p->virt_port > CP_CMD_MAX_PORT) {
            cp_seterr(err, errlen, "ports[%zu].virt_port: %u is out of range 1-65535", i, p->virt_port);
            goto fail;
        }
        snprintf(num, sizeof num, " Port=%u", p->virt_port);
        cmd_buf_str(&b, num);
        if (p->target == NULL)
            continue;
        snprintf(name, sizeof name, "ports[%zu].target", i);
        if (check_word(name, p->target, ok_target_char, "printable ASCII without space, ',', '\"' or '\\\\'",
                       err, errlen) < 0)
            goto fail;
        cmd_buf_str(&b, ",");
        cmd_buf_str(&b, p->target);
    }
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
fail:
    cmd_buf_wipe(&b);
    return NULL;
}

/* Return "DEL_ONION <service id>\r\n" (control-spec 3.28). */
char *cp_cmd_del_onion(const char *service_id, char *err, size_t errlen)
{
    struct cmd_buf b = {0};

    if (check_onion("service_id", service_id, err, errlen) < 0)
        return NULL;
    cmd_buf_str(&b, "DEL_ONION ");
    cmd_buf_str(&b, service_id);
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

/* Return "CLOSECIRCUIT <id>[ IfUnused]\r\n" (control-spec 3.11: with IfUnused, tor closes the circuit only
 * if no stream is attached to it). */
char *cp_cmd_closecircuit(unsigned long circuit_id, bool if_unused, char *err, size_t errlen)
{
    struct cmd_buf b = {0};
    char id[32];

    snprintf(id, sizeof id, "%lu", circuit_id);
    cmd_buf_str(&b, "CLOSECIRCUIT ");
    cmd_buf_str(&b, id);
    if (if_unused)
        cmd_buf_str(&b, " IfUnused");
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

/* Return "HSFETCH <address> [SERVER=$FP]...\r\n" (control-spec 3.26). Only v3 addresses: tor 0.4.9.11
 * answers the spec's "v2-<DescId>" (and "v3-<blinded key>") form with 513 Invalid argument. */
char *cp_cmd_hsfetch(const char *address, const char *const *servers, size_t n_servers, char *err,
                     size_t errlen)
{
    struct cmd_buf b = {0};

    if (check_onion("address", address, err, errlen) < 0)
        return NULL;
    cmd_buf_str(&b, "HSFETCH ");
    cmd_buf_str(&b, address);
    if (add_servers(&b, servers, n_servers, err, errlen) < 0) {
        cmd_buf_wipe(&b);
        return NULL;
    }
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

char *cp_cmd_onion_client_auth_add(const char *address, const char *x25519_b64, char *err, size_t errlen)
{
    struct cmd_buf b = {0};

    if (check_onion("address", address, err, errlen) < 0 ||
        check_word("private_key", x25519_b64, ok_key_blob_char, "base64", err, errlen) < 0)
        return NULL;
    cmd_buf_str(&b, "ONION_CLIENT_AUTH_ADD ");
    cmd_buf_str(&b, address);
    cmd_buf_str(&b, " x25519:");
    cmd_buf_str(&b, x25519_b64);
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

char *cp_cmd_onion_client_auth_remove(const char *address, char *err, size_t errlen)
{
    struct cmd_buf b = {0};

    if (check_onion("address", address, err, errlen) < 0)
        return NULL;
    cmd_buf_str(&b, "ONION_CLIENT_AUTH_REMOVE ");
    cmd_buf_str(&b, address);
    cmd_buf_str(&b, "\r\n");
    return cmd_buf_finish(&b, err, errlen);
}

/* Return "+HSPOST [SERVER=$FP]... [HSADDRESS=addr]\r\n" + the descriptor as CmdData (control-spec 3.29,
 * 2.4): each line ("\n" or "\r\n" terminated; a missing final newline is supplied) is sent with CRLF, a
 * line starting with '.' gets a second '.', and ".\r\n" ends the data. NUL and a CR not followed by LF
 * are refused: neither belongs in a descriptor. */
char *cp_cmd_hspost(const char *const *servers, size_t n_servers, const char *hs_address,
                    const char *descriptor, size_t desc_len, char *err, size_t errlen)
{
    struct cmd_buf b = {0};
    size_t i, start;

    if (descriptor == NULL || desc_len == 0) {
        cp_seterr(err, errlen, "descriptor: empty");
        return NULL;
    }
    for (i = 0; i < desc_len; i++) {
        if (descriptor[i] == '\0') {
            cp_seterr(err, errlen, "descriptor: NUL byte at offset %zu", i);
            return NULL;
        }
        if (descriptor[i] == '\r' && (i + 1 == desc_len || descriptor[i + 1] != '\n')) {
            cp_seterr(err, errlen, "descriptor: bare CR at offset %zu", i);
            return NULL;
        }
    }
    if (hs_address != NULL && check_onion("hs_address", hs_address, err, errlen) < 0)
        return NULL;

    cmd_buf_str(&b, "+HSPOST");
    if (add_servers(&b, servers, n_servers, err, errlen) < 0) {
        cmd_buf_wipe(&b);
        return NULL;
    }
    if (hs_address != NULL) {
        cmd_buf_str(&b, " HSADDRESS=");
        cmd_buf_str(&b, hs_address);
    }
    cmd_buf_str(&b, "\r\n");

    start = 0;
    while (start < desc_len) {
        const char *nl = memchr(descriptor + start, '\n', desc_len - start);
        size_t end = nl ? (size_t)(nl - descriptor) : desc_len; /* index of '\n' or the end */
        size_t line_end = end;

        if (line_end > start && descriptor[line_end - 1] == '\r')
            line_end--;
        if (descriptor[start] == '.') /* control-spec 2.4: leading periods are doubled */
            cmd_buf_str(&b, ".");
        cmd_buf_add(&b, descriptor + start, line_end - start);
        cmd_buf_str(&b, "\r\n");
        start = end + 1;
    }
    cmd_buf_str(&b, ".\r\n");
    return cmd_buf_finish(&b, err, errlen);
}
