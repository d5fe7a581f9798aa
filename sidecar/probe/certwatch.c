/* certwatch.c — a service's TLS certificates as a visitor and each backend serve them (certwatch.h).
 *
 * A backend is asked exactly as the visitor's request reaches it through the proxy, but directly: the
 * URL names the onion (so SNI is the onion name) and CURLOPT_CONNECT_TO (or CURLOPT_UNIX_SOCKET_PATH)
 * sends the connection to the backend; CONNECT_ONLY stops after the handshake, which is all we need. */
#include "sidecar/probe/certwatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sidecar/core/log.h"
#include "sidecar/core/metrics.h"
#include <sys/socket.h>

#include "sidecar/datapath/check_http.h"

struct certwatch_view {
    struct certwatch_svc *owner;
    char endpoint[CONFIG_ADDR_TEXT_MAX + 1]; /* "onion", or the backend's address as written */
    bool read;                               /* `cert` holds the last certificate read */
    char error[160];                         /* the last read failed: why; "" if it did not */
    time_t time;                             /* of the last read; 0: none yet */
    struct tlscert_report cert;
    struct check_http *xfer;        /* a backend read in flight */
    struct curl_slist *connect_to; /* its CURLOPT_CONNECT_TO, which must outlive the handle */
};

struct certwatch_svc {
    char host[64]; /* "<address>.onion": the name a visitor asks for */
    uint16_t port; /* the virtual port checked; 0 before the first backend round */
    struct certwatch_view onion;
    struct certwatch_view *backends;
    size_t n_backends;
};

struct certwatch_svc *certwatch_new(const char *address)
{
    struct certwatch_svc *cw = calloc(1, sizeof(*cw));
    if (!cw)
        return NULL;
    snprintf(cw->host, sizeof(cw->host), "%s.onion", address);
    snprintf(cw->onion.endpoint, sizeof(cw->onion.endpoint), "onion");
    cw->onion.owner = cw;
    return cw;
}

static void certwatch_drop_backends(struct certwatch_svc *cw)
{
    for (size_t i = 0; i < cw->n_backends; i++) {
        check_http_cancel(cw->backends[i].xfer);
        curl_slist_free_all(cw->backends[i].connect_to);
    }
    free(cw->backends);
    cw->backends = NULL;
    cw->n_backends = 0;
}

void certwatch_free(struct certwatch_svc *cw)
{
    if (!cw)
        return;
    certwatch_drop_backends(cw);
    free(cw);
}

void certwatch_prepare(CURL *easy)
{
    curl_easy_setopt(easy, CURLOPT_CERTINFO, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
}

/* Record what one transfer saw. A chain is read even when the transfer failed after the handshake. */
static void certwatch_record(struct certwatch_view *v, CURL *easy, CURLcode rc, const char *why)
{
    char err[160];
    bool was_read = v->read;
    char before[sizeof(v->cert.sha256)];
    snprintf(before, sizeof(before), "%s", v->cert.sha256);
    v->time = time(NULL);
    if (tlscert_eval_curl(easy, v->owner->host, v->time, &v->cert, err, sizeof(err)) == 0) {
        v->read = true;
        v->error[0] = '\0';
    } else {
        v->read = false;
        snprintf(v->error, sizeof(v->error), "%s", rc != CURLE_OK && why && *why ? why : err);
    }
    if (v->read && (!was_read || strcmp(before, v->cert.sha256) != 0))
        log_info("certwatch: %s %s: certificate %.16s..., %ld days left, name %s, %s", v->owner->host, v->endpoint,
                 v->cert.sha256, v->cert.days_left, v->cert.name_ok ? "matches" : "DOES NOT match",
                 tlscert_trust_str(v->cert.trust));
    else if (!v->read && was_read)
        log_info("certwatch: %s %s: no certificate read: %s", v->owner->host, v->endpoint, v->error);
}

void certwatch_onion_done(struct certwatch_svc *cw, CURL *easy, CURLcode rc, const char *why)
{
    struct curl_certinfo *ci = NULL;
    bool got_chain = curl_easy_getinfo(easy, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci && ci->num_of_certs > 0;
    /* A probe that failed before the handshake is the probe's finding (its stage says where); the
     * certificate visitors last got stays what it was. */
    if (!got_chain && cw->onion.read)
        return;
    certwatch_record(&cw->onion, easy, rc, why);
}

static void certwatch_backend_done_cb(CURL *easy, CURLcode rc, const char *errbuf, void *arg)
{
    struct certwatch_view *v = arg;
    v->xfer = NULL;
    certwatch_record(v, easy, rc, errbuf && *errbuf ? errbuf : curl_easy_strerror(rc));
}

static void certwatch_start_one(struct certwatch_svc *cw, struct certwatch_view *v, struct check_http_loop *loop,
                                const struct backend_addr *a, unsigned timeout_ms)
{
    char url[128], connect_to[CONFIG_HOST_MAX + 96], err[sizeof(v->error)];
    check_http_cancel(v->xfer); /* the handle of the last read is gone after this (or after its callback) */
    v->xfer = NULL;
    curl_slist_free_all(v->connect_to);
    v->connect_to = NULL;
    CURL *e = curl_easy_init();
    if (!e) {
        snprintf(v->error, sizeof(v->error), "out of memory");
        return;
    }
    snprintf(url, sizeof(url), "https://%s:%u/", cw->host, (unsigned)cw->port);
    curl_easy_setopt(e, CURLOPT_URL, url);
    if (a->kind == BACKEND_ADDR_UNIX) {
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, a->path);
    } else {
        bool v6 = a->family == AF_INET6;
        snprintf(connect_to, sizeof(connect_to), "%s:%u:%s%s%s:%u", cw->host, (unsigned)cw->port, v6 ? "[" : "",
                 a->host, v6 ? "]" : "", (unsigned)a->port);
        v->connect_to = curl_slist_append(NULL, connect_to);
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, v->connect_to);
    }
    certwatch_prepare(e);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms + 1000); /* ours comes first */
    v->xfer = check_http_run(loop, e, timeout_ms, certwatch_backend_done_cb, v, err, sizeof(err));
    if (!v->xfer)
        snprintf(v->error, sizeof(v->error), "%s", err);
}

