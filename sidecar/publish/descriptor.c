/* descriptor.c — descriptor publication tracking, the fetch probe and republishing (see descriptor.h).
 *
 * Owns per-service descriptor state, the HSFETCH/HSPOST commands it sends and its one-second timer. Does
 * not own the control connection (tor.c), the services (service.c) or the status socket (status.c, which
 * calls descriptor_*_to_json and descriptor_metrics). */
#include "sidecar/publish/descriptor.h"

#include <event2/event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_event.h"
#include "controlproto/cp_reply.h"
#include "sidecar/core/clock.h"
#include "sidecar/identity/keys.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/publish/served.h"

#define DESC_ID_MAX 64      /* base64 blinded key: 43 characters */
#define DESC_ROUND_GAP_S 2.0 /* tor sends one round's UPLOAD events in one burst */
#define DESC_FIRST_PROBE_S 2.0 /* after a service's first upload round settles */
#define DESC_BARE_PROBE_S 120.0 /* no descriptor seen this long after attaching: let tor pick an HSDir */
#define DESC_SOURCES 3 /* HSDirs asked at once for a copy to republish: the first answer is used */

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
    bool is_probe;              /* else a fetch of a copy for republishing */
    bool any;                   /* a bare HSFETCH: tor picks the HSDir; accept its REQUESTED events */
    double sent_at;
    unsigned long tag;          /* matches the command's context */
    struct fetch_dir *dirs;
    size_t n, cap;
    char desc_id[DESC_ID_MAX];  /* from REQUESTED: the descriptor clients fetch now */
    double first_at;            /* first RECEIVED */
    char error[128];
};

struct probe_result {
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
    double next_probe_at;       /* 0: not scheduled */
    bool probed;                /* a probe has been scheduled early once */
    struct probe_result probe;
    unsigned long probes_ok, probes_failed;
    char client_id[DESC_ID_MAX]; /* descriptor clients fetch, from the last fetch's REQUESTED events */
    double client_id_at;
    double next_source_fetch_at;

    char *body;                 /* a fetched copy of descriptor body_id, for republishing */
    size_t body_len;
    char body_id[DESC_ID_MAX];
    char body_from[41];
    double body_at;

    struct served_copies copies; /* each HSDir's latest answer to a fetch; pruned to those asked by a probe */
    struct served_ident own;    /* tor's own current descriptor (read_own); cleared by a new tor */
    unsigned probed_round[2];   /* read_own: the last settled round of each slot a probe followed */
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
    struct probe_conf probe;
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
};

const char *desc_hsdir_state_str(enum desc_hsdir_state s)
{
    switch (s) {
    case DESC_HSDIR_PENDING:
        return "pending";
    case DESC_HSDIR_CONFIRMED:
        return "confirmed";
    case DESC_HSDIR_FAILED:
        return "failed";
    case DESC_HSDIR_PRESENT:
        return "present";
    }
    return "unknown";
}

const char *desc_status_str(enum desc_status s)
{
    switch (s) {
    case DESC_STATUS_NONE:
        return "none";
    case DESC_STATUS_UPLOADING:
        return "uploading";
    case DESC_STATUS_COMPLETE:
        return "complete";
    case DESC_STATUS_INCOMPLETE:
        return "incomplete";
    }
    return "unknown";
}

static const char *slot_str(int slot)
{
    return slot == 0 ? "current" : slot == 1 ? "next" : "unknown";
}

/* Deadlines, backoffs, the probe schedule and ages: on the monotonic clock, never the wall clock (its
 * readings are past 0, which the `*_at` fields use for "never", once the system has run a moment). */
static double desc_mono_clock(void *arg)
{
    (void)arg;
    return (double)clock_now_ms() / 1e3;
}

/* The wall clock: only for dates shown to operators (json_time), where a date is the point. */
static double desc_wall_clock(void *arg)
{
    struct timespec ts;
    (void)arg;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double desc_now(const struct descriptor_tracker *t)
{
    return t->clock(t->clock_arg);
}

static int desc_conn_send(void *arg, const char *cmd, cp_conn_reply_cb cb, void *cb_arg)
{
    struct descriptor_tracker *t = arg;
    char err[256];
    if (!t->conn)
        return -1;
    if (cp_conn_send(t->conn, cmd, cb, cb_arg, err, sizeof(err)) < 0) {
        log_debug("descriptor: cannot send a command: %s", err);
        return -1;
    }
    return 0;
}

/* ---- lookups ---------------------------------------------------------------------------------------- */

static struct desc_service *svc_find(const struct descriptor_tracker *t, const char *address)
{
    if (!address)
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (onion_address_equal(t->svcs[i]->address, address))
            return t->svcs[i];
    return NULL;
}

static int slot_of_id(const struct desc_service *s, const char *id)
{
    for (int i = 0; i < 2; i++)
        if (s->slots[i].used && id && strcmp(s->slots[i].id, id) == 0)
            return i;
    return -1;
}

static struct desc_hsdir *hsdir_find(struct desc *d, const char *fp)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->hsdirs[i].fp, fp) == 0)
            return &d->hsdirs[i];
    return NULL;
}

/* The entry for `fp` in the latest upload round of `d`, or NULL. */
static struct desc_hsdir *hsdir_current(struct desc *d, const char *fp)
{
    struct desc_hsdir *h = d->used ? hsdir_find(d, fp) : NULL;
    return h && h->round == d->round ? h : NULL;
}

static bool hsdir_holds(const struct desc_hsdir *h)
{
    return h->state == DESC_HSDIR_CONFIRMED || h->state == DESC_HSDIR_PRESENT;
}

/* The slot whose descriptor clients fetch: the one the last fetch requested, else current, else next. */
static int svc_target_slot(const struct desc_service *s)
{
    int i = s->client_id[0] ? slot_of_id(s, s->client_id) : -1;
    if (i >= 0)
        return i;
    return s->slots[0].used ? 0 : s->slots[1].used ? 1 : -1;
}

static void desc_clear(struct desc *d)
{
    free(d->hsdirs);
    memset(d, 0, sizeof(*d));
}

static void desc_init(struct desc *d, const char *id, double created_at)
{
    desc_clear(d);
    d->used = true;
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->created_at = created_at;
}

/* ---- status and logging ------------------------------------------------------------------------------ */

struct desc_tally {
    unsigned total, holding, pending, failed;
};

static struct desc_tally desc_count(const struct desc *d)
{
    struct desc_tally c = {0};
    for (size_t i = 0; d->used && i < d->n; i++) {
        const struct desc_hsdir *h = &d->hsdirs[i];
        if (h->round != d->round)
            continue;
        c.total++;
        if (hsdir_holds(h))
            c.holding++;
        else if (h->state == DESC_HSDIR_FAILED)
            c.failed++;
        else
            c.pending++;
    }
    return c;
}

static enum desc_status desc_status_of(const struct desc *d)
{
    struct desc_tally c = desc_count(d);
    if (c.total == 0)
        return DESC_STATUS_NONE;
    if (c.failed)
        return DESC_STATUS_INCOMPLETE;
    if (c.pending)
        return DESC_STATUS_UPLOADING;
    return DESC_STATUS_COMPLETE;
}

/* Log a descriptor's status when it settles into complete or incomplete (not every step between), and
 * schedule the first probe of the service once its first round has settled. */
