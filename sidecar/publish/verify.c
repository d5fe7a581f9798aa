/* verify.c — single-onion verification from CIRC events and periodic mode checks (see verify.h).
 *
 * Owns circuit counters per purpose and per service, the mode check's timer and commands. Does not own
 * the control connection (tor.c) or decide anything about it: findings are status values and log lines. */
#include "sidecar/publish/verify.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/config/config.h"
#include "sidecar/core/log.h"
#include "sidecar/core/onion_address.h"
#include "sidecar/tor/single_onion.h"
#include "sidecar/core/metrics.h"

/* control-spec 4.1.1 purposes; anything else is counted as OTHER so labels stay bounded. */
static const char *const verify_purposes[] = {
    "GENERAL",         "HS_CLIENT_INTRO", "HS_CLIENT_REND",  "HS_CLIENT_HSDIR",   "HS_SERVICE_INTRO",
    "HS_SERVICE_REND", "HS_SERVICE_HSDIR", "HS_VANGUARDS",   "TESTING",           "CONTROLLER",
    "MEASURE_TIMEOUT", "PATH_BIAS_TESTING", "CIRCUIT_PADDING", "CONFLUX_UNLINKED", "CONFLUX_LINKED",
    "OTHER",
};
#define VERIFY_N_PURPOSES (sizeof(verify_purposes) / sizeof(verify_purposes[0]))
#define VERIFY_SEEN 256 /* recently counted circuits, so a repeated BUILT is not counted twice */

enum { KIND_INTRO, KIND_REND };

struct vsvc {
    char name[CONFIG_SERVICE_NAME_MAX + 1]; /* "" for other services */
    char address[64];
    unsigned long one_hop[2], multi_hop[2];      /* by KIND_* */
    unsigned long hops[2][VERIFY_MAX_HOPS + 1];  /* by KIND_*, index = hops (capped) */
    unsigned long not_anonymous; /* intro/rend circuits that broke anonymous_circ_fits (anonymous tor) */
    double last_built;
    enum verify_verdict verdict; /* the last verdict logged */
};

struct verify_check; /* one mode check in flight */

struct verify {
    struct event_base *base;
    struct event *timer;
    struct cp_conn *conn;
    unsigned gen;
    struct vsvc **ours;
    size_t n_ours;
    struct vsvc **others;
    size_t n_others;
    unsigned long circuits[VERIFY_N_PURPOSES][VERIFY_MAX_HOPS + 1];
    struct {
        unsigned long id;
        unsigned char purpose;
        bool used;
    } seen[VERIFY_SEEN];
    size_t seen_next;
    enum service_mode kind; /* the kind of tor this is (verify_set_mode): which rules apply */
    enum verify_mode mode;
    char mode_detail[160];
    char mode_problem[220]; /* the violation as "status" lists it */
    double mode_checked;
    struct verify_check *check;
};

struct verify_check {
    struct verify *v; /* NULL once the verifier is freed */
    unsigned gen;
    int answered;
    bool conf_ok, info_ok;
    struct cp_info conf, info;
};

const char *verify_verdict_str(enum verify_verdict v)
{
    switch (v) {
    case VERIFY_UNVERIFIED:
        return "unverified";
    case VERIFY_SINGLE_ONION:
        return "single_onion";
    case VERIFY_NOT_SINGLE_ONION:
        return "not_single_onion";
    case VERIFY_ANONYMOUS:
        return "anonymous";
    case VERIFY_NOT_ANONYMOUS:
        return "not_anonymous";
    }
    return "unknown";
}

const char *verify_mode_str(enum verify_mode m)
{
    switch (m) {
    case VERIFY_MODE_UNKNOWN:
        return "unknown";
    case VERIFY_MODE_OK:
        return "ok";
    case VERIFY_MODE_VIOLATION:
        return "violation";
    }
    return "unknown";
}

static double verify_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t purpose_index(const char *p)
{
    for (size_t i = 0; p && i + 1 < VERIFY_N_PURPOSES; i++)
        if (strcmp(p, verify_purposes[i]) == 0)
            return i;
    return VERIFY_N_PURPOSES - 1;
}

static struct vsvc *vsvc_find(struct vsvc *const *list, size_t n, const char *address)
{
    for (size_t i = 0; address && i < n; i++)
        if (onion_address_equal(list[i]->address, address))
            return list[i];
    return NULL;
}

