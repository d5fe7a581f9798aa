/* cp_event.h — typed decoders for the asynchronous events and replies controllers of onion services need:
 * CIRC (4.1.1), HS_DESC (4.1.25), HS_DESC_CONTENT (4.1.26), STATUS_CLIENT/STATUS_GENERAL/STATUS_SERVER
 * (4.1.10, bootstrap progress), CONF_CHANGED (4.1.18), SIGNAL (4.1.19), GETINFO replies (3.9) and
 * ADD_ONION replies (3.27).
 *
 * Decoders take a parsed struct cp_reply (cp_reply.h) and fill a caller-owned struct; *_clear() frees what
 * it holds. Unknown keywords and future fields are ignored, as the spec requires; a missing mandatory
 * field is an error naming the field. Does no I/O, never logs. */
#ifndef CP_EVENT_H
#define CP_EVENT_H

#include <stdbool.h>
#include <stddef.h>

#include "controlproto/cp_kv.h"
#include "controlproto/cp_reply.h"

/* The event's name ("CIRC", "HS_DESC", ...): the first word of its first line. Writes at most
 * `len` - 1 characters into `buf`; returns buf, or "" for a non-event. */
const char *cp_event_name(const struct cp_reply *r, char *buf, size_t len);

enum cp_circ_status {
    CP_CIRC_LAUNCHED,
    CP_CIRC_BUILT,
    CP_CIRC_GUARD_WAIT,
    CP_CIRC_EXTENDED,
    CP_CIRC_FAILED,
    CP_CIRC_CLOSED,
    CP_CIRC_UNKNOWN /* a status this library does not know; the event is still decoded */
};
const char *cp_circ_status_str(enum cp_circ_status s);

/* BUILD_FLAGS bits */
#define CP_BUILD_ONEHOP_TUNNEL 0x01u
#define CP_BUILD_IS_INTERNAL 0x02u
#define CP_BUILD_NEED_CAPACITY 0x04u
#define CP_BUILD_NEED_UPTIME 0x08u

struct cp_hop {
    char fp[41];   /* 40 uppercase hex digits, "" if the hop was given by nickname only */
    char nick[20]; /* up to 19 characters, "" if absent */
};

#define CP_CIRC_ID_MAX 4294967295UL /* tor's circuit ids are uint32_t */

struct cp_event_circ {
    unsigned long id;          /* 0-CP_CIRC_ID_MAX */
    enum cp_circ_status status;
    size_t n_hops;
    struct cp_hop *hops;
    unsigned build_flags;      /* CP_BUILD_* */
    char *purpose;             /* e.g. "HS_SERVICE_INTRO"; NULL if absent */
    char *hs_state;            /* e.g. "HSSI_CONNECTING"; NULL if absent */
    char *rend_query;          /* onion address without ".onion"; NULL if absent */
    char *time_created;        /* NULL if absent */
    char *reason;              /* NULL if absent */
    char *remote_reason;       /* NULL if absent */
};

int cp_event_circ_parse(const struct cp_reply *r, struct cp_event_circ *out, char *err, size_t errlen);
/* One line of GETINFO circuit-status's data block (control-spec 3.9: the CIRC event's fields without
 * "650 CIRC"), into the same struct. Return 0, or -1 naming what was wrong (nothing to clear then). */
int cp_circ_status_line_parse(const char *line, struct cp_event_circ *out, char *err, size_t errlen);
void cp_event_circ_clear(struct cp_event_circ *c);

enum cp_hs_desc_action {
    CP_HS_DESC_REQUESTED,
    CP_HS_DESC_UPLOAD,
    CP_HS_DESC_RECEIVED,
    CP_HS_DESC_UPLOADED,
    CP_HS_DESC_IGNORE,
    CP_HS_DESC_FAILED,
    CP_HS_DESC_CREATED,
    CP_HS_DESC_UNKNOWN
};
const char *cp_hs_desc_action_str(enum cp_hs_desc_action a);

struct cp_event_hs_desc {
    enum cp_hs_desc_action action;
    char *address;       /* without ".onion", or "UNKNOWN" */
    char *auth_type;     /* NO_AUTH, BASIC_AUTH, STEALTH_AUTH, UNKNOWN */
    char hsdir_fp[41];   /* "" when the HSDir field is UNKNOWN or absent */
    char hsdir_nick[20];
    char *desc_id;       /* NULL if absent */
    char *hsdir_index;   /* HSDIR_INDEX=, NULL if absent */
    char *reason;        /* REASON=, NULL if absent */
    char *replica;       /* REPLICA=, NULL if absent */
};

