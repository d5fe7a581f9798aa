/* descriptor_int.h — the descriptor tracker's state, private to sidecar/publish/descriptor.c,
 * descriptor_hsfetch.c and descriptor_report.c. Nothing else includes it: the rest of onionfront sees
 * the tracker only through descriptor.h.
 *
 * descriptor.c owns this state (it creates, feeds and frees it); descriptor_hsfetch.c and
 * descriptor_report.c read and change it through these structs and the helpers below. descriptor.c
 * calls descriptor_hsfetch.c; both call descriptor_lookup.c, which calls neither. Include
 * sidecar/publish/descriptor.h first (its types are used here; including it from here would make a
 * circle of descriptor.c and this header for make check-layering). */
#ifndef ONIONFRONT_DESCRIPTOR_INT_H
#define ONIONFRONT_DESCRIPTOR_INT_H

#ifndef ONIONFRONT_DESCRIPTOR_H
#error "include sidecar/publish/descriptor.h before sidecar/publish/descriptor_int.h"
#endif

#include <stdbool.h>
#include <stddef.h>

#include "controlproto/cp_event.h"
#include "sidecar/config/config.h"
#include "sidecar/core/pace.h"
#include "sidecar/publish/served.h"

#define DESC_ID_MAX 64      /* base64 blinded key: 43 characters */
#define DESC_FIRST_HSFETCH_S 2.0 /* after a service's first upload round settles */

enum fetch_result { FETCH_WAIT, FETCH_RECEIVED, FETCH_NOT_FOUND, FETCH_FAILED };

struct desc_hsdir {
    char fp[41];
    char nick[20];
    char index[65];             /* HSDIR_INDEX (hex), "" if not given */
    enum desc_hsdir_state state;
    char reason[32];            /* FAILED: tor's REASON= or "NO_ANSWER"; else "" */
    double upload_at;           /* the last UPLOAD event or re-post */
    double state_at;            /* the last state change */
    double confirmed_at;        /* the last confirmation (UPLOADED or UPLOAD_REJECTED), 0 = never */
    unsigned long seq;          /* upload order, to match UPLOADED to the earliest pending upload */
    unsigned round;             /* the descriptor's upload round this entry belongs to */
    bool ambiguous;             /* confirmed by an UPLOADED that may have been for the other descriptor */
    bool republishing;          /* the pending upload is our HSPOST */
    bool copied;                /* the latest upload was our HSPOST of a fetched copy, not tor's own */
    unsigned attempts;          /* re-posts since the last success or tor's own upload */
    unsigned long republishes;  /* re-posts in total */
    double next_republish_at;
};

struct desc {
    bool used;
    char id[DESC_ID_MAX];
    double created_at;          /* CREATED event; 0 when first seen in an UPLOAD */
    unsigned round;             /* latest upload round (0: none yet) */
    double round_at;            /* its first UPLOAD event */
    double last_upload_event_at;
    struct desc_hsdir *hsdirs;
    size_t n, cap;
    enum desc_status logged;    /* the last status logged (COMPLETE/INCOMPLETE), to log changes only */
    bool blocked_logged;        /* "not the descriptor clients fetch" was logged for this round */
};

struct fetch_dir {
    char fp[41];
    char nick[20];
    enum fetch_result result;
};

struct desc_fetch {
    bool in_flight;
    bool is_hsfetch;            /* the periodic HSFETCH from every responsible HSDir; else a fetch of a
                                   copy for republishing */
    bool any;                   /* a bare HSFETCH: tor picks the HSDir; accept its REQUESTED events */
    double sent_at;
    unsigned long tag;          /* matches the command's context */
    struct fetch_dir *dirs;
    size_t n, cap;
    char desc_id[DESC_ID_MAX];  /* from REQUESTED: the descriptor clients fetch now */
    double first_at;            /* first RECEIVED */
    char error[128];
};

/* The outcome of the last periodic HSFETCH ("probe" in logs, JSON and metrics). */
struct hsfetch_result {
    bool valid;
    double at;
    bool ok;
    char desc_id[DESC_ID_MAX];
    int slot;                   /* -1 unknown */
    unsigned asked, served, not_found, failed, no_answer;
    unsigned responsible, responsible_served; /* asked HSDirs responsible for the fetched descriptor */
    double latency;             /* -1: no copy received */
    char error[128];
};

struct desc_service {
    char name[CONFIG_SERVICE_NAME_MAX + 1];
    char address[57];
    struct desc slots[2];       /* 0: current, 1: next (tor's order of CREATED) */
    unsigned long uploads_confirmed;
    double last_confirmed_at;
    unsigned long republishes;
    double last_republish_at;