void certwatch_check_backends(struct certwatch_svc *cw, struct check_http_loop *loop, const struct port_conf *pc,
                              unsigned timeout_ms)
{
    bool same = cw->port == pc->virtual_port && cw->n_backends == pc->n_backends;
    for (size_t i = 0; same && i < pc->n_backends; i++)
        same = strcmp(cw->backends[i].endpoint, pc->backends[i].addr.text) == 0;
    if (!same) {
        certwatch_drop_backends(cw);
        cw->backends = calloc(pc->n_backends, sizeof(*cw->backends));
        if (!cw->backends)
            return;
        cw->n_backends = pc->n_backends;
        cw->port = pc->virtual_port;
        for (size_t i = 0; i < pc->n_backends; i++) {
            cw->backends[i].owner = cw;
            snprintf(cw->backends[i].endpoint, sizeof(cw->backends[i].endpoint), "%s", pc->backends[i].addr.text);
        }
    }
    for (size_t i = 0; i < cw->n_backends; i++)
        certwatch_start_one(cw, &cw->backends[i], loop, &pc->backends[i].addr, timeout_ms);
}

static enum certwatch_level certwatch_view_level(const struct certwatch_view *v)
{
    if (!v->time)
        return CERTWATCH_OK; /* not read yet */
    if (!v->read)
        return CERTWATCH_WARNING;
    if (!v->cert.name_ok || v->cert.days_left < CERTWATCH_CRIT_DAYS)
        return CERTWATCH_CRITICAL;
    return v->cert.days_left < CERTWATCH_WARN_DAYS ? CERTWATCH_WARNING : CERTWATCH_OK;
}

static void certwatch_view_problem(const struct certwatch_view *v, const char *name, bool backend, json_t *problems)
{
    char who[CONFIG_ADDR_TEXT_MAX + 64], text[600];
    snprintf(who, sizeof(who), backend ? "backend %s" : "the certificate visitors get", v->endpoint);
    if (!v->read)
        snprintf(text, sizeof(text), "service %s: TLS: %s: no certificate read: %s", name, who, v->error);
    else if (!v->cert.name_ok)
        snprintf(text, sizeof(text), "service %s: TLS: %s: the certificate (%s) does not name %s", name, who,
                 v->cert.subject, v->owner->host);
    else if (v->cert.days_left < 0)
        snprintf(text, sizeof(text), "service %s: TLS: %s: the certificate expired %ld days ago", name, who,
                 -v->cert.days_left);
    else
        snprintf(text, sizeof(text), "service %s: TLS: %s: the certificate expires in %ld days", name, who,
                 v->cert.days_left);
    json_array_append_new(problems, json_string(text));
}

