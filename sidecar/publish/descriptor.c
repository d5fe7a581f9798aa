/* descriptor.c — the descriptor tracker's state and its upload record (see descriptor.h).
 *
 * Owns the tracker (descriptor_int.h: private to the descriptor*.c files): per service its two
 * descriptors and, for each, the HSDirs of the latest upload round as tor's HS_DESC events report them
 * (CREATED, UPLOAD, UPLOADED, FAILED), the upload deadlines, the event wiring (HS_DESC and
 * HS_DESC_CONTENT subscriptions, the one-second timer, the clocks and the command sender) and the
 * queries on that record. It is the one file that creates, feeds and frees the state, so its life cycle
 * is read in one place.
 *
 * Not here: the lookups on the record and a descriptor's status (descriptor_lookup.c, below this file
 * and descriptor_hsfetch.c), the HSFETCH of our own descriptors from the HSDirs and the re-posting
 * (HSPOST) they lead to (descriptor_hsfetch.c, which this file hands fetch answers and the tick to),
 * the JSON and metrics views (descriptor_report.c), the control connection (tor.c), the services
 * (service.c). */
#include "sidecar/publish/descriptor.h"
#include "sidecar/publish/descriptor_int.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controlproto/cp_event.h"
#include "sidecar/core/clock.h"
#include "sidecar/core/log.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/core/pace.h"
#include "sidecar/publish/served.h"

#define DESC_ROUND_GAP_S 2.0 /* tor sends one round's UPLOAD events in one burst */
#define DESC_MAX_FETCHES 3     /* services' fetches (hsfetches, copies to republish) in flight at once */

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

/* Deadlines, backoffs, the hsfetch schedule and ages: on the monotonic clock, never the wall clock (its
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
    int slot = desc_slot_of_id(s, id);
    if (slot >= 0) {
        /* The same blinded key again (a restarted tor in the same time period): a new instance of that
         * descriptor, uploaded afresh. */
        desc_init(&s->slots[slot], id, now);
        log_info_f(LOG_SERVICE(s->name), "service %s: descriptor %.8s (%s) built again", s->name, id,
                   desc_slot_str(slot));
        return;
    }
    slot = desc_place(s, id, now);
    log_info_f(LOG_SERVICE(s->name), "service %s: new descriptor %.8s (%s)", s->name, id, desc_slot_str(slot));
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
    int slot = desc_slot_of_id(s, e->desc_id);
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
    struct desc_hsdir *h = desc_hsdir_find(d, e->hsdir_fp);
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
                desc_slot_str(slot), h->fp, h->nick);
}

static void hsdir_confirm(struct desc_service *s, int slot, struct desc_hsdir *h, double at, bool ambiguous)
{
    if (h->republishing)
        log_info_f(LOG_SERVICE(s->name), "service %s: HSDir $%s~%s confirmed the re-posted descriptor %.8s (%s)",
                   s->name, h->fp, h->nick, s->slots[slot].id, desc_slot_str(slot));
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
            struct desc_hsdir *h = desc_hsdir_current(&s->slots[i], e->hsdir_fp);
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
                best->nick, s->slots[best_slot].id, desc_slot_str(best_slot),
                pending > 1 ? " (matched to the earlier upload)" : "");
    desc_status_changed(s, best_slot, now);
}

