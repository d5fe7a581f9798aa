/* probe.c — the end-to-end probe through onionfront's own client tor (see probe.h). Each service's
 * probe (schedule, HSFETCH and fetch through the client tor, result, the repair ladder's next step) is
 * one cycle over one struct probe_svc, and the client tor it runs through exists only for it. */
#include "sidecar/probe/probe.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_conn.h"
#include "controlproto/cp_event.h"
#include "sidecar/datapath/check_http.h"
#include "sidecar/core/clock.h"
#include "sidecar/config/config.h"
#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include "sidecar/identity/probeauth.h"
#include "sidecar/probe/certwatch.h"
#include "sidecar/identity/service_id.h"
#include "sidecar/tor/tor.h"
#include "sidecar/core/pace.h"

#define PROBE_BODY_MAX 65536 /* bytes kept for body_contains; the rest is read and dropped */
#define PROBE_TICK_MS 500
static const double probe_buckets[] = {0.25, 0.5, 1, 2, 5, 10, 30, 60};
#define PROBE_N_BUCKETS (sizeof(probe_buckets) / sizeof(probe_buckets[0]))

enum probe_phase { PHASE_IDLE, PHASE_AUTH, PHASE_DESCRIPTOR, PHASE_FETCH }; /* AUTH: ONION_CLIENT_AUTH_* sent */

struct probe_result {
    bool ok;
    enum probe_stage stage;
    char detail[160];
    double desc_s, ttfb_s; /* < 0: not measured */
    long http_status;
    time_t time;
};

struct probe_svc {
    struct probe *p;
    char address[57];
    char name[CONFIG_SERVICE_NAME_MAX + 1];
    bool live;   /* seen in the last sync */
    bool tls_fetch;            /* the fetch in flight is https on a "tls" port */
    struct certwatch_svc *tls; /* that port's certificates (certwatch.h); NULL without one */
    bool keyless;   /* this pass holds no key for the service (the first of a private service's two) */
    bool withdrawn; /* service_id_withdrawn: off every tor, not probed until a reload */
    enum probe_keyless keyless_verdict;
    char keyless_detail[160];
    time_t keyless_time;
    bool armed;  /* published (probe_may_arm): probing may begin; else starting */
    uint64_t published_seen_ms; /* when the action first answered at least SOME; 0: not yet */
    double publish_since;       /* only upload rounds begun since then count (its tor restarted); 0: any */
    enum probe_phase phase;
    uint64_t next_ms, started_ms, desc_deadline_ms;
    double desc_s;
    struct check_http *xfer;
    char *body;
    size_t body_len;
    struct ladder ladder;
    enum ladder_state logged_state;
    struct probe_result last;
    time_t last_success, down_since_wall, recovered_wall, tried_wall[LADDER_N_STEPS];
    char declined[160]; /* the restart_tor step of this outage was not done: why */
    unsigned long runs[PROBE_N_STAGES];
    unsigned long repairs[LADDER_N_STEPS];
    unsigned long ttfb_buckets[PROBE_N_BUCKETS];
    unsigned long ttfb_count;
    double ttfb_sum;
};

struct probe {
    struct event_base *base;
    const struct config *conf;
    const struct service_ids *ids;
    struct probe_actions actions;
    struct tor_sup *tor;
    struct cp_conn *conn; /* the client tor's, while ready */
    struct check_http_loop *curl;
    struct event *tick_ev;
    unsigned long seq; /* SOCKS usernames: one per probe */
    struct pace pace;  /* the spread of probe starts (pace.h) */
    /* One array for the largest config, on the heap with the probe: a slot stays put while its probe
     * runs (the probe holds its address). */
    struct probe_svc svcs[CONFIG_MAX_SERVICES];
    size_t n;
    double due[CONFIG_MAX_SERVICES]; /* probe_tick_cb's: each slot's next start, for pace_pick */
};

static const char *const probe_stage_names[] = {"ok",     "descriptor", "introduction", "rendezvous",
                                                "stream", "http",       "open",         "client"};
static const char *const probe_keyless_names[] = {"none", "refused", "inconclusive", "open"};

const char *probe_keyless_str(enum probe_keyless k)
{
    return (unsigned)k <= PROBE_KEYLESS_OPEN ? probe_keyless_names[k] : "unknown";
}

enum probe_keyless probe_keyless_judge(bool connected, int socks_code)
{
    if (connected)
        return PROBE_KEYLESS_OPEN;
    /* socks-extensions.txt: F4 "Onion Service Missing Client Authorization" — the descriptor's inner layer
     * did not decrypt without a key. Anything else proves nothing either way. */
    return socks_code == 0xF4 ? PROBE_KEYLESS_REFUSED : PROBE_KEYLESS_INCONCLUSIVE;
}

const char *probe_stage_str(enum probe_stage s)
{
    return (unsigned)s < PROBE_N_STAGES ? probe_stage_names[s] : "unknown";
}

enum probe_stage probe_stage_of_socks(int code)
{
    /* tor's SocksPort ExtendedErrors (tor-spec / socks-extensions.txt 3): F0 descriptor not found, F1
     * descriptor invalid, F2 introduction failed, F3 rendezvous failed, F4/F5 client authorization
     * missing/wrong (the descriptor cannot be read), F6 bad address, F7 introduction timed out. */
    switch (code) {
    case 0xF0: case 0xF1: case 0xF4: case 0xF5: case 0xF6: return PROBE_STAGE_DESCRIPTOR;
    case 0xF2: case 0xF7: return PROBE_STAGE_INTRODUCTION;
    case 0xF3: return PROBE_STAGE_RENDEZVOUS;
    default: return PROBE_STAGE_STREAM;
    }
}

