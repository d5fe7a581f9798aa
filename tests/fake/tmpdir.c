/* tmpdir.c — private temporary directories for tests (see tmpdir.h). */
#include "tests/fake/tmpdir.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

int tmpdir_make(char *out, size_t len, const char *prefix)
{
    int n = snprintf(out, len, "/tmp/%s.XXXXXX", prefix);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(out) ? 0 : -1;
}

static int tmpdir_remove_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int tmpdir_remove(const char *dir)
{
    /* FTW_DEPTH: a directory's entries before the directory; FTW_PHYS: a link is removed itself. */
    return nftw(dir, tmpdir_remove_cb, 16, FTW_DEPTH | FTW_PHYS);
}
