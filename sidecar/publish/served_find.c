/* served_find.c — the records of every tor's descriptor tracker, judged by served.h (see served_find.h). */
#include "sidecar/publish/served_find.h"

#include <string.h>

#include "sidecar/publish/descriptor.h"

/* The acceptance record: each tor's latest upload round of the descriptor clients fetch. */
static void served_find_by_rounds(const struct descriptor_tracker *const *ts, size_t n, const char *address,
                                  struct served_result *out)
{
    struct served_round rounds[SERVED_TORS_MAX];
    for (size_t k = 0; k < n; k++) {
        rounds[k] = (struct served_round){.at = -1};
        if (ts[k])
            rounds[k].at =
                descriptor_service_fetched_round_at(ts[k], address, &rounds[k].complete, &rounds[k].rejected);
    }
    out->tor = served_by_rounds(rounds, n);
    out->source = out->tor >= 0 ? SERVED_SOURCE_UPLOADS : SERVED_SOURCE_NONE;
}

void served_find(const struct descriptor_tracker *const *ts, size_t n, const char *address,
                 enum served_basis basis, struct served_result *out)
{
    struct served_ident own[SERVED_TORS_MAX] = {{0}};
    struct served_copy copies[SERVED_HSDIRS_MAX];
    size_t n_copies = 0;
    double best_at = -1;
    if (n > SERVED_TORS_MAX)
        n = SERVED_TORS_MAX;
    if (basis == SERVED_BASIS_ACCEPTED) {
        memset(out, 0, sizeof(*out));
        served_find_by_rounds(ts, n, address, out);
        return;
    }
    memset(copies, 0, sizeof(copies));
    /* Every tor's probe fetches the same HSDirs' copies: the freshest answers say what they serve now. */
    for (size_t k = 0; k < n; k++) {
        struct served_copy mine[SERVED_HSDIRS_MAX];
        double at = -1;
        size_t m = ts[k] ? descriptor_service_copies(ts[k], address, mine, SERVED_HSDIRS_MAX, &at) : 0;
        if (ts[k])
            descriptor_service_own(ts[k], address, &own[k]);
        if (m > 0 && at > best_at) {
            memcpy(copies, mine, m * sizeof(*mine));
            n_copies = m;
            best_at = at;
        }
    }
    /* Each tor's descriptor as an HSDir that accepted its upload served it (tor shows only "current"). */
    struct served_ident learned[SERVED_TORS_MAX] = {{0}};
    for (size_t i = 0; i < n_copies; i++) {
        struct served_upload ups[SERVED_TORS_MAX];
        for (size_t k = 0; k < n; k++) {
            ups[k] = (struct served_upload){-1, -1, false};
            if (ts[k])
                descriptor_service_hsdir_upload(ts[k], address, copies[i].desc_id, copies[i].fp, &ups[k].upload_at,
                                                &ups[k].accepted_at, &ups[k].rejected);
        }
        int k = copies[i].ident.valid ? served_attribute(&copies[i], ups, n) : -1;
        if (k >= 0 && !learned[k].valid)
            learned[k] = copies[i].ident;
    }
    served_compare(own, learned, n, copies, n_copies, out);
    if (out->tor >= 0)
        return;
    /* No copy is any tor's own descriptor (yet): the acceptance record. */
    served_find_by_rounds(ts, n, address, out);
}