/* ---- results and the ladder ---------------------------------------------------------------------- */

static void probe_iso(time_t t, char *out, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Wait probe.interval +-10 % (never less than a second). */
static uint64_t probe_next_wait_ms(const struct probe *p)
{
    uint64_t base = (uint64_t)p->conf->probe.interval * 1000;
    uint64_t span = base / 5;
    uint64_t w = base - span / 2 + (span ? arc4random_uniform((uint32_t)span + 1) : 0);
    return w < 1000 ? 1000 : w;
}

static void probe_take_step(struct probe_svc *s, enum ladder_step step)
{
    struct probe *p = s->p;
    char why[300], msg[600];
    s->repairs[step]++;
    s->tried_wall[step] = time(NULL);
    snprintf(why, sizeof(why), "service %s unreachable end to end (%s: %s)", s->name, probe_stage_str(s->last.stage),
             s->last.detail);
    switch (step) {
    case LADDER_STEP_REPOST:
        log_warnx("probe: %s; repair step 1: re-posting its descriptor", why);
        if (p->actions.repost(p->actions.arg, s->address) < 0)
            log_notice("probe: service %s: the descriptor could not be re-posted (its tor is not ready)", s->name);
        break;
    case LADDER_STEP_REPUBLISH:
        log_warnx("probe: %s after the re-post; repair step 2: re-publishing it alone on its tor (new descriptors; "
                  "the other services untouched)", why);
        if (p->actions.republish(p->actions.arg, s->address) < 0)
            log_notice("probe: service %s: it could not be re-published (its tor is not ready)", s->name);
        break;
    case LADDER_STEP_RESTART_TOR:
        msg[0] = '\0';
        if (p->actions.restart_tor(p->actions.arg, s->address, why, msg, sizeof(msg)) > 0) {
            log_warnx("probe: %s after re-publishing it; repair step 3: restarting its tor: %s", why, msg);
        } else {
            snprintf(s->declined, sizeof(s->declined), "%.*s", (int)sizeof(s->declined) - 1, msg);
            log_warnx("probe: %s after re-publishing it; repair step 3: not restarting its tor: %s", why, msg);
        }
        break;
    case LADDER_STEP_ALERT:
        log_warnx("probe: %s after re-posting, re-publishing%s; nothing left to try, alerting (status, metrics)", why,
                  s->declined[0] ? "" : " and restarting tor");
        break;
    case LADDER_STEP_NONE:
        break;
    }
}

/* Is the service's tor gone (restarting)? Then, unless it is in an outage (whose ladder goes on: a tor
 * that does not come back must not hold it at a step), it is starting again: not probed until an upload
 * round begun after this is confirmed. */
static bool probe_svc_tor_gone(struct probe_svc *s, uint64_t now_ms)
{
    struct probe *p = s->p;
    if (s->ladder.step != LADDER_STEP_NONE ||
        p->actions.published(p->actions.arg, s->address, s->publish_since) != PROBE_PUBLISHED_NO_TOR)
        return false;
    if (s->armed)
        log_info("probe: service %s: no tor hosting it is up; starting again once it is published anew", s->name);
    s->armed = false;
    s->published_seen_ms = 0;
    s->publish_since = (double)now_ms / 1000.0;
    ladder_start_over(&s->ladder);
    s->logged_state = LADDER_STARTING;
    return true;
}

/* The one funnel of a counted probe: record, judge, repair, log state changes. */
static void probe_done(struct probe_svc *s, const struct probe_result *r)
{
    struct probe *p = s->p;
    s->phase = PHASE_IDLE;
    s->xfer = NULL;
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
    /* From its start, so the spread of starts (pace.h) stays as it was. */
    uint64_t now = clock_now_ms();
    s->next_ms = s->started_ms + probe_next_wait_ms(p);
    if (s->next_ms < now + 1000)
        s->next_ms = now + 1000;
    if (r->stage == PROBE_STAGE_CLIENT) {
        log_info("probe: service %s: not probed: %s", s->name, r->detail);
        return;
    }
    if (!r->ok && r->stage != PROBE_STAGE_OPEN && probe_svc_tor_gone(s, now))
        return; /* its tor went away under the probe: not the service's failure */
    s->last = *r;
    s->runs[r->stage]++;
    if (r->stage == PROBE_STAGE_OPEN) {
        /* Not a repair's business (a re-post or a restart would publish it open again): off every tor. */
        char why[512];
        snprintf(why, sizeof(why), "service %s: WITHDRAWN from every tor: reachable without client authorization "
                 "(%s). Check its authorized_clients on every tor, then reload onionfront", s->name, r->detail);
        if (!s->withdrawn)
            log_error("probe: %s", why);
        s->withdrawn = true;
        if (p->actions.withdraw)
            p->actions.withdraw(p->actions.arg, s->address, why);
        return;
    }
    if (r->ok) {
        s->last_success = r->time;
        if (r->ttfb_s >= 0) {
            s->ttfb_count++;
            s->ttfb_sum += r->ttfb_s;
            for (size_t i = 0; i < PROBE_N_BUCKETS; i++)
                if (r->ttfb_s <= probe_buckets[i])
                    s->ttfb_buckets[i]++;
        }
    }
    log_debug("probe: service %s: %s%s%s (descriptor %.2f s, first byte %.2f s)", s->name,
              r->ok ? "ok" : probe_stage_str(r->stage), r->detail[0] ? ": " : "", r->detail, r->desc_s, r->ttfb_s);
    bool was_down = s->ladder.state == LADDER_DOWN;
    enum ladder_step step = ladder_feed(&s->ladder, r->ok, (double)clock_now_ms() / 1000.0);
    if (s->ladder.state == LADDER_DOWN && !was_down)
        s->down_since_wall = r->time;
    if (was_down && s->ladder.state != LADDER_DOWN) {
        s->recovered_wall = r->time;
        memset(s->tried_wall, 0, sizeof(s->tried_wall));
        s->declined[0] = '\0';
    }
    if (s->ladder.state != s->logged_state) {
        if (s->ladder.state == LADDER_DOWN)
            log_warnx("probe: service %s is down end to end: %s: %s", s->name, probe_stage_str(r->stage), r->detail);
        else if (was_down)
            log_notice("probe: service %s is reachable again end to end (first byte after %.2f s)", s->name,
                       r->ttfb_s);
        else
            log_info("probe: service %s: %s -> %s", s->name, ladder_state_str(s->logged_state),
                     ladder_state_str(s->ladder.state));
        s->logged_state = s->ladder.state;
    }
    if (step != LADDER_STEP_NONE)
        probe_take_step(s, step);
}

/* ---- the fetch ----------------------------------------------------------------------------------- */

static size_t probe_body_cb(char *ptr, size_t size, size_t nmemb, void *userp)
{
    struct probe_svc *s = userp;
    size_t n = size * nmemb;
    if (s->body_len < PROBE_BODY_MAX) {
        size_t take = n < PROBE_BODY_MAX - s->body_len ? n : PROBE_BODY_MAX - s->body_len;
        char *b = realloc(s->body, s->body_len + take + 1);
        if (!b)
            return 0;
        memcpy(b + s->body_len, ptr, take);
        s->body = b;
        s->body_len += take;
        b[s->body_len] = '\0';
    }
    return n;
}

/* The SOCKS5 reply code in curl's message ("Can't complete SOCKS5 connection to X. (240)"), or -1. */
static int probe_socks_code(const char *errbuf)
{
    const char *open = strrchr(errbuf, '(');
    int code = -1;
    if (open && strstr(errbuf, "SOCKS5") && sscanf(open, "(%d)", &code) == 1)
        return code;
    return -1;
}

static bool probe_status_expected(const struct probe_target_conf *t, long status)
{
    if (t->n_expect_status == 0)
        return status >= 200 && status < 400;
    for (size_t i = 0; i < t->n_expect_status; i++)
        if (t->expect_status[i] == status)
            return true;
    return false;
}

static void probe_auth_send(struct probe_svc *s, bool add);

/* The keyless pass of a private service is over: open is a finding of its own; otherwise the keyed pass. */
static void probe_keyless_done(struct probe_svc *s, CURLcode rc, const char *why)
{
    int code = rc == CURLE_OK ? -1 : probe_socks_code(why);
    s->xfer = NULL;
    s->keyless_time = time(NULL);
    s->keyless_verdict = probe_keyless_judge(rc == CURLE_OK, code);
    snprintf(s->keyless_detail, sizeof(s->keyless_detail), "%s",
             rc == CURLE_OK ? "a client without a key opened a stream to it" : why);
    log_debug("probe: service %s: without a key: %s (%s)", s->name, probe_keyless_str(s->keyless_verdict),
              s->keyless_detail);
    if (s->keyless_verdict == PROBE_KEYLESS_OPEN) {
        struct probe_result r = {.time = s->keyless_time, .stage = PROBE_STAGE_OPEN, .desc_s = s->desc_s,
                                 .ttfb_s = -1};
        snprintf(r.detail, sizeof(r.detail), "%s", s->keyless_detail);
        probe_done(s, &r);
        return;
    }
    s->keyless = false;
    probe_auth_send(s, true);
}

static void probe_fetch_done_cb(CURL *easy, CURLcode rc, const char *errbuf, void *arg)
{
    struct probe_svc *s = arg;
    if (s->keyless) {
        probe_keyless_done(s, rc, errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc));
        return;
    }
    if (s->tls_fetch && s->tls)
        certwatch_onion_done(s->tls, easy, rc, errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc));
    const struct service_conf *sc = config_find_service(s->p->conf, s->name);
    struct probe_result r = {.time = time(NULL), .desc_s = s->desc_s, .ttfb_s = -1};
    curl_off_t t = 0;
    long connect_code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r.http_status);
    curl_easy_getinfo(easy, CURLINFO_HTTP_CONNECTCODE, &connect_code);
    const char *why = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
    bool http = sc && sc->probe.type == PROBE_TARGET_HTTP;
    curl_off_t connected = 0;
    curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connected);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(easy, http ? CURLINFO_STARTTRANSFER_TIME_T : CURLINFO_CONNECT_TIME_T, &t);
        r.ttfb_s = (double)t / 1e6;
        if (http && !probe_status_expected(&sc->probe, r.http_status)) {
            r.stage = PROBE_STAGE_HTTP;
            snprintf(r.detail, sizeof(r.detail), "HTTP %ld is not an expected status", r.http_status);
        } else if (http && sc->probe.body_contains[0] && (!s->body || !strstr(s->body, sc->probe.body_contains))) {
            r.stage = PROBE_STAGE_HTTP;
            snprintf(r.detail, sizeof(r.detail), "HTTP %ld without the expected text in the first %d bytes",
                     r.http_status, PROBE_BODY_MAX);
        } else {
            r.ok = true;
            if (http)
                snprintf(r.detail, sizeof(r.detail), "HTTP %ld", r.http_status);
        }
    } else if (rc == CURLE_PROXY || rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR ||
               rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING) {
        int code = probe_socks_code(why);
        if (code >= 0)
            r.stage = probe_stage_of_socks(code);
        else if (connected > 0)
            r.stage = PROBE_STAGE_HTTP; /* the stream opened; the answer failed */
        else if (rc == CURLE_COULDNT_CONNECT)
            r.stage = PROBE_STAGE_CLIENT; /* the SOCKS socket itself */
        else
            r.stage = PROBE_STAGE_STREAM;
        snprintf(r.detail, sizeof(r.detail), "%s%s", why, code >= 0 ? " (tor's SOCKS5 reply)" : "");
    } else {
        r.stage = connected > 0 ? PROBE_STAGE_HTTP : PROBE_STAGE_STREAM;
        snprintf(r.detail, sizeof(r.detail), "%s", why);
    }
    if (!sc) {
        r.stage = PROBE_STAGE_CLIENT;
        snprintf(r.detail, sizeof(r.detail), "the service was removed during the probe");
    }
    probe_done(s, &r);
}

