/* fuzz_addrbook.c — libFuzzer target for sidecar/identity/addrbook.c: any bytes through addrbook_parse.
 *
 * The address record lives in the state directory, which another user (tor's) may be able to write:
 * parsing it must never crash, leak or overflow the error buffer. A parsed record is also used (every
 * service's address read, a publication and a deliberate change noted, the decision taken) so that an
 * accepted but inconsistent document shows up under ASan/UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sidecar/identity/addrbook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"web", "api", ""};
    static const char addr[] = "q2udacihu6vjdfbkedkmfveszq3vbwopsl2vj3bj4r3gyadi3hmrq4yd";
    char err[1024], msg[2048];
    struct addrbook *b = addrbook_parse("/nonexistent", "fuzz", (const char *)data, size, err, sizeof(err));
    if (!b) {
        if (!memchr(err, '\0', sizeof(err)))
            __builtin_trap();
        return 0;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *a = addrbook_address(b, names[i]);
        if (a && strlen(a) != 56)
            __builtin_trap();
        (void)addrbook_count(b, names[i]);
        (void)addrbook_check(b, names[i], "/k", addr, NULL, msg, sizeof(msg));
        (void)addrbook_check(b, names[i], "/k", NULL, "gone", msg, sizeof(msg));
        if (a)
            (void)addrbook_note_published(b, names[i], a, 0);
        (void)addrbook_note_key(b, names[i], addr, ADDRBOOK_NEW_KEY, SERVICE_MODE_SINGLE, 0, err, sizeof(err));
        if (addrbook_address(b, names[i]) && strcmp(addrbook_address(b, names[i]), addr) != 0 && names[i][0])
            __builtin_trap();
    }
    addrbook_free(b);
    return 0;
}
