/* fuzz_onion_input.c — libFuzzer target for the operator input of `onion-csr` and `onion-caa`
 * (sidecar/identity/onion_csr.c): any bytes, up to the first NUL, through onion_nonce_parse (the CA's nonce as
 * hex or base64) and onion_caa_record_parse (a CAA record).
 *
 * Both parse text pasted from a CA's web page or an ACME server: they must never crash, overflow or
 * leave an error unterminated. Invariants checked: an accepted nonce has 8-128 bytes; an accepted CAA
 * record comes out as `caa FLAGS TAG "VALUE"` of printable ASCII, and parsing that output again gives
 * it back unchanged. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/identity/onion_csr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), err[512], out[ONION_CAA_RECORD_MAX], again[ONION_CAA_RECORD_MAX];
    struct onion_nonce n;
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    if (onion_nonce_parse(text, &n, err, sizeof err) == 0) {
        if (n.len < ONION_NONCE_MIN || n.len > ONION_NONCE_MAX)
            __builtin_trap();
    } else if (!memchr(err, '\0', sizeof err)) {
        __builtin_trap();
    }

    if (onion_caa_record_parse(text, out, err, sizeof err) == 0) {
        if (strncmp(out, "caa ", 4) != 0 || out[strlen(out) - 1] != '"')
            __builtin_trap();
        for (const char *p = out; *p; p++)
            if (*p < 0x20 || *p > 0x7e)
                __builtin_trap();
        if (onion_caa_record_parse(out, again, err, sizeof err) != 0 || strcmp(out, again) != 0)
            __builtin_trap();
    } else if (!memchr(err, '\0', sizeof err)) {
        __builtin_trap();
    }
    free(text);
    return 0;
}