static void probe_fail_now(struct probe_svc *s, enum probe_stage stage, const char *what)
{
    struct probe_result r = {.time = time(NULL), .stage = stage, .desc_s = s->desc_s, .ttfb_s = -1};
    snprintf(r.detail, sizeof(r.detail), "%s", what);
    probe_done(s, &r);
}

/* A "tls" probe port: read each backend's certificate beside the visitor's (certwatch.h). */
static void probe_tls_watch(struct probe_svc *s, const struct port_conf *tp, unsigned timeout_ms)
{
    if (!tp || !tp->tls) {
        certwatch_free(s->tls);
        s->tls = NULL;
        return;
    }
    if (!s->tls && !(s->tls = certwatch_new(s->address)))
        return;
    if (!s->keyless)
        certwatch_check_backends(s->tls, s->p->curl, tp, timeout_ms);
}

/* The descriptor is in (or its fetch is over): connect through a fresh circuit. */
static void probe_fetch(struct probe_svc *s)
{
    struct probe *p = s->p;
    const struct service_conf *sc = config_find_service(p->conf, s->name);
    char url[CONFIG_HTTP_PATH_MAX + 128], proxy[300], user[48], err[256];
    uint64_t now = clock_now_ms(), end = s->started_ms + (uint64_t)p->conf->probe.timeout * 1000;
    if (!sc) {
        probe_fail_now(s, PROBE_STAGE_CLIENT, "the service was removed");
        return;
    }
    s->phase = PHASE_FETCH;
    const struct probe_target_conf *t = &sc->probe;
    const struct port_conf *tp = service_conf_find_port(sc, t->port);
    s->tls_fetch = tp && tp->tls && !s->keyless;
    probe_tls_watch(s, tp, end > now ? (unsigned)(end - now) : 1000);
    char port[8] = "";
    if (t->port != (s->tls_fetch ? 443 : 80))
        snprintf(port, sizeof(port), ":%u", (unsigned)t->port);
    snprintf(url, sizeof(url), "%s://%s.onion%s%s", s->tls_fetch ? "https" : "http", s->address, port,
             t->type == PROBE_TARGET_HTTP ? t->path : "/");
    snprintf(proxy, sizeof(proxy), "socks5h://localhost%s", tor_sup_socks_socket(p->tor));
    snprintf(user, sizeof(user), "onionfront-probe-%s%lu", s->keyless ? "nokey-" : "", ++p->seq);
    CURL *e = curl_easy_init();
    if (!e) {
        probe_fail_now(s, PROBE_STAGE_CLIENT, "out of memory");
        return;
    }
    /* libcurl >= 7.84: a SOCKS proxy on a unix socket is "socks5h://localhost/path/to/socket". */
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROXY, proxy);
    curl_easy_setopt(e, CURLOPT_PROXYUSERNAME, user); /* IsolateSOCKSAuth: a circuit of its own */
    curl_easy_setopt(e, CURLOPT_PROXYPASSWORD, "x");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "onionfront-probe");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, probe_body_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    if (s->tls_fetch)
        certwatch_prepare(e);
    if (t->type == PROBE_TARGET_CONNECT || s->keyless) /* without a key only the stream's opening counts */
        curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
    unsigned left = end > now + 1000 ? (unsigned)(end - now) : 1000;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left + 1000); /* ours comes first; curl's is a safety net */
    s->xfer = check_http_run(p->curl, e, left, probe_fetch_done_cb, s, err, sizeof(err));
    if (!s->xfer)
        probe_fail_now(s, PROBE_STAGE_CLIENT, err);
}