static const struct vsvc *verify_find(const struct verify *v, const char *address)
{
    const struct vsvc *s = vsvc_find(v->ours, v->n_ours, address);
    return s ? s : vsvc_find(v->others, v->n_others, address);
}

/* The verdict on `s` by the rule of a tor of `kind`. */
static enum verify_verdict vsvc_verdict(const struct vsvc *s, enum service_mode kind)
{
    unsigned long one = s->one_hop[KIND_INTRO] + s->one_hop[KIND_REND];
    unsigned long multi = s->multi_hop[KIND_INTRO] + s->multi_hop[KIND_REND];
    if (kind == SERVICE_MODE_ANONYMOUS && s->not_anonymous > 0)
        return VERIFY_NOT_ANONYMOUS; /* at once: an ordinary tor never retries with one hop */
    if (one + multi < VERIFY_MIN_EVIDENCE)
        return VERIFY_UNVERIFIED;
    if (kind == SERVICE_MODE_ANONYMOUS)
        return VERIFY_ANONYMOUS;
    return one > multi ? VERIFY_SINGLE_ONION : VERIFY_NOT_SINGLE_ONION;
}

static void vsvc_detail(const struct vsvc *s, enum service_mode kind, char *buf, size_t len)
{
    unsigned long one = s->one_hop[KIND_INTRO] + s->one_hop[KIND_REND];
    unsigned long multi = s->multi_hop[KIND_INTRO] + s->multi_hop[KIND_REND];
    switch (vsvc_verdict(s, kind)) {
    case VERIFY_UNVERIFIED:
        snprintf(buf, len, "%lu introduction/rendezvous circuit%s built so far; need %d", one + multi,
                 one + multi == 1 ? "" : "s", VERIFY_MIN_EVIDENCE);
        break;
    case VERIFY_SINGLE_ONION:
        snprintf(buf, len, "%lu of %lu introduction/rendezvous circuits one hop (ONEHOP_TUNNEL); %lu multi-hop "
                 "retr%s", one, one + multi, multi, multi == 1 ? "y" : "ies");
        break;
    case VERIFY_NOT_SINGLE_ONION:
        snprintf(buf, len, "%lu of %lu introduction/rendezvous circuits multi-hop", multi, one + multi);
        break;
    case VERIFY_ANONYMOUS:
        snprintf(buf, len, "all %lu introduction/rendezvous circuits multi-hop (at least %d hops)", one + multi,
                 ANONYMOUS_MIN_HOPS);
        break;
    case VERIFY_NOT_ANONYMOUS:
        snprintf(buf, len, "%lu of %lu introduction/rendezvous circuits had fewer than %d hops or ONEHOP_TUNNEL "
                 "(%lu one hop)", s->not_anonymous, one + multi, ANONYMOUS_MIN_HOPS, one);
        break;
    }
}

/* Log a verdict when it changes. */
static void vsvc_judge(struct vsvc *s, bool ours, enum service_mode kind)
{
    enum verify_verdict now = vsvc_verdict(s, kind);
    if (now == s->verdict)
        return;
    s->verdict = now;
    char detail[160];
    vsvc_detail(s, kind, detail, sizeof(detail));
    if (ours && (now == VERIFY_SINGLE_ONION || now == VERIFY_ANONYMOUS))
        log_info_f(LOG_SERVICE(s->name), "service %s: verified %s: %s", s->name,
                   now == VERIFY_ANONYMOUS ? "anonymous" : "single onion", detail);
    else if (ours && now == VERIFY_NOT_SINGLE_ONION)
        log_warnx_f(LOG_SERVICE(s->name), "service %s: NOT a single onion service: %s", s->name, detail);
    else if (ours && now == VERIFY_NOT_ANONYMOUS)
        log_warnx_f(LOG_SERVICE(s->name), "service %s: NOT ANONYMOUS: %s; introduction and rendezvous relays "
                    "may have seen this server's address", s->name, detail);
    else if (!ours && now != VERIFY_UNVERIFIED)
        log_notice("verify: tor also runs %s.onion, which is not onionfront's: %s (%s)", s->address,
                   verify_verdict_str(now), detail);
}