static void desc_status_changed(struct desc_service *s, int slot, double now)
{
    struct desc *d = &s->slots[slot];
    enum desc_status st = desc_status_of(d);
    if (st != DESC_STATUS_COMPLETE && st != DESC_STATUS_INCOMPLETE)
        return;
    if (!s->probed && s->next_probe_at > 0 && s->next_probe_at > now + DESC_FIRST_PROBE_S) {
        s->next_probe_at = now + DESC_FIRST_PROBE_S;
        s->probed = true;
    }
    if (st == d->logged)
        return;
    d->logged = st;
    struct desc_tally c = desc_count(d);
    if (st == DESC_STATUS_COMPLETE) {
        log_info_f(LOG_SERVICE(s->name), "service %s: descriptor %.8s (%s) is on all %u responsible HSDirs", s->name,
                   d->id, slot_str(slot), c.total);
        return;
    }
    char list[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < d->n && len < sizeof(list) - 1; i++) {
        const struct desc_hsdir *h = &d->hsdirs[i];
        if (h->round != d->round || h->state != DESC_HSDIR_FAILED)
            continue;
        int w = snprintf(list + len, sizeof(list) - len, "%s$%s~%s (%s)", len ? ", " : "", h->fp, h->nick,
                         h->reason);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    log_notice_f(LOG_SERVICE(s->name), "service %s: descriptor %.8s (%s) is on %u of %u responsible HSDirs; failed: %s",
                 s->name, d->id, slot_str(slot), c.holding, c.total, list);
}

/* ---- HS_DESC: descriptors and uploads ---------------------------------------------------------------- */

/* A descriptor id first seen (CREATED, or an UPLOAD for an id we never saw created): the empty slot, or
 * a rotation (current dropped, next becomes current, the new one is next). Returns the slot. */
static int desc_place(struct desc_service *s, const char *id, double created_at)
{
    if (!s->slots[0].used) {
        desc_init(&s->slots[0], id, created_at);
        return 0;
    }
    if (!s->slots[1].used) {
        desc_init(&s->slots[1], id, created_at);
        return 1;
    }
    log_info_f(LOG_SERVICE(s->name), "service %s: descriptor rotation: %.8s is now current, %.8s replaces it as next",
               s->name, s->slots[1].id, id);
    desc_clear(&s->slots[0]);
    s->slots[0] = s->slots[1];
    memset(&s->slots[1], 0, sizeof(s->slots[1]));
    desc_init(&s->slots[1], id, created_at);
    return 1;
}

static void desc_created(struct desc_service *s, const char *id, double now)
{
    int slot = slot_of_id(s, id);
    if (slot >= 0) {
        /* The same blinded key again (a restarted tor in the same time period): a new instance of that
         * descriptor, uploaded afresh. */
        desc_init(&s->slots[slot], id, now);
        log_info_f(LOG_SERVICE(s->name), "service %s: descriptor %.8s (%s) built again", s->name, id, slot_str(slot));
        return;
    }
    slot = desc_place(s, id, now);
    log_info_f(LOG_SERVICE(s->name), "service %s: new descriptor %.8s (%s)", s->name, id, slot_str(slot));
}

static struct desc_hsdir *desc_add_hsdir(struct desc *d, const char *fp)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        struct desc_hsdir *h = realloc(d->hsdirs, cap * sizeof(*h));
        if (!h)
            return NULL;
        d->hsdirs = h;
        d->cap = cap;
    }
    struct desc_hsdir *h = &d->hsdirs[d->n++];
    memset(h, 0, sizeof(*h));
    snprintf(h->fp, sizeof(h->fp), "%s", fp);
    return h;
}

static void desc_upload(struct descriptor_tracker *t, struct desc_service *s, const struct cp_event_hs_desc *e,
                        double now)
{
    if (!e->desc_id || !e->hsdir_fp[0])
        return;
    int slot = slot_of_id(s, e->desc_id);
    if (slot < 0)
        slot = desc_place(s, e->desc_id, 0);
    struct desc *d = &s->slots[slot];
    if (d->round == 0 || now - d->last_upload_event_at >= DESC_ROUND_GAP_S) {
        /* A new round: its UPLOAD events name the responsible HSDirs now. Entries two rounds old go. */
        size_t k = 0;
        for (size_t i = 0; i < d->n; i++)
            if (d->hsdirs[i].round == d->round)
                d->hsdirs[k++] = d->hsdirs[i];
        d->n = k;
        d->round++;
        d->round_at = now;
        d->blocked_logged = false;
    }
    d->last_upload_event_at = now;
    struct desc_hsdir *h = hsdir_find(d, e->hsdir_fp);
    if (!h && !(h = desc_add_hsdir(d, e->hsdir_fp))) {
        log_error("descriptor: out of memory");
        return;
    }
    snprintf(h->nick, sizeof(h->nick), "%s", e->hsdir_nick);
    snprintf(h->index, sizeof(h->index), "%s", e->hsdir_index ? e->hsdir_index : "");
    h->round = d->round;
    h->state = DESC_HSDIR_PENDING;
    h->reason[0] = '\0';
    h->upload_at = h->state_at = now;
    h->seq = ++t->seq;
    h->ambiguous = h->republishing = h->copied = false;
    h->attempts = 0;
    h->next_republish_at = 0;
    log_debug_f(LOG_SERVICE(s->name), "service %s: descriptor %.8s (%s) uploading to HSDir $%s~%s", s->name, d->id,
                slot_str(slot), h->fp, h->nick);
}

static void hsdir_confirm(struct desc_service *s, int slot, struct desc_hsdir *h, double at, bool ambiguous)
{
    if (h->republishing)
        log_info_f(LOG_SERVICE(s->name), "service %s: HSDir $%s~%s confirmed the re-posted descriptor %.8s (%s)",
                   s->name, h->fp, h->nick, s->slots[slot].id, slot_str(slot));
    h->state = DESC_HSDIR_CONFIRMED;
    h->reason[0] = '\0';
    h->state_at = h->confirmed_at = at;
    h->ambiguous = ambiguous;
    h->republishing = false;
    h->attempts = 0;
    h->next_republish_at = 0;
    s->uploads_confirmed++;
    if (at > s->last_confirmed_at)
        s->last_confirmed_at = at;
}

/* UPLOADED carries no descriptor id: it confirms the earliest pending upload to that HSDir; if the HSDir
 * is pending for both descriptors the match is remembered as ambiguous and corrected if a FAILED for the
 * chosen descriptor turns up later. A late answer after NO_ANSWER still counts. */
static void desc_uploaded(struct desc_service *s, const struct cp_event_hs_desc *e, double now)
{
    struct desc_hsdir *best = NULL;
    int best_slot = -1, pending = 0;
    for (int pass = 0; pass < 2 && !best; pass++) {
        for (int i = 0; i < 2; i++) {
            struct desc_hsdir *h = hsdir_current(&s->slots[i], e->hsdir_fp);
            if (!h)
                continue;
            bool cand = pass == 0 ? h->state == DESC_HSDIR_PENDING
                                  : h->state == DESC_HSDIR_FAILED && strcmp(h->reason, "NO_ANSWER") == 0;
            if (!cand)
                continue;
            pending += pass == 0;
            if (!best || h->seq < best->seq) {
                best = h;
                best_slot = i;
            }
        }
    }
    if (!best) {
        log_debug_f(LOG_SERVICE(s->name),
                    "service %s: UPLOADED from HSDir $%s~%s matches no pending upload (duplicate)", s->name,
                    e->hsdir_fp, e->hsdir_nick);
        return;
    }
    if (e->hsdir_nick[0])
        snprintf(best->nick, sizeof(best->nick), "%s", e->hsdir_nick);
    hsdir_confirm(s, best_slot, best, now, pending > 1);
    log_debug_f(LOG_SERVICE(s->name), "service %s: HSDir $%s~%s confirmed descriptor %.8s (%s)%s", s->name, best->fp,
                best->nick, s->slots[best_slot].id, slot_str(best_slot),
                pending > 1 ? " (matched to the earlier upload)" : "");
    desc_status_changed(s, best_slot, now);
}

static void desc_upload_failed(struct desc_service *s, const struct cp_event_hs_desc *e, double now)
{
    int slot = e->desc_id ? slot_of_id(s, e->desc_id) : -1;
    struct desc_hsdir *h = slot >= 0 ? hsdir_current(&s->slots[slot], e->hsdir_fp) : NULL;
    if (!h) {
        log_debug_f(LOG_SERVICE(s->name),
                    "service %s: upload result from HSDir $%s for a descriptor it is not responsible for", s->name,
                    e->hsdir_fp);
        return;
    }
    const char *reason = e->reason ? e->reason : "UNKNOWN";
    if (h->state == DESC_HSDIR_CONFIRMED && h->ambiguous) {
        /* The UPLOADED we matched here was for the other descriptor. */
        struct desc_hsdir *o = hsdir_current(&s->slots[1 - slot], e->hsdir_fp);
        if (o && !hsdir_holds(o)) {
            s->uploads_confirmed--; /* counted again by hsdir_confirm */
            hsdir_confirm(s, 1 - slot, o, h->confirmed_at, false);
            h->confirmed_at = 0;
            desc_status_changed(s, 1 - slot, now);
        }
    }
    h->ambiguous = false;
    h->republishing = false;
    h->state_at = now;
    if (strcmp(reason, "UPLOAD_REJECTED") == 0) {
        /* The HSDir refuses a revision it already has (or an older one): it holds the descriptor. */
        h->state = DESC_HSDIR_PRESENT;
        h->reason[0] = '\0';
        h->confirmed_at = now;
        h->attempts = 0;
        h->next_republish_at = 0;
    } else {
        h->state = DESC_HSDIR_FAILED;
        snprintf(h->reason, sizeof(h->reason), "%s", reason);
    }
    log_debug_f(LOG_SERVICE(s->name), "service %s: HSDir $%s~%s: descriptor %.8s (%s) %s (%s)", s->name, h->fp, h->nick,
                s->slots[slot].id, slot_str(slot), desc_hsdir_state_str(h->state), reason);
    desc_status_changed(s, slot, now);
}