/* HS_DESC on the client tor: RECEIVED or FAILED ends the descriptor phase of that address's probe. */
static void probe_hs_desc_cb(struct cp_conn *c, const struct cp_reply *ev, void *arg)
{
    struct probe *p = arg;
    struct cp_event_hs_desc e = {0};
    char err[200];
    (void)c;
    if (cp_event_hs_desc_parse(ev, &e, err, sizeof(err)) < 0)
        return;
    for (size_t i = 0; i < p->n; i++) {
        struct probe_svc *s = &p->svcs[i];
        if (s->phase != PHASE_DESCRIPTOR || strcmp(s->address, e.address) != 0)
            continue;
        if (e.action == CP_HS_DESC_RECEIVED) {
            s->desc_s = (double)(clock_now_ms() - s->started_ms) / 1000.0;
            probe_fetch(s);
        } else if (e.action == CP_HS_DESC_FAILED) {
            /* One HSDir failed it: the stream itself will ask the others (the cache holds no copy only
             * if none was fetched before; either way the SOCKS reply tells). */
            log_debug("probe: service %s: descriptor fetch from $%s failed: %s", s->name, e.hsdir_fp,
                      e.reason ? e.reason : "?");
            probe_fetch(s);
        }
    }
    cp_event_hs_desc_clear(&e);
}