enum certwatch_level certwatch_problems(const struct certwatch_svc *cw, const char *name, json_t *problems)
{
    enum certwatch_level worst = certwatch_view_level(&cw->onion);
    if (worst != CERTWATCH_OK)
        certwatch_view_problem(&cw->onion, name, false, problems);
    for (size_t i = 0; i < cw->n_backends; i++) {
        const struct certwatch_view *v = &cw->backends[i];
        enum certwatch_level l = certwatch_view_level(v);
        if (l != CERTWATCH_OK)
            certwatch_view_problem(v, name, true, problems);
        else if (v->read && cw->onion.read && strcmp(v->cert.sha256, cw->onion.cert.sha256) != 0) {
            char text[600];
            snprintf(text, sizeof(text), "service %s: TLS: backend %s serves another certificate than visitors get",
                     name, v->endpoint);
            json_array_append_new(problems, json_string(text));
            l = CERTWATCH_WARNING;
        }
        worst = l > worst ? l : worst;
    }
    return worst;
}

static json_t *certwatch_view_json(const struct certwatch_view *v, const struct certwatch_view *onion)
{
    char when[32] = "";
    struct tm tm;
    gmtime_r(&v->time, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *j = v->read ? tlscert_report_to_json(&v->cert) : json_object();
    json_object_set_new(j, "endpoint", json_string(v->endpoint));
    json_object_set_new(j, "time", v->time ? json_string(when) : json_null());
    json_object_set_new(j, "error", v->read || !v->time ? json_null() : json_string(v->error));
    if (onion)
        json_object_set_new(j, "same_as_onion", v->read && onion->read ? json_boolean(strcmp(v->cert.sha256,
                                                                                           onion->cert.sha256) == 0)
                                                                       : json_null());
    return j;
}

json_t *certwatch_to_json(const struct certwatch_svc *cw)
{
    json_t *backends = json_array();
    for (size_t i = 0; i < cw->n_backends; i++)
        json_array_append_new(backends, certwatch_view_json(&cw->backends[i], &cw->onion));
    return json_pack("{s:I, s:o, s:o}", "port", (json_int_t)cw->port, "onion",
                     cw->onion.time ? certwatch_view_json(&cw->onion, NULL) : json_null(), "backends", backends);
}

static const struct {
    const char *name, *help;
} certwatch_metric_defs[CERTWATCH_N_METRICS] = {
    {"onionfront_tls_cert_expiry_timestamp_seconds",
     "The notAfter of the TLS certificate served on a service's tls port (endpoint onion: as a visitor gets it "
     "through tor; else by that backend), seconds since the epoch."},
    {"onionfront_tls_cert_name_match", "1 if that certificate's subjectAltName covers the onion name, else 0."},
    {"onionfront_tls_cert_trusted", "1 if that certificate chain verifies against the system's CA store, else 0."},
    {"onionfront_tls_cert_self_signed", "1 if that certificate is self-signed (Tor Browser accepts it), else 0."},
    {"onionfront_tls_cert_read_ok", "1 if the last attempt read a certificate from that endpoint, else 0."},
};

int certwatch_metric_family(enum certwatch_metric which, struct metrics *m)
{
    return metrics_family(m, certwatch_metric_defs[which].name, METRICS_GAUGE, certwatch_metric_defs[which].help);
}

static int certwatch_view_metric(const struct certwatch_view *v, const char *name, enum certwatch_metric which,
                                 struct metrics *m)
{
    if (!v->time || (!v->read && which != CERTWATCH_M_READ_OK))
        return 0;
    double val = 0;
    switch (which) {
    case CERTWATCH_M_EXPIRY: val = (double)v->cert.not_after; break;
    case CERTWATCH_M_NAME_MATCH: val = v->cert.name_ok; break;
    case CERTWATCH_M_TRUSTED: val = v->cert.trust == TLSCERT_TRUSTED; break;
    case CERTWATCH_M_SELF_SIGNED: val = v->cert.trust == TLSCERT_SELF_SIGNED; break;
    case CERTWATCH_M_READ_OK: val = v->read; break;
    }
    return metrics_sample(m, certwatch_metric_defs[which].name,
                          (const char *const[]){"service", name, "endpoint", v->endpoint, NULL}, val);
}

int certwatch_metric(const struct certwatch_svc *cw, const char *name, enum certwatch_metric which, struct metrics *m)
{
    int rc = certwatch_view_metric(&cw->onion, name, which, m);
    for (size_t i = 0; !rc && i < cw->n_backends; i++)
        rc = certwatch_view_metric(&cw->backends[i], name, which, m);
    return rc;
}