int cp_event_hs_desc_parse(const struct cp_reply *r, struct cp_event_hs_desc *out, char *err,
                           size_t errlen);
void cp_event_hs_desc_clear(struct cp_event_hs_desc *e);

/* Is `e` a FAILED answer to a descriptor fetch (HSFETCH, or a client's own), not to an upload? Both come as
 * "HS_DESC FAILED"; control-spec 4.1.25 gives fetches the reasons NOT_FOUND, QUERY_REJECTED, BAD_DESC,
 * QUERY_NO_HSDIR and QUERY_RATE_LIMITED, and uploads UPLOAD_REJECTED. Pure. */
bool cp_event_hs_desc_failed_fetch(const struct cp_event_hs_desc *e);

struct cp_event_hs_desc_content {
    char *address;
    char *desc_id;
    char hsdir_fp[41];
    char hsdir_nick[20];
    char *body;        /* the descriptor text (may be empty when the fetch failed) */
    size_t body_len;
};

int cp_event_hs_desc_content_parse(const struct cp_reply *r, struct cp_event_hs_desc_content *out,
                                   char *err, size_t errlen);
void cp_event_hs_desc_content_clear(struct cp_event_hs_desc_content *e);

/* STATUS_GENERAL / STATUS_CLIENT / STATUS_SERVER: "650 STATUS_CLIENT NOTICE BOOTSTRAP PROGRESS=85 ..." */
struct cp_event_status {
    char *type;       /* "STATUS_CLIENT" ... */
    char *severity;   /* "NOTICE", "WARN", "ERR" */
    char *action;     /* "BOOTSTRAP", "CIRCUIT_ESTABLISHED", ... */
    struct cp_args args; /* the remaining arguments */
    int progress;     /* BOOTSTRAP: PROGRESS=, else -1 */
    const char *tag;     /* BOOTSTRAP: TAG= (borrowed from args), else NULL */
    const char *summary; /* BOOTSTRAP: SUMMARY= (borrowed from args), else NULL */
};

int cp_event_status_parse(const struct cp_reply *r, struct cp_event_status *out, char *err,
                          size_t errlen);
/* A BOOTSTRAP PROGRESS= value, as in the event above or GETINFO status/bootstrap-phase (control-spec
 * 4.1.10): decimal 0-100. Return 0 and set *out, or -1 with why in `err`. */
int cp_bootstrap_progress_parse(const char *s, int *out, char *err, size_t errlen);
void cp_event_status_clear(struct cp_event_status *e);

/* GETINFO / GETCONF replies: each "250-key=value", "250 key=value", "250+key=" + data block, and
 * GETCONF's bare "250 key" (value NULL, i.e. default). A final "250 OK" line is not an item. */
struct cp_info {
    size_t n;
    struct cp_kv *items;
};

int cp_info_parse(const struct cp_reply *r, struct cp_info *out, char *err, size_t errlen);
void cp_info_clear(struct cp_info *i);
/* Value of the first item named `key`, or NULL. Borrowed. */
const char *cp_info_get(const struct cp_info *i, const char *key);

/* CONF_CHANGED (4.1.18): "650-CONF_CHANGED", one "650-Key=Value" per changed option line (a bare "650-Key":
 * reset to its default), "650 OK". Fills `out` with the options in order; values are verbatim (tor does
 * not quote them). tor 0.4.9 sends it for a SETCONF that changed something (also our own) and for a
 * reload (SIGHUP / SIGNAL RELOAD) that did; a changed HiddenService* group is listed whole, an emptied
 * one as a bare "HiddenServiceOptions". Clear with cp_info_clear. */
int cp_event_conf_changed_parse(const struct cp_reply *r, struct cp_info *out, char *err, size_t errlen);

/* SIGNAL (4.1.19): "650 SIGNAL RELOAD" after tor acted on a signal (from the control port or the kernel).
 * Writes the signal's name ("RELOAD", "NEWNYM" ...) into `name` (at most len - 1 characters). */
int cp_event_signal_parse(const struct cp_reply *r, char *name, size_t len, char *err, size_t errlen);

/* ADD_ONION reply: "250-ServiceID=...", optional "250-PrivateKey=TYPE:BLOB", "250-ClientAuth..." */
struct cp_add_onion_reply {
    char *service_id;
    char *private_key; /* "ED25519-V3:<base64>" or NULL; secret — wiped by _clear */
};

int cp_add_onion_reply_parse(const struct cp_reply *r, struct cp_add_onion_reply *out, char *err,
                             size_t errlen);
void cp_add_onion_reply_clear(struct cp_add_onion_reply *a);

#endif