static void probe_hsfetch_reply_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct probe_svc *s = arg;
    (void)c;
    (void)err;
    if (s->phase == PHASE_DESCRIPTOR && (!r || !cp_reply_is_ok(r)))
        probe_fetch(s); /* no fresh descriptor: the stream fetches one if none is cached */
}

/* Fetch the descriptor afresh, then connect (probe_fetch): one pass, with the time limit from now. */
static void probe_hsfetch(struct probe_svc *s)
{
    struct probe *p = s->p;
    char err[200];
    s->started_ms = clock_now_ms();
    s->desc_s = -1;
    s->phase = PHASE_DESCRIPTOR;
    /* At most half the probe's time for the descriptor; then the stream goes ahead. */
    s->desc_deadline_ms = s->started_ms + (uint64_t)p->conf->probe.timeout * 500;
    log_debug("probe: service %s: fetching its descriptor (HSFETCH) through the client tor", s->name);
    char *cmd = cp_cmd_hsfetch(s->address, NULL, 0, err, sizeof(err));
    if (!cmd || cp_conn_send(p->conn, cmd, probe_hsfetch_reply_cb, s, err, sizeof(err)) < 0)
        probe_fetch(s);
    free(cmd);
}

/* ONION_CLIENT_AUTH_REMOVE or _ADD answered: the pass it prepared goes on. */
static void probe_auth_reply_cb(struct cp_conn *c, const struct cp_reply *r, const char *err, void *arg)
{
    struct probe_svc *s = arg;
    char why[256];
    (void)c;
    if (s->phase != PHASE_AUTH)
        return;
    if (!r || r->status / 100 != 2) { /* 251/252 are successes too (control-spec 3.30, 3.31) */
        snprintf(why, sizeof(why), "the client tor refused ONION_CLIENT_AUTH_%s: %s", s->keyless ? "REMOVE" : "ADD",
                 r ? cp_reply_message(r) : err);
        probe_fail_now(s, PROBE_STAGE_CLIENT, why);
        return;
    }
    probe_hsfetch(s);
}

/* Make the client tor hold no key for the service (`add` false: the keyless pass follows) or the probe's
 * own key (probeauth.h; the keyed pass follows). */
static void probe_auth_send(struct probe_svc *s, bool add)
{
    struct probe *p = s->p;
    struct probeauth a;
    char err[300], *cmd = NULL;
    s->phase = PHASE_AUTH;
    int loaded = add ? probeauth_load(p->conf->state_dir, false, &a, err, sizeof(err)) : 0;
    if (loaded == 1)
        snprintf(err, sizeof(err), "the probe's client key %s/%s is missing", p->conf->state_dir, PROBEAUTH_FILE);
    if (loaded != 0) {
        probe_fail_now(s, PROBE_STAGE_CLIENT, err);
        return;
    }
    if (!add) {
        cmd = cp_cmd_onion_client_auth_remove(s->address, err, sizeof(err));
    } else {
        cmd = cp_cmd_onion_client_auth_add(s->address, a.private_b64, err, sizeof(err));
        probeauth_clear(&a);
    }
    int rc = cmd && p->conn ? cp_conn_send(p->conn, cmd, probe_auth_reply_cb, s, err, sizeof(err)) : -1;
    if (cmd)
        OPENSSL_cleanse(cmd, strlen(cmd));
    free(cmd);
    if (rc < 0)
        probe_fail_now(s, PROBE_STAGE_CLIENT, err);
}

/* One probe: a private service's keyless pass first (the client tor's key dropped), else the ordinary one.
 * The ordinary probe of a private service holds the probe's key (added after the keyless pass). */
static void probe_begin(struct probe_svc *s)
{
    const struct service_conf *sc = config_find_service(s->p->conf, s->name);
    s->keyless = sc && sc->n_clients > 0 && probeauth_wanted(s->p->conf);
    if (s->keyless)
        probe_auth_send(s, false);
    else
        probe_hsfetch(s);
}

/* ---- the schedule -------------------------------------------------------------------------------- */

static struct probe_svc *probe_find(const struct probe *p, const char *address)
{
    for (size_t i = 0; address && address[0] && i < p->n; i++)
        if (strcmp(p->svcs[i].address, address) == 0)
            return (struct probe_svc *)&p->svcs[i];
    return NULL;
}

static void probe_svc_abandon(struct probe_svc *s)
{
    check_http_cancel(s->xfer);
    s->xfer = NULL;
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
    s->phase = PHASE_IDLE;
}

/* Follow the identities: each loaded, unrefused service has a slot, kept by address across reloads. A
 * gone service's slot is dropped once neither it nor a slot after it (which would move) has a probe in
 * flight: a probe holds its slot's address. */