void verify_on_circ(struct verify *v, const struct cp_event_circ *c)
{
    if (c->status != CP_CIRC_BUILT)
        return;
    size_t p = purpose_index(c->purpose);
    for (size_t i = 0; i < VERIFY_SEEN; i++)
        if (v->seen[i].used && v->seen[i].id == c->id && v->seen[i].purpose == p)
            return; /* counted already */
    v->seen[v->seen_next].id = c->id;
    v->seen[v->seen_next].purpose = (unsigned char)p;
    v->seen[v->seen_next].used = true;
    v->seen_next = (v->seen_next + 1) % VERIFY_SEEN;

    size_t hops = c->n_hops > VERIFY_MAX_HOPS ? VERIFY_MAX_HOPS : c->n_hops;
    v->circuits[p][hops]++;
    bool intro = c->purpose && strcmp(c->purpose, "HS_SERVICE_INTRO") == 0;
    bool rend = c->purpose && strcmp(c->purpose, "HS_SERVICE_REND") == 0;
    if ((!intro && !rend) || !c->rend_query || !c->rend_query[0])
        return;
    bool ours = true;
    struct vsvc *s = vsvc_find(v->ours, v->n_ours, c->rend_query);
    if (!s) {
        ours = false;
        s = vsvc_find(v->others, v->n_others, c->rend_query);
        if (!s && v->n_others < VERIFY_MAX_OTHER) {
            struct vsvc **list = realloc(v->others, (v->n_others + 1) * sizeof(*list));
            if (list)
                v->others = list;
            if (list && (s = calloc(1, sizeof(*s)))) {
                snprintf(s->address, sizeof(s->address), "%s", c->rend_query);
                v->others[v->n_others++] = s;
            }
        }
        if (!s)
            return;
    }
    int kind = intro ? KIND_INTRO : KIND_REND;
    bool one = single_onion_circ_fits(c);
    if (one)
        s->one_hop[kind]++;
    else
        s->multi_hop[kind]++;
    if (v->kind == SERVICE_MODE_ANONYMOUS && !anonymous_circ_fits(c))
        s->not_anonymous++;
    s->hops[kind][hops]++;
    s->last_built = verify_wall();
    if (!one && ours && v->kind == SERVICE_MODE_SINGLE)
        log_debug_f(LOG_SERVICE(s->name), "service %s: %s circuit %lu built with %zu hop%s%s", s->name, c->purpose,
                    c->id, c->n_hops, c->n_hops == 1 ? "" : "s",
                    c->build_flags & CP_BUILD_ONEHOP_TUNNEL ? "" : " (no ONEHOP_TUNNEL)");
    vsvc_judge(s, ours, v->kind);
}

/* ---- mode ------------------------------------------------------------------------------------------- */

enum verify_mode verify_on_mode(struct verify *v, const struct cp_info *conf, const struct cp_info *listeners)
{
    enum verify_mode mode = VERIFY_MODE_OK;
    char detail[sizeof(v->mode_detail)] = "";
    struct single_onion_problem p;
    bool anonymous = v->kind == SERVICE_MODE_ANONYMOUS;
    const char *what = anonymous ? "the anonymous services' tor is no longer an ordinary tor"
                                 : "tor is no longer in single-onion mode";
    if (!conf || !listeners) {
        mode = VERIFY_MODE_UNKNOWN;
        snprintf(detail, sizeof(detail), "tor did not answer the mode check");
    } else if (!(anonymous ? anonymous_tor_check(conf, listeners, &p) : single_onion_check(conf, listeners, &p))) {
        mode = VERIFY_MODE_VIOLATION;
        if (p.listener)
            snprintf(detail, sizeof(detail), "tor has a client port open (%s=%.60s)", p.key, p.value);
        else
            snprintf(detail, sizeof(detail), "%s is %s, not %s", p.key, p.value ? p.value : "unset", p.want);
    }
    v->mode_checked = verify_wall();
    if (mode != v->mode || strcmp(detail, v->mode_detail) != 0) {
        if (mode == VERIFY_MODE_VIOLATION)
            log_warnx("verify: %s: %s; its services are not what onionfront promises", what, detail);
        else if (mode == VERIFY_MODE_OK)
            log_info("verify: tor mode %s: %s, no client ports", v->mode == VERIFY_MODE_VIOLATION ? "restored" : "checked",
                     anonymous ? "ordinary (multi-hop)" : "single-hop, non-anonymous");
        else
            log_info("verify: tor mode unknown: %s", detail);
    }
    snprintf(v->mode_problem, sizeof(v->mode_problem), "%s: %s", what, detail);
    v->mode = mode;
    snprintf(v->mode_detail, sizeof(v->mode_detail), "%s", detail);
    return mode;
}

