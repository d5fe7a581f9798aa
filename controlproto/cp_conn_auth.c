/* cp_conn_auth.c — the way into a control connection (see cp_conn.h): connecting the socket, the
 * bufferevent's connect/EOF/error events, and the authentication exchange: PROTOCOLINFO 1, then SAFECOOKIE
 * (AUTHCHALLENGE, tor's SERVERHASH checked in constant time), COOKIE, HASHEDPASSWORD or NULL
 * (control-spec 3.5, 3.21, 3.24), ending in CP_CONN_READY.
 *
 * Sends its commands and closes through cp_conn.c's queue and shutdown (cp_conn_int.h); cp_conn.c never
 * calls in here. The cookie, nonces, HMACs and the AUTHENTICATE line are wiped with OPENSSL_cleanse once
 * no longer needed. Never logs. */
#include "controlproto/cp_err.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_conn_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_kv.h"
#include "controlproto/cp_reply.h"

#define CP_CONN_HASH_LEN 32 /* SHA-256 */

/* control-spec 3.24 */
static const char cp_conn_server_key[] = "Tor safe cookie authentication server-to-controller hash";
static const char cp_conn_client_key[] = "Tor safe cookie authentication controller-to-server hash";

/* ---- connecting -------------------------------------------------------------------------------- */

static void cp_conn_start_auth(struct cp_conn *c);

static void cp_conn_bev_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct cp_conn *c = arg;
    char peer[160];
    int e = EVUTIL_SOCKET_ERROR();

    (void)bev;
    cp_conn_enter(c);
    cp_conn_describe_peer(c, peer, sizeof peer);
    if (what & BEV_EVENT_CONNECTED) {
        if (c->state == CP_CONN_CONNECTING)
            cp_conn_start_auth(c);
    } else if (what & BEV_EVENT_EOF) {
        cp_conn_fail(c, "%s: tor closed the control connection%s", peer,
                     c->state == CP_CONN_AUTHENTICATING ? " during authentication" : "");
    } else if (what & BEV_EVENT_ERROR) {
        if (c->state == CP_CONN_CONNECTING)
            cp_conn_fail(c, "connect to %s: %s", peer, evutil_socket_error_to_string(e));
        else
            cp_conn_fail(c, "%s: %s error: %s", peer, (what & BEV_EVENT_READING) ? "read" : "write",
                         evutil_socket_error_to_string(e));
    }
    cp_conn_leave(c);
}

int cp_conn_connect(struct cp_conn *c, char *err, size_t errlen)
{
    char peer[160];
    int fd, rc;

    if (c->free_pending || c->closing || (c->state != CP_CONN_IDLE && c->state != CP_CONN_CLOSED)) {
        cp_seterr(err, errlen, "cp_conn_connect: connection is %s",
                       c->closing || c->free_pending ? "closing" : cp_conn_state_str(c->state));
        return -1;
    }
    cp_conn_describe_peer(c, peer, sizeof peer);
    c->parser = cp_reply_parser_new(c->max_line, c->max_reply);
    if (!c->parser) {
        cp_seterr(err, errlen, "cp_conn_connect: out of memory");
        return -1;
    }
    fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        cp_seterr(err, errlen, "connect to %s: socket: %s", peer, strerror(errno));
        goto fail;
    }
    /* Connect here rather than in bufferevent_socket_connect(), which reports an immediate failure
     * (ENOENT, ECONNREFUSED on a unix socket) through the event callback from inside this call. */
    do
        rc = connect(fd, (struct sockaddr *)&c->addr, c->addr_len);
    while (rc < 0 && errno == EINTR);
    if (rc < 0 && errno != EINPROGRESS) {
        cp_seterr(err, errlen, "connect to %s: %s", peer, strerror(errno));
        close(fd);
        goto fail;
    }
    c->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        close(fd);
        cp_seterr(err, errlen, "connect to %s: cannot create a bufferevent", peer);
        goto fail;
    }
    bufferevent_setcb(c->bev, cp_conn_read_cb, NULL, cp_conn_bev_event_cb, c);
    /* NULL address: the socket is already connecting; BEV_EVENT_CONNECTED (or an error) follows. */
    if (bufferevent_socket_connect(c->bev, NULL, 0) < 0 || bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0) {
        cp_seterr(err, errlen, "connect to %s: cannot start the bufferevent", peer);
        bufferevent_free(c->bev);
        c->bev = NULL;
        goto fail;
    }
    c->state = CP_CONN_CONNECTING;
    c->auth_used = CP_AUTH_AUTO;
    c->auth_deadline_us = cp_conn_now_us() + c->timeout_us;
    cp_conn_arm_timer(c);
    return 0;