static void probe_sync(struct probe *p)
{
    for (size_t i = 0; i < p->n; i++)
        p->svcs[i].live = false;
    for (size_t i = 0; i < service_ids_count(p->ids); i++) {
        const struct service_id *id = service_ids_at(p->ids, i);
        const char *withdrawn = service_id_withdrawn(id);
        if (!id->address[0] || (service_id_refusal(id) && !withdrawn))
            continue; /* a withdrawn service keeps its slot: status says why it is down */
        struct probe_svc *s = probe_find(p, id->address);
        if (!s && p->n < CONFIG_MAX_SERVICES) {
            s = &p->svcs[p->n++];
            memset(s, 0, sizeof(*s));
            s->p = p;
            snprintf(s->address, sizeof(s->address), "%s", id->address);
            ladder_init(&s->ladder, p->conf->probe.window, p->conf->probe.down_after);
        }
        if (!s)
            continue;
        s->live = true;
        s->withdrawn = withdrawn != NULL; /* a reload checks it again: probed anew */
        snprintf(s->name, sizeof(s->name), "%s", service_id_name(id));
        ladder_configure(&s->ladder, p->conf->probe.window, p->conf->probe.down_after);
    }
    size_t busy_end = 0; /* one past the last slot with a probe in flight */
    for (size_t i = 0; i < p->n; i++)
        if (p->svcs[i].phase != PHASE_IDLE)
            busy_end = i + 1;
    for (size_t i = busy_end; i < p->n;) {
        if (p->svcs[i].live) {
            i++;
            continue;
        }
        probe_svc_abandon(&p->svcs[i]);
        certwatch_free(p->svcs[i].tls);
        memmove(&p->svcs[i], &p->svcs[i + 1], (p->n - i - 1) * sizeof(p->svcs[0]));
        p->n--;
    }
}

bool probe_may_arm(enum probe_published published, uint64_t first_seen_ms, uint64_t now_ms)
{
    if (published == PROBE_PUBLISHED_ALL)
        return true;
    return published == PROBE_PUBLISHED_SOME && first_seen_ms && now_ms - first_seen_ms >= PROBE_ARM_WAIT_MS;
}

static void probe_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct probe *p = arg;
    (void)fd;
    (void)what;
    event_add(p->tick_ev, &(struct timeval){0, PROBE_TICK_MS * 1000});
    probe_sync(p);
    uint64_t now = clock_now_ms();
    bool usable = p->conn && tor_sup_state(p->tor) == TOR_RUNNING;
    double *due = p->due;
    size_t in_flight = 0, armed = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct probe_svc *s = &p->svcs[i];
        due[i] = -1;
        if (s->phase == PHASE_DESCRIPTOR && now >= s->desc_deadline_ms)
            probe_fetch(s);
        if (s->phase != PHASE_IDLE) {
            in_flight++;
            armed++;
            continue;
        }
        if (!s->live || s->withdrawn || probe_svc_tor_gone(s, now))
            continue;
        if (!s->armed) {
            enum probe_published pub = p->actions.published(p->actions.arg, s->address, s->publish_since);
            if (pub >= PROBE_PUBLISHED_SOME && !s->published_seen_ms)
                s->published_seen_ms = now;
            if (!probe_may_arm(pub, s->published_seen_ms, now))
                continue;
            s->armed = true;
            s->next_ms = now; /* the first probe once the upload is on every responsible HSDir */
        }
        armed++;
        due[i] = (double)s->next_ms / 1000.0;
    }
    if (!usable)
        return;
    double gap = pace_gap((double)p->conf->probe.interval, armed, PROBE_GAP_CAP_MS / 1000.0);
    size_t k;
    while ((k = pace_pick(&p->pace, due, p->n, in_flight, gap, (double)now / 1000.0)) < p->n) {
        pace_started(&p->pace, (double)now / 1000.0);
        due[k] = -1;
        in_flight++;
        probe_begin(&p->svcs[k]);
    }
}

/* ---- the client tor ------------------------------------------------------------------------------ */

static void probe_tor_ready_cb(struct tor_sup *t, struct cp_conn *conn, void *arg)
{
    struct probe *p = arg;
    (void)t;
    p->conn = conn;
    cp_conn_subscribe(conn, "HS_DESC", probe_hs_desc_cb, p);
}

static void probe_tor_lost_cb(struct tor_sup *t, const char *why, void *arg)
{
    struct probe *p = arg;
    (void)t;
    (void)why;
    p->conn = NULL;
    for (size_t i = 0; i < p->n; i++) {
        struct probe_svc *s = &p->svcs[i];
        if (s->phase == PHASE_DESCRIPTOR || s->phase == PHASE_AUTH) /* its answer will not come */
            probe_fail_now(s, PROBE_STAGE_CLIENT, "the probe's client tor was lost");
    }
}

static void probe_tor_failed_cb(struct tor_sup *t, const char *why, void *arg)
{
    (void)t;
    (void)arg;
    log_error("probe: the client tor failed: %s", why);
}

static void probe_tor_nop_cb(struct tor_sup *t, void *arg)
{
    (void)t;
    (void)arg;
}

struct probe *probe_new(struct event_base *base, struct proc_mgr *procs, const struct config *conf,
                        const struct service_ids *ids, const struct probe_actions *actions)
{
    static const struct tor_callbacks cbs = {
        .ready = probe_tor_ready_cb,
        .lost = probe_tor_lost_cb,
        .bootstrapped = probe_tor_nop_cb,
        .failed = probe_tor_failed_cb,
        .stopped = probe_tor_nop_cb,
    };
    struct probe *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->base = base;
    p->conf = conf;
    p->ids = ids;
    p->actions = *actions;
    p->tor = tor_sup_new(base, procs, conf, &cbs, p);
    p->tick_ev = evtimer_new(base, probe_tick_cb, p);
    if (!p->tor || !p->tick_ev) {
        probe_free(p);
        return NULL;
    }
    tor_sup_set_role(p->tor, TOR_ROLE_PROBE_CLIENT);
    pace_init(&p->pace, PROBE_MAX_IN_FLIGHT);
    return p;
}