static void desc_upload_failed(struct desc_service *s, const struct cp_event_hs_desc *e, double now)
{
    int slot = e->desc_id ? desc_slot_of_id(s, e->desc_id) : -1;
    struct desc_hsdir *h = slot >= 0 ? desc_hsdir_current(&s->slots[slot], e->hsdir_fp) : NULL;
    if (!h) {
        log_debug_f(LOG_SERVICE(s->name),
                    "service %s: upload result from HSDir $%s for a descriptor it is not responsible for", s->name,
                    e->hsdir_fp);
        return;
    }
    const char *reason = e->reason ? e->reason : "UNKNOWN";
    if (h->state == DESC_HSDIR_CONFIRMED && h->ambiguous) {
        /* The UPLOADED we matched here was for the other descriptor. */
        struct desc_hsdir *o = desc_hsdir_current(&s->slots[1 - slot], e->hsdir_fp);
        if (o && !desc_hsdir_holds(o)) {
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
                s->slots[slot].id, desc_slot_str(slot), desc_hsdir_state_str(h->state), reason);
    desc_status_changed(s, slot, now);
}

/* ---- events ------------------------------------------------------------------------------------------- */

void descriptor_on_hs_desc(struct descriptor_tracker *t, const struct cp_event_hs_desc *e, double now)
{
    struct desc_service *s = desc_svc_find(t, e->address);
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
        if (hsfetch_claims(s, e))
            hsfetch_event(t, s, e, now);
        else if (e->hsdir_fp[0])
            desc_upload_failed(s, e, now);
        break;
    case CP_HS_DESC_REQUESTED:
    case CP_HS_DESC_RECEIVED:
        hsfetch_event(t, s, e, now);
        break;
    default:
        break;
    }
}

