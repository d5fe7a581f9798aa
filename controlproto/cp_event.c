/* cp_event.c — typed decoders for the events and replies a controller of onion services reads:
 * CIRC (control-spec 4.1.1), HS_DESC (4.1.25), HS_DESC_CONTENT (4.1.26), STATUS_* (4.1.10),
 * CONF_CHANGED (4.1.18), SIGNAL (4.1.19), GETINFO/GETCONF answers (3.9, 3.3) and the ADD_ONION answer
 * (3.27).
 *
 * Owns the meaning of those lines: which word is which field, the ServerSpec/LongName syntax of relays
 * (2.4), build flags, bootstrap progress. It does not own framing (cp_reply.c) or the lexical layer
 * (cp_kv.c: words, Keyword=Value, QuotedStrings), and it does not act on anything it decodes.
 * Unknown keywords, extra words and extra lines are ignored, as 4.1 requires of clients; a missing or
 * malformed field we rely on is an error naming the event and the field. Does no I/O, never logs.
 * Error messages never repeat a PrivateKey. */
#include "controlproto/cp_err.h"
#include "controlproto/cp_event.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define CP_EV_FP_LEN 40
#define CP_EV_NICK_MAX 19
#define CP_EV_ONION_LEN 56

static bool ev_is_digit(char c) { return c >= '0' && c <= '9'; }
static bool ev_is_hex(char c) { return ev_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static bool ev_is_alnum(char c)
{
    return ev_is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* strdup that reports failure through err. `s` NULL gives NULL without error. */
static int ev_dup(const char *s, char **out, const char *what, char *err, size_t errlen)
{
    *out = NULL;
    if (s == NULL)
        return 0;
    if ((*out = strdup(s)) == NULL) {
        cp_seterr(err, errlen, "%s: out of memory", what);
        return -1;
    }
    return 0;
}

/* Wipe and free a string that may have held a secret. */
static void ev_str_free(char *s)
{
    if (s == NULL)
        return;
    OPENSSL_cleanse(s, strlen(s));
    free(s);
}

/* Parse one relay reference of `len` bytes (control-spec 2.4 ServerSpec): "$<40 hex>", "$<40 hex>~nick",
 * "$<40 hex>=nick" (tor < 0.3.1.3) or a bare nickname. The fingerprint is stored uppercase. */
static int ev_parse_server(const char *s, size_t len, char fp[CP_EV_FP_LEN + 1], char nick[CP_EV_NICK_MAX + 1],
                           const char *what, char *err, size_t errlen)
{
    size_t i, nick_start = 0;

    fp[0] = '\0';
    nick[0] = '\0';
    if (len > 0 && s[0] == '$') {
        for (i = 0; i < CP_EV_FP_LEN; i++) {
            if (1 + i >= len || !ev_is_hex(s[1 + i])) {
                cp_seterr(err, errlen, "%s: fingerprint must be \"$\" and %d hex digits", what, CP_EV_FP_LEN);
                return -1;
            }
            fp[i] = (s[1 + i] >= 'a' && s[1 + i] <= 'f') ? (char)(s[1 + i] - 'a' + 'A') : s[1 + i];
        }
        fp[CP_EV_FP_LEN] = '\0';
        if (len == 1 + CP_EV_FP_LEN)
            return 0;
        if (s[1 + CP_EV_FP_LEN] != '~' && s[1 + CP_EV_FP_LEN] != '=') {
            cp_seterr(err, errlen, "%s: fingerprint must be followed by '~' or '=' and a nickname", what);
            fp[0] = '\0';
            return -1;
        }
        nick_start = 2 + CP_EV_FP_LEN;
    }
    if (len - nick_start < 1 || len - nick_start > CP_EV_NICK_MAX) {
        cp_seterr(err, errlen, "%s: nickname must be 1-%d letters or digits", what, CP_EV_NICK_MAX);
        fp[0] = '\0';
        return -1;
    }
    for (i = nick_start; i < len; i++) {
        if (!ev_is_alnum(s[i])) {
            cp_seterr(err, errlen, "%s: nickname must be 1-%d letters or digits", what, CP_EV_NICK_MAX);
            fp[0] = '\0';
            return -1;
        }
        nick[i - nick_start] = s[i];
    }
    nick[len - nick_start] = '\0';
    return 0;
}

/* Check that `r` is the event `name` and split its first line into `a`. Later lines of an extended
 * event (4.1) carry only keywords we do not use, so they are not read. */
static int ev_begin(const struct cp_reply *r, const char *name, struct cp_args *a, char *err, size_t errlen)
{
    char aerr[192];
    size_t nlen = strlen(name);
    const char *text;

    memset(a, 0, sizeof(*a));
    if (r == NULL || r->n_lines == 0 || r->lines == NULL || r->lines[0].text == NULL) {
        cp_seterr(err, errlen, "%s: empty reply", name);
        return -1;
    }
    text = r->lines[0].text;
    if (!r->is_event || strncmp(text, name, nlen) != 0 || (text[nlen] != ' ' && text[nlen] != '\0')) {
        cp_seterr(err, errlen, "%s: not a %s event (status %d)", name, name, r->lines[0].status);
        return -1;
    }
    if (cp_args_parse(text, a, aerr, sizeof aerr) < 0) {
        cp_seterr(err, errlen, "%s: %s", name, aerr);
        return -1;
    }
    /* The name must be the first positional word, so that pos[1] ... are the event's own fields (a first
     * word such as "STATUS_X=Y" would otherwise be taken as a Keyword=Value pair). */
    if (a->n_pos == 0 || strcmp(a->pos[0], name) != 0) {
        cp_args_clear(a);
        cp_seterr(err, errlen, "%s: not a %s event (malformed event name)", name, name);
        return -1;
    }
    return 0;
}

const char *cp_event_name(const struct cp_reply *r, char *buf, size_t len)
{
    size_t n;
    const char *text;

    if (buf == NULL || len == 0)
        return "";
    buf[0] = '\0';
    if (r == NULL || !r->is_event || r->n_lines == 0 || r->lines == NULL || r->lines[0].text == NULL)
        return buf;
    text = r->lines[0].text;
    n = strcspn(text, " ");
    if (n > len - 1)
        n = len - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return buf;
}

/* ---- CIRC ---- */

static const char *const circ_status_names[] = {
    [CP_CIRC_LAUNCHED] = "LAUNCHED", [CP_CIRC_BUILT] = "BUILT", [CP_CIRC_GUARD_WAIT] = "GUARD_WAIT",
    [CP_CIRC_EXTENDED] = "EXTENDED", [CP_CIRC_FAILED] = "FAILED", [CP_CIRC_CLOSED] = "CLOSED",
};

const char *cp_circ_status_str(enum cp_circ_status s)
{
    if ((unsigned)s < sizeof circ_status_names / sizeof circ_status_names[0] && circ_status_names[s] != NULL)
        return circ_status_names[s];
    return "UNKNOWN";
}

static enum cp_circ_status circ_status_from(const char *s)
{
    size_t i;

    for (i = 0; i < sizeof circ_status_names / sizeof circ_status_names[0]; i++) {
        if (circ_status_names[i] != NULL && strcmp(s, circ_status_names[i]) == 0)
            return (enum cp_circ_status)i;
    }
    return CP_CIRC_UNKNOWN;
}

/* control-spec 4.1.1: BuildFlags = BuildFlag *("," BuildFlag); unknown flags are accepted and ignored. */
static unsigned circ_build_flags(const char *s)
{
    static const struct {
        const char *name;
        unsigned bit;
    } flags[] = {
        {"ONEHOP_TUNNEL", CP_BUILD_ONEHOP_TUNNEL},
        {"IS_INTERNAL", CP_BUILD_IS_INTERNAL},
        {"NEED_CAPACITY", CP_BUILD_NEED_CAPACITY},
        {"NEED_UPTIME", CP_BUILD_NEED_UPTIME},
    };
    unsigned out = 0;

    while (*s != '\0') {
        size_t n = strcspn(s, ","), i;

        for (i = 0; i < sizeof flags / sizeof flags[0]; i++) {
            if (strlen(flags[i].name) == n && strncmp(s, flags[i].name, n) == 0)
                out |= flags[i].bit;
        }
        s += n;
        if (*s == ',')
            s++;
    }
    return out;
}

/* CircuitID: 2.4 allows 1*16 IDChar, but tor's global circuit id is a uint32_t printed in decimal (and
 * CLOSECIRCUIT refuses a larger one), so anything else did not come from tor. */
static int circ_id(const char *s, unsigned long *out, char *err, size_t errlen)
{
    unsigned long v = 0;
    size_t i;

    for (i = 0; s[i] != '\0'; i++) {
        /* 10 digits hold any uint32_t; the check below bounds the value, this one the loop */
        if (!ev_is_digit(s[i]) || i >= 10) {
            cp_seterr(err, errlen, "CIRC: circuit id must be a decimal number 0-%lu", CP_CIRC_ID_MAX);
            return -1;
        }
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (i == 0) {
        cp_seterr(err, errlen, "CIRC: circuit id is empty");
        return -1;
    }
    if (v > CP_CIRC_ID_MAX) {
        cp_seterr(err, errlen, "CIRC: circuit id must be a decimal number 0-%lu", CP_CIRC_ID_MAX);
        return -1;
    }
    *out = v;
    return 0;
}

/* Path = LongName *("," LongName) */
static int circ_path(const char *s, struct cp_event_circ *c, char *err, size_t errlen)
{
    size_t n = 1, i;
    const char *p;

    for (p = s; *p != '\0'; p++)
        n += *p == ',';
    if ((c->hops = calloc(n, sizeof(*c->hops))) == NULL) {
        cp_seterr(err, errlen, "CIRC: path: out of memory");
        return -1;
    }
    for (i = 0, p = s; i < n; i++) {
        size_t len = strcspn(p, ",");
        char what[48];

        snprintf(what, sizeof what, "CIRC: path hop %zu", i + 1);
        if (ev_parse_server(p, len, c->hops[i].fp, c->hops[i].nick, what, err, errlen) < 0)
            return -1;
        c->n_hops = i + 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* The circuit's fields from `a`, whose positional words pos[first] ... are CircuitID, CircStatus and the
 * optional Path: the same layout in a CIRC event (after "CIRC") and in a GETINFO circuit-status line. */
static int circ_fill(const struct cp_args *a, size_t first, struct cp_event_circ *out, char *err, size_t errlen)
{
    const char *flags;

    if (a->n_pos < first + 1) {
        cp_seterr(err, errlen, "CIRC: circuit id missing");
        return -1;
    }
    if (circ_id(a->pos[first], &out->id, err, errlen) < 0)
        return -1;
    if (a->n_pos < first + 2) {
        cp_seterr(err, errlen, "CIRC: status missing");
        return -1;
    }
    out->status = circ_status_from(a->pos[first + 1]);
    /* 4.1.1: the path is given only once the circuit has been extended at least one hop. */
    if (a->n_pos >= first + 3 && circ_path(a->pos[first + 2], out, err, errlen) < 0)
        return -1;
    if ((flags = cp_args_get(a, "BUILD_FLAGS")) != NULL)
        out->build_flags = circ_build_flags(flags);
    if (ev_dup(cp_args_get(a, "PURPOSE"), &out->purpose, "CIRC: PURPOSE", err, errlen) < 0 ||
        ev_dup(cp_args_get(a, "HS_STATE"), &out->hs_state, "CIRC: HS_STATE", err, errlen) < 0 ||
        ev_dup(cp_args_get(a, "REND_QUERY"), &out->rend_query, "CIRC: REND_QUERY", err, errlen) < 0 ||
        ev_dup(cp_args_get(a, "TIME_CREATED"), &out->time_created, "CIRC: TIME_CREATED", err, errlen) < 0 ||
        ev_dup(cp_args_get(a, "REASON"), &out->reason, "CIRC: REASON", err, errlen) < 0 ||
        ev_dup(cp_args_get(a, "REMOTE_REASON"), &out->remote_reason, "CIRC: REMOTE_REASON", err, errlen) < 0)
        return -1;
    return 0;
}

int cp_event_circ_parse(const struct cp_reply *r, struct cp_event_circ *out, char *err, size_t errlen)
{
    struct cp_args a;
    int rc;

    memset(out, 0, sizeof(*out));
    if (ev_begin(r, "CIRC", &a, err, errlen) < 0)
        return -1;
    /* "650" SP "CIRC" SP CircuitID SP CircStatus [SP Path] [SP keyword=value ...] */
    rc = circ_fill(&a, 1, out, err, errlen);
    cp_args_clear(&a);
    if (rc < 0)
        cp_event_circ_clear(out);
    return rc;
}

int cp_circ_status_line_parse(const char *line, struct cp_event_circ *out, char *err, size_t errlen)
{
    struct cp_args a;
    char aerr[192];
    int rc;

    memset(out, 0, sizeof(*out));
    if (line == NULL) {
        cp_seterr(err, errlen, "circuit-status: no line");
        return -1;
    }
    if (cp_args_parse(line, &a, aerr, sizeof aerr) < 0) {
        cp_seterr(err, errlen, "circuit-status: %s", aerr);
        return -1;
    }
    /* 3.9 circuit-status: CircuitID SP CircStatus [SP Path] [SP keyword=value ...], one circuit a line */
    rc = circ_fill(&a, 0, out, err, errlen);
    cp_args_clear(&a);
    if (rc < 0)
        cp_event_circ_clear(out);
    return rc;
}

void cp_event_circ_clear(struct cp_event_circ *c)
{
    if (c == NULL)
        return;
    free(c->hops);
    free(c->purpose);
    free(c->hs_state);
    free(c->rend_query);
    free(c->time_created);
    free(c->reason);
    free(c->remote_reason);
    memset(c, 0, sizeof(*c));
}

/* ---- HS_DESC ---- */

static const char *const hs_desc_action_names[] = {
    [CP_HS_DESC_REQUESTED] = "REQUESTED", [CP_HS_DESC_UPLOAD] = "UPLOAD",   [CP_HS_DESC_RECEIVED] = "RECEIVED",
    [CP_HS_DESC_UPLOADED] = "UPLOADED",   [CP_HS_DESC_IGNORE] = "IGNORE",   [CP_HS_DESC_FAILED] = "FAILED",
    [CP_HS_DESC_CREATED] = "CREATED",
};

const char *cp_hs_desc_action_str(enum cp_hs_desc_action act)
{
    if ((unsigned)act < sizeof hs_desc_action_names / sizeof hs_desc_action_names[0] &&
        hs_desc_action_names[act] != NULL)
        return hs_desc_action_names[act];
    return "UNKNOWN";
}

static enum cp_hs_desc_action hs_desc_action_from(const char *s)
{
    size_t i;

    for (i = 0; i < sizeof hs_desc_action_names / sizeof hs_desc_action_names[0]; i++) {
        if (hs_desc_action_names[i] != NULL && strcmp(s, hs_desc_action_names[i]) == 0)
            return (enum cp_hs_desc_action)i;
    }
    return CP_HS_DESC_UNKNOWN;
}

/* HsDir = LongName / Fingerprint / "UNKNOWN" (4.1.25, 4.1.26) */
static int hs_dir(const char *s, char fp[CP_EV_FP_LEN + 1], char nick[CP_EV_NICK_MAX + 1], const char *what,
                  char *err, size_t errlen)
{
    if (strcmp(s, "UNKNOWN") == 0) {
        fp[0] = nick[0] = '\0';
        return 0;
    }
    return ev_parse_server(s, strlen(s), fp, nick, what, err, errlen);
}

int cp_event_hs_desc_parse(const struct cp_reply *r, struct cp_event_hs_desc *out, char *err, size_t errlen)
{
    struct cp_args a;

    memset(out, 0, sizeof(*out));
    if (ev_begin(r, "HS_DESC", &a, err, errlen) < 0)
        return -1;
    /* "650" SP "HS_DESC" SP Action SP HSAddress SP AuthType SP HsDir [SP DescriptorID] [SP keyword=value] */
    if (a.n_pos < 2) {
        cp_seterr(err, errlen, "HS_DESC: action missing");
        goto fail;
    }
    out->action = hs_desc_action_from(a.pos[1]);
    if (a.n_pos < 3) {
        cp_seterr(err, errlen, "HS_DESC: address missing");
        goto fail;
    }
    if (a.n_pos < 4) {
        cp_seterr(err, errlen, "HS_DESC: auth type missing");
        goto fail;
    }
    if (a.n_pos < 5) {
        cp_seterr(err, errlen, "HS_DESC: HSDir missing");
        goto fail;
    }
    if (hs_dir(a.pos[4], out->hsdir_fp, out->hsdir_nick, "HS_DESC: HSDir", err, errlen) < 0)
        goto fail;
    if (ev_dup(a.pos[2], &out->address, "HS_DESC: address", err, errlen) < 0 ||
        ev_dup(a.pos[3], &out->auth_type, "HS_DESC: auth type", err, errlen) < 0 ||
        ev_dup(a.n_pos >= 6 ? a.pos[5] : NULL, &out->desc_id, "HS_DESC: descriptor id", err, errlen) < 0 ||
        ev_dup(cp_args_get(&a, "HSDIR_INDEX"), &out->hsdir_index, "HS_DESC: HSDIR_INDEX", err, errlen) < 0 ||
        ev_dup(cp_args_get(&a, "REASON"), &out->reason, "HS_DESC: REASON", err, errlen) < 0 ||
        ev_dup(cp_args_get(&a, "REPLICA"), &out->replica, "HS_DESC: REPLICA", err, errlen) < 0)
        goto fail;
    cp_args_clear(&a);
    return 0;
fail:
    cp_args_clear(&a);
    cp_event_hs_desc_clear(out);
    return -1;
}

bool cp_event_hs_desc_failed_fetch(const struct cp_event_hs_desc *e)
{
    static const char *const fetch_reasons[] = {"NOT_FOUND", "QUERY_REJECTED", "BAD_DESC", "QUERY_NO_HSDIR",
                                                "QUERY_RATE_LIMITED"};
    for (size_t i = 0; e->action == CP_HS_DESC_FAILED && e->reason && i < sizeof(fetch_reasons) / sizeof(fetch_reasons[0]);
         i++)
        if (strcmp(e->reason, fetch_reasons[i]) == 0)
            return true;
    return false;
}

void cp_event_hs_desc_clear(struct cp_event_hs_desc *e)
{
    if (e == NULL)
        return;
    free(e->address);
    free(e->auth_type);
    free(e->desc_id);
    free(e->hsdir_index);
    free(e->reason);
    free(e->replica);
    memset(e, 0, sizeof(*e));
}

/* ---- HS_DESC_CONTENT ---- */

int cp_event_hs_desc_content_parse(const struct cp_reply *r, struct cp_event_hs_desc_content *out, char *err,
                                   size_t errlen)
{
    struct cp_args a;
    const struct cp_line *l;
    size_t blen;

    memset(out, 0, sizeof(*out));
    if (ev_begin(r, "HS_DESC_CONTENT", &a, err, errlen) < 0)
        return -1;
    /* "650" "+" "HS_DESC_CONTENT" SP HSAddress SP DescId SP HsDir CRLF Descriptor CRLF "." CRLF "650 OK" */
    l = &r->lines[0];
    if (l->sep != '+' || l->data == NULL) {
        cp_seterr(err, errlen, "HS_DESC_CONTENT: no data block (line must start with \"650+\")");
        goto fail;
    }
    if (a.n_pos < 2) {
        cp_seterr(err, errlen, "HS_DESC_CONTENT: address missing");
        goto fail;
    }
    if (a.n_pos < 3) {
        cp_seterr(err, errlen, "HS_DESC_CONTENT: descriptor id missing");
        goto fail;
    }
    if (a.n_pos < 4) {
        cp_seterr(err, errlen, "HS_DESC_CONTENT: HSDir missing");
        goto fail;
    }
    if (hs_dir(a.pos[3], out->hsdir_fp, out->hsdir_nick, "HS_DESC_CONTENT: HSDir", err, errlen) < 0)
        goto fail;
    if (ev_dup(a.pos[1], &out->address, "HS_DESC_CONTENT: address", err, errlen) < 0 ||
        ev_dup(a.pos[2], &out->desc_id, "HS_DESC_CONTENT: descriptor id", err, errlen) < 0)
        goto fail;
    /* tor writes Descriptor CRLF "." CRLF: the CRLF after the descriptor is framing, so drop the last
     * line ending. A failed fetch sends an empty descriptor (one empty line). */
    blen = l->data_len;
    if (blen > 0 && l->data[blen - 1] == '\n')
        blen--;
    if ((out->body = malloc(blen + 1)) == NULL) {
        cp_seterr(err, errlen, "HS_DESC_CONTENT: descriptor: out of memory");
        goto fail;
    }
    memcpy(out->body, l->data, blen);
    out->body[blen] = '\0';
    out->body_len = blen;
    cp_args_clear(&a);
    return 0;
fail:
    cp_args_clear(&a);
    cp_event_hs_desc_content_clear(out);
    return -1;
}

void cp_event_hs_desc_content_clear(struct cp_event_hs_desc_content *e)
{
    if (e == NULL)
        return;
    free(e->address);
    free(e->desc_id);
    free(e->body);
    memset(e, 0, sizeof(*e));
}

/* ---- STATUS_GENERAL / STATUS_CLIENT / STATUS_SERVER ---- */

int cp_bootstrap_progress_parse(const char *s, int *out, char *err, size_t errlen)
{
    int v = 0;
    size_t i;

    for (i = 0; s[i] != '\0'; i++) {
        if (!ev_is_digit(s[i]) || i >= 3) {
            cp_seterr(err, errlen, "BOOTSTRAP PROGRESS must be a number 0-100");
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (i == 0 || v > 100) {
        cp_seterr(err, errlen, "BOOTSTRAP PROGRESS must be a number 0-100");
        return -1;
    }
    *out = v;
    return 0;
}

int cp_event_status_parse(const struct cp_reply *r, struct cp_event_status *out, char *err, size_t errlen)
{
    struct cp_args a;
    char name[32], perr[64];
    const char *v;
    size_t i;

    memset(out, 0, sizeof(*out));
    out->progress = -1;
    /* "650" SP StatusType SP StatusSeverity SP StatusAction [SP StatusArguments] (4.1.10); tor before
     * 0.2.0.22-rc wrote STATUS_SEVER, hence the prefix match. */
    cp_event_name(r, name, sizeof name);
    if (strncmp(name, "STATUS_", 7) != 0) {
        cp_seterr(err, errlen, "STATUS: not a STATUS_* event");
        return -1;
    }
    if (ev_begin(r, name, &a, err, errlen) < 0)
        return -1;
    if (a.n_pos < 2) {
        cp_seterr(err, errlen, "%s: severity missing", name);
        goto fail;
    }
    if (a.n_pos < 3) {
        cp_seterr(err, errlen, "%s: action missing", name);
        goto fail;
    }
    /* Steal the first three words and the rest of the arguments from `a`. */
    out->type = a.pos[0];
    out->severity = a.pos[1];
    out->action = a.pos[2];
    if (a.n_pos > 3) {
        if ((out->args.pos = calloc(a.n_pos - 3, sizeof(char *))) == NULL) {
            out->type = out->severity = out->action = NULL;
            cp_seterr(err, errlen, "%s: out of memory", name);
            goto fail;
        }
        for (i = 3; i < a.n_pos; i++)
            out->args.pos[i - 3] = a.pos[i];
        out->args.n_pos = a.n_pos - 3;
    }
    out->args.kv = a.kv;
    out->args.n_kv = a.n_kv;
    free(a.pos);
    memset(&a, 0, sizeof a);

    if (strcmp(out->action, "BOOTSTRAP") == 0) {
        /* 4.1.10: controllers MUST tolerate missing arguments; a malformed PROGRESS is an error. */
        if ((v = cp_args_get(&out->args, "PROGRESS")) != NULL &&
            cp_bootstrap_progress_parse(v, &out->progress, perr, sizeof perr) < 0) {
            cp_seterr(err, errlen, "STATUS: %s", perr);
            goto fail;
        }
        out->tag = cp_args_get(&out->args, "TAG");
        out->summary = cp_args_get(&out->args, "SUMMARY");
    }
    return 0;
fail:
    cp_args_clear(&a);
    cp_event_status_clear(out);
    return -1;
}

void cp_event_status_clear(struct cp_event_status *e)
{
    if (e == NULL)
        return;
    free(e->type);
    free(e->severity);
    free(e->action);
    cp_args_clear(&e->args);
    memset(e, 0, sizeof(*e));
    e->progress = -1;
}

/* ---- GETINFO / GETCONF answers ---- */

/* A key as tor writes it: printable ASCII without spaces. */
static bool info_key_ok(const char *s, size_t n)
{
    size_t i;

    if (n == 0)
        return false;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f)
            return false;
    }
    return true;
}

/* Append one item (key and value stolen) to `i`. */
static int info_add(struct cp_info *info, char *key, char *value)
{
    struct cp_kv *n = realloc(info->items, (info->n + 1) * sizeof(*n));

    if (n == NULL)
        return -1;
    info->items = n;
    info->items[info->n].key = key;
    info->items[info->n].value = value;
    info->n++;
    return 0;
}

int cp_info_parse(const struct cp_reply *r, struct cp_info *out, char *err, size_t errlen)
{
    size_t i;

    memset(out, 0, sizeof(*out));
    if (r == NULL || r->n_lines == 0 || r->lines == NULL) {
        cp_seterr(err, errlen, "GETINFO/GETCONF reply: empty reply");
        return -1;
    }
    if (r->is_event) {
        cp_seterr(err, errlen, "GETINFO/GETCONF reply: status %d is an event, not a reply", r->status);
        return -1;
    }
    if (!cp_reply_is_ok(r)) {
        cp_seterr(err, errlen, "GETINFO/GETCONF reply: status %d: %.80s", r->status, cp_reply_message(r));
        return -1;
    }
    for (i = 0; i < r->n_lines; i++) {
        const struct cp_line *l = &r->lines[i];
        const char *eq = strchr(l->text, '=');
        char *key = NULL, *value = NULL;
        char kerr[128];

        /* 3.9: the final "250 OK" is not an item. */
        if (i + 1 == r->n_lines && l->sep == ' ' && strcmp(l->text, "OK") == 0)
            break;
        if (l->sep == '+') {
            /* 250+keyword= CRLF value CRLF "." — the last line ending belongs to the framing. */
            size_t vlen = l->data_len;

            if (eq == NULL || eq[1] != '\0' || !info_key_ok(l->text, (size_t)(eq - l->text))) {
                cp_seterr(err, errlen, "GETINFO/GETCONF reply: line %zu: data line must be \"key=\"", i + 1);
                goto fail;
            }
            if (vlen > 0 && l->data[vlen - 1] == '\n')
                vlen--;
            key = strndup(l->text, (size_t)(eq - l->text));
            value = malloc(vlen + 1);
            if (value != NULL) {
                memcpy(value, l->data != NULL ? l->data : "", vlen);
                value[vlen] = '\0';
            }
        } else if (eq == NULL) {
            /* 3.3: "250 keyword" — an option at its default */
            if (!info_key_ok(l->text, strlen(l->text))) {
                cp_seterr(err, errlen, "GETINFO/GETCONF reply: line %zu: bad key", i + 1);
                goto fail;
            }
            key = strdup(l->text);
        } else {
            if (!info_key_ok(l->text, (size_t)(eq - l->text))) {
                cp_seterr(err, errlen, "GETINFO/GETCONF reply: line %zu: bad key", i + 1);
                goto fail;
            }
            if (cp_split_key_value(l->text, &key, &value, kerr, sizeof kerr) < 0) {
                cp_seterr(err, errlen, "GETINFO/GETCONF reply: line %zu: out of memory", i + 1);
                goto fail;
            }
        }
        if (key == NULL || (l->sep == '+' && value == NULL) || info_add(out, key, value) < 0) {
            free(key);
            ev_str_free(value);
            cp_seterr(err, errlen, "GETINFO/GETCONF reply: line %zu: out of memory", i + 1);
            goto fail;
        }
    }
    return 0;
fail:
    cp_info_clear(out);
    return -1;
}

void cp_info_clear(struct cp_info *info)
{
    size_t i;

    if (info == NULL)
        return;
    for (i = 0; i < info->n; i++) {
        free(info->items[i].key);
        ev_str_free(info->items[i].value);
    }
    free(info->items);
    memset(info, 0, sizeof(*info));
}

const char *cp_info_get(const struct cp_info *info, const char *key)
{
    size_t i;

    if (info == NULL || key == NULL)
        return NULL;
    for (i = 0; i < info->n; i++) {
        if (strcmp(info->items[i].key, key) == 0)
            return info->items[i].value;
    }
    return NULL;
}

/* ---- CONF_CHANGED / SIGNAL ---- */

int cp_event_conf_changed_parse(const struct cp_reply *r, struct cp_info *out, char *err, size_t errlen)
{
    struct cp_args a;
    size_t i;

    memset(out, 0, sizeof(*out));
    if (ev_begin(r, "CONF_CHANGED", &a, err, errlen) < 0)
        return -1;
    cp_args_clear(&a);
    if (r->n_lines < 2 || r->lines[0].sep != '-') {
        cp_seterr(err, errlen, "CONF_CHANGED: must be a multi-line event ending in \"650 OK\"");
        return -1;
    }
    /* lines[0] is the name, the last line the "OK" end line; every line between is one option. */
    for (i = 1; i + 1 < r->n_lines; i++) {
        const char *text = r->lines[i].text;
        size_t klen = strcspn(text, "=");
        char *key = NULL, *value = NULL;

        if (r->lines[i].sep != '-' || !info_key_ok(text, klen)) {
            cp_seterr(err, errlen, "CONF_CHANGED: line %zu: must be \"Key=Value\" or \"Key\"", i + 1);
            goto fail;
        }
        key = strndup(text, klen);
        if (text[klen] == '=')
            value = strdup(text + klen + 1);
        if (key == NULL || (text[klen] == '=' && value == NULL) || info_add(out, key, value) < 0) {
            free(key);
            free(value);
            cp_seterr(err, errlen, "CONF_CHANGED: line %zu: out of memory", i + 1);
            goto fail;
        }
    }
    return 0;
fail:
    cp_info_clear(out);
    return -1;
}

int cp_event_signal_parse(const struct cp_reply *r, char *name, size_t len, char *err, size_t errlen)
{
    struct cp_args a;

    if (name != NULL && len > 0)
        name[0] = '\0';
    if (name == NULL || len == 0) {
        cp_seterr(err, errlen, "SIGNAL: no buffer for the name");
        return -1;
    }
    if (ev_begin(r, "SIGNAL", &a, err, errlen) < 0)
        return -1;
    if (a.n_pos < 2 || a.pos[1][0] == '\0' || strlen(a.pos[1]) >= len) {
        cp_seterr(err, errlen, "SIGNAL: signal name missing or too long");
        cp_args_clear(&a);
        return -1;
    }
    memcpy(name, a.pos[1], strlen(a.pos[1]) + 1);
    cp_args_clear(&a);
    return 0;
}

/* ---- ADD_ONION answer ---- */

int cp_add_onion_reply_parse(const struct cp_reply *r, struct cp_add_onion_reply *out, char *err,
                             size_t errlen)
{
    size_t i, j;

    memset(out, 0, sizeof(*out));
    if (r == NULL || r->n_lines == 0 || r->lines == NULL) {
        cp_seterr(err, errlen, "ADD_ONION reply: empty reply");
        return -1;
    }
    if (r->is_event || !cp_reply_is_ok(r)) {
        cp_seterr(err, errlen, "ADD_ONION reply: status %d: %.80s", r->status, cp_reply_message(r));
        return -1;
    }
    /* "250-ServiceID=" ServiceID, ["250-PrivateKey=" KeyType ":" KeyBlob], *("250-ClientAuth..."), "250 OK" */
    for (i = 0; i < r->n_lines; i++) {
        const char *t = r->lines[i].text;

        if (strncmp(t, "ServiceID=", 10) == 0) {
            const char *id = t + 10;

            if (out->service_id != NULL) {
                cp_seterr(err, errlen, "ADD_ONION reply: line %zu: ServiceID given twice", i + 1);
                goto fail;
            }
            for (j = 0; id[j] != '\0'; j++) {
                if (!((id[j] >= 'a' && id[j] <= 'z') || (id[j] >= '2' && id[j] <= '7')))
                    break;
            }
            if (j != CP_EV_ONION_LEN || id[j] != '\0') {
                cp_seterr(err, errlen, "ADD_ONION reply: line %zu: ServiceID must be %d base32 characters a-z2-7",
                       i + 1, CP_EV_ONION_LEN);
                goto fail;
            }
            if (ev_dup(id, &out->service_id, "ADD_ONION reply: ServiceID", err, errlen) < 0)
                goto fail;
        } else if (strncmp(t, "PrivateKey=", 11) == 0) {
            const char *k = t + 11, *colon = strchr(k, ':');

            if (out->private_key != NULL) {
                cp_seterr(err, errlen, "ADD_ONION reply: line %zu: PrivateKey given twice", i + 1);
                goto fail;
            }
            /* Never quote the key in a message. */
            if (colon == NULL || colon == k || colon[1] == '\0' || strchr(k, ' ') != NULL) {
                cp_seterr(err, errlen, "ADD_ONION reply: line %zu: PrivateKey must be KeyType:KeyBlob", i + 1);
                goto fail;
            }
            if (ev_dup(k, &out->private_key, "ADD_ONION reply: PrivateKey", err, errlen) < 0)
                goto fail;
        }
    }
    if (out->service_id == NULL) {
        cp_seterr(err, errlen, "ADD_ONION reply: ServiceID missing");
        goto fail;
    }
    return 0;
fail:
    cp_add_onion_reply_clear(out);
    return -1;
}

void cp_add_onion_reply_clear(struct cp_add_onion_reply *a)
{
    if (a == NULL)
        return;
    free(a->service_id);
    ev_str_free(a->private_key);
    memset(a, 0, sizeof(*a));
}