static void verify_check_done(struct verify_check *k)
{
    struct verify *v = k->v;
    if (v && v->check == k)
        v->check = NULL;
    if (v && k->gen == v->gen)
        verify_on_mode(v, k->conf_ok ? &k->conf : NULL, k->info_ok ? &k->info : NULL);
    cp_info_clear(&k->conf);
    cp_info_clear(&k->info);
    free(k);
}

static void verify_reply(struct verify_check *k, const struct cp_reply *r, struct cp_info *out, bool *ok)
{
    char err[256];
    *ok = r && cp_reply_is_ok(r) && cp_info_parse(r, out, err, sizeof(err)) == 0;
    if (++k->answered == 2)
        verify_check_done(k);
}

static void verify_conf_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct verify_check *k = arg;
    (void)c;
    (void)err;
    verify_reply(k, r, &k->conf, &k->conf_ok);
}

static void verify_info_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct verify_check *k = arg;
    (void)c;
    (void)err;
    verify_reply(k, r, &k->info, &k->info_ok);
}

static void verify_check_start(struct verify *v)
{
    char err[256];
    if (!v->conn || v->check)
        return;
    char *conf = cp_cmd_getconf(single_onion_conf_keys, SINGLE_ONION_N_CONF, err, sizeof(err));
    char *info = cp_cmd_getinfo(single_onion_listener_keys, SINGLE_ONION_N_LISTENERS, err, sizeof(err));
    struct verify_check *k = conf && info ? calloc(1, sizeof(*k)) : NULL;
    if (!k) {
        log_error("verify: cannot build the mode check: %s", conf && info ? "out of memory" : err);
        free(conf);
        free(info);
        return;
    }
    k->v = v;
    k->gen = v->gen;
    v->check = k;
    /* Each accepted command completes exactly once; a refused one counts as answered (no reply). */
    if (cp_conn_send(v->conn, conf, verify_conf_cb, k, err, sizeof(err)) < 0)
        verify_reply(k, NULL, &k->conf, &k->conf_ok);
    if (cp_conn_send(v->conn, info, verify_info_cb, k, err, sizeof(err)) < 0)
        verify_reply(k, NULL, &k->info, &k->info_ok);
    free(conf);
    free(info);
}

static void verify_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct verify *v = arg;
    (void)fd;
    (void)what;
    verify_check_start(v);
}

static void verify_circ_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct verify *v = arg;
    struct cp_event_circ e;
    char err[256];
    if (c != v->conn)
        return;
    if (cp_event_circ_parse(ev, &e, err, sizeof(err)) < 0) {
        log_debug("verify: undecodable CIRC event: %s", err);
        return;
    }
    verify_on_circ(v, &e);
    cp_event_circ_clear(&e);
}

/* ---- lifecycle ----------------------------------------------------------------------------------------- */

struct verify *verify_new(struct event_base *base)
{
    struct verify *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->base = base;
    if (base && !(v->timer = event_new(base, -1, EV_PERSIST, verify_timer_cb, v))) {
        free(v);
        return NULL;
    }
    return v;
}

void verify_free(struct verify *v)
{
    if (!v)
        return;
    if (v->check)
        v->check->v = NULL; /* completes later into nothing */
    if (v->timer)
        event_free(v->timer);
    for (size_t i = 0; i < v->n_ours; i++)
        free(v->ours[i]);
    for (size_t i = 0; i < v->n_others; i++)
        free(v->others[i]);
    free(v->ours);
    free(v->others);
    free(v);
}

int verify_set_services(struct verify *v, const char *const *names, const char *const *addresses, size_t n)
{
    struct vsvc **next = calloc(n ? n : 1, sizeof(*next));
    bool *kept = calloc(v->n_ours ? v->n_ours : 1, sizeof(*kept));
    size_t k = 0;
    if (!next || !kept)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        if (!addresses[i] || strlen(addresses[i]) != 56 || vsvc_find(next, k, addresses[i]))
            continue;
        struct vsvc *s = NULL;
        for (size_t j = 0; j < v->n_ours && !s; j++)
            if (!kept[j] && onion_address_equal(v->ours[j]->address, addresses[i])) {
                s = v->ours[j];
                kept[j] = true;
            }
        if (!s) {
            /* A service that was "other" (e.g. added before onionfront knew it) keeps its counts. */
            for (size_t j = 0; j < v->n_others && !s; j++)
                if (onion_address_equal(v->others[j]->address, addresses[i])) {
                    s = v->others[j];
                    v->others[j] = v->others[--v->n_others];
                }
        }
        if (!s && !(s = calloc(1, sizeof(*s)))) {
            for (size_t j = 0; j < k; j++) {
                bool old = false;
                for (size_t m = 0; m < v->n_ours && !old; m++)
                    old = v->ours[m] == next[j];
                if (!old)
                    free(next[j]);
            }
            goto oom;
        }
        snprintf(s->address, sizeof(s->address), "%s", addresses[i]);
        snprintf(s->name, sizeof(s->name), "%s", names[i] ? names[i] : "");
        next[k++] = s;
    }
    for (size_t j = 0; j < v->n_ours; j++)
        if (!kept[j])
            free(v->ours[j]);
    free(v->ours);
    free(kept);
    v->ours = next;
    v->n_ours = k;
    return 0;
