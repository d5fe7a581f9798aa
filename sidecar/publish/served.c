/* served.c — which tor's descriptor the HSDirs serve (see served.h). */
#include "sidecar/publish/served.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define SERVED_CERT_MAX 512 /* decoded bytes of a signing-key certificate kept (cert-spec: 104 + extensions) */

/* The next line of body[*pos..len) into line/llen (without its CR LF); false at the end. */
static bool served_next_line(const char *body, size_t len, size_t *pos, const char **line, size_t *llen)
{
    if (*pos >= len)
        return false;
    const char *start = body + *pos, *nl = memchr(start, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - start) : len - *pos;
    *pos += n + (nl ? 1 : 0);
    if (n && start[n - 1] == '\r')
        n--;
    *line = start;
    *llen = n;
    return true;
}

static bool served_line_is(const char *line, size_t llen, const char *word)
{
    size_t w = strlen(word);
    return llen == w && memcmp(line, word, w) == 0;
}

static int served_b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Append the base64 of one line (padding ends it) to out[*n..cap). Return 0, or -1 on a bad character
 * or overflow. `bits`/`nbits` carry the partial byte between lines. */
static int served_b64_line(const char *line, size_t llen, unsigned char *out, size_t *n, size_t cap, unsigned *bits,
                           int *nbits)
{
    for (size_t i = 0; i < llen; i++) {
        if (line[i] == '=')
            return 0;
        int v = served_b64_value(line[i]);
        if (v < 0)
            return -1;
        *bits = (*bits << 6) | (unsigned)v;
        *nbits += 6;
        if (*nbits >= 8) {
            *nbits -= 8;
            if (*n == cap)
                return -1;
            out[(*n)++] = (unsigned char)(*bits >> *nbits);
            *bits &= (1u << *nbits) - 1;
        }
    }
    return 0;
}

int served_ident_parse(const char *body, size_t len, struct served_ident *out, char *err, size_t errlen)
{
    const char *line;
    size_t llen, pos = 0, n = 0;
    bool have_rev = false, have_key = false;
    unsigned char cert[SERVED_CERT_MAX];
    memset(out, 0, sizeof(*out));
    /* rend-spec-v3 2.4: the outer layer's lines come first; stop at the encrypted part. */
    while (!(have_rev && have_key) && served_next_line(body, len, &pos, &line, &llen)) {
        if (served_line_is(line, llen, "superencrypted"))
            break;
        if (llen > 17 && memcmp(line, "revision-counter ", 17) == 0) {
            char num[24];
            if (llen - 17 >= sizeof(num) || line[17] < '0' || line[17] > '9') {
                snprintf(err, errlen, "revision-counter: not a number");
                return -1;
            }
            memcpy(num, line + 17, llen - 17);
            num[llen - 17] = '\0';
            char *end;
            errno = 0;
            unsigned long long v = strtoull(num, &end, 10);
            if (errno || *end) {
                snprintf(err, errlen, "revision-counter: not a number");
                return -1;
            }
            out->revision = v;
            have_rev = true;
        } else if (served_line_is(line, llen, "descriptor-signing-key-cert")) {
            unsigned bits = 0;
            int nbits = 0;
            if (!served_next_line(body, len, &pos, &line, &llen) ||
                !served_line_is(line, llen, "-----BEGIN ED25519 CERT-----")) {
                snprintf(err, errlen, "descriptor-signing-key-cert: no BEGIN line");
                return -1;
            }
            for (;;) {
                if (!served_next_line(body, len, &pos, &line, &llen)) {
                    snprintf(err, errlen, "descriptor-signing-key-cert: no END line");
                    return -1;
                }
                if (served_line_is(line, llen, "-----END ED25519 CERT-----"))
                    break;
                if (served_b64_line(line, llen, cert, &n, sizeof(cert), &bits, &nbits) < 0) {
                    snprintf(err, errlen, "descriptor-signing-key-cert: bad base64 or too long");
                    return -1;
                }
            }
            /* cert-spec 2.1: VERSION (1), CERT_TYPE (08: descriptor signing key), EXPIRATION (4),
             * CERT_KEY_TYPE (1), CERTIFIED_KEY (32), N_EXTENSIONS (1), ... */
            if (n < 40 || cert[0] != 1 || cert[1] != 8) {
                snprintf(err, errlen, "descriptor-signing-key-cert: not a version 1 signing-key certificate");
                return -1;
            }
            memcpy(out->signing_key, cert + 7, SERVED_KEY_LEN);
            have_key = true;
        }
    }
    if (!have_rev || !have_key) {
        snprintf(err, errlen, "no %s line in the outer layer",
                 have_rev ? "descriptor-signing-key-cert" : "revision-counter");
        return -1;
    }
    out->valid = true;
    return 0;
}

