/* served.h — which tor's descriptor the HSDirs serve, when several tors publish the same service with
 * the same key (tor.instances > 1).
 *
 * Each tor makes its own descriptor-signing key for each descriptor it builds (rend-spec-v3 2.1:
 * the blinded key certifies a fresh signing key; tor keeps it for the descriptor's life and re-signs
 * every upload round with it), so two tors with one onion key never share one: the certified key in a
 * descriptor's outer layer (`descriptor-signing-key-cert`) says which tor made it. A copy fetched from an
 * HSDir (the periodic HSFETCH, hsfetch, descriptor.h) is compared with each tor's own descriptor (GETINFO
 * hs/service/desc/id/<addr>); the revision counter is shown beside it. GETINFO returns only tor's
 * "current" descriptor, and clients fetch the other one during part of each time period: then a tor's
 * descriptor is known from a copy an HSDir served after it accepted that tor's upload, the last one it got
 * (served_attribute), and the other copies are compared with that. When no copy can be compared (before
 * the first probe), the acceptance record answers instead: the tor whose latest upload round every
 * responsible HSDir accepted, unless a later round of another tor may have replaced it
 * (served_by_rounds; the failover, the rolling restart and the probe's repairs decide with it alone:
 * SERVED_BASIS_ACCEPTED).
 *
 * Owns the parsing of those two outer-layer lines and both decisions; pure functions on fixed-size
 * arrays; served_find.h gathers the data from descriptor.h's trackers, and workerset_served
 * (workerset.h) is the one answer the daemon asks. Not the fetching (descriptor.c) nor reports
 * (report.c). */
#ifndef ONIONFRONT_SERVED_H
#define ONIONFRONT_SERVED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct metrics;

#define SERVED_HSDIRS_MAX 16 /* HSDirs kept per service: 8 responsible per descriptor (hsdir_n_replicas 2
                                x hsdir_spread_store 4, tor's defaults), two descriptors */
#define SERVED_TORS_MAX 8    /* tors compared (tor.instances is at most 4) */
#define SERVED_KEY_LEN 32

/* Which tor made a descriptor: its certified signing key and revision counter. */
struct served_ident {
    bool valid;
    unsigned char signing_key[SERVED_KEY_LEN];
    uint64_t revision;
};

/* Read "revision-counter N" and the certified key of "descriptor-signing-key-cert" from the outer
 * layer of the v3 descriptor `body` (`len` bytes; need not end in NUL). Return 0 with *out filled (valid),
 * or -1 and a message in `err` (out->valid false). */
int served_ident_parse(const char *body, size_t len, struct served_ident *out, char *err, size_t errlen);

/* What one HSDir answered the last fetch of the descriptor clients fetch: a copy (ident.valid), or none. */
struct served_copy {
    char fp[41];
    char nick[20];
    struct served_ident ident;
    char desc_id[64]; /* the descriptor asked for (blinded key, base64) */
    double at;        /* when the answer came (monotonic clock) */
};

/* Each HSDir's latest answer to a fetch, at most SERVED_HSDIRS_MAX (descriptor.c keeps one per service). */
struct served_copies {
    struct served_copy c[SERVED_HSDIRS_MAX];
    size_t n;
};

/* HSDir `fp` answered a fetch of `desc_id` at `at` with `ident` (not valid: no copy): replace its entry,
 * or add one while there is room. */
void served_copies_note(struct served_copies *t, const char *fp, const char *nick, const char *desc_id,
                        const struct served_ident *ident, double at);

/* Keep only the HSDirs in fps[0..n). */
void served_copies_keep(struct served_copies *t, const char *const *fps, size_t n);

/* One tor's latest upload round of the descriptor clients fetch (descriptor_service_fetched_round_at). */
struct served_round {
    double at;     /* its start on the monotonic clock, < 0: never uploaded */
    bool complete; /* every responsible HSDir accepted it (UPLOADED) */
    bool rejected; /* every one refused it (UPLOAD_REJECTED): it changed nothing */
};