fail:
    cp_reply_parser_free(c->parser);
    c->parser = NULL;
    return -1;
}

/* ---- authentication ---------------------------------------------------------------------------- */

static void cp_conn_authenticate_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    (void)err;
    (void)arg;
    if (!r)
        return; /* closing; the close reports why */
    if (!cp_reply_is_ok(r)) {
        cp_conn_fail(c, "AUTHENTICATE (%s) refused: %d %s", cp_auth_method_str(c->auth_used), r->status,
                     cp_reply_message(r));
        return;
    }
    c->state = CP_CONN_READY;
    cp_conn_arm_timer(c); /* the connect+auth deadline no longer applies */
    if (c->state_cb)
        c->state_cb(c, CP_CONN_READY, NULL, c->arg);
}

static void cp_conn_authchallenge_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    static const char prefix[] = "AUTHCHALLENGE ";
    unsigned char server_nonce[CP_CONN_NONCE_LEN], server_hash[CP_CONN_HASH_LEN];
    unsigned char expect[CP_CONN_HASH_LEN], client_hash[CP_CONN_HASH_LEN];
    unsigned char msg[CP_CONN_COOKIE_LEN + 2 * CP_CONN_NONCE_LEN];
    unsigned int hlen = 0;
    struct cp_args args = { 0 };
    char perr[256];
    const char *text, *hash_hex, *nonce_hex;
    size_t got = 0;
    bool ok = false;

    (void)err;
    (void)arg;
    if (!r)
        return;
    text = cp_reply_message(r);
    if (!cp_reply_is_ok(r)) {
        cp_conn_fail(c, "AUTHCHALLENGE refused: %d %s", r->status, text);
        return;
    }
    /* control-spec 3.24: "250 AUTHCHALLENGE SERVERHASH=<64 hex> SERVERNONCE=<64 hex>" */
    if (strncmp(text, prefix, sizeof prefix - 1) != 0) {
        cp_conn_fail(c, "AUTHCHALLENGE: reply does not start with \"AUTHCHALLENGE\"");
        return;
    }
    if (cp_args_parse(text + sizeof prefix - 1, &args, perr, sizeof perr) < 0) {
        cp_conn_fail(c, "AUTHCHALLENGE: %s", perr);
        return;
    }
    hash_hex = cp_args_get(&args, "SERVERHASH");
    nonce_hex = cp_args_get(&args, "SERVERNONCE");
    if (!hash_hex || !nonce_hex) {
        cp_conn_fail(c, "AUTHCHALLENGE: reply lacks %s", hash_hex ? "SERVERNONCE" : "SERVERHASH");
        goto out;
    }
    if (strlen(hash_hex) != 2 * CP_CONN_HASH_LEN ||
        !OPENSSL_hexstr2buf_ex(server_hash, sizeof server_hash, &got, hash_hex, '\0') ||
        got != CP_CONN_HASH_LEN) {
        cp_conn_fail(c, "AUTHCHALLENGE: SERVERHASH is not 64 hex digits");
        goto out;
    }
    if (strlen(nonce_hex) != 2 * CP_CONN_NONCE_LEN ||
        !OPENSSL_hexstr2buf_ex(server_nonce, sizeof server_nonce, &got, nonce_hex, '\0') ||
        got != CP_CONN_NONCE_LEN) {
        cp_conn_fail(c, "AUTHCHALLENGE: SERVERNONCE is not 64 hex digits");
        goto out;
    }
    memcpy(msg, c->cookie, CP_CONN_COOKIE_LEN);
    memcpy(msg + CP_CONN_COOKIE_LEN, c->client_nonce, CP_CONN_NONCE_LEN);
    memcpy(msg + CP_CONN_COOKIE_LEN + CP_CONN_NONCE_LEN, server_nonce, CP_CONN_NONCE_LEN);
    if (!HMAC(EVP_sha256(), cp_conn_server_key, (int)strlen(cp_conn_server_key), msg, sizeof msg, expect,
              &hlen) ||
        hlen != CP_CONN_HASH_LEN ||
        !HMAC(EVP_sha256(), cp_conn_client_key, (int)strlen(cp_conn_client_key), msg, sizeof msg,
              client_hash, &hlen) ||
        hlen != CP_CONN_HASH_LEN) {
        cp_conn_fail(c, "AUTHCHALLENGE: HMAC-SHA256 failed");
        goto out;
    }
    if (CRYPTO_memcmp(expect, server_hash, CP_CONN_HASH_LEN) != 0) {
        /* Whoever answered does not know the cookie: not our tor, or the wrong cookie file. */
        cp_conn_fail(c, "SAFECOOKIE: tor's SERVERHASH does not match the cookie (wrong cookie file, or "
                        "not the tor that wrote it)");
        goto out;
    }
    ok = true;