/* ---- fetches: the probe and republish sources --------------------------------------------------------- */

static void svc_republish(struct descriptor_tracker *t, struct desc_service *s, double now);

static struct fetch_dir *fetch_dir_find(struct desc_fetch *f, const char *fp)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->dirs[i].fp, fp) == 0)
            return &f->dirs[i];
    return NULL;
}

static struct fetch_dir *fetch_dir_add(struct desc_fetch *f, const char *fp, const char *nick)
{
    struct fetch_dir *d = fetch_dir_find(f, fp);
    if (d)
        return d;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct fetch_dir *n = realloc(f->dirs, cap * sizeof(*n));
        if (!n)
            return NULL;
        f->dirs = n;
        f->cap = cap;
    }
    d = &f->dirs[f->n++];
    memset(d, 0, sizeof(*d));
    snprintf(d->fp, sizeof(d->fp), "%s", fp);
    snprintf(d->nick, sizeof(d->nick), "%s", nick ? nick : "");
    return d;
}

static void fetch_reset(struct desc_fetch *f)
{
    struct fetch_dir *dirs = f->dirs;
    size_t cap = f->cap;
    memset(f, 0, sizeof(*f));
    f->dirs = dirs;
    f->cap = cap;
}

/* A probe's NOT_FOUND for descriptor `desc_id` from HSDir `fp`, which confirmed this round's upload
 * before the probe was sent: it lost the descriptor (a restarted relay keeps its HSDir cache in memory
 * only) and tor will not upload again before its next round. Mark it failed, so it is republished like
 * a failed upload. Returns true if it was marked. */
static bool probe_mark_lost(struct desc_service *s, const char *desc_id, const char *fp, double now)
{
    int slot = desc_id ? slot_of_id(s, desc_id) : -1;
    struct desc_hsdir *h = slot >= 0 ? hsdir_current(&s->slots[slot], fp) : NULL;
    if (!h || !hsdir_holds(h) || h->confirmed_at >= s->fetch.sent_at)
        return false;
    log_notice_f(LOG_SERVICE(s->name),
                 "service %s: HSDir $%s~%s no longer has descriptor %.8s (%s): the fetch probe got NOT_FOUND", s->name,
                 h->fp, h->nick, s->slots[slot].id, slot_str(slot));
    h->state = DESC_HSDIR_FAILED;
    snprintf(h->reason, sizeof(h->reason), "NOT_FOUND");
    h->state_at = now;
    h->ambiguous = false;
    h->attempts = 0;
    h->next_republish_at = 0;
    desc_status_changed(s, slot, now);
    return true;
}

/* End the fetch in flight (all answered, timed out, or refused with `error`). */
static void fetch_finish(struct desc_service *s, double now, const char *error)
{
    struct desc_fetch *f = &s->fetch;
    if (!f->in_flight)
        return;
    if (f->desc_id[0]) {
        snprintf(s->client_id, sizeof(s->client_id), "%s", f->desc_id);
        s->client_id_at = now;
    }
    if (f->is_probe) {
        struct probe_result p = {.valid = true, .at = now, .slot = -1, .latency = -1};
        snprintf(p.desc_id, sizeof(p.desc_id), "%s", f->desc_id);
        p.slot = f->desc_id[0] ? slot_of_id(s, f->desc_id) : -1;
        p.asked = (unsigned)f->n;
        for (size_t i = 0; i < f->n; i++) {
            if (p.slot >= 0 && hsdir_current(&s->slots[p.slot], f->dirs[i].fp)) {
                p.responsible++;
                p.responsible_served += f->dirs[i].result == FETCH_RECEIVED;
            }
            switch (f->dirs[i].result) {
            case FETCH_RECEIVED:
                p.served++;
                break;
            case FETCH_NOT_FOUND:
                p.not_found++;
                break;
            case FETCH_FAILED:
                p.failed++;
                break;
            case FETCH_WAIT:
                p.no_answer++;
                break;
            }
        }
        if (f->first_at > 0)
            p.latency = f->first_at - f->sent_at;
        snprintf(p.error, sizeof(p.error), "%s", error ? error : "");
        p.ok = p.served > 0;
        bool changed = !s->probe.valid || s->probe.ok != p.ok;
        s->probe = p;
        if (p.ok)
            s->probes_ok++;
        else
            s->probes_failed++;
        if (changed && p.ok)
            log_info_f(LOG_SERVICE(s->name),
                       "service %s: fetch probe: %u of %u responsible HSDirs serve descriptor %.8s (%s); first "
                       "copy after %.2f s",
                       s->name, p.responsible_served, p.responsible, p.desc_id, slot_str(p.slot), p.latency);
        else if (changed)
            log_notice_f(LOG_SERVICE(s->name),
                         "service %s: fetch probe failed: no HSDir served the descriptor (%u asked: %u not "
                         "found, %u failed, %u no answer%s%s)",
                         s->name, p.asked, p.not_found, p.failed, p.no_answer, error ? "; " : "", error ? error : "");
        else
            log_debug_f(LOG_SERVICE(s->name),
                        "service %s: fetch probe: %u of %u served, %u not found, %u failed, %u no answer", s->name,
                        p.served, p.asked, p.not_found, p.failed, p.no_answer);
    } else if (error) {
        log_debug_f(LOG_SERVICE(s->name), "service %s: fetch for republishing failed: %s", s->name, error);
    }
    fetch_reset(f);
}

static bool fetch_all_answered(const struct desc_fetch *f)
{
    if (f->n == 0)
        return false;
    for (size_t i = 0; i < f->n; i++)
        if (f->dirs[i].result == FETCH_WAIT)
            return false;
    return true;
}

static void desc_cmd_unlink(struct desc_cmd *c)
{
    if (!c->t)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->t->cmds = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* Put `c` on t's list of commands in flight (descriptor_tracker_free turns them into stubs). */
static void desc_cmd_link(struct descriptor_tracker *t, struct desc_cmd *c)
{
    c->t = t;
    c->gen = t->gen;
    c->prev = NULL;
    c->next = t->cmds;
    if (t->cmds)
        t->cmds->prev = c;
    t->cmds = c;
}

static struct desc_cmd *desc_cmd_new(struct descriptor_tracker *t, const struct desc_service *s)
{
    struct desc_cmd *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    snprintf(c->address, sizeof(c->address), "%s", s->address);
    desc_cmd_link(t, c);
    return c;
}

static void desc_fetch_reply_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct desc_cmd *c = arg;
    struct descriptor_tracker *t = c->t;
    (void)conn;
    desc_cmd_unlink(c);
    struct desc_service *s = t && c->gen == t->gen ? svc_find(t, c->address) : NULL;
    if (s && s->fetch.in_flight && s->fetch.tag == c->tag && (!r || !cp_reply_is_ok(r))) {
        char why[160];
        snprintf(why, sizeof(why), "HSFETCH: %s", r ? cp_reply_message(r) : err);
        fetch_finish(s, desc_now(t), why);
    }
    free(c);
}