int probe_start(struct probe *p, char *err, size_t errlen)
{
    char terr[900];
    if (!p->conf->probe.client_tor)
        return 0;
    if (!(p->curl = check_http_loop_new(p->base, err, errlen)))
        return -1;
    if (tor_sup_start(p->tor, terr, sizeof(terr)) < 0) {
        snprintf(err, errlen, "cannot start the probe's client tor: %s", terr);
        return -1;
    }
    event_add(p->tick_ev, &(struct timeval){0, PROBE_TICK_MS * 1000});
    return 0;
}

void probe_set_config(struct probe *p, const struct config *conf)
{
    p->conf = conf;
    tor_sup_set_config(p->tor, conf);
}

void probe_free(struct probe *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        probe_svc_abandon(&p->svcs[i]);
        certwatch_free(p->svcs[i].tls);
    }
    tor_sup_free(p->tor); /* its connection: pending HSFETCH answers are dropped with it */
    check_http_loop_free(p->curl);
    if (p->tick_ev)
        event_free(p->tick_ev);
    free(p);
}

/* ---- reports ------------------------------------------------------------------------------------- */

bool probe_verdict(const struct probe *p, const char *address, enum ladder_state *state)
{
    const struct probe_svc *s = probe_find(p, address);
    if (!s || (s->ladder.state == LADDER_STARTING && !s->withdrawn))
        return false;
    *state = s->withdrawn ? LADDER_DOWN : s->ladder.state;
    return true;
}

double probe_restart_gap(const struct probe *p)
{
    return ladder_restart_gap(p->conf->probe.interval, p->conf->probe.window);
}

