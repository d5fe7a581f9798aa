/* slowfs.c — LD_PRELOAD shim for tests/integration/test_privilege.sh: widens the window of a race the
 * daemon must not have. Every path-based chmod/chown family call whose path contains $OF_SLOWFS_MATCH
 * first sleeps $OF_SLOWFS_MS milliseconds (default 300), then does the real call. A daemon that
 * chmod/chowns a socket by name after bind() then gives an attacker who can write that directory ample
 * time to swap the name for a symlink; a daemon that makes no such call (or makes it only where nobody
 * else can write) is not affected. Test-only: never linked into onionfront. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void slowfs_wait(const char *path)
{
    const char *match = getenv("OF_SLOWFS_MATCH");
    const char *ms = getenv("OF_SLOWFS_MS");
    if (!match || !*match || !path || !strstr(path, match))
        return;
    long n = ms ? atol(ms) : 300;
    struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define SLOWFS_REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int chmod(const char *path, mode_t mode)
{
    slowfs_wait(path);
    return SLOWFS_REAL(chmod)(path, mode);
}

int fchmodat(int dfd, const char *path, mode_t mode, int flags)
{
    slowfs_wait(path);
    return SLOWFS_REAL(fchmodat)(dfd, path, mode, flags);
}

int chown(const char *path, uid_t uid, gid_t gid)
{
    slowfs_wait(path);
    return SLOWFS_REAL(chown)(path, uid, gid);
}

int lchown(const char *path, uid_t uid, gid_t gid)
{
    slowfs_wait(path);
    return SLOWFS_REAL(lchown)(path, uid, gid);
}

int fchownat(int dfd, const char *path, uid_t uid, gid_t gid, int flags)
{
    slowfs_wait(path);
    return SLOWFS_REAL(fchownat)(dfd, path, uid, gid, flags);
}
