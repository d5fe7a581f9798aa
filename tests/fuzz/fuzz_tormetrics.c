/* fuzz_tormetrics.c — libFuzzer target for tor's MetricsPort text parser (sidecar/tor/tormetrics.c).
 *
 * The input is what a MetricsPort answer could hold (the port is reachable by other local processes).
 * Invariants checked on every input:
 *   - a refusal names a line ("line N: ...") and returns no result;
 *   - an accepted text has at most TORMETRICS_SERVICES_MAX services, each a 56-character base32 onion,
 *     no two alike, each found again by tormetrics_find;
 *   - acceptance does not depend on anything after the text: the same bytes with one more complete
 *     comment line appended parse to the same services and values.
 * Crashes, sanitizer reports and broken invariants (abort) are findings.
 * Seeds: tests/fuzz/seeds/fuzz_tormetrics/ (tor 0.4.9.11's recorded answer, cut down; edge cases). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/tor/tormetrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond))                                                                                           \
            abort();                                                                                           \
    } while (0)

static bool same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char err[256] = "";
    struct tormetrics *m = tormetrics_parse((const char *)data, size, err, sizeof(err));
    if (!m) {
        CHECK(strncmp(err, "line ", 5) == 0);
        return 0;
    }
    CHECK(m->n <= TORMETRICS_SERVICES_MAX);
    for (size_t i = 0; i < m->n; i++) {
        CHECK(strlen(m->svc[i].onion) == 56);
        CHECK(tormetrics_find(m, m->svc[i].onion) == &m->svc[i]);
    }
    static const char more[] = "# one more line\n";
    char *text = malloc(size + sizeof(more));
    CHECK(text != NULL);
    memcpy(text, data, size);
    memcpy(text + size, more, sizeof(more) - 1);
    struct tormetrics *m2 = tormetrics_parse(text, size + sizeof(more) - 1, err, sizeof(err));
    CHECK(m2 && m2->n == m->n);
    for (size_t i = 0; i < m->n; i++) {
        CHECK(strcmp(m->svc[i].onion, m2->svc[i].onion) == 0);
        for (int f = 0; f < TORMETRICS_N; f++) {
            CHECK(m->svc[i].has[f] == m2->svc[i].has[f]);
            CHECK(same_value(m->svc[i].value[f], m2->svc[i].value[f]));
        }
    }
    tormetrics_free(m2);
    free(text);
    tormetrics_free(m);
    return 0;
}
