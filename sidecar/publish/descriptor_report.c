/* descriptor_report.c — the descriptor tracker as JSON (the status socket) and as metrics (see
 * descriptor.h: descriptor_service_to_json, descriptor_to_json, descriptor_metrics).
 *
 * Owns the shape of those views: field names, dates shown from the wall clock, metric families. It only
 * reads the tracker's state (descriptor_int.h), which descriptor.c owns and descriptor_hsfetch.c fills
 * with fetch results; it changes nothing and sends nothing. Its functions stay declared in descriptor.h,
 * so callers (status, report) include one header. */
#include "sidecar/publish/descriptor.h"
#include "sidecar/publish/descriptor_int.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "sidecar/core/metrics.h"

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
    return json_pack("{s:s, s:s, s:o, s:s, s:o, s:o, s:o}", "slot", desc_slot_str(slot), "id", d->id, "created",
                     json_time(t, now, d->created_at), "status", desc_status_str(desc_status_of(d)),
                     "client_fetched", s->client_id[0] ? json_boolean(client) : json_null(), "upload_started",
                     json_time(t, now, d->round_at),
                     "hsdirs", dirs ? dirs : json_array());
}

static json_t *hsfetch_to_json(const struct descriptor_tracker *t, double now, const struct hsfetch_result *p)
{
    if (!p->valid)
        return json_null();
    return json_pack("{s:o, s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "time",
                     json_time(t, now, p->at), "ok", p->ok, "descriptor_id", json_str_or_null(p->desc_id), "slot",
                     p->slot >= 0 ? json_string(desc_slot_str(p->slot)) : json_null(), "asked", (json_int_t)p->asked,
                     "responsible", (json_int_t)p->responsible, "responsible_served",
                     (json_int_t)p->responsible_served, "served", (json_int_t)p->served, "not_found", (json_int_t)p->not_found, "failed",
                     (json_int_t)p->failed, "no_answer", (json_int_t)p->no_answer, "latency_seconds",
                     p->latency >= 0 ? json_real(round(p->latency * 1000) / 1000) : json_null(), "error",
                     json_str_or_null(p->error));
}

json_t *descriptor_service_to_json(const struct descriptor_tracker *t, const char *address)
{
    const struct desc_service *s = desc_svc_find(t, address);
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
                     "descriptors", descs ? descs : json_array(), "probe", hsfetch_to_json(t, now, &s->hsfetch),
                     "probes_ok", (json_int_t)s->hsfetches_ok, "probes_failed", (json_int_t)s->hsfetches_failed);
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
        if (t->svcs[i]->hsfetch.valid)
            rc = metrics_sample(m, "onionfront_probe_hsdirs_serving",
                                (const char *const[]){"service", t->svcs[i]->name, NULL}, t->svcs[i]->hsfetch.served);
    rc = rc || metrics_family(m, "onionfront_probe_success_total", METRICS_COUNTER,
                              "Fetch probes in which at least one HSDir served the descriptor.");
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = metrics_sample(m, "onionfront_probe_success_total",
                            (const char *const[]){"service", t->svcs[i]->name, NULL}, (double)t->svcs[i]->hsfetches_ok);
    rc = rc || metrics_family(m, "onionfront_probe_failure_total", METRICS_COUNTER,
                              "Fetch probes in which no HSDir served the descriptor.");
    for (size_t i = 0; !rc && i < t->n; i++)
        rc = metrics_sample(m, "onionfront_probe_failure_total",
                            (const char *const[]){"service", t->svcs[i]->name, NULL},
                            (double)t->svcs[i]->hsfetches_failed);
    rc = rc || metrics_family(m, "onionfront_probe_latency_seconds", METRICS_GAUGE,
                              "Seconds from HSFETCH to the first copy of the descriptor in the last successful "
                              "fetch probe.");
    for (size_t i = 0; !rc && i < t->n; i++)
        if (t->svcs[i]->hsfetch.valid && t->svcs[i]->hsfetch.latency >= 0)
            rc = metrics_sample(m, "onionfront_probe_latency_seconds",
                                (const char *const[]){"service", t->svcs[i]->name, NULL},
                                t->svcs[i]->hsfetch.latency);
    return rc ? -1 : 0;
}