/* Send HSFETCH for `s` to `servers` (none: tor picks). */
static int fetch_start(struct descriptor_tracker *t, struct desc_service *s, bool is_probe,
                       const char *const *servers, const char *const *nicks, size_t n, double now)
{
    char err[256];
    struct desc_fetch *f = &s->fetch;
    fetch_reset(f);
    for (size_t i = 0; i < n; i++)
        if (!fetch_dir_add(f, servers[i], nicks[i])) {
            fetch_reset(f);
            return -1;
        }
    char *cmd = cp_cmd_hsfetch(s->address, servers, n, err, sizeof(err));
    struct desc_cmd *c = cmd ? desc_cmd_new(t, s) : NULL;
    if (!c) {
        log_error("service %s: cannot build HSFETCH: %s", s->name, cmd ? "out of memory" : err);
        free(cmd);
        fetch_reset(f);
        return -1;
    }
    c->tag = ++t->tags;
    f->in_flight = true;
    f->is_probe = is_probe;
    f->any = n == 0;
    f->sent_at = now;
    f->tag = c->tag;
    if (t->send(t->send_arg, cmd, desc_fetch_reply_cb, c) < 0) {
        desc_cmd_unlink(c);
        free(c);
        free(cmd);
        fetch_reset(f);
        return -1;
    }
    free(cmd);
    log_debug_f(LOG_SERVICE(s->name), "service %s: HSFETCH (%s) from %zu HSDir%s", s->name,
                is_probe ? "probe" : "republish source", n, n == 1 ? "" : "s");
    return 0;
}

static void own_desc_read(struct descriptor_tracker *t, struct desc_service *s);

/* The probe: HSFETCH from every HSDir responsible for either descriptor (tor picks one if none known). */
static void probe_start(struct descriptor_tracker *t, struct desc_service *s, double now)
{
    const char **fps = NULL, **nicks = NULL;
    size_t n = 0, cap = s->slots[0].n + s->slots[1].n;
    if (cap && (!(fps = calloc(cap, sizeof(*fps))) || !(nicks = calloc(cap, sizeof(*nicks))))) {
        free(fps);
        return;
    }
    for (int i = 0; i < 2; i++) {
        struct desc *d = &s->slots[i];
        for (size_t j = 0; d->used && j < d->n; j++) {
            if (d->hsdirs[j].round != d->round)
                continue;
            bool dup = false;
            for (size_t k = 0; k < n && !dup; k++)
                dup = strcmp(fps[k], d->hsdirs[j].fp) == 0;
            if (!dup) {
                fps[n] = d->hsdirs[j].fp;
                nicks[n++] = d->hsdirs[j].nick;
            }
        }
    }
    s->next_probe_at = now + t->probe.hsfetch_interval;
    s->probed = true;
    served_copies_keep(&s->copies, fps, n); /* HSDirs no longer responsible: dropped */
    if (t->read_own)
        own_desc_read(t, s); /* answered before the fetch's copies: commands are answered in order */
    fetch_start(t, s, true, fps, nicks, n, now);
    free(fps);
    free(nicks);
}

/* The descriptor in a reply to GETINFO hs/service/desc/id/<address> (parsed into *info), or NULL. */
static const char *own_desc_body(const struct cp_reply *r, const char *address, struct cp_info *info)
{
    char key[80], perr[256];
    snprintf(key, sizeof(key), "hs/service/desc/id/%s", address);
    return r && cp_reply_is_ok(r) && cp_info_parse(r, info, perr, sizeof(perr)) == 0 ? cp_info_get(info, key) : NULL;
}

/* The answer to GETINFO hs/service/desc/id/<addr> (read_own): tor's own current descriptor. */
static void own_desc_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct desc_cmd *c = arg;
    struct desc_service *s = c->t ? svc_find(c->t, c->address) : NULL;
    char perr[128];
    struct cp_info info = {0};
    (void)conn;
    (void)err;
    desc_cmd_unlink(c);
    const char *body = s ? own_desc_body(r, c->address, &info) : NULL;
    if (s && (!body || served_ident_parse(body, strlen(body), &s->own, perr, sizeof(perr)) < 0))
        s->own.valid = false;
    cp_info_clear(&info);
    free(c);
}

static void own_desc_read(struct descriptor_tracker *t, struct desc_service *s)
{
    char key[80], err[256];
    snprintf(key, sizeof(key), "hs/service/desc/id/%s", s->address);
    const char *k = key;
    char *cmd = cp_cmd_getinfo(&k, 1, err, sizeof(err));
    struct desc_cmd *c = cmd ? desc_cmd_new(t, s) : NULL;
    if (c && t->send(t->send_arg, cmd, own_desc_cb, c) < 0) {
        desc_cmd_unlink(c);
        free(c);
    }
    free(cmd);
}

static bool is_fetch_reason(const char *r)
{
    static const char *const reasons[] = {"NOT_FOUND", "QUERY_REJECTED", "BAD_DESC", "QUERY_NO_HSDIR",
                                          "QUERY_RATE_LIMITED"};
    for (size_t i = 0; r && i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strcmp(r, reasons[i]) == 0)
            return true;
    return false;
}

static void fetch_event(struct descriptor_tracker *t, struct desc_service *s, const struct cp_event_hs_desc *e,
                        double now)
{
    struct desc_fetch *f = &s->fetch;
    if (!f->in_flight)
        return;
    if (e->action == CP_HS_DESC_FAILED && !e->hsdir_fp[0]) {
        /* QUERY_NO_HSDIR / QUERY_RATE_LIMITED name no HSDir: the whole fetch failed. */
        char why[96];
        snprintf(why, sizeof(why), "tor: %s", e->reason ? e->reason : "fetch failed");
        fetch_finish(s, now, why);
        return;
    }
    struct fetch_dir *d = fetch_dir_find(f, e->hsdir_fp);
    if (e->action == CP_HS_DESC_REQUESTED) {
        if (!d && f->any)
            d = fetch_dir_add(f, e->hsdir_fp, e->hsdir_nick);
        if (d && e->desc_id && !f->desc_id[0]) {
            /* tor asks for the descriptor of the client's time period: the one clients fetch now. */
            snprintf(f->desc_id, sizeof(f->desc_id), "%s", e->desc_id);
            snprintf(s->client_id, sizeof(s->client_id), "%s", e->desc_id);
            s->client_id_at = now;
        }
        return;
    }
    if (!d || d->result != FETCH_WAIT)
        return; /* tor's own retries to HSDirs we did not ask, or a second answer */
    if (e->desc_id && !f->desc_id[0])
        snprintf(f->desc_id, sizeof(f->desc_id), "%s", e->desc_id);
    if (e->action == CP_HS_DESC_RECEIVED) {
        d->result = FETCH_RECEIVED;
        if (f->first_at <= 0)
            f->first_at = now;
    } else {
        d->result = e->reason && strcmp(e->reason, "NOT_FOUND") == 0 ? FETCH_NOT_FOUND : FETCH_FAILED;
        if (d->result == FETCH_NOT_FOUND)
            served_copies_note(&s->copies, d->fp, d->nick, e->desc_id, &(struct served_ident){0}, now);
        if (d->result == FETCH_NOT_FOUND && f->is_probe && probe_mark_lost(s, e->desc_id, d->fp, now))
            svc_republish(t, s, now);
    }
    if (fetch_all_answered(f)) {
        fetch_finish(s, now, NULL);
        svc_republish(t, s, now); /* the copy (HS_DESC_CONTENT) follows RECEIVED and triggers it too */
    }
}

/* Is this FAILED the answer to our fetch rather than to an upload? */
static bool fetch_claims(const struct desc_service *s, const struct cp_event_hs_desc *e)
{
    const char *r = e->reason;
    if (r && strcmp(r, "UPLOAD_REJECTED") == 0)
        return false;
    if (s->fetch.in_flight) {
        if (!e->hsdir_fp[0])
            return true;
        for (size_t i = 0; i < s->fetch.n; i++)
            if (strcmp(s->fetch.dirs[i].fp, e->hsdir_fp) == 0 && s->fetch.dirs[i].result == FETCH_WAIT)
                return true;
    }
    return is_fetch_reason(r); /* a stray fetch answer (after a timeout, or another controller's) */
}

/* ---- republishing ------------------------------------------------------------------------------------- */

static double republish_backoff(const struct descriptor_tracker *t, unsigned attempts)
{
    double base = t->probe.republish_deadline;
    double cap = base > DESCRIPTOR_MAX_BACKOFF_S ? base : DESCRIPTOR_MAX_BACKOFF_S;
    double b = base * pow(2.0, attempts > 0 ? attempts - 1 : 0);
    return b > cap ? cap : b;
}

/* The body we hold is this round's descriptor `slot`: fetched after the round started, from an HSDir
 * that confirmed this round's upload (HSDirs refuse older revisions, so it has the newest). */
