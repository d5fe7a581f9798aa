/* descriptor_hsfetch.c — fetching our own descriptors back from the HSDirs, and re-posting them (see
 * descriptor.h: "Fetch probe" and "Republish").
 *
 * Vocabulary: "hsfetch" in code is the periodic HSFETCH that logs, the status JSON ("probe") and the
 * metrics (onionfront_probe_*) call the fetch probe; "probe" in code means only the end-to-end probe
 * (sidecar/probe/).
 *
 * Owns the HSFETCH, GETINFO hs/service/desc/id and HSPOST commands the tracker sends and their answers:
 * the periodic HSFETCH of each service's descriptor from every responsible HSDir (paced, pace.h), its
 * result, HSDirs found to have lost the descriptor, the copy of the body fetched for republishing,
 * tor's own descriptor (read_own), the per-HSDir republish backoff and the repair ladder's re-post
 * (descriptor_repost). These are one job: each fetch answer may lead to a re-post, and a re-post needs a
 * fetched copy.
 *
 * Not here: the state itself and the upload record (descriptor.c, which feeds fetch answers here and
 * calls hsfetch_tick from descriptor_tick), the JSON and metrics views (descriptor_report.c). */
#include "sidecar/publish/descriptor.h"
#include "sidecar/publish/descriptor_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_event.h"
#include "controlproto/cp_reply.h"
#include "sidecar/core/log.h"
#include "sidecar/core/pace.h"
#include "sidecar/publish/served.h"

#define DESC_BARE_HSFETCH_S 120.0 /* no descriptor seen this long after attaching: let tor pick an HSDir */
#define DESC_SOURCES 3 /* HSDirs asked at once for a copy to republish: the first answer is used */
#define DESC_HSFETCH_GAP_CAP_S 2.0 /* hsfetch starts are interval / services apart, at most this */

/* ---- fetches: the hsfetch and republish sources ------------------------------------------------------ */

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

void hsfetch_reset(struct desc_fetch *f)
{
    struct fetch_dir *dirs = f->dirs;
    size_t cap = f->cap;
    memset(f, 0, sizeof(*f));
    f->dirs = dirs;
    f->cap = cap;
}

/* An hsfetch's NOT_FOUND for descriptor `desc_id` from HSDir `fp`, which confirmed this round's upload
 * before the hsfetch was sent: it lost the descriptor (a restarted relay keeps its HSDir cache in memory
 * only) and tor will not upload again before its next round. Mark it failed, so it is republished like
 * a failed upload. Returns true if it was marked. */
