/* fuzz_served.c — libFuzzer target for sidecar/publish/served.c: any bytes through served_ident_parse.
 *
 * The bytes are a descriptor an HSDir served (HS_DESC_CONTENT of the fetch probe) or tor's own (GETINFO
 * hs/service/desc/id): outside input. Parsing must never crash, read past `len`, or leave the error
 * buffer unterminated; a parsed identity is compared (served_compare) so an inconsistent one shows up. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sidecar/publish/served.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    struct served_ident id;
    struct served_copy copy = {.fp = "0000000000000000000000000000000000000000"};
    struct served_result r;
    memset(err, 'x', sizeof(err));
    if (served_ident_parse((const char *)data, size, &id, err, sizeof(err)) < 0) {
        if (!memchr(err, '\0', sizeof(err)) || id.valid)
            __builtin_trap();
        return 0;
    }
    if (!id.valid)
        __builtin_trap();
    copy.ident = id;
    served_compare(&id, NULL, 1, &copy, 1, &r);
    if (r.tor != 0 || r.holding != 1)
        __builtin_trap();
    return 0;
}
