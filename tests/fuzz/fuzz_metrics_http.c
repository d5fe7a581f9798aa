/* fuzz_metrics_http.c — libFuzzer target for the metrics endpoint's request head parser
 * (metrics_http_parse_head in sidecar/metrics_http.c).
 *
 * The input is whatever a local process sends to the metrics port. It is parsed whole and as every
 * prefix the server could see while the bytes arrive, and each result is checked against the header:
 *   - a prefix shorter than METRICS_HTTP_MAX_HEADERS without an empty line is "incomplete", at the cap
 *     it is "too large", and a result other than "incomplete" never changes when more bytes follow
 *     (the server answers at the first one);
 *   - an accepted head names /metrics only if the target's path is exactly that, and HTTP/1.<digit>.
 * Crashes, sanitizer reports and broken invariants (abort) are findings.
 * Seeds: tests/fuzz/seeds/fuzz_metrics_http/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/metrics_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond))                                                                                           \
            abort();                                                                                           \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct metrics_http_head whole, part;
    enum metrics_http_parse rw = metrics_http_parse_head(in, size, &whole);
    if (rw == METRICS_HTTP_INCOMPLETE)
        CHECK(size < METRICS_HTTP_MAX_HEADERS);
    if (rw == METRICS_HTTP_OK) {
        CHECK(whole.minor >= 0 && whole.minor <= 9);
        CHECK(whole.method == METRICS_HTTP_GET || whole.method == METRICS_HTTP_HEAD ||
              whole.method == METRICS_HTTP_OTHER);
        if (whole.is_metrics)
            CHECK(memmem(in, size, " /metrics", 9) != NULL);
    }
    /* Prefixes: the first decided result is the whole input's result. */
    enum metrics_http_parse first = METRICS_HTTP_INCOMPLETE;
    for (size_t n = 0; n <= size && first == METRICS_HTTP_INCOMPLETE; n++) {
        first = metrics_http_parse_head(in, n, &part);
        if (first == METRICS_HTTP_OK)
            CHECK(part.method == whole.method && part.is_metrics == whole.is_metrics && part.minor == whole.minor);
    }
    CHECK(first == rw);
    return 0;
}
