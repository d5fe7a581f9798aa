/* fuzz_circdrain.c — libFuzzer target for circdrain_look_parse (sidecar/publish/circdrain.c), which reads tor's
 * GETINFO circuit-status list line by line through cp_circ_status_line_parse (controlproto/cp_event.c).
 *
 * The input is the data block as tor would send it (NUL-terminated copy). Invariants: a list that parses
 * names no more introduction circuits than the cap, only ids tor can have (32-bit), and its counts never
 * exceed the number of lines;
 * one that fails says which line. Crashes, sanitizer reports and broken invariants (abort) are findings.
 * Seeds: tests/fuzz/seeds/fuzz_circdrain/ (a list from tor 0.4.9.11 on the private network). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_event.h"
#include "sidecar/publish/circdrain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond))                                                                                           \
            abort();                                                                                           \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), err[256];
    struct circdrain_look look;
    size_t lines = 1;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (circdrain_look_parse(text, &look, err, sizeof err) == 0) {
        CHECK(look.n_intro <= CIRCDRAIN_MAX_CLOSE);
        CHECK(look.rend + look.n_intro <= lines);
        for (size_t i = 0; i < look.n_intro; i++)
            CHECK(look.intro[i] <= CP_CIRC_ID_MAX); /* a CLOSECIRCUIT tor can accept */
        for (size_t i = 0; i < look.n_rend; i++)
            CHECK(look.rend_ids[i] <= CP_CIRC_ID_MAX);
    } else {
        CHECK(strncmp(err, "circuit-status line ", 20) == 0);
    }
    free(text);
    return 0;
}