/* Uploads pending past the deadline fail (NO_ANSWER). Deadlines run only while tor is there to answer. */
static void desc_expire_uploads(struct descriptor_tracker *t, struct desc_service *s, double now)
{
    double deadline = t->conf.republish_deadline;
    for (int slot = 0; slot < 2; slot++) {
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
}

void descriptor_tick(struct descriptor_tracker *t, double now)
{
    for (size_t i = 0; t->online && i < t->n; i++)
        desc_expire_uploads(t, t->svcs[i], now);
    hsfetch_tick(t, now); /* per service apart from the deadlines above: the same order for each service */
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
    pace_init(&t->pace, DESC_MAX_FETCHES);
    t->conf = *probe;
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
    t->conf = *probe;
    for (size_t i = 0; i < t->n; i++)
        if (t->svcs[i]->next_hsfetch_at > now + probe->hsfetch_interval)
            t->svcs[i]->next_hsfetch_at = now + probe->hsfetch_interval;
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
                s->next_hsfetch_at = now + t->conf.hsfetch_interval;
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
        hsfetch_reset(&t->svcs[i]->fetch);
        t->svcs[i]->next_hsfetch_at = now + t->conf.hsfetch_interval;
        t->svcs[i]->hsfetch_armed = false;
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
        hsfetch_reset(&t->svcs[i]->fetch);
    if (t->tick_ev)
        event_del(t->tick_ev);
}

/* ---- queries ------------------------------------------------------------------------------------------ */

bool descriptor_service_reachable(const struct descriptor_tracker *t, const char *address)
{
    const struct desc_service *s = desc_svc_find(t, address);
    int slot = s ? desc_target_slot(s) : -1;
    if (slot < 0)
        return false;
    const struct desc *d = &s->slots[slot];
    bool held = false;
    for (size_t i = 0; i < d->n && !held; i++) {
        const struct desc_hsdir *h = &d->hsdirs[i];
        /* A pending re-upload of an HSDir that confirmed before still has the earlier copy. */
        held = h->round == d->round &&
               (desc_hsdir_holds(h) || (h->state == DESC_HSDIR_PENDING && h->confirmed_at > 0));
    }
    return held && (!s->hsfetch.valid || s->hsfetch.ok);
}

/* The latest upload round of the descriptor clients fetch: its HSDirs, how many accepted it and how many
 * refused it as holding one at least as new. NULL if it was never uploaded (or the address is unknown). */
static const struct desc *desc_fetched_round(const struct descriptor_tracker *t, const char *address,
                                             unsigned *total, unsigned *accepted, unsigned *refused)
{
    const struct desc_service *s = desc_svc_find(t, address);
    int slot = s ? desc_target_slot(s) : -1;
    *total = *accepted = *refused = 0;
    if (slot < 0 || s->slots[slot].round == 0)
        return NULL;
    const struct desc *d = &s->slots[slot];
    for (size_t i = 0; d->used && i < d->n; i++) {
        if (d->hsdirs[i].round != d->round)
            continue;
        (*total)++;
        *accepted += d->hsdirs[i].state == DESC_HSDIR_CONFIRMED;
        *refused += d->hsdirs[i].state == DESC_HSDIR_PRESENT;
    }
    return d;
}

double descriptor_service_fetched_round_at(const struct descriptor_tracker *t, const char *address, bool *complete,
                                           bool *rejected)
{
    unsigned total, accepted, refused;
    /* Accepted (UPLOADED) only: an HSDir answers UPLOAD_REJECTED when it holds a revision at least as high,
     * and that may be another tor's descriptor encoded in the same second (tor's revision counter counts
     * seconds), so "present" says nothing about whose descriptor it serves. */
    const struct desc *d = desc_fetched_round(t, address, &total, &accepted, &refused);
    *complete = total > 0 && accepted == total;
    if (rejected)
        *rejected = total > 0 && refused == total;
    return d ? d->round_at : -1;
}

double descriptor_service_round_answered_at(const struct descriptor_tracker *t, const char *address, bool *answered)
{
    unsigned total, accepted, refused;
    const struct desc *d = desc_fetched_round(t, address, &total, &accepted, &refused);
    *answered = total > 0 && accepted + refused == total;
    return d ? d->round_at : -1;
}

void descriptor_service_hsdir_upload(const struct descriptor_tracker *t, const char *address, const char *desc_id,
                                     const char *fp, double *upload_at, double *accepted_at, bool *rejected)
{
    struct desc_service *s = desc_svc_find(t, address);
    int slot = s && desc_id ? desc_slot_of_id(s, desc_id) : -1;
    const struct desc_hsdir *h = slot >= 0 ? desc_hsdir_current(&s->slots[slot], fp) : NULL;
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
    const struct desc_service *s = desc_svc_find(t, address);
    *out = s ? s->own : (struct served_ident){0};
    return out->valid ? 0 : -1;
}

size_t descriptor_service_copies(const struct descriptor_tracker *t, const char *address, struct served_copy *out,
                                 size_t cap, double *at)
{
    const struct desc_service *s = desc_svc_find(t, address);
    int slot = s && s->client_id[0] ? desc_slot_of_id(s, s->client_id) : -1;
    size_t n = 0;
    *at = -1;
    /* The answers for the descriptor clients fetch; "none" only from an HSDir responsible for it. */
    for (size_t i = 0; slot >= 0 && i < s->copies.n && n < cap; i++) {
        const struct served_copy *c = &s->copies.c[i];
        if (strcmp(c->desc_id, s->client_id) != 0 ||
            (!c->ident.valid && !desc_hsdir_current((struct desc *)&s->slots[slot], c->fp)))
            continue;
        out[n++] = *c;
        *at = c->at > *at ? c->at : *at;
    }
    return n;
}

int descriptor_service_counts(const struct descriptor_tracker *t, const char *address,
                              struct descriptor_counts *out)
{
    const struct desc_service *s = desc_svc_find(t, address);
    memset(out, 0, sizeof(*out));
    if (!s)
        return -1;
    int slot = desc_target_slot(s);
    if (slot >= 0) {
        struct desc_tally c = desc_count(&s->slots[slot]);
        out->hsdirs_total = c.total;
        out->hsdirs_confirmed = c.holding;
        out->hsdirs_failed = c.failed;
    }
    out->uploads_confirmed = s->uploads_confirmed;
    out->republishes = s->republishes;
    out->probes_ok = s->hsfetches_ok;
    out->probes_failed = s->hsfetches_failed;
    out->probe_served = s->hsfetch.valid ? (int)s->hsfetch.served : -1;
    return 0;
}
