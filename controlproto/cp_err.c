/* cp_err.c — error messages into the caller's buffer (see cp_err.h). */
#include "controlproto/cp_err.h"

#include <stdarg.h>
#include <stdio.h>

void cp_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
