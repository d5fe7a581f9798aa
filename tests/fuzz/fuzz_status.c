/* fuzz_status.c — libFuzzer target for the status socket's request parser (sidecar/ops/status.c): any bytes
 * as one request line through status_parse_request, and a parsed request through status_execute with
 * fake providers (no reload happens).
 *
 * Must never crash, leak or overflow; every error is printable ASCII within the buffer, and every reply
 * is exactly one line of valid JSON with "ok" — the properties a client of the socket relies on. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/ops/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *fuzz_object(void *arg)
{
    (void)arg;
    return json_pack("{s:s}", "state", "ok");
}

static char *fuzz_metrics(void *arg)
{
    (void)arg;
    return strdup("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n");
}

static int fuzz_reload(void *arg, char *msg, size_t msglen)
{
    (void)arg;
    snprintf(msg, msglen, "not reloaded while fuzzing");
    return -1;
}

static int fuzz_log_level(const char *level, unsigned seconds, char *msg, size_t msglen)
{
    snprintf(msg, msglen, "not changed while fuzzing (%s, %u s)", level, seconds);
    return strcmp(level, "debug") == 0 ? 0 : -1;
}

/* One line of JSON with a boolean "ok", ending in its only "\n". */
static void fuzz_check_reply(const char *line, size_t len)
{
    if (!line || len < 2 || line[len - 1] != '\n' || memchr(line, '\n', len - 1))
        __builtin_trap();
    json_t *r = json_loadb(line, len - 1, 0, NULL);
    if (!r || !json_is_boolean(json_object_get(r, "ok")))
        __builtin_trap();
    json_decref(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct status_providers providers = {
        NULL, fuzz_object, fuzz_object, NULL, fuzz_object, fuzz_metrics, fuzz_reload, fuzz_log_level, fuzz_reload,
        fuzz_object,
    };
    struct status_request req;
    char err[256];
    memset(err, 'x', sizeof(err));
    enum status_parse_result r = status_parse_request((const char *)data, size, &req, err, sizeof(err) - 1);
    if (err[sizeof(err) - 1] != 'x' || memchr(err, '\0', sizeof(err) - 1) == NULL)
        __builtin_trap(); /* overran the buffer, or left it unterminated */
    for (const char *p = err; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            __builtin_trap();

    char *line = NULL;
    size_t len = 0;
    switch (r) {
    case STATUS_PARSE_OK:
        if (err[0] != '\0' || (unsigned)req.cmd >= STATUS_CMD_COUNT_)
            __builtin_trap();
        line = status_execute(&providers, &req, &len);
        break;
    case STATUS_PARSE_ERROR:
        if (err[0] == '\0')
            __builtin_trap(); /* every error explains itself */
        line = status_error_line(err, req.id, &len);
        break;
    case STATUS_PARSE_EMPTY:
        if (req.id)
            __builtin_trap();
        break;
    default:
        __builtin_trap();
    }
    if (r != STATUS_PARSE_EMPTY)
        fuzz_check_reply(line, len);
    free(line);
    status_request_clear(&req);
    return 0;
}