out:
    cp_args_clear(&args);
    cp_conn_wipe_auth(c);
    OPENSSL_cleanse(msg, sizeof msg);
    OPENSSL_cleanse(expect, sizeof expect);
    OPENSSL_cleanse(server_hash, sizeof server_hash);
    OPENSSL_cleanse(server_nonce, sizeof server_nonce);
    if (ok)
        cp_conn_send_internal(c, "AUTHENTICATE", cp_cmd_authenticate_hex(client_hash, sizeof client_hash),
                              NULL, cp_conn_authenticate_cb);
    OPENSSL_cleanse(client_hash, sizeof client_hash);
}

/* Read the 32-byte cookie at `path` into c->cookie. */
static int cp_conn_read_cookie(struct cp_conn *c, const char *path, char *err, size_t errlen)
{
    unsigned char buf[CP_CONN_COOKIE_LEN + 1];
    struct stat st;
    size_t got = 0;
    /* O_NONBLOCK: the cookie lies in tor's DataDirectory, which tor's user may write; a FIFO there
     * must not block the caller's loop (it is then refused as not a regular file). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0) {
        cp_seterr(err, errlen, "cookie file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        cp_seterr(err, errlen, "cookie file %s: not a regular file", path);
        close(fd);
        return -1;
    }
    while (got < sizeof buf) {
        ssize_t n = read(fd, buf + got, sizeof buf - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cp_seterr(err, errlen, "cookie file %s: %s", path, strerror(errno));
            close(fd);
            OPENSSL_cleanse(buf, sizeof buf);
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    /* control-spec 3.21: "Controllers MUST NOT use the contents of a non-32-byte-long file". */
    if (got != CP_CONN_COOKIE_LEN) {
        cp_seterr(err, errlen, "cookie file %s: %s%zu bytes, expected 32", path,
                       got > CP_CONN_COOKIE_LEN ? "more than " : "", got > CP_CONN_COOKIE_LEN ? got - 1 : got);
        OPENSSL_cleanse(buf, sizeof buf);
        return -1;
    }
    memcpy(c->cookie, buf, CP_CONN_COOKIE_LEN);
    OPENSSL_cleanse(buf, sizeof buf);
    return 0;
}

#define CP_CONN_OFFERS_NULL 0x1u
#define CP_CONN_OFFERS_PASSWORD 0x2u
#define CP_CONN_OFFERS_COOKIE 0x4u
#define CP_CONN_OFFERS_SAFECOOKIE 0x8u

static unsigned cp_conn_method_bit(enum cp_auth_method m)
{
    switch (m) {
    case CP_AUTH_SAFECOOKIE: return CP_CONN_OFFERS_SAFECOOKIE;
    case CP_AUTH_COOKIE: return CP_CONN_OFFERS_COOKIE;
    case CP_AUTH_PASSWORD: return CP_CONN_OFFERS_PASSWORD;
    case CP_AUTH_NONE: return CP_CONN_OFFERS_NULL;
    case CP_AUTH_AUTO: break;
    }
    return 0;
}

/* Parse "METHODS=A,B,C" into CP_CONN_OFFERS_* bits; unknown methods are ignored (control-spec 3.21). */
static unsigned cp_conn_parse_methods(const char *methods)
{
    unsigned bits = 0;

    while (*methods) {
        size_t len = strcspn(methods, ",");

        if (len == 4 && strncmp(methods, "NULL", len) == 0)
            bits |= CP_CONN_OFFERS_NULL;
        else if (len == 14 && strncmp(methods, "HASHEDPASSWORD", len) == 0)
            bits |= CP_CONN_OFFERS_PASSWORD;
        else if (len == 6 && strncmp(methods, "COOKIE", len) == 0)
            bits |= CP_CONN_OFFERS_COOKIE;
        else if (len == 10 && strncmp(methods, "SAFECOOKIE", len) == 0)
            bits |= CP_CONN_OFFERS_SAFECOOKIE;
        methods += len;
        if (*methods == ',')
            methods++;
    }
    return bits;
}