oom:
    free(next);
    free(kept);
    return -1;
}

void verify_attach(struct verify *v, struct cp_conn *conn)
{
    v->conn = conn;
    v->gen++;
    if (v->check) {
        v->check->v = NULL; /* an answer from the old connection means nothing now */
        v->check = NULL;
    }
    if (conn)
        cp_conn_subscribe(conn, "CIRC", verify_circ_cb, v);
    verify_check_start(v);
    if (v->timer)
        event_add(v->timer, &(struct timeval){VERIFY_MODE_INTERVAL_S, 0});
}

void verify_detach(struct verify *v)
{
    v->conn = NULL;
    v->gen++;
    if (v->check) {
        v->check->v = NULL;
        v->check = NULL;
    }
    if (v->timer)
        event_del(v->timer);
    v->mode = VERIFY_MODE_UNKNOWN;
    snprintf(v->mode_detail, sizeof(v->mode_detail), "no connection to tor");
}

/* ---- queries ------------------------------------------------------------------------------------------- */

enum verify_verdict verify_service_verdict(const struct verify *v, const char *address)
{
    const struct vsvc *s = verify_find(v, address);
    return s ? vsvc_verdict(s, v->kind) : VERIFY_UNVERIFIED;
}

enum verify_mode verify_mode_state(const struct verify *v)
{
    return v->mode;
}

const char *verify_mode_detail(const struct verify *v)
{
    return v->mode_detail;
}

const char *verify_mode_problem(const struct verify *v)
{
    return v->mode == VERIFY_MODE_VIOLATION ? v->mode_problem : "";
}

void verify_set_mode(struct verify *v, enum service_mode kind)
{
    v->kind = kind;
}

bool verify_verdict_is_violation(enum verify_verdict v)
{
    return v == VERIFY_NOT_SINGLE_ONION || v == VERIFY_NOT_ANONYMOUS;
}

const char *verify_verdict_problem(enum verify_verdict v)
{
    if (v == VERIFY_NOT_ANONYMOUS)
        return "NOT anonymous: an introduction or rendezvous circuit had fewer than 3 hops";
    return v == VERIFY_NOT_SINGLE_ONION ? "not a single onion service (its circuits are mostly multi-hop)" : "";
}

int verify_service_counts(const struct verify *v, const char *address, struct verify_counts *out)
{
    const struct vsvc *s = verify_find(v, address);
    memset(out, 0, sizeof(*out));
    if (!s)
        return -1;
    out->intro_one_hop = s->one_hop[KIND_INTRO];
    out->intro_multi_hop = s->multi_hop[KIND_INTRO];
    out->rend_one_hop = s->one_hop[KIND_REND];
    out->rend_multi_hop = s->multi_hop[KIND_REND];
    out->not_anonymous = s->not_anonymous;
    return 0;
}

unsigned long verify_circuits(const struct verify *v, const char *purpose, unsigned hops)
{
    size_t p = purpose_index(purpose);
    return hops <= VERIFY_MAX_HOPS ? v->circuits[p][hops] : 0;
}

static void hops_label(size_t h, char *buf, size_t len)
{
    snprintf(buf, len, h == VERIFY_MAX_HOPS ? "%zu+" : "%zu", h);
}