static bool hsfetch_mark_lost(struct desc_service *s, const char *desc_id, const char *fp, double now)
{
    int slot = desc_id ? desc_slot_of_id(s, desc_id) : -1;
    struct desc_hsdir *h = slot >= 0 ? desc_hsdir_current(&s->slots[slot], fp) : NULL;
    if (!h || !desc_hsdir_holds(h) || h->confirmed_at >= s->fetch.sent_at)
        return false;
    log_notice_f(LOG_SERVICE(s->name),
                 "service %s: HSDir $%s~%s no longer has descriptor %.8s (%s): the fetch probe got NOT_FOUND", s->name,
                 h->fp, h->nick, s->slots[slot].id, desc_slot_str(slot));
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
    if (f->is_hsfetch) {
        struct hsfetch_result p = {.valid = true, .at = now, .slot = -1, .latency = -1};
        snprintf(p.desc_id, sizeof(p.desc_id), "%s", f->desc_id);
        p.slot = f->desc_id[0] ? desc_slot_of_id(s, f->desc_id) : -1;
        p.asked = (unsigned)f->n;
        for (size_t i = 0; i < f->n; i++) {
            if (p.slot >= 0 && desc_hsdir_current(&s->slots[p.slot], f->dirs[i].fp)) {
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
        bool changed = !s->hsfetch.valid || s->hsfetch.ok != p.ok;
        s->hsfetch = p;
        if (p.ok)
            s->hsfetches_ok++;
        else
            s->hsfetches_failed++;
        if (changed && p.ok)
            log_info_f(LOG_SERVICE(s->name),
                       "service %s: fetch probe: %u of %u responsible HSDirs serve descriptor %.8s (%s); first "
                       "copy after %.2f s",
                       s->name, p.responsible_served, p.responsible, p.desc_id, desc_slot_str(p.slot), p.latency);
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
    hsfetch_reset(f);
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
    struct desc_service *s = t && c->gen == t->gen ? desc_svc_find(t, c->address) : NULL;
    if (s && s->fetch.in_flight && s->fetch.tag == c->tag && (!r || !cp_reply_is_ok(r))) {
        char why[160];
        snprintf(why, sizeof(why), "HSFETCH: %s", r ? cp_reply_message(r) : err);
        fetch_finish(s, desc_now(t), why);
    }
    free(c);
}

/* Send HSFETCH for `s` to `servers` (none: tor picks). */
static int fetch_send(struct descriptor_tracker *t, struct desc_service *s, bool is_hsfetch,
                       const char *const *servers, const char *const *nicks, size_t n, double now)
{
    char err[256];
    struct desc_fetch *f = &s->fetch;
    hsfetch_reset(f);
    for (size_t i = 0; i < n; i++)
        if (!fetch_dir_add(f, servers[i], nicks[i])) {
            hsfetch_reset(f);
            return -1;
        }
    char *cmd = cp_cmd_hsfetch(s->address, servers, n, err, sizeof(err));
    struct desc_cmd *c = cmd ? desc_cmd_new(t, s) : NULL;
    if (!c) {
        log_error("service %s: cannot build HSFETCH: %s", s->name, cmd ? "out of memory" : err);
        free(cmd);
        hsfetch_reset(f);
        return -1;
    }
    c->tag = ++t->tags;
    f->in_flight = true;
    f->is_hsfetch = is_hsfetch;
    f->any = n == 0;
    f->sent_at = now;
    f->tag = c->tag;
    if (t->send(t->send_arg, cmd, desc_fetch_reply_cb, c) < 0) {
        desc_cmd_unlink(c);
        free(c);
        free(cmd);
        hsfetch_reset(f);
        return -1;
    }
    free(cmd);
    log_debug_f(LOG_SERVICE(s->name), "service %s: HSFETCH (%s) from %zu HSDir%s", s->name,
                is_hsfetch ? "probe" : "republish source", n, n == 1 ? "" : "s");
    return 0;
}

static void own_desc_read(struct descriptor_tracker *t, struct desc_service *s);

/* The hsfetch: HSFETCH from every HSDir responsible for either descriptor (tor picks one if none known). */
static void hsfetch_start(struct descriptor_tracker *t, struct desc_service *s, double now)
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
    s->next_hsfetch_at = now + t->conf.hsfetch_interval;
    s->hsfetch_armed = true;
    served_copies_keep(&s->copies, fps, n); /* HSDirs no longer responsible: dropped */
    if (t->read_own)
        own_desc_read(t, s); /* answered before the fetch's copies: commands are answered in order */
    fetch_send(t, s, true, fps, nicks, n, now);
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
    struct desc_service *s = c->t ? desc_svc_find(c->t, c->address) : NULL;
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

void hsfetch_event(struct descriptor_tracker *t, struct desc_service *s, const struct cp_event_hs_desc *e,
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
        if (d->result == FETCH_NOT_FOUND && f->is_hsfetch && hsfetch_mark_lost(s, e->desc_id, d->fp, now))
            svc_republish(t, s, now);
    }
    if (fetch_all_answered(f)) {
        fetch_finish(s, now, NULL);
        svc_republish(t, s, now); /* the copy (HS_DESC_CONTENT) follows RECEIVED and triggers it too */
    }
}

/* Is this FAILED the answer to our fetch rather than to an upload? */
bool hsfetch_claims(const struct desc_service *s, const struct cp_event_hs_desc *e)
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
    return cp_event_hs_desc_failed_fetch(e); /* a stray fetch answer (after a timeout, or another controller's) */
}

/* ---- republishing ------------------------------------------------------------------------------------- */

static double republish_backoff(const struct descriptor_tracker *t, unsigned attempts)
{
    double base = t->conf.republish_deadline;
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
    struct desc_hsdir *h = desc_hsdir_current(d, s->body_from);
    return h && desc_hsdir_holds(h) && h->confirmed_at >= d->round_at;
}

static void desc_post_reply_cb(struct cp_conn *conn, const struct cp_reply *r, const char *err, void *arg)
{
    struct desc_cmd *c = arg;
    struct descriptor_tracker *t = c->t;
    (void)conn;
    desc_cmd_unlink(c);
    struct desc_service *s = t ? desc_svc_find(t, c->address) : NULL;
    int slot = s ? desc_slot_of_id(s, c->desc_id) : -1;
    struct desc_hsdir *h = slot >= 0 ? desc_hsdir_current(&s->slots[slot], c->fp) : NULL;
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
               s->name, s->slots[slot].id, desc_slot_str(slot), h->fp, h->nick, h->reason[0] ? h->reason : "no answer",
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
    struct desc_service *s = desc_svc_find(t, address);
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
                      now - s->client_id_at <= (double)t->conf.republish_deadline + t->conf.hsfetch_interval;
        if (recent && strcmp(s->client_id, d->id) != 0) {
            if (!d->blocked_logged) {
                d->blocked_logged = true;
                log_info_f(LOG_SERVICE(s->name),
                           "service %s: %zu HSDir%s lack descriptor %.8s (%s), which clients do not fetch now; "
                           "tor cannot fetch it for republishing until the time period moves on",
                           s->name, n_due, n_due == 1 ? "" : "s", d->id, desc_slot_str(slot));
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
                if (h->round != d->round || !desc_hsdir_holds(h) || h->confirmed_at < d->round_at ||
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
        s->next_source_fetch_at = now + t->conf.republish_deadline;
        if (n_src == 0) {
            log_debug_f(LOG_SERVICE(s->name), "service %s: no HSDir holds descriptor %.8s to fetch it from", s->name,
                        d->id);
            continue;
        }
        fetch_send(t, s, false, fps, nicks, n_src, now);
    }
}

void descriptor_on_hs_desc_content(struct descriptor_tracker *t, const struct cp_event_hs_desc_content *e,
                                   double now)
{
    struct desc_service *s = desc_svc_find(t, e->address);
    if (!s || !e->body || e->body_len == 0 || !e->desc_id || !e->hsdir_fp[0])
        return;
    struct served_ident ident;
    char perr[128];
    if (served_ident_parse(e->body, e->body_len, &ident, perr, sizeof(perr)) == 0)
        served_copies_note(&s->copies, e->hsdir_fp, e->hsdir_nick, e->desc_id, &ident, now); /* whose it is */
    int slot = desc_slot_of_id(s, e->desc_id);
    struct desc_hsdir *h = slot >= 0 ? desc_hsdir_current(&s->slots[slot], e->hsdir_fp) : NULL;
    if (!h || !desc_hsdir_holds(h))
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
    if (s->fetch.in_flight && !s->fetch.is_hsfetch)
        fetch_finish(s, now, NULL); /* the copy it was for: the other HSDirs' answers are not needed */
    svc_republish(t, s, now);
}

/* Should the hsfetch due now wait? Before the first one, until an upload round has settled (its end
 * schedules the hsfetch); with no descriptor seen at all (attached to a running tor), for a while. */
static bool hsfetch_should_wait(const struct descriptor_tracker *t, const struct desc_service *s, double now)
{
    if (s->hsfetch_armed)
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
    return any || now - t->attached_at < DESC_BARE_HSFETCH_S;
}

void hsfetch_tick(struct descriptor_tracker *t, double now)
{
    double *due = t->n ? malloc(t->n * sizeof(*due)) : NULL; /* NULL: no hsfetch starts this tick */
    for (size_t i = 0; i < t->n; i++) {
        struct desc_service *s = t->svcs[i];
        if (due)
            due[i] = -1;
        if (s->fetch.in_flight && now - s->fetch.sent_at >= DESCRIPTOR_FETCH_TIMEOUT_S)
            fetch_finish(s, now, s->fetch.is_hsfetch ? NULL : "no answer");
        if (!t->online)
            continue;
        for (int slot = 0; t->read_own && slot < 2; slot++) {
            /* Several tors: whose descriptor HSDirs serve changes with each round; look soon after one. */
            struct desc *d = &s->slots[slot];
            enum desc_status st = d->used ? desc_status_of(d) : DESC_STATUS_NONE;
            if ((st == DESC_STATUS_COMPLETE || st == DESC_STATUS_INCOMPLETE) && s->hsfetch_round[slot] != d->round) {
                s->hsfetch_round[slot] = d->round;
                if (s->next_hsfetch_at > now + DESC_FIRST_HSFETCH_S)
                    s->next_hsfetch_at = now + DESC_FIRST_HSFETCH_S;
            }
        }
        if (!s->fetch.in_flight && s->next_hsfetch_at > 0 && now >= s->next_hsfetch_at) {
            if (hsfetch_should_wait(t, s, now))
                s->next_hsfetch_at = now + t->conf.hsfetch_interval;
            else if (due)
                due[i] = s->next_hsfetch_at;
        }
    }
    /* The due hsfetches, paced (pace.h): a burst of due services (the first round of many, a time-period
     * rotation) must not make tor fetch every descriptor from every HSDir at once. */
    size_t in_flight = 0, k;
    for (size_t i = 0; i < t->n; i++)
        in_flight += t->svcs[i]->fetch.in_flight;
    double gap = pace_gap(t->conf.hsfetch_interval, t->n, DESC_HSFETCH_GAP_CAP_S);
    while (due && t->online && (k = pace_pick(&t->pace, due, t->n, in_flight, gap, now)) < t->n) {
        pace_started(&t->pace, now);
        due[k] = -1;
        hsfetch_start(t, t->svcs[k], now);
        in_flight += t->svcs[k]->fetch.in_flight;
        if (!t->svcs[k]->fetch.in_flight)
            break; /* it could not be sent: try again next tick */
    }
    free(due);
    for (size_t i = 0; t->online && i < t->n; i++)
        svc_republish(t, t->svcs[i], now); /* after the hsfetches: one due now goes first */
}