static bool body_usable(struct desc_service *s, int slot)
{
    struct desc *d = &s->slots[slot];
    if (!s->body || strcmp(s->body_id, d->id) != 0 || s->body_at < d->round_at)
        return false;
    struct desc_hsdir *h = hsdir_current(d, s->body_from);
    return h && hsdir_holds(h) && h->confirmed_at >= d->round_at;
}

static void desc_post_reply_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct desc_cmd *c = arg;
    struct descriptor_tracker *t = c->t;
    (void)conn;
    desc_cmd_unlink(c);
    struct desc_service *s = t ? svc_find(t, c->address) : NULL;
    int slot = s ? slot_of_id(s, c->desc_id) : -1;
    struct desc_hsdir *h = slot >= 0 ? hsdir_current(&s->slots[slot], c->fp) : NULL;
    if (h && h->republishing && (!r || !cp_reply_is_ok(r))) {
        if (r)
            log_notice_f(LOG_SERVICE(s->name), "service %s: tor refused to re-post descriptor %.8s to $%s: %s", s->name,
                         c->desc_id, c->fp, cp_reply_message(r));
        h->republishing = false;
        h->state = DESC_HSDIR_FAILED;
        snprintf(h->reason, sizeof(h->reason), "%s", r ? "HSPOST_REFUSED" : "NO_ANSWER");
        h->state_at = desc_now(t);
    }
    (void)err;
    free(c);
}

static void republish_post(struct descriptor_tracker *t, struct desc_service *s, int slot, struct desc_hsdir *h,
                           double now)
{
    char err[256];
    const char *server = h->fp;
    char *cmd = cp_cmd_hspost(&server, 1, s->address, s->body, s->body_len, err, sizeof(err));
    struct desc_cmd *c = cmd ? desc_cmd_new(t, s) : NULL;
    if (!c) {
        log_error("service %s: cannot build HSPOST: %s", s->name, cmd ? "out of memory" : err);
        free(cmd);
        h->next_republish_at = now + republish_backoff(t, h->attempts + 1);
        return;
    }
    snprintf(c->fp, sizeof(c->fp), "%s", h->fp);
    snprintf(c->desc_id, sizeof(c->desc_id), "%s", s->slots[slot].id);
    h->attempts++;
    h->next_republish_at = now + republish_backoff(t, h->attempts);
    if (t->send(t->send_arg, cmd, desc_post_reply_cb, c) < 0) {
        desc_cmd_unlink(c);
        free(c);
        free(cmd);
        return;
    }
    free(cmd);
    log_info_f(LOG_SERVICE(s->name), "service %s: re-posting descriptor %.8s (%s) to HSDir $%s~%s (%s; attempt %u)",
               s->name, s->slots[slot].id, slot_str(slot), h->fp, h->nick, h->reason[0] ? h->reason : "no answer",
               h->attempts);
    h->state = DESC_HSDIR_PENDING;
    h->republishing = h->copied = true;
    h->upload_at = h->state_at = now;
    h->seq = ++t->seq;
    h->republishes++;
    s->republishes++;
    s->last_republish_at = now;
}

/* The answer to the repair ladder's HSPOST of the whole descriptor (descriptor_repost). */
static void repost_reply_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct desc_cmd *c = arg;
    (void)conn;
    desc_cmd_unlink(c);
    if (!r || !cp_reply_is_ok(r))
        log_notice("service %.8s...: tor refused to re-post the descriptor: %s", c->address, r ? cp_reply_message(r) : err);
    free(c);
}

/* The service's own current descriptor from tor (GETINFO hs/service/desc/id/<addr>): post it to every
 * responsible HSDir (one +HSPOST HSADDRESS=<addr>; HSDirs that hold it answer UPLOAD_REJECTED). */
static void repost_desc_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct desc_cmd *c = arg;
    struct descriptor_tracker *t = c->t;
    char perr[256];
    struct cp_info info = {0};
    (void)conn;
    desc_cmd_unlink(c);
    const char *body = own_desc_body(r, c->address, &info);
    char *cmd = body && t ? cp_cmd_hspost(NULL, 0, c->address, body, strlen(body), perr, sizeof(perr)) : NULL;
    if (!cmd) {
        log_notice("service %.8s...: cannot re-post the descriptor: %s", c->address,
                   !r ? err : !cp_reply_is_ok(r) ? cp_reply_message(r) : "tor has no current descriptor for it");
    } else if (t->send(t->send_arg, cmd, repost_reply_cb, c) == 0) {
        desc_cmd_link(t, c);
        cp_info_clear(&info);
        free(cmd);
        return; /* c travels on with the HSPOST */
    }
    cp_info_clear(&info);
    free(cmd);
    free(c);
}

int descriptor_repost(struct descriptor_tracker *t, const char *address)
{
    struct desc_service *s = svc_find(t, address);
    char key[80], err[256];
    if (!s || !t->online)
        return -1;
    snprintf(key, sizeof(key), "hs/service/desc/id/%s", s->address);
    const char *k = key;
    char *cmd = cp_cmd_getinfo(&k, 1, err, sizeof(err));
    struct desc_cmd *c = cmd ? desc_cmd_new(t, s) : NULL;
    if (!c || t->send(t->send_arg, cmd, repost_desc_cb, c) < 0) {
        if (c) {
            desc_cmd_unlink(c);
            free(c);
        }
        free(cmd);
        return -1;
    }
    free(cmd);
    return 0;
}

/* Re-post the descriptor clients fetch to its responsible HSDirs that lack it, or fetch a copy first. */
static void svc_republish(struct descriptor_tracker *t, struct desc_service *s, double now)
{
    if (!t->online)
        return;
    for (int slot = 0; slot < 2; slot++) {
        struct desc *d = &s->slots[slot];
        struct desc_hsdir *due[64];
        size_t n_due = 0;
        for (size_t i = 0; d->used && i < d->n && n_due < sizeof(due) / sizeof(due[0]); i++) {
            struct desc_hsdir *h = &d->hsdirs[i];
            if (h->round == d->round && h->state == DESC_HSDIR_FAILED && now >= h->next_republish_at)
                due[n_due++] = h;
        }
        if (n_due == 0)
            continue;
        /* HSFETCH asks for the descriptor of the client's current time period only. */
        bool recent = s->client_id[0] &&
                      now - s->client_id_at <= (double)t->probe.republish_deadline + t->probe.hsfetch_interval;
        if (recent && strcmp(s->client_id, d->id) != 0) {
            if (!d->blocked_logged) {
                d->blocked_logged = true;
                log_info_f(LOG_SERVICE(s->name),
                           "service %s: %zu HSDir%s lack descriptor %.8s (%s), which clients do not fetch now; "
                           "tor cannot fetch it for republishing until the time period moves on",
                           s->name, n_due, n_due == 1 ? "" : "s", d->id, slot_str(slot));
            }
            continue;
        }
        if (body_usable(s, slot)) {
            for (size_t i = 0; i < n_due; i++)
                republish_post(t, s, slot, due[i], now);
            continue;
        }
        if (s->fetch.in_flight || now < s->next_source_fetch_at)
            continue;
        /* A copy from the HSDirs that confirmed this round most recently; the first answer is used. */
        const char *fps[DESC_SOURCES], *nicks[DESC_SOURCES];
        size_t n_src = 0;
        double last = 0;
        while (n_src < DESC_SOURCES) {
            struct desc_hsdir *src = NULL;
            for (size_t i = 0; i < d->n; i++) {
                struct desc_hsdir *h = &d->hsdirs[i];
                if (h->round != d->round || !hsdir_holds(h) || h->confirmed_at < d->round_at ||
                    (n_src && h->confirmed_at > last) || (src && h->confirmed_at <= src->confirmed_at))
                    continue;
                bool taken = false;
                for (size_t k = 0; k < n_src && !taken; k++)
                    taken = fps[k] == h->fp;
                if (!taken)
                    src = h;
            }
            if (!src)
                break;
            fps[n_src] = src->fp;
            nicks[n_src++] = src->nick;
            last = src->confirmed_at;
        }
        s->next_source_fetch_at = now + t->probe.republish_deadline;
        if (n_src == 0) {
            log_debug_f(LOG_SERVICE(s->name), "service %s: no HSDir holds descriptor %.8s to fetch it from", s->name,
                        d->id);
            continue;
        }
        fetch_start(t, s, false, fps, nicks, n_src, now);
    }
}