/* The tor (index into `rounds`) whose descriptor the HSDirs serve by the acceptance record, or -1 if
 * not known (see the top of this file). */
int served_by_rounds(const struct served_round *rounds, size_t n);

/* One tor's upload of a copy's descriptor to the copy's HSDir (descriptor_service_hsdir_upload). */
struct served_upload {
    double upload_at;   /* started, -1: none */
    double accepted_at; /* the HSDir accepted it (UPLOADED), -1: not */
    bool rejected;      /* the HSDir refused it (UPLOAD_REJECTED: it held that revision or a higher one) */
};

/* Whose descriptor `copy` is by the uploads to its HSDir (ups[k]: tor k's): of the uploads started before
 * the copy was fetched, the latest one the HSDir did not refuse, if it accepted it before the fetch (HSDirs
 * keep the highest revision: a refused upload changed nothing, an accepted one replaced all before it).
 * -1 if not known (that upload pending or failed, or two such started at once). */
int served_attribute(const struct served_copy *copy, const struct served_upload *ups, size_t n);

enum served_source {
    SERVED_SOURCE_NONE,    /* nothing known */
    SERVED_SOURCE_FETCHED, /* copies fetched from the HSDirs, compared with each tor's own descriptor */
    SERVED_SOURCE_ACCEPTED_COPY, /* the same, each tor's descriptor known from a copy of an HSDir that
                                    accepted that tor's upload (served_attribute): tor shows only its
                                    "current" descriptor, clients may fetch the other one */
    SERVED_SOURCE_UPLOADS, /* the acceptance record (served_by_rounds) */
};
const char *served_source_str(enum served_source s);

/* Per HSDir: the tor whose descriptor it served (index), SERVED_NONE (no copy) or SERVED_OTHER (a copy
 * that is no tor's own descriptor now: an older one, another time period's, or another publisher's). */
#define SERVED_NONE (-1)
#define SERVED_OTHER (-2)

struct served_result {
    int tor;          /* index of the tor served by most HSDirs (ties: the lower index), -1 unknown */
    enum served_source source;
    unsigned holding; /* SERVED_SOURCE_FETCHED: HSDirs that served `tor`'s descriptor ... */
    unsigned asked;   /* ... of this many that answered */
    size_t n_tors;    /* own[0..n_tors): each tor's own descriptor compared (revision; 0: not known) */
    uint64_t own[SERVED_TORS_MAX];
    bool own_known[SERVED_TORS_MAX];
    size_t n;         /* dirs[0..n): each copy compared */
    struct {
        char fp[41];
        char nick[20];
        int tor;           /* an index, SERVED_NONE or SERVED_OTHER */
        uint64_t revision; /* of the copy, when there was one */
    } dirs[SERVED_HSDIRS_MAX];
};

/* Compare `copies` with the tors' own descriptors `own[0..n_own)`, and where none matches with
 * `learned[0..n_own)` (may be NULL: tor k's descriptor as an HSDir that accepted its upload served it),
 * into *out: the tor most copies are, with source FETCHED if any of its copies matched its own
 * descriptor, ACCEPTED_COPY if only learned ones did; else NONE (out->dirs still filled). */
void served_compare(const struct served_ident *own, const struct served_ident *learned, size_t n_own,
                    const struct served_copy *copies, size_t n_copies, struct served_result *out);

/* *r as JSON for status: {"served_by" (tor number, 1-based, or null), "source", "hsdirs_holding",
 * "hsdirs_answered", "hsdirs": [{"fp", "nick", "tor" (1-based or null), "other" (a copy of no tor's own
 * descriptor), "revision"}], "own_revisions": [each tor's own descriptor's revision counter, or null]}.
 * Returns a new reference. */
json_t *served_to_json(const struct served_result *r);

#endif
