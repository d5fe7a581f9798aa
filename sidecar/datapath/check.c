/* check.c — the stringer of enum check_result (see check.h): one name table. */
#include "sidecar/datapath/check.h"

#include <stddef.h>

static const char *const check_result_names[] = {
    [CHECK_OK] = "ok",
    [CHECK_CONNECT_REFUSED] = "connect refused",
    [CHECK_CONNECT_TIMEOUT] = "connect timeout",
    [CHECK_CONNECT_ERROR] = "connect error",
    [CHECK_RESET] = "connection reset",
    [CHECK_READ_TIMEOUT] = "read timeout",
    [CHECK_HTTP_STATUS] = "http status",
    [CHECK_HTTP_ERROR] = "http error",
    [CHECK_RESOLVE_ERROR] = "resolve error",
};

const char *check_result_str(enum check_result r)
{
    if ((unsigned)r < sizeof(check_result_names) / sizeof(check_result_names[0]) && check_result_names[r])
        return check_result_names[r];
    return "unknown";
}
