/* fake_ctl.h — a scripted fake tor control port for tests, running on the test's event_base.
 *
 * Owns a private temporary directory (the unix socket, cookie files the test writes), a listener (unix
 * socket in that directory, or TCP on 127.0.0.1 with an ephemeral port) and at most one client connection
 * at a time. It plays a script: lines it expects from the client and raw bytes it sends back, one write()
 * per SEND step so a test controls exactly where replies are split (mid-line, mid-reply), pauses, closing
 * the connection, and the SAFECOOKIE arithmetic (control-spec 3.24) for a client nonce it cannot know in
 * advance. The first mismatch stops the script and is kept as a message. It does not understand the
 * control protocol beyond that and has no main(): it is linked into every test binary.
 * Also holds fake_ctl_run_until(), the bounded "run the loop until done" helper the tests share. */
#ifndef FAKE_CTL_H
#define FAKE_CTL_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct fake_ctl;

enum fake_ctl_op {
    FAKE_CTL_EXPECT,          /* read one CRLF-terminated line; it must equal `text` */
    FAKE_CTL_EXPECT_PREFIX,   /* read one line; it must start with `text` */
    FAKE_CTL_SEND,            /* write `text` in one write(); "@DIR@" is replaced by the temp directory */
    FAKE_CTL_PAUSE,           /* wait `ms` milliseconds */
    FAKE_CTL_CLOSE,           /* close the client connection; later steps wait for a new connection */
    FAKE_CTL_EXPECT_EOF,      /* wait for the client to close; a line arriving first is a mismatch */
    FAKE_CTL_COOKIE_AUTH,     /* read "AUTHENTICATE <hex of the cookie>" (hex case-insensitive) */
    FAKE_CTL_SAFECOOKIE,      /* read "AUTHCHALLENGE SAFECOOKIE <64 hex>", send a correct
                                 "250 AUTHCHALLENGE SERVERHASH=... SERVERNONCE=..." */
    FAKE_CTL_SAFECOOKIE_BAD,  /* the same with one bit of SERVERHASH flipped */
    FAKE_CTL_SAFECOOKIE_AUTH  /* read "AUTHENTICATE <hex of the client hash of the last challenge>" */
};
const char *fake_ctl_op_str(enum fake_ctl_op op);

struct fake_ctl_step {
    enum fake_ctl_op op;
    const char *text;
    unsigned ms;
};

/* Create the fake: a temporary directory, and a listener on <dir>/sock (tcp false) or on 127.0.0.1 with
 * an ephemeral port (tcp true). `script` is borrowed and must outlive the fake. Returns NULL with a
 * message in err. */
struct fake_ctl *fake_ctl_new(struct event_base *base, bool tcp, const struct fake_ctl_step *script, size_t n,
                              char *err, size_t errlen);

/* Close everything, remove the directory and the files in it. NULL is a no-op. */
void fake_ctl_free(struct fake_ctl *f);

const char *fake_ctl_dir(const struct fake_ctl *f);
const char *fake_ctl_unix_path(const struct fake_ctl *f); /* NULL for a TCP fake */
unsigned short fake_ctl_port(const struct fake_ctl *f);    /* 0 for a unix fake */

/* Write `len` bytes of `cookie` to <dir>/<name> (mode 0600). If len is 32, the fake also uses it for
 * FAKE_CTL_COOKIE_AUTH and the SAFECOOKIE steps. Return 0, or -1 with a message. */
int fake_ctl_write_cookie(struct fake_ctl *f, const char *name, const unsigned char *cookie, size_t len,
                          char *err, size_t errlen);

/* True once every step has run. */
bool fake_ctl_done(const struct fake_ctl *f);

/* The first mismatch ("step 3 (EXPECT): expected \"X\", got \"Y\""), or NULL. */
const char *fake_ctl_failure(const struct fake_ctl *f);

/* Connections accepted so far. One is served at a time: a connection accepted while another is open waits
 * until the script has finished with the current one (EXPECT_EOF or CLOSE). */
size_t fake_ctl_connections(const struct fake_ctl *f);

/* Run `base` until done(arg) is true or `timeout_ms` pass. Return 0 if done, -1 on timeout. */
int fake_ctl_run_until(struct event_base *base, bool (*done)(void *arg), void *arg, unsigned timeout_ms);

#endif