void served_copies_note(struct served_copies *t, const char *fp, const char *nick, const char *desc_id,
                        const struct served_ident *ident, double at)
{
    size_t i = 0;
    while (i < t->n && strcmp(t->c[i].fp, fp) != 0)
        i++;
    if (i == SERVED_HSDIRS_MAX)
        return;
    struct served_copy *c = &t->c[i];
    if (i == t->n) {
        t->n++;
        snprintf(c->fp, sizeof(c->fp), "%s", fp);
    }
    snprintf(c->nick, sizeof(c->nick), "%s", nick ? nick : "");
    snprintf(c->desc_id, sizeof(c->desc_id), "%s", desc_id ? desc_id : "");
    c->ident = *ident;
    c->at = at;
}

void served_copies_keep(struct served_copies *t, const char *const *fps, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < t->n; i++)
        for (size_t k = 0; k < n; k++)
            if (strcmp(fps[k], t->c[i].fp) == 0) {
                t->c[kept++] = t->c[i];
                break;
            }
    t->n = kept;
}

int served_by_rounds(const struct served_round *rounds, size_t n)
{
    int best = -1;
    double best_at = -1;
    for (size_t k = 0; k < n; k++)
        if (rounds[k].complete && rounds[k].at > best_at) {
            best = (int)k;
            best_at = rounds[k].at;
        }
    /* HSDirs keep the highest revision and tor's revision counter counts seconds: two tors' rounds in the
     * same second tie and the HSDirs keep the first to arrive, so "uploaded last" alone is not "served". */
    for (size_t k = 0; best >= 0 && k < n; k++)
        if ((int)k != best && rounds[k].at >= best_at && !rounds[k].rejected)
            return -1;
    return best;
}

int served_attribute(const struct served_copy *copy, const struct served_upload *ups, size_t n)
{
    bool seen[SERVED_TORS_MAX] = {false};
    if (n > SERVED_TORS_MAX)
        n = SERVED_TORS_MAX;
    /* The uploads started before the fetch, latest first: refused ones changed nothing on the HSDir. */
    for (;;) {
        int last = -1;
        for (size_t k = 0; k < n; k++)
            if (!seen[k] && ups[k].upload_at >= 0 && ups[k].upload_at < copy->at &&
                (last < 0 || ups[k].upload_at > ups[last].upload_at))
                last = (int)k;
        if (last < 0)
            return -1;
        seen[last] = true;
        if (ups[last].rejected)
            continue;
        if (ups[last].accepted_at < 0 || ups[last].accepted_at > copy->at)
            return -1; /* pending, failed, or accepted only after the fetch */
        for (size_t k = 0; k < n; k++)
            if ((int)k != last && ups[k].upload_at == ups[last].upload_at && !ups[k].rejected)
                return -1; /* two started at once: not known which came last */
        return last;
    }
}

static const char *const served_source_names[] = {
    [SERVED_SOURCE_NONE] = "none",
    [SERVED_SOURCE_FETCHED] = "fetched",
    [SERVED_SOURCE_ACCEPTED_COPY] = "accepted_copy",
    [SERVED_SOURCE_UPLOADS] = "uploads",
};