static json_t *probe_time_json(time_t t)
{
    char buf[32];
    if (t <= 0)
        return json_null();
    probe_iso(t, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *probe_seconds_json(double s)
{
    return s >= 0 ? json_real(s) : json_null();
}

json_t *probe_service_to_json(const struct probe *p, const char *address)
{
    const struct probe_svc *s = probe_find(p, address);
    if (!s)
        return NULL;
    json_t *repairs = json_array();
    for (int st = LADDER_STEP_REPOST; st < LADDER_N_STEPS; st++) {
        if (!s->tried_wall[st])
            continue;
        json_t *rep = json_pack("{s:s, s:o}", "step", ladder_step_str((enum ladder_step)st), "time",
                                probe_time_json(s->tried_wall[st]));
        if (rep && st == LADDER_STEP_RESTART_TOR && s->declined[0])
            json_object_set_new(rep, "declined", json_string(s->declined));
        json_array_append_new(repairs, rep);
    }
    json_t *last = json_null();
    if (s->last.time)
        last = json_pack("{s:o, s:b, s:s, s:s, s:o, s:o, s:o}", "time", probe_time_json(s->last.time), "ok",
                         s->last.ok, "stage", probe_stage_str(s->last.stage), "detail", s->last.detail,
                         "descriptor_seconds", probe_seconds_json(s->last.desc_s), "ttfb_seconds",
                         probe_seconds_json(s->last.ttfb_s), "http_status",
                         s->last.http_status > 0 ? json_integer(s->last.http_status) : json_null());
    json_t *auth = json_null();
    if (s->keyless_verdict != PROBE_KEYLESS_NONE)
        auth = json_pack("{s:s, s:s, s:o}", "keyless", probe_keyless_str(s->keyless_verdict), "detail",
                         s->keyless_detail, "time", probe_time_json(s->keyless_time));
    const struct service_id *id = service_ids_find(p->ids, address);
    const char *withdrawn = id ? service_id_withdrawn(id) : NULL;
    enum ladder_state state = s->withdrawn ? LADDER_DOWN : s->ladder.state;
    json_t *j = json_pack("{s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "state", ladder_state_str(state),
                     "probes", (json_int_t)s->ladder.n, "failures_in_window", (json_int_t)ladder_failures(&s->ladder),
                     "last", last, "last_success", probe_time_json(s->last_success), "down_since",
                     probe_time_json(s->ladder.state == LADDER_DOWN ? s->down_since_wall : 0), "repairs", repairs,
                     "recovered_at", probe_time_json(s->recovered_wall), "client_auth", auth, "withdrawn",
                     withdrawn ? json_string(withdrawn) : json_null());
    json_object_set_new(j, "tls", s->tls ? certwatch_to_json(s->tls) : json_null());
    return j;
}

int probe_tls_problems(const struct probe *p, json_t *problems)
{
    enum certwatch_level worst = CERTWATCH_OK;
    for (size_t i = 0; i < p->n; i++) {
        enum certwatch_level l = p->svcs[i].tls ? certwatch_problems(p->svcs[i].tls, p->svcs[i].name, problems)
                                                : CERTWATCH_OK;
        worst = l > worst ? l : worst;
    }
    return (int)worst;
}

json_t *probe_to_json(const struct probe *p)
{
    long pid = tor_sup_pid(p->tor);
    return json_pack("{s:b, s:{s:s, s:o, s:I, s:s}}", "enabled", p->conf->probe.client_tor, "client_tor", "state",
                     tor_state_str(tor_sup_state(p->tor)), "pid", pid > 0 ? json_integer(pid) : json_null(),
                     "restarts", (json_int_t)tor_sup_restarts(p->tor), "socks_socket",
                     tor_sup_socks_socket(p->tor));
}

int probe_metrics(const struct probe *p, struct metrics *m)
{
    int rc = metrics_family(m, "onionfront_probe_client_up", METRICS_GAUGE,
                            "1 if the end-to-end probe's client tor is bootstrapped, else 0.") ||
             metrics_sample(m, "onionfront_probe_client_up", NULL,
                            p->conf->probe.client_tor && tor_sup_state(p->tor) == TOR_RUNNING ? 1 : 0);
    rc = rc || metrics_family(m, "onionfront_service_reachable", METRICS_GAUGE,
                              "1 if the last end-to-end probes reached the service (reachable or degraded), 0 if "
                              "it is down; absent before its first probe.");
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct probe_svc *s = &p->svcs[i];
        if (s->withdrawn)
            rc = metrics_sample(m, "onionfront_service_reachable", (const char *const[]){"service", s->name, NULL}, 0);
        else if (s->ladder.state != LADDER_STARTING)
            rc = metrics_sample(m, "onionfront_service_reachable", (const char *const[]){"service", s->name, NULL},
                                s->ladder.state == LADDER_DOWN ? 0 : 1);
    }
    rc = rc || metrics_family(m, "onionfront_service_open_without_key", METRICS_GAUGE,
                              "1 if the end-to-end probe opened this private service without a key (it is "
                              "withdrawn from every tor until a reload), else 0; private services only.");
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct probe_svc *s = &p->svcs[i];
        if (s->keyless_verdict != PROBE_KEYLESS_NONE || s->withdrawn)
            rc = metrics_sample(m, "onionfront_service_open_without_key", (const char *const[]){"service", s->name, NULL},
                                s->withdrawn || s->keyless_verdict == PROBE_KEYLESS_OPEN ? 1 : 0);
    }
    rc = rc || metrics_family(m, "onionfront_probe_state", METRICS_GAUGE,
                              "The end-to-end verdict per service: 1 for its current state.");
    for (size_t i = 0; !rc && i < p->n; i++)
        for (int st = LADDER_STARTING; !rc && st <= LADDER_DOWN; st++)
            rc = metrics_sample(m, "onionfront_probe_state",
                                (const char *const[]){"service", p->svcs[i].name, "state",
                                                      ladder_state_str((enum ladder_state)st), NULL},
                                (p->svcs[i].withdrawn ? LADDER_DOWN : p->svcs[i].ladder.state) ==
                                    (enum ladder_state)st);
    rc = rc || metrics_family(m, "onionfront_probe_runs_total", METRICS_COUNTER,
                              "End-to-end probes by result: ok, or the stage that failed.");
    for (size_t i = 0; !rc && i < p->n; i++)
        for (int st = PROBE_STAGE_NONE; !rc && st < PROBE_STAGE_CLIENT; st++)
            rc = metrics_sample(m, "onionfront_probe_runs_total",
                                (const char *const[]){"service", p->svcs[i].name, "result",
                                                      probe_stage_str((enum probe_stage)st), NULL},
                                (double)p->svcs[i].runs[st]);
    rc = rc || metrics_family(m, "onionfront_probe_ttfb_seconds", METRICS_HISTOGRAM,
                              "Time to the first byte of successful end-to-end probes, from the SOCKS connect.");
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct probe_svc *s = &p->svcs[i];
        char le[32];
        for (size_t b = 0; !rc && b < PROBE_N_BUCKETS; b++) {
            snprintf(le, sizeof(le), "%g", probe_buckets[b]);
            rc = metrics_sample(m, "onionfront_probe_ttfb_seconds_bucket",
                                (const char *const[]){"service", s->name, "le", le, NULL}, (double)s->ttfb_buckets[b]);
        }
        rc = rc ||
             metrics_sample(m, "onionfront_probe_ttfb_seconds_bucket",
                            (const char *const[]){"service", s->name, "le", "+Inf", NULL}, (double)s->ttfb_count) ||
             metrics_sample(m, "onionfront_probe_ttfb_seconds_sum", (const char *const[]){"service", s->name, NULL},
                            s->ttfb_sum) ||
             metrics_sample(m, "onionfront_probe_ttfb_seconds_count", (const char *const[]){"service", s->name, NULL},
                            (double)s->ttfb_count);
    }
    rc = rc || metrics_family(m, "onionfront_probe_descriptor_seconds", METRICS_GAUGE,
                              "Time the last end-to-end probe waited for the freshly fetched descriptor.");
    for (size_t i = 0; !rc && i < p->n; i++)
        if (p->svcs[i].last.desc_s >= 0 && p->svcs[i].last.time)
            rc = metrics_sample(m, "onionfront_probe_descriptor_seconds",
                                (const char *const[]){"service", p->svcs[i].name, NULL}, p->svcs[i].last.desc_s);
    rc = rc || metrics_family(m, "onionfront_probe_repairs_total", METRICS_COUNTER,
                              "Repair steps taken because the end-to-end probe found the service down.");
    for (size_t i = 0; !rc && i < p->n; i++)
        for (int st = LADDER_STEP_REPOST; !rc && st < LADDER_N_STEPS; st++)
            rc = metrics_sample(m, "onionfront_probe_repairs_total",
                                (const char *const[]){"service", p->svcs[i].name, "step",
                                                      ladder_step_str((enum ladder_step)st), NULL},
                                (double)p->svcs[i].repairs[st]);
    for (int k = 0; !rc && k < CERTWATCH_N_METRICS; k++) {
        rc = certwatch_metric_family((enum certwatch_metric)k, m);
        for (size_t i = 0; !rc && i < p->n; i++)
            if (p->svcs[i].tls)
                rc = certwatch_metric(p->svcs[i].tls, p->svcs[i].name, (enum certwatch_metric)k, m);
    }
    return rc ? -1 : 0;
}