/* ---- events ------------------------------------------------------------------------------------------- */

void descriptor_on_hs_desc(struct descriptor_tracker *t, const struct cp_event_hs_desc *e, double now)
{
    struct desc_service *s = svc_find(t, e->address);
    if (!s)
        return;
    switch (e->action) {
    case CP_HS_DESC_CREATED:
        if (e->desc_id)
            desc_created(s, e->desc_id, now);
        break;
    case CP_HS_DESC_UPLOAD:
        desc_upload(t, s, e, now);
        break;
    case CP_HS_DESC_UPLOADED:
        if (e->hsdir_fp[0])
            desc_uploaded(s, e, now);
        break;
    case CP_HS_DESC_FAILED:
        if (fetch_claims(s, e))
            fetch_event(t, s, e, now);
        else if (e->hsdir_fp[0])
            desc_upload_failed(s, e, now);
        break;
    case CP_HS_DESC_REQUESTED:
    case CP_HS_DESC_RECEIVED:
        fetch_event(t, s, e, now);
        break;
    default:
        break;
    }
}

void descriptor_on_hs_desc_content(struct descriptor_tracker *t, const struct cp_event_hs_desc_content *e,
                                   double now)
{
    struct desc_service *s = svc_find(t, e->address);
    if (!s || !e->body || e->body_len == 0 || !e->desc_id || !e->hsdir_fp[0])
        return;
    struct served_ident ident;
    char perr[128];
    if (served_ident_parse(e->body, e->body_len, &ident, perr, sizeof(perr)) == 0)
        served_copies_note(&s->copies, e->hsdir_fp, e->hsdir_nick, e->desc_id, &ident, now); /* whose it is */
    int slot = slot_of_id(s, e->desc_id);
    struct desc_hsdir *h = slot >= 0 ? hsdir_current(&s->slots[slot], e->hsdir_fp) : NULL;
    if (!h || !hsdir_holds(h))
        return; /* only a copy from an HSDir that confirmed the latest upload is known to be current */
    char *copy = malloc(e->body_len + 1);
    if (!copy)
        return;
    memcpy(copy, e->body, e->body_len);
    copy[e->body_len] = '\0';
    free(s->body);
    s->body = copy;
    s->body_len = e->body_len;
    snprintf(s->body_id, sizeof(s->body_id), "%s", e->desc_id);
    snprintf(s->body_from, sizeof(s->body_from), "%s", e->hsdir_fp);
    s->body_at = now;
    if (s->fetch.in_flight && !s->fetch.is_probe)
        fetch_finish(s, now, NULL); /* the copy it was for: the other HSDirs' answers are not needed */
    svc_republish(t, s, now);
}

/* Should the probe due now wait? Before the first probe, until an upload round has settled (its end
 * schedules the probe); with no descriptor seen at all (attached to a running tor), for a while. */
static bool probe_should_wait(const struct descriptor_tracker *t, const struct desc_service *s, double now)
{
    if (s->probed)
        return false;
    bool any = false;
    for (int i = 0; i < 2; i++) {
        if (!s->slots[i].used)
            continue;
        any = true;
        enum desc_status st = desc_status_of(&s->slots[i]);
        if (st == DESC_STATUS_COMPLETE || st == DESC_STATUS_INCOMPLETE)
            return false;
    }
    return any || now - t->attached_at < DESC_BARE_PROBE_S;
}

void descriptor_tick(struct descriptor_tracker *t, double now)
{
    double deadline = t->probe.republish_deadline;
    for (size_t i = 0; i < t->n; i++) {
        struct desc_service *s = t->svcs[i];
        for (int slot = 0; t->online && slot < 2; slot++) {
            /* Deadlines run only while tor is there to answer. */
            struct desc *d = &s->slots[slot];
            bool changed = false;
            for (size_t j = 0; d->used && j < d->n; j++) {
                struct desc_hsdir *h = &d->hsdirs[j];
                if (h->round == d->round && h->state == DESC_HSDIR_PENDING && now - h->upload_at >= deadline) {
                    h->state = DESC_HSDIR_FAILED;
                    snprintf(h->reason, sizeof(h->reason), "NO_ANSWER");
                    h->state_at = now;
                    h->republishing = false;
                    changed = true;
                }
            }
            if (changed)
                desc_status_changed(s, slot, now);
        }
        if (s->fetch.in_flight && now - s->fetch.sent_at >= DESCRIPTOR_FETCH_TIMEOUT_S)
            fetch_finish(s, now, s->fetch.is_probe ? NULL : "no answer");
        if (!t->online)
            continue;
        for (int slot = 0; t->read_own && slot < 2; slot++) {
            /* Several tors: whose descriptor HSDirs serve changes with each round; look soon after one. */
            struct desc *d = &s->slots[slot];
            enum desc_status st = d->used ? desc_status_of(d) : DESC_STATUS_NONE;
            if ((st == DESC_STATUS_COMPLETE || st == DESC_STATUS_INCOMPLETE) && s->probed_round[slot] != d->round) {
                s->probed_round[slot] = d->round;
                if (s->next_probe_at > now + DESC_FIRST_PROBE_S)
                    s->next_probe_at = now + DESC_FIRST_PROBE_S;
            }
        }
        if (!s->fetch.in_flight && s->next_probe_at > 0 && now >= s->next_probe_at) {
            if (probe_should_wait(t, s, now))
                s->next_probe_at = now + t->probe.hsfetch_interval;
            else
                probe_start(t, s, now);
        }
        svc_republish(t, s, now);
    }
}

/* ---- connection and timer ----------------------------------------------------------------------------- */

static void desc_hs_desc_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct descriptor_tracker *t = arg;
    struct cp_event_hs_desc e;
    char err[256];
    if (c != t->conn)
        return;
    if (cp_event_hs_desc_parse(ev, &e, err, sizeof(err)) < 0) {
        log_debug("descriptor: undecodable HS_DESC event: %s", err);
        return;
    }
    descriptor_on_hs_desc(t, &e, desc_now(t));
    cp_event_hs_desc_clear(&e);
}

static void desc_hs_desc_content_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct descriptor_tracker *t = arg;
    struct cp_event_hs_desc_content e;
    char err[256];
    if (c != t->conn)
        return;
    if (cp_event_hs_desc_content_parse(ev, &e, err, sizeof(err)) < 0) {
        log_debug("descriptor: undecodable HS_DESC_CONTENT event: %s", err);
        return;
    }
    descriptor_on_hs_desc_content(t, &e, desc_now(t));
    cp_event_hs_desc_content_clear(&e);
}

static void desc_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct descriptor_tracker *t = arg;
    (void)fd;
    (void)what;
    descriptor_tick(t, desc_now(t));
}

struct descriptor_tracker *descriptor_tracker_new(struct event_base *base, const struct probe_conf *probe)
{
    struct descriptor_tracker *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->base = base;
    t->probe = *probe;
    t->clock = desc_mono_clock;
    t->wall_clock = desc_wall_clock;
    t->send = desc_conn_send;
    t->send_arg = t;
    if (base && !(t->tick_ev = event_new(base, -1, EV_PERSIST, desc_tick_cb, t))) {
        free(t);
        return NULL;
    }
    return t;
}

static void svc_free(struct desc_service *s)
{
    if (!s)
        return;
    desc_clear(&s->slots[0]);
    desc_clear(&s->slots[1]);
    free(s->fetch.dirs);
    free(s->body);
    free(s);
}

void descriptor_tracker_free(struct descriptor_tracker *t)
{
    if (!t)
        return;
    for (struct desc_cmd *c = t->cmds; c; c = c->next)
        c->t = NULL; /* completes later into nothing and frees itself */
    if (t->tick_ev)
        event_free(t->tick_ev);
    for (size_t i = 0; i < t->n; i++)
        svc_free(t->svcs[i]);
    free(t->svcs);
    free(t);
}

void descriptor_tracker_set_clock(struct descriptor_tracker *t, descriptor_clock_fn mono, descriptor_clock_fn wall,
                                  void *arg)
{
    t->clock = mono ? mono : desc_mono_clock;
    t->wall_clock = wall ? wall : desc_wall_clock;
    t->clock_arg = arg;
}

void descriptor_tracker_set_sender(struct descriptor_tracker *t, descriptor_send_fn fn, void *arg)
{
    t->send = fn ? fn : desc_conn_send;
    t->send_arg = fn ? arg : t;
}

