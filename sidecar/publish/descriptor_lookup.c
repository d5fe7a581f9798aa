/* descriptor_lookup.c — the lookups on the descriptor tracker's record (descriptor_int.h) and a
 * descriptor's status from its latest upload round, with the log line when that status settles.
 *
 * The low part of the tracker: descriptor.c (the record's life and tor's HS_DESC events),
 * descriptor_hsfetch.c (fetches and re-posts) and descriptor_report.c (JSON and metrics) call it; it
 * calls none of them. */
#include "sidecar/publish/descriptor.h"
#include "sidecar/publish/descriptor_int.h"

#include <stdio.h>
#include <string.h>

#include "sidecar/core/log.h"
#include "sidecar/core/onion_address.h"

const char *desc_slot_str(int slot)
{
    return slot == 0 ? "current" : slot == 1 ? "next" : "unknown";
}

double desc_now(const struct descriptor_tracker *t)
{
    return t->clock(t->clock_arg);
}

/* ---- lookups ---------------------------------------------------------------------------------------- */

struct desc_service *desc_svc_find(const struct descriptor_tracker *t, const char *address)
{
    if (!address)
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (onion_address_equal(t->svcs[i]->address, address))
            return t->svcs[i];
    return NULL;
}

int desc_slot_of_id(const struct desc_service *s, const char *id)
{
    for (int i = 0; i < 2; i++)
        if (s->slots[i].used && id && strcmp(s->slots[i].id, id) == 0)
            return i;
    return -1;
}

struct desc_hsdir *desc_hsdir_find(struct desc *d, const char *fp)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->hsdirs[i].fp, fp) == 0)
            return &d->hsdirs[i];
    return NULL;
}

/* The entry for `fp` in the latest upload round of `d`, or NULL. */
struct desc_hsdir *desc_hsdir_current(struct desc *d, const char *fp)
{
    struct desc_hsdir *h = d->used ? desc_hsdir_find(d, fp) : NULL;
    return h && h->round == d->round ? h : NULL;
}

bool desc_hsdir_holds(const struct desc_hsdir *h)
{
    return h->state == DESC_HSDIR_CONFIRMED || h->state == DESC_HSDIR_PRESENT;
}

/* The slot whose descriptor clients fetch: the one the last fetch requested, else current, else next. */
int desc_target_slot(const struct desc_service *s)
{
    int i = s->client_id[0] ? desc_slot_of_id(s, s->client_id) : -1;
    if (i >= 0)
        return i;
    return s->slots[0].used ? 0 : s->slots[1].used ? 1 : -1;
}

/* ---- status and logging ------------------------------------------------------------------------------ */

struct desc_tally desc_count(const struct desc *d)
{
    struct desc_tally c = {0};
    for (size_t i = 0; d->used && i < d->n; i++) {
        const struct desc_hsdir *h = &d->hsdirs[i];
        if (h->round != d->round)
            continue;
        c.total++;
        if (desc_hsdir_holds(h))
            c.holding++;
        else if (h->state == DESC_HSDIR_FAILED)
            c.failed++;
        else
            c.pending++;
    }
    return c;
}

enum desc_status desc_status_of(const struct desc *d)
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
 * schedule the first hsfetch of the service once its first round has settled. */
void desc_status_changed(struct desc_service *s, int slot, double now)
{
    struct desc *d = &s->slots[slot];
    enum desc_status st = desc_status_of(d);
    if (st != DESC_STATUS_COMPLETE && st != DESC_STATUS_INCOMPLETE)
        return;
    if (!s->hsfetch_armed && s->next_hsfetch_at > 0 && s->next_hsfetch_at > now + DESC_FIRST_HSFETCH_S) {
        s->next_hsfetch_at = now + DESC_FIRST_HSFETCH_S;
        s->hsfetch_armed = true;
    }
    if (st == d->logged)
        return;
    d->logged = st;
    struct desc_tally c = desc_count(d);
    if (st == DESC_STATUS_COMPLETE) {
        log_info_f(LOG_SERVICE(s->name), "service %s: descriptor %.8s (%s) is on all %u responsible HSDirs", s->name,
                   d->id, desc_slot_str(slot), c.total);
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
                 s->name, d->id, desc_slot_str(slot), c.holding, c.total, list);
}