static void cp_conn_protocolinfo_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct cp_args args = { 0 };
    char perr[256], cerr[CP_CONN_ERRLEN];
    const char *methods = NULL, *cookie_file = NULL;
    unsigned offered;
    enum cp_auth_method m;
    size_t i;

    (void)err;
    (void)arg;
    if (!r)
        return;
    if (!cp_reply_is_ok(r)) {
        cp_conn_fail(c, "PROTOCOLINFO refused: %d %s", r->status, cp_reply_message(r));
        return;
    }
    /* control-spec 3.21: InfoLines in any order; "250-AUTH METHODS=... [COOKIEFILE="..."]". */
    for (i = 0; i < r->n_lines; i++) {
        if (strncmp(r->lines[i].text, "AUTH ", 5) == 0)
            break;
    }
    if (i == r->n_lines) {
        cp_conn_fail(c, "PROTOCOLINFO: reply has no AUTH line");
        return;
    }
    if (cp_args_parse(r->lines[i].text + 5, &args, perr, sizeof perr) < 0) {
        cp_conn_fail(c, "PROTOCOLINFO: AUTH line: %s", perr);
        return;
    }
    methods = cp_args_get(&args, "METHODS");
    cookie_file = cp_args_get(&args, "COOKIEFILE");
    if (!methods) {
        cp_conn_fail(c, "PROTOCOLINFO: AUTH line has no METHODS=");
        goto out;
    }
    offered = cp_conn_parse_methods(methods);

    m = c->auth;
    if (m == CP_AUTH_AUTO) {
        if (offered & CP_CONN_OFFERS_SAFECOOKIE)
            m = CP_AUTH_SAFECOOKIE;
        else if (offered & CP_CONN_OFFERS_COOKIE)
            m = CP_AUTH_COOKIE;
        else if ((offered & CP_CONN_OFFERS_PASSWORD) && c->password)
            m = CP_AUTH_PASSWORD;
        else if (offered & CP_CONN_OFFERS_NULL)
            m = CP_AUTH_NONE;
        else {
            cp_conn_fail(c, "PROTOCOLINFO: no usable auth method (tor offers METHODS=%s%s)", methods,
                         (offered & CP_CONN_OFFERS_PASSWORD) ? "; HASHEDPASSWORD needs a password" : "");
            goto out;
        }
    } else if (!(offered & cp_conn_method_bit(m))) {
        cp_conn_fail(c, "PROTOCOLINFO: tor does not offer %s (METHODS=%s)", cp_auth_method_str(m), methods);
        goto out;
    }
    c->auth_used = m;

    if (m == CP_AUTH_SAFECOOKIE || m == CP_AUTH_COOKIE) {
        const char *path = c->cookie_path ? c->cookie_path : cookie_file;

        if (!path || !*path) {
            cp_conn_fail(c, "PROTOCOLINFO: %s offered without COOKIEFILE, and no cookie_path set",
                         cp_auth_method_str(m));
            goto out;
        }
        if (cp_conn_read_cookie(c, path, cerr, sizeof cerr) < 0) {
            cp_conn_fail(c, "%s: %s", cp_auth_method_str(m), cerr);
            goto out;
        }
    }
    switch (m) {
    case CP_AUTH_SAFECOOKIE:
        if (RAND_bytes(c->client_nonce, sizeof c->client_nonce) != 1) {
            cp_conn_fail(c, "SAFECOOKIE: RAND_bytes failed");
            goto out;
        }
        cp_conn_send_internal(c, "AUTHCHALLENGE",
                              cp_cmd_authchallenge(c->client_nonce, sizeof c->client_nonce), NULL,
                              cp_conn_authchallenge_cb);
        break;
    case CP_AUTH_COOKIE:
        cp_conn_send_internal(c, "AUTHENTICATE", cp_cmd_authenticate_hex(c->cookie, sizeof c->cookie), NULL,
                              cp_conn_authenticate_cb);
        cp_conn_wipe_auth(c);
        break;
    case CP_AUTH_PASSWORD:
        if (!c->password) {
            cp_conn_fail(c, "HASHEDPASSWORD: no password set");
            goto out;
        }
        cp_conn_send_internal(c, "AUTHENTICATE", cp_cmd_authenticate_password(c->password, cerr, sizeof cerr),
                              cerr, cp_conn_authenticate_cb);
        break;
    case CP_AUTH_NONE:
        /* control-spec 3.5: AUTHENTICATE is required even when no authentication is configured. */
        cp_conn_send_internal(c, "AUTHENTICATE", cp_cmd_authenticate_hex(NULL, 0), NULL, cp_conn_authenticate_cb);
        break;
    case CP_AUTH_AUTO:
        break;
    }
out:
    cp_args_clear(&args);
}

static void cp_conn_start_auth(struct cp_conn *c)
{
    c->state = CP_CONN_AUTHENTICATING;
    /* control-spec 3.21: PIVERSION 1 */
    cp_conn_send_internal(c, "PROTOCOLINFO", cp_cmd_protocolinfo(), NULL, cp_conn_protocolinfo_cb);
}