void descriptor_tracker_set_probe_conf(struct descriptor_tracker *t, const struct probe_conf *probe)
{
    double now = desc_now(t);
    t->probe = *probe;
    for (size_t i = 0; i < t->n; i++)
        if (t->svcs[i]->next_probe_at > now + probe->hsfetch_interval)
            t->svcs[i]->next_probe_at = now + probe->hsfetch_interval;
}

int descriptor_tracker_set_services(struct descriptor_tracker *t, const char *const *names,
                                    const char *const *addresses, size_t n)
{
    struct desc_service **next = calloc(n ? n : 1, sizeof(*next));
    bool *is_new = calloc(n ? n : 1, sizeof(*is_new));
    bool *kept = calloc(t->n ? t->n : 1, sizeof(*kept));
    double now = desc_now(t);
    size_t k = 0;
    if (!next || !is_new || !kept)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        if (!addresses[i] || strlen(addresses[i]) != 56)
            continue; /* no key loaded yet */
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++)
            dup = onion_address_equal(next[j]->address, addresses[i]);
        if (dup)
            continue;
        struct desc_service *s = NULL;
        for (size_t j = 0; j < t->n && !s; j++)
            if (!kept[j] && onion_address_equal(t->svcs[j]->address, addresses[i])) {
                s = t->svcs[j];
                kept[j] = true;
            }
        if (!s) {
            if (!(s = calloc(1, sizeof(*s))))
                goto oom;
            snprintf(s->address, sizeof(s->address), "%s", addresses[i]);
            if (t->online)
                s->next_probe_at = now + t->probe.hsfetch_interval;
            is_new[k] = true;
        }
        snprintf(s->name, sizeof(s->name), "%s", names[i] ? names[i] : "");
        next[k++] = s;
    }
    for (size_t j = 0; j < t->n; j++)
        if (!kept[j])
            svc_free(t->svcs[j]);
    free(t->svcs);
    t->svcs = next;
    t->n = k;
    free(is_new);
    free(kept);
    return 0;
oom:
    for (size_t j = 0; j < k; j++)
        if (is_new[j])
            svc_free(next[j]);
    free(next);
    free(is_new);
    free(kept);
    return -1;
}

void descriptor_tracker_attach(struct descriptor_tracker *t, struct cp_conn *conn)
{
    double now = desc_now(t);
    t->conn = conn;
    t->online = true;
    t->attached_at = now;
    t->gen++;
    if (conn) {
        cp_conn_subscribe(conn, "HS_DESC", desc_hs_desc_cb, t);
        cp_conn_subscribe(conn, "HS_DESC_CONTENT", desc_hs_desc_content_cb, t);
    }
    for (size_t i = 0; i < t->n; i++) {
        fetch_reset(&t->svcs[i]->fetch);
        t->svcs[i]->next_probe_at = now + t->probe.hsfetch_interval;
        t->svcs[i]->probed = false;
        t->svcs[i]->next_source_fetch_at = 0;
        t->svcs[i]->own.valid = false; /* a new tor (or connection): its own descriptor is read again */
    }
    if (t->tick_ev)
        event_add(t->tick_ev, &(struct timeval){1, 0});
}

void descriptor_tracker_detach(struct descriptor_tracker *t)
{
    t->conn = NULL;
    t->online = false;
    t->gen++;
    for (size_t i = 0; i < t->n; i++)
        fetch_reset(&t->svcs[i]->fetch);
    if (t->tick_ev)
        event_del(t->tick_ev);
}

/* ---- queries ------------------------------------------------------------------------------------------ */

bool descriptor_service_reachable(const struct descriptor_tracker *t, const char *address)
{
    const struct desc_service *s = svc_find(t, address);
    int slot = s ? svc_target_slot(s) : -1;
    if (slot < 0)
        return false;
    const struct desc *d = &s->slots[slot];
    bool held = false;
    for (size_t i = 0; i < d->n && !held; i++) {
        const struct desc_hsdir *h = &d->hsdirs[i];
        /* A pending re-upload of an HSDir that confirmed before still has the earlier copy. */
        held = h->round == d->round &&
               (hsdir_holds(h) || (h->state == DESC_HSDIR_PENDING && h->confirmed_at > 0));
    }
    return held && (!s->probe.valid || s->probe.ok);
}

double descriptor_service_fetched_round_at(const struct descriptor_tracker *t, const char *address, bool *complete,
                                           bool *rejected)
{
    const struct desc_service *s = svc_find(t, address);
    int slot = s ? svc_target_slot(s) : -1;
    *complete = false;
    if (rejected)
        *rejected = false;
    if (slot < 0 || s->slots[slot].round == 0)
        return -1;
    /* Accepted (UPLOADED) only: an HSDir answers UPLOAD_REJECTED when it holds a revision at least as high,
     * and that may be another tor's descriptor encoded in the same second (tor's revision counter counts
     * seconds), so "present" says nothing about whose descriptor it serves. */
    const struct desc *d = &s->slots[slot];
    unsigned total = 0, accepted = 0, refused = 0;
    for (size_t i = 0; d->used && i < d->n; i++) {
        if (d->hsdirs[i].round != d->round)
            continue;
        total++;
        accepted += d->hsdirs[i].state == DESC_HSDIR_CONFIRMED;
        refused += d->hsdirs[i].state == DESC_HSDIR_PRESENT;
    }
    *complete = total > 0 && accepted == total;
    if (rejected)
        *rejected = total > 0 && refused == total;
    return d->round_at;
}

void descriptor_service_hsdir_upload(const struct descriptor_tracker *t, const char *address, const char *desc_id,
                                     const char *fp, double *upload_at, double *accepted_at, bool *rejected)
{
    struct desc_service *s = svc_find(t, address);
    int slot = s && desc_id ? slot_of_id(s, desc_id) : -1;
    const struct desc_hsdir *h = slot >= 0 ? hsdir_current(&s->slots[slot], fp) : NULL;
    *upload_at = h ? h->upload_at : -1;
    *accepted_at = h && h->state == DESC_HSDIR_CONFIRMED && !h->ambiguous && !h->copied ? h->confirmed_at : -1;
    *rejected = h && h->state == DESC_HSDIR_PRESENT;
}

void descriptor_tracker_set_read_own(struct descriptor_tracker *t, bool on)
{
    t->read_own = on;
}

int descriptor_service_own(const struct descriptor_tracker *t, const char *address, struct served_ident *out)
{
    const struct desc_service *s = svc_find(t, address);
    *out = s ? s->own : (struct served_ident){0};
    return out->valid ? 0 : -1;
}

size_t descriptor_service_copies(const struct descriptor_tracker *t, const char *address, struct served_copy *out,
                                 size_t cap, double *at)
{
    const struct desc_service *s = svc_find(t, address);
    int slot = s && s->client_id[0] ? slot_of_id(s, s->client_id) : -1;
    size_t n = 0;
    *at = -1;
    /* The answers for the descriptor clients fetch; "none" only from an HSDir responsible for it. */
    for (size_t i = 0; slot >= 0 && i < s->copies.n && n < cap; i++) {
        const struct served_copy *c = &s->copies.c[i];
        if (strcmp(c->desc_id, s->client_id) != 0 ||
            (!c->ident.valid && !hsdir_current((struct desc *)&s->slots[slot], c->fp)))
            continue;
        out[n++] = *c;
        *at = c->at > *at ? c->at : *at;
    }
    return n;
}

int descriptor_service_counts(const struct descriptor_tracker *t, const char *address,
                              struct descriptor_counts *out)
{
    const struct desc_service *s = svc_find(t, address);
    memset(out, 0, sizeof(*out));
    if (!s)
        return -1;
    int slot = svc_target_slot(s);
    if (slot >= 0) {
        struct desc_tally c = desc_count(&s->slots[slot]);
        out->hsdirs_total = c.total;
        out->hsdirs_confirmed = c.holding;
        out->hsdirs_failed = c.failed;
    }
    out->uploads_confirmed = s->uploads_confirmed;
    out->republishes = s->republishes;
    out->probes_ok = s->probes_ok;
    out->probes_failed = s->probes_failed;
    out->probe_served = s->probe.valid ? (int)s->probe.served : -1;
    return 0;
}

