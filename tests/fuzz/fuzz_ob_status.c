/* fuzz_ob_status.c — libFuzzer target for the parser of Onionbalance's status socket answer
 * (sidecar/config/ob_config.c, ob_status_parse): any bytes as one answer for a fixed master address.
 *
 * Must never crash, leak or overflow; on success every instance listed is a valid v3 address, their
 * number within the array, intro points -1 (unknown) or 0-20 (tor's most per descriptor); on failure the error is a non-empty string within its
 * buffer — what ob_frontend.c relies on when it shows the answer in status. A parsed answer then goes
 * through ob_watch_check (sidecar/balance/ob_watch.c, the stamps' parser) for each instance, twice, with
 * a why that must end within its buffer. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sidecar/balance/ob_watch.h"
#include "sidecar/config/config.h"
#include "sidecar/config/ob_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MASTER "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ob_status st;
    char err[200];
    memset(err, 'x', sizeof(err));
    int rc = ob_status_parse((const char *)data, size, MASTER, &st, err, sizeof(err) - 1);
    if (err[sizeof(err) - 1] != 'x')
        __builtin_trap(); /* overran the buffer */
    if (rc < 0) {
        if (err[0] == '\0' || !memchr(err, '\0', sizeof(err) - 1))
            __builtin_trap();
        return 0;
    }
    if (rc != 0 || st.n_instances > sizeof(st.instances) / sizeof(st.instances[0]) ||
        !memchr(st.attempt_first, '\0', sizeof(st.attempt_first)) ||
        !memchr(st.attempt_second, '\0', sizeof(st.attempt_second)))
        __builtin_trap();
    for (size_t i = 0; i < st.n_instances; i++)
        if (!ob_address_parse(st.instances[i].address, strlen(st.instances[i].address), NULL) ||
            st.instances[i].intro_points < -1 || st.instances[i].intro_points > CONFIG_MAX_INTRO_POINTS ||
            !memchr(st.instances[i].received_at, '\0', sizeof(st.instances[i].received_at)))
            __builtin_trap();
    struct ob_watch w;
    const struct ob_watch_params p = {.too_old_s = 20, .bound_s = 0};
    ob_watch_reset(&w);
    for (int round = 1; round <= 2; round++)
        for (size_t i = 0; i < st.n_instances; i++) {
            char why[64];
            memset(why, 'x', sizeof(why));
            if (ob_watch_check(&w, &st, st.instances[i].address, true, (uint64_t)round * 1000, &p, why,
                               sizeof(why) - 1) &&
                (why[sizeof(why) - 1] != 'x' || !memchr(why, '\0', sizeof(why) - 1)))
                __builtin_trap();
        }
    return 0;
}