    struct desc_fetch fetch;
    double next_hsfetch_at;     /* the next periodic HSFETCH; 0: not scheduled */
    bool hsfetch_armed;         /* the first HSFETCH has been scheduled early (or sent) once */
    struct hsfetch_result hsfetch;
    unsigned long hsfetches_ok, hsfetches_failed;
    char client_id[DESC_ID_MAX]; /* descriptor clients fetch, from the last fetch's REQUESTED events */
    double client_id_at;
    double next_source_fetch_at;

    char *body;                 /* a fetched copy of descriptor body_id, for republishing */
    size_t body_len;
    char body_id[DESC_ID_MAX];
    char body_from[41];
    double body_at;

    struct served_copies copies; /* each HSDir's latest answer to a fetch; pruned to those asked by an hsfetch */
    struct served_ident own;    /* tor's own current descriptor (read_own); cleared by a new tor */
    unsigned hsfetch_round[2];  /* read_own: the last settled round of each slot an HSFETCH followed */
};

/* Context of one command in flight; orphaned (t = NULL) when the tracker is freed first. */
struct desc_cmd {
    struct descriptor_tracker *t;
    struct desc_cmd *prev, *next;
    unsigned long tag;          /* fetch: the fetch's tag */
    unsigned gen;               /* the connection generation it was sent on */
    char address[57];
    char fp[41];                /* post: the HSDir */
    char desc_id[DESC_ID_MAX];  /* post: the descriptor */
};

struct descriptor_tracker {
    struct event_base *base;
    struct event *tick_ev;
    struct probe_conf conf;     /* hsfetch_interval, republish_deadline (the struct also holds the
                                   end-to-end probe's fields, unused here) */
    struct desc_service **svcs;
    size_t n;
    struct cp_conn *conn;
    bool online;
    bool read_own;              /* descriptor_tracker_set_read_own */
    double attached_at;
    unsigned gen;
    unsigned long seq;
    unsigned long tags;
    descriptor_clock_fn clock;      /* monotonic: every time kept here (all `*_at` fields, `now`) */
    descriptor_clock_fn wall_clock; /* CLOCK_REALTIME: only to show those times as dates (json_time) */
    void *clock_arg;
    descriptor_send_fn send;
    void *send_arg;
    struct desc_cmd *cmds;      /* commands in flight */
    struct pace pace;           /* the spread of hsfetch starts (pace.h) */
};

/* ---- descriptor_lookup.c: lookups and a descriptor's status ---------------------------------------- */

/* How many HSDirs of one descriptor's latest upload round are in each state. */
struct desc_tally {
    unsigned total, holding, pending, failed;
};

/* "current", "next" or "unknown": a slot's name in logs and JSON. */
const char *desc_slot_str(int slot);
/* The tracker's monotonic clock now. */
double desc_now(const struct descriptor_tracker *t);
/* The tracked service with this address, or NULL. */
struct desc_service *desc_svc_find(const struct descriptor_tracker *t, const char *address);
/* The slot (0, 1) holding descriptor `id`, or -1. */
int desc_slot_of_id(const struct desc_service *s, const char *id);
/* The entry for `fp` in `d`, whatever its round, or NULL. */
struct desc_hsdir *desc_hsdir_find(struct desc *d, const char *fp);
/* The entry for `fp` in the latest upload round of `d`, or NULL. */
struct desc_hsdir *desc_hsdir_current(struct desc *d, const char *fp);
/* True if the HSDir holds the descriptor (confirmed or present). */
bool desc_hsdir_holds(const struct desc_hsdir *h);
/* The slot whose descriptor clients fetch: the one the last fetch requested, else current, else next;
 * -1 if none. */
int desc_target_slot(const struct desc_service *s);
/* The HSDirs of the latest upload round of `d` by their state (none for an unused slot). */
struct desc_tally desc_count(const struct desc *d);
/* A descriptor's overall state from its latest upload round. */
enum desc_status desc_status_of(const struct desc *d);
/* Log a descriptor's status when it settles, and schedule the service's first HSFETCH then. */
void desc_status_changed(struct desc_service *s, int slot, double now);

/* ---- descriptor_hsfetch.c: fetches of our own descriptor and re-posts ------------------------------- */

/* Forget the fetch in flight (its directory list is kept for reuse). */
void hsfetch_reset(struct desc_fetch *f);
/* Is this HS_DESC FAILED the answer to our fetch rather than to an upload? */
bool hsfetch_claims(const struct desc_service *s, const struct cp_event_hs_desc *e);
/* Feed an HS_DESC REQUESTED, RECEIVED or (claimed) FAILED event to the fetch in flight. */
void hsfetch_event(struct descriptor_tracker *t, struct desc_service *s, const struct cp_event_hs_desc *e,
                   double now);
/* descriptor_tick's fetch part at `now`: fetch timeouts, the paced HSFETCH schedule, republishing. */
void hsfetch_tick(struct descriptor_tracker *t, double now);

#endif