/* A time kept on the monotonic clock (`at`), shown as the wall-clock date it had: the one place the wall
 * clock is read, since here a date is the point. `now` is the monotonic clock's current reading. */
static json_t *json_time(const struct descriptor_tracker *t, double now, double at)
{
    if (at <= 0)
        return json_null();
    char buf[32];
    time_t sec = (time_t)floor(t->wall_clock(t->clock_arg) - (now - at));
    struct tm tm;
    if (!gmtime_r(&sec, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return json_null();
    return json_string(buf);
}

static json_t *json_str_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

static json_t *desc_to_json(const struct descriptor_tracker *t, double now, const struct desc_service *s, int slot)
{
    const struct desc *d = &s->slots[slot];
    json_t *dirs = json_array();
    for (size_t i = 0; dirs && i < d->n; i++) {
        const struct desc_hsdir *h = &d->hsdirs[i];
        if (h->round != d->round)
            continue;
        json_array_append_new(dirs, json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:I}", "fp", h->fp, "nick", h->nick,
                                              "state", desc_hsdir_state_str(h->state), "reason",
                                              json_str_or_null(h->reason), "time",
                                              json_time(t, now, h->state_at), "confirmed",
                                              json_time(t, now, h->confirmed_at), "republishes",
                                              (json_int_t)h->republishes));
    }
    bool client = s->client_id[0] && strcmp(s->client_id, d->id) == 0;
    return json_pack("{s:s, s:s, s:o, s:s, s:o, s:o, s:o}", "slot", slot_str(slot), "id", d->id, "created",
                     json_time(t, now, d->created_at), "status", desc_status_str(desc_status_of(d)),
                     "client_fetched", s->client_id[0] ? json_boolean(client) : json_null(), "upload_started",
                     json_time(t, now, d->round_at),
                     "hsdirs", dirs ? dirs : json_array());
}

static json_t *probe_to_json(const struct descriptor_tracker *t, double now, const struct probe_result *p)
{
    if (!p->valid)
        return json_null();
    return json_pack("{s:o, s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "time",
                     json_time(t, now, p->at), "ok", p->ok, "descriptor_id", json_str_or_null(p->desc_id), "slot",
                     p->slot >= 0 ? json_string(slot_str(p->slot)) : json_null(), "asked", (json_int_t)p->asked,
                     "responsible", (json_int_t)p->responsible, "responsible_served",
                     (json_int_t)p->responsible_served, "served", (json_int_t)p->served, "not_found", (json_int_t)p->not_found, "failed",
                     (json_int_t)p->failed, "no_answer", (json_int_t)p->no_answer, "latency_seconds",
                     p->latency >= 0 ? json_real(round(p->latency * 1000) / 1000) : json_null(), "error",
                     json_str_or_null(p->error));
}

json_t *descriptor_service_to_json(const struct descriptor_tracker *t, const char *address)
{
    const struct desc_service *s = svc_find(t, address);
    if (!s)
        return NULL;
    struct descriptor_counts c;
    descriptor_service_counts(t, address, &c);
    double now = desc_now(t);
    json_t *descs = json_array();
    for (int i = 0; descs && i < 2; i++)
        if (s->slots[i].used)
            json_array_append_new(descs, desc_to_json(t, now, s, i));
    return json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:I, s:I}", "service",
                     s->name, "address", s->address, "reachable", descriptor_service_reachable(t, address),
                     "hsdirs_confirmed", (json_int_t)c.hsdirs_confirmed, "hsdirs_total",
                     (json_int_t)c.hsdirs_total, "hsdirs_failed", (json_int_t)c.hsdirs_failed,
                     "last_confirmed_upload", json_time(t, now, s->last_confirmed_at), "last_upload_age_seconds",
                     s->last_confirmed_at > 0 ? json_integer((json_int_t)(now - s->last_confirmed_at)) : json_null(),
                     "uploads_confirmed", (json_int_t)s->uploads_confirmed, "republishes",
                     (json_int_t)s->republishes, "last_republish", json_time(t, now, s->last_republish_at),
                     "descriptors", descs ? descs : json_array(), "probe", probe_to_json(t, now, &s->probe),
                     "probes_ok", (json_int_t)s->probes_ok, "probes_failed", (json_int_t)s->probes_failed);
}

json_t *descriptor_to_json(const struct descriptor_tracker *t)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < t->n; i++) {
        json_t *o = descriptor_service_to_json(t, t->svcs[i]->address);
        if (o)
            json_array_append_new(a, o);
    }
    return a;
}

int descriptor_metrics(const struct descriptor_tracker *t, struct metrics *m)
{
    static const char *const slots[] = {"current", "next"};
    static const enum desc_hsdir_state states[] = {DESC_HSDIR_PENDING, DESC_HSDIR_CONFIRMED, DESC_HSDIR_FAILED,
                                                   DESC_HSDIR_PRESENT};
    int rc = metrics_family(m, "onionfront_descriptor_uploads_confirmed_total", METRICS_COUNTER,
                            "Descriptor uploads (tor's and re-posts) that an HSDir confirmed.");
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = metrics_sample(m, "onionfront_descriptor_uploads_confirmed_total",
                            (const char *const[]){"service", t->svcs[i]->name, NULL},
                            (double)t->svcs[i]->uploads_confirmed);
    rc = rc || metrics_family(m, "onionfront_descriptor_hsdirs", METRICS_GAUGE,
                              "Responsible HSDirs of each descriptor by state (present: it already had it).");
    for (size_t i = 0; !rc && i < t->n; i++) {
        const struct desc_service *s = t->svcs[i];
        for (int slot = 0; !rc && slot < 2; slot++) {
            const struct desc *d = &s->slots[slot];
            if (!d->used)
                continue;
            for (size_t k = 0; !rc && k < sizeof(states) / sizeof(states[0]); k++) {
                unsigned n = 0;
                for (size_t j = 0; j < d->n; j++)
                    n += d->hsdirs[j].round == d->round && d->hsdirs[j].state == states[k];
                rc = metrics_sample(m, "onionfront_descriptor_hsdirs",
                                    (const char *const[]){"service", s->name, "slot", slots[slot], "state",
                                                          desc_hsdir_state_str(states[k]), NULL},
                                    n);
            }
        }
    }
    rc = rc || metrics_family(m, "onionfront_republish_total", METRICS_COUNTER,
                              "Descriptors re-posted by onionfront to an HSDir that lacked them (HSPOST).");
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = metrics_sample(m, "onionfront_republish_total", (const char *const[]){"service", t->svcs[i]->name, NULL},
                            (double)t->svcs[i]->republishes);
    rc = rc || metrics_family(m, "onionfront_probe_hsdirs_serving", METRICS_GAUGE,
                              "HSDirs that served the service's descriptor in the last fetch probe.");
    for (size_t i = 0; !rc && i < t->n; i++)
        if (t->svcs[i]->probe.valid)
            rc = metrics_sample(m, "onionfront_probe_hsdirs_serving",
                                (const char *const[]){"service", t->svcs[i]->name, NULL}, t->svcs[i]->probe.served);
    rc = rc || metrics_family(m, "onionfront_probe_success_total", METRICS_COUNTER,
                              "Fetch probes in which at least one HSDir served the descriptor.");
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = metrics_sample(m, "onionfront_probe_success_total",
                            (const char *const[]){"service", t->svcs[i]->name, NULL}, (double)t->svcs[i]->probes_ok);
    rc = rc || metrics_family(m, "onionfront_probe_failure_total", METRICS_COUNTER,
                              "Fetch probes in which no HSDir served the descriptor.");
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = metrics_sample(m, "onionfront_probe_failure_total",
                            (const char *const[]){"service", t->svcs[i]->name, NULL},
                            (double)t->svcs[i]->probes_failed);
    rc = rc || metrics_family(m, "onionfront_probe_latency_seconds", METRICS_GAUGE,
                              "Seconds from HSFETCH to the first copy of the descriptor in the last successful "
                              "fetch probe.");
    for (size_t i = 0; !rc && i < t->n; i++)
        if (t->svcs[i]->probe.valid && t->svcs[i]->probe.latency >= 0)
            rc = metrics_sample(m, "onionfront_probe_latency_seconds",
                                (const char *const[]){"service", t->svcs[i]->name, NULL},
                                t->svcs[i]->probe.latency);
    return rc ? -1 : 0;
}
