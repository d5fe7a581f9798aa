/* fuzz_torrc_import.c — libFuzzer target for sidecar/cli/torrc_import.c: any bytes as a torrc.
 *
 * `onionfront import-torrc` reads an operator's torrc, which may hold anything: parsing must never crash,
 * leak or loop, and what it gives must hold together: a config is always built, its services have valid
 * names (unique, ^[a-z0-9][a-z0-9_-]{0,31}$) and at least one port, every note starts with "line N: ",
 * and the accessors agree with the JSON. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/cli/torrc_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *n)
{
    size_t len = strlen(n);
    if (len < 1 || len > TORRC_IMPORT_NAME_MAX || strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_-") != len ||
        n[0] == '_' || n[0] == '-')
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct torrc_import *t = torrc_import_parse((const char *)data, size, "fuzz");
    if (!t)
        return 0; /* out of memory only */
    json_t *c = torrc_import_config(t);
    if (!c)
        __builtin_trap();
    size_t n = torrc_import_n_services(t);
    if (json_array_size(json_object_get(c, "services")) != n || n > torrc_import_n_dirs(t))
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        json_t *s = torrc_import_config_service(c, i);
        const char *name = torrc_import_service_name(t, i);
        check_name(name);
        if (strcmp(name, json_string_value(json_object_get(s, "name"))) != 0 ||
            json_array_size(json_object_get(s, "ports")) == 0 || !torrc_import_service_dir(t, i))
            __builtin_trap();
        for (size_t j = 0; j < i; j++)
            if (strcmp(name, torrc_import_service_name(t, j)) == 0)
                __builtin_trap();
    }
    for (size_t i = 0; i < torrc_import_n_notes(t); i++)
        if (strncmp(torrc_import_note(t, i), "line ", 5) != 0)
            __builtin_trap();
    char *text = json_dumps(c, JSON_COMPACT);
    if (!text)
        __builtin_trap();
    free(text);
    json_decref(c);
    torrc_import_free(t);
    return 0;
}