static json_t *json_time(double at)
{
    char buf[32];
    time_t sec = (time_t)at;
    struct tm tm;
    if (at <= 0 || !gmtime_r(&sec, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        return json_null();
    return json_string(buf);
}

static json_t *kind_to_json(const struct vsvc *s, int kind)
{
    json_t *hops = json_object();
    for (size_t h = 0; hops && h <= VERIFY_MAX_HOPS; h++) {
        char label[8];
        if (!s->hops[kind][h])
            continue;
        hops_label(h, label, sizeof(label));
        json_object_set_new(hops, label, json_integer((json_int_t)s->hops[kind][h]));
    }
    return json_pack("{s:I, s:I, s:o}", "one_hop", (json_int_t)s->one_hop[kind], "multi_hop",
                     (json_int_t)s->multi_hop[kind], "hops", hops ? hops : json_object());
}

static json_t *vsvc_to_json(const struct vsvc *s, bool ours, enum service_mode kind)
{
    char detail[160];
    vsvc_detail(s, kind, detail, sizeof(detail));
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "address", s->address, "verdict",
                          verify_verdict_str(vsvc_verdict(s, kind)), "detail", detail, "intro", kind_to_json(s, KIND_INTRO),
                          "rend", kind_to_json(s, KIND_REND), "last_built", json_time(s->last_built));
    if (o && ours)
        json_object_set_new(o, "service", json_string(s->name));
    return o;
}

json_t *verify_service_to_json(const struct verify *v, const char *address)
{
    const struct vsvc *s = vsvc_find(v->ours, v->n_ours, address);
    return s ? vsvc_to_json(s, true, v->kind) : NULL;
}

json_t *verify_to_json(const struct verify *v)
{
    json_t *ours = json_array(), *others = json_array(), *circs = json_object();
    for (size_t i = 0; ours && i < v->n_ours; i++)
        json_array_append_new(ours, vsvc_to_json(v->ours[i], true, v->kind));
    for (size_t i = 0; others && i < v->n_others; i++)
        json_array_append_new(others, vsvc_to_json(v->others[i], false, v->kind));
    for (size_t p = 0; circs && p < VERIFY_N_PURPOSES; p++) {
        json_t *byhops = NULL;
        for (size_t h = 0; h <= VERIFY_MAX_HOPS; h++) {
            char label[8];
            if (!v->circuits[p][h])
                continue;
            if (!byhops && !(byhops = json_object()))
                break;
            hops_label(h, label, sizeof(label));
            json_object_set_new(byhops, label, json_integer((json_int_t)v->circuits[p][h]));
        }
        if (byhops)
            json_object_set_new(circs, verify_purposes[p], byhops);
    }
    return json_pack("{s:{s:s, s:s, s:o}, s:o, s:o, s:o}", "mode", "state", verify_mode_str(v->mode), "detail",
                     v->mode_detail, "checked", json_time(v->mode_checked), "services", ours ? ours : json_array(),
                     "other_services", others ? others : json_array(), "circuits", circs ? circs : json_object());
}

int verify_metrics(const struct verify *v, struct metrics *m)
{
    int rc = metrics_family(m, "onionfront_circuits_total", METRICS_COUNTER,
                            "Circuits of onionfront's tor that reached BUILT, by purpose and hop count.");
    for (size_t p = 0; !rc && p < VERIFY_N_PURPOSES; p++)
        for (size_t h = 0; !rc && h <= VERIFY_MAX_HOPS; h++) {
            char label[8];
            if (!v->circuits[p][h])
                continue;
            hops_label(h, label, sizeof(label));
            rc = metrics_sample(m, "onionfront_circuits_total",
                                (const char *const[]){"purpose", verify_purposes[p], "hops", label, NULL},
                                (double)v->circuits[p][h]);
        }
    rc = rc || metrics_family(m, "onionfront_service_verified", METRICS_GAUGE,
                              "1 if the service's introduction and rendezvous circuits show its mode (a single "
                              "onion: mostly one hop; an anonymous service: all multi-hop), else 0.");
    for (size_t i = 0; !rc && i < v->n_ours; i++) {
        enum verify_verdict vv = vsvc_verdict(v->ours[i], v->kind);
        rc = metrics_sample(m, "onionfront_service_verified", (const char *const[]){"service", v->ours[i]->name, NULL},
                            vv == VERIFY_SINGLE_ONION || vv == VERIFY_ANONYMOUS ? 1 : 0);
    }
    rc = rc || metrics_family(m, "onionfront_tor_mode_ok", METRICS_GAUGE,
                              "1 if tor's last mode check found single-hop, non-anonymous mode and no client "
                              "ports, 0 on a violation; no sample while unknown.");
    if (!rc && v->mode != VERIFY_MODE_UNKNOWN)
        rc = metrics_sample(m, "onionfront_tor_mode_ok", NULL, v->mode == VERIFY_MODE_OK ? 1 : 0);
    return rc ? -1 : 0;
}