const char *served_source_str(enum served_source s)
{
    return (size_t)s < sizeof(served_source_names) / sizeof(served_source_names[0]) ? served_source_names[s] : "?";
}

static bool served_same(const struct served_ident *a, const struct served_ident *b)
{
    return a->valid && b->valid && memcmp(a->signing_key, b->signing_key, SERVED_KEY_LEN) == 0;
}

void served_compare(const struct served_ident *own, const struct served_ident *learned, size_t n_own,
                    const struct served_copy *copies, size_t n_copies, struct served_result *out)
{
    unsigned votes[SERVED_TORS_MAX] = {0};
    bool by_own[SERVED_TORS_MAX] = {false};
    memset(out, 0, sizeof(*out));
    out->tor = -1;
    for (size_t k = 0; k < n_own && k < SERVED_TORS_MAX; k++, out->n_tors++) {
        out->own_known[k] = own[k].valid;
        out->own[k] = own[k].valid ? own[k].revision : 0;
    }
    for (size_t i = 0; i < n_copies && out->n < SERVED_HSDIRS_MAX; i++) {
        const struct served_copy *c = &copies[i];
        int tor = c->ident.valid ? SERVED_OTHER : SERVED_NONE;
        for (size_t k = 0; tor == SERVED_OTHER && k < n_own && k < SERVED_TORS_MAX; k++)
            if (served_same(&own[k], &c->ident))
                tor = (int)k;
        if (tor >= 0)
            by_own[tor] = true;
        for (size_t k = 0; learned && tor == SERVED_OTHER && k < n_own && k < SERVED_TORS_MAX; k++)
            if (served_same(&learned[k], &c->ident))
                tor = (int)k;
        if (tor >= 0)
            votes[tor]++;
        snprintf(out->dirs[out->n].fp, sizeof(out->dirs[out->n].fp), "%s", c->fp);
        snprintf(out->dirs[out->n].nick, sizeof(out->dirs[out->n].nick), "%s", c->nick);
        out->dirs[out->n].tor = tor;
        out->dirs[out->n].revision = c->ident.valid ? c->ident.revision : 0;
        out->n++;
        out->asked++;
    }
    for (size_t k = 0; k < n_own && k < SERVED_TORS_MAX; k++)
        if (votes[k] > 0 && (out->tor < 0 || votes[k] > votes[out->tor]))
            out->tor = (int)k;
    if (out->tor >= 0) {
        out->source = by_own[out->tor] ? SERVED_SOURCE_FETCHED : SERVED_SOURCE_ACCEPTED_COPY;
        out->holding = votes[out->tor];
    }
}

json_t *served_to_json(const struct served_result *r)
{
    json_t *dirs = json_array();
    for (size_t i = 0; dirs && i < r->n; i++) {
        int tor = r->dirs[i].tor;
        json_t *rev = tor == SERVED_NONE ? json_null() : json_integer((json_int_t)r->dirs[i].revision);
        json_array_append_new(dirs, json_pack("{s:s, s:s, s:o, s:b, s:o}", "fp", r->dirs[i].fp, "nick",
                                              r->dirs[i].nick, "tor", tor >= 0 ? json_integer(tor + 1) : json_null(),
                                              "other", tor == SERVED_OTHER, "revision", rev));
    }
    json_t *own = json_array();
    for (size_t k = 0; own && k < r->n_tors; k++)
        json_array_append_new(own, r->own_known[k] ? json_integer((json_int_t)r->own[k]) : json_null());
    return json_pack("{s:o, s:s, s:I, s:I, s:o, s:o}", "served_by",
                     r->tor >= 0 ? json_integer(r->tor + 1) : json_null(), "source", served_source_str(r->source),
                     "hsdirs_holding", (json_int_t)r->holding, "hsdirs_answered", (json_int_t)r->asked, "hsdirs",
                     dirs ? dirs : json_array(), "own_revisions", own ? own : json_array());
}
