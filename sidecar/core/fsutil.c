/* fsutil.c — atomic file replacement and private directories (see fsutil.h).
 *
 * Owns nothing beyond one call: no state, no logging. Errors name the path and carry strerror. It does
 * not interpret file contents and does not create parent directories recursively (a missing parent is
 * a configuration error the caller should report, not paper over). */
#include "sidecar/core/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>

const char *fs_mode_str(mode_t mode, char out[6])
{
    snprintf(out, 6, "%04o", (unsigned)(mode & 07777));
    return out;
}

/* fsync a directory so that a rename or mkdir inside it survives a crash. */
static int fs_fsync_dir(const char *dir, char *err, size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open directory to sync it: %s", dir, strerror(errno));
        return -1;
    }
    if (fsync(fd) < 0) {
        int e = errno;
        close(fd);
        snprintf(err, errlen, "%s: fsync of directory failed: %s", dir, strerror(e));
        return -1;
    }
    close(fd);
    return 0;
}

static int fs_write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) { /* should not happen for a regular file; avoid spinning */
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write `len` bytes of `data` to a new temporary file in `dir` (named after `name`), with `mode`,
 * fsync'ed and closed; put its path in `tmp` and the final path `dir`/`name` in `path` (4096 bytes
 * each). Return 0, or -1 with a message (nothing left behind). */
static int fs_write_temp(const char *dir, const char *name, const void *data, size_t len, mode_t mode, uid_t uid,
                         gid_t gid, char *tmp, char *path, char *err, size_t errlen)
{
    int fd = -1;

    if (!dir || !*dir || !name || !*name || strchr(name, '/') || !strcmp(name, ".") ||
        !strcmp(name, "..")) {
        snprintf(err, errlen, "%s/%s: invalid file name", dir ? dir : "(null)", name ? name : "(null)");
        return -1;
    }
    int n1 = snprintf(path, 4096, "%s/%s", dir, name);
    /* mkstemp wants the template's last six characters to be XXXXXX; the leading dot keeps tools
     * that scan the directory (tor does not, but humans do) from mistaking it for the real file. */
    int n2 = snprintf(tmp, 4096, "%s/.%s.tmp-XXXXXX", dir, name);
    if (n1 < 0 || n1 >= 4096 || n2 < 0 || n2 >= 4096) {
        snprintf(err, errlen, "%s/%s: path too long", dir, name);
        return -1;
    }

    /* mkostemp: O_CREAT|O_EXCL, mode 0600, never follows or reuses an existing file. */
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create temporary file in %s: %s", path, dir, strerror(errno));
        return -1;
    }
    /* Its owner before any byte is in it (-1: unchanged), through the descriptor. */
    if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(fd, uid, gid) < 0) {
        snprintf(err, errlen, "%s: cannot give %s to %ld:%ld: %s", path, tmp, (long)uid, (long)gid, strerror(errno));
        goto fail;
    }
    /* Set the mode explicitly: mkostemp's 0600 went through the umask. */
    if (fchmod(fd, mode & 07777) < 0) {
        snprintf(err, errlen, "%s: cannot set mode of %s: %s", path, tmp, strerror(errno));
        goto fail;
    }
    if (fs_write_all(fd, data, len) < 0) {
        snprintf(err, errlen, "%s: write to %s failed: %s", path, tmp, strerror(errno));
        goto fail;
    }
    if (fsync(fd) < 0) {
        snprintf(err, errlen, "%s: fsync of %s failed: %s", path, tmp, strerror(errno));
        goto fail;
    }
    /* close() can report a delayed write error (NFS); treat it as a failed write. */
    int rc = close(fd);
    fd = -1;
    if (rc < 0) {
        snprintf(err, errlen, "%s: close of %s failed: %s", path, tmp, strerror(errno));
        goto fail;
    }
    return 0;

fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}

int fs_write_atomic(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
                    char *err, size_t errlen)
{
    return fs_write_atomic_owned(dir, name, data, len, mode, (uid_t)-1, (gid_t)-1, err, errlen);
}

int fs_write_atomic_owned(const char *dir, const char *name, const void *data, size_t len, mode_t mode, uid_t uid,
                          gid_t gid, char *err, size_t errlen)
{
    char path[4096], tmp[4096];

    if (fs_write_temp(dir, name, data, len, mode, uid, gid, tmp, path, err, errlen) < 0)
        return -1;
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* The new file is in place; a failing directory fsync means it may not survive a crash. */
    return fs_fsync_dir(dir, err, errlen);
}

int fs_write_new(const char *dir, const char *name, const void *data, size_t len, mode_t mode, char *err,
                 size_t errlen)
{
    char path[4096], tmp[4096];

    if (fs_write_temp(dir, name, data, len, mode, (uid_t)-1, (gid_t)-1, tmp, path, err, errlen) < 0)
        return -1;
    /* link() never replaces and never follows: EEXIST for a file, a directory or a symlink there. */
    int rc = link(tmp, path);
    int e = errno;
    unlink(tmp);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, e == EEXIST ? "exists already; not overwriting it" : strerror(e));
        return -1;
    }
    return fs_fsync_dir(dir, err, errlen);
}

int fs_ensure_dir(const char *path, mode_t mode, char *err, size_t errlen)
{
    char parent[4096];
    size_t plen = path ? strlen(path) : 0;
    if (plen == 0 || plen >= sizeof parent) {
        snprintf(err, errlen, "%s: empty or too long a directory path", path ? path : "(null)");
        return -1;
    }
    memcpy(parent, path, plen + 1);
    while (plen > 1 && parent[plen - 1] == '/') /* "a/b/" -> "a/b" */
        parent[--plen] = '\0';
    char *slash = strrchr(parent, '/');
    const char *name = slash ? slash + 1 : parent;
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
        snprintf(err, errlen, "%s: not a directory name to create", path);
        return -1;
    }
    const char *pdir = ".";
    if (slash == parent) {
        pdir = "/";
    } else if (slash) {
        *slash = '\0'; /* `name` stays intact after it */
        pdir = parent;
    }
    int pfd = open(pdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) {
        snprintf(err, errlen, "%s: cannot open its parent directory: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = -1;
    if (mkdirat(pfd, name, mode & 07777) < 0) {
        if (errno != EEXIST)
            snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
        else if (fstatat(pfd, name, &st, 0) < 0 || !S_ISDIR(st.st_mode))
            snprintf(err, errlen, "%s: exists and is not a directory", path);
        else
            rc = 0;
        close(pfd);
        return rc;
    }
    /* Ours, just made: its mode went through the umask; set it on what the descriptor names. */
    int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        snprintf(err, errlen, "%s: cannot open the new directory: %s", path,
                 errno == ELOOP || errno == ENOTDIR ? "replaced by a symlink or another file; refusing to change it"
                                                    : strerror(errno));
    else if (fstat(dfd, &st) < 0 || ((st.st_mode & 07777) != (mode & 07777) && fchmod(dfd, mode & 07777) < 0))
        snprintf(err, errlen, "%s: cannot set mode %04o: %s", path, (unsigned)(mode & 07777), strerror(errno));
    else
        rc = 0;
    if (dfd >= 0)
        close(dfd);
    close(pfd);
    return rc;
}

int fs_ensure_private_dir(const char *path, bool *created, char *err, size_t errlen)
{
    if (created)
        *created = false;
    if (!path || !*path) {
        snprintf(err, errlen, "empty directory path");
        return -1;
    }
    /* Exactly 0700 whatever the process umask (0777 would leave 0000), without a chmod by name after
     * the fact (the name may sit in a directory someone else can write). The umask is process-wide:
     * onionfront is single-threaded, and nothing runs between the set and the restore. */
    mode_t old_umask = umask(077);
    int made = mkdir(path, 0700);
    int mkdir_errno = errno;
    umask(old_umask);
    errno = mkdir_errno;
    if (made == 0) {
        if (created)
            *created = true;
        /* Make the new directory entry durable: sync the parent. */
        char parent[4096];
        size_t plen = strlen(path);
        if (plen >= sizeof parent) {
            snprintf(err, errlen, "%s: path too long", path);
            return -1;
        }
        memcpy(parent, path, plen + 1);
        while (plen > 1 && parent[plen - 1] == '/') /* "a/b/" -> "a/b" */
            parent[--plen] = '\0';
        char *slash = strrchr(parent, '/');
        if (!slash)
            strcpy(parent, ".");
        else if (slash == parent)
            parent[1] = '\0';
        else
            *slash = '\0';
        return fs_fsync_dir(parent, err, errlen);
    }
    if (errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
        return -1;
    }
    return fs_check_private_dir(path, err, errlen);
}

/* fs_check_private_dir's rule on the stat `st` of `path`. Group search alone (0710) is allowed: see
 * fsutil.h. */
static int fs_check_private_st(const char *path, const struct stat *st, char *err, size_t errlen)
{
    char ms[6];
    if (!S_ISDIR(st->st_mode)) {
        snprintf(err, errlen, "%s: exists and is not a directory", path);
        return -1;
    }
    if (geteuid() != 0 && st->st_uid != geteuid()) {
        snprintf(err, errlen, "%s: directory is owned by uid %lu, not by this user (uid %lu)", path,
                 (unsigned long)st->st_uid, (unsigned long)geteuid());
        return -1;
    }
    if (st->st_mode & 067) {
        snprintf(err, errlen,
                 "%s: directory mode %s gives group/other access; it must be 0700 (chmod 700 %s)",
                 path, fs_mode_str(st->st_mode, ms), path);
        return -1;
    }
    return 0;
}

int fs_check_private_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;

    /* Follow a symlink, like tor's check_private_dir: what matters is the directory the files are in. */
    if (stat(path, &st) < 0) {
        snprintf(err, errlen, "%s: cannot stat directory: %s", path, strerror(errno));
        return -1;
    }
    return fs_check_private_st(path, &st, err, errlen);
}

int fs_open_dir(const char *path, bool private, char *err, size_t errlen)
{
    struct stat st;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "%s: cannot open directory: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(dfd, &st) < 0) {
        snprintf(err, errlen, "%s: cannot stat directory: %s", path, strerror(errno));
        close(dfd);
        return -1;
    }
    if (private && fs_check_private_st(path, &st, err, errlen) < 0) {
        close(dfd);
        return -1;
    }
    return dfd;
}

bool fs_dir_others_can_write(int dfd)
{
    struct stat st;
    if (fstat(dfd, &st) < 0)
        return true;
    if (st.st_uid != geteuid())
        return true;
    /* A sticky directory (/tmp): others may add names but never rename or remove ours. */
    return (st.st_mode & 022) && !(st.st_mode & S_ISVTX);
}

int fs_set_dir_owner_mode(const char *path, uid_t uid, gid_t gid, mode_t mode, char *err, size_t errlen)
{
    struct stat st;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "%s: cannot open directory: %s", path,
                 errno == ELOOP || errno == ENOTDIR ? "a symlink or not a directory; refusing to change it"
                                                    : strerror(errno));
        return -1;
    }
    int rc = fstat(dfd, &st);
    if (rc == 0 && (st.st_uid != uid || st.st_gid != gid))
        rc = fchown(dfd, uid, gid);
    /* After the owner: chown clears set-id bits, and the mode is what is left exactly as asked. */
    if (rc == 0 && (st.st_mode & 07777) != (mode & 07777))
        rc = fchmod(dfd, mode & 07777);
    if (rc < 0) {
        char ms[6];
        snprintf(err, errlen, "%s: cannot make it %lu:%lu mode %s: %s", path, (unsigned long)uid,
                 (unsigned long)gid, fs_mode_str(mode, ms), strerror(errno));
    }
    close(dfd);
    return rc < 0 ? -1 : 0;
}

int fs_write_at(int dfd, const char *dir, const char *name, const void *data, size_t len, char *err,
                size_t errlen)
{
    return fs_write_at_owned(dfd, dir, name, data, len, (uid_t)-1, (gid_t)-1, err, errlen);
}

int fs_write_at_owned(int dfd, const char *dir, const char *name, const void *data, size_t len, uid_t uid,
                      gid_t gid, char *err, size_t errlen)
{
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".tmp-%ld", (long)getpid());
    unlinkat(dfd, tmp, 0);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s/%s: cannot create: %s", dir, tmp, strerror(errno));
        return -1;
    }
    /* The owner is set on the descriptor, before the file has its name: nothing to redirect. */
    bool ok = write(fd, data, len) == (ssize_t)len && (uid == (uid_t)-1 || fchown(fd, uid, gid) == 0) &&
              fsync(fd) == 0;
    int e = errno;
    close(fd);
    if (!ok || renameat(dfd, tmp, dfd, name) < 0) {
        e = ok ? errno : e;
        unlinkat(dfd, tmp, 0);
        snprintf(err, errlen, "%s/%s: cannot write: %s", dir, name, strerror(e));
        return -1;
    }
    fsync(dfd);
    return 0;
}

int fs_read_small_at(int dfd, const char *dir, const char *name, void *buf, size_t cap, size_t *len,
                     struct stat *st_out, char *err, size_t errlen)
{
    struct stat st;
    unsigned char *p = buf;
    size_t got = 0;

    if (!name[0] || strchr(name, '/')) {
        snprintf(err, errlen, "%s/%s: invalid file name", dir, name);
        return -1;
    }
    /* O_NOFOLLOW: a symlink planted by whoever can write `dir` fails with ELOOP instead of opening a
     * file of ours. O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a
     * writer; it does nothing for a regular file. */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "%s/%s: %s", dir, name,
                 errno == ELOOP ? "is a symlink; refusing to follow it" : strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s/%s: cannot stat: %s", dir, name, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s/%s: not a regular file", dir, name);
        goto fail;
    }
    if ((unsigned long long)st.st_size > cap) {
        snprintf(err, errlen, "%s/%s: file is longer than %zu bytes", dir, name, cap);
        goto fail;
    }
    for (;;) {
        if (got == cap) {
            /* Full: one more byte means the file is too long (it grew since the fstat). */
            unsigned char extra;
            ssize_t n = read(fd, &extra, 1);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                snprintf(err, errlen, "%s/%s: read failed: %s", dir, name, strerror(errno));
                goto fail;
            }
            if (n > 0) {
                OPENSSL_cleanse(&extra, 1);
                snprintf(err, errlen, "%s/%s: file is longer than %zu bytes", dir, name, cap);
                goto fail;
            }
            break;
        }
        ssize_t n = read(fd, p + got, cap - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "%s/%s: read failed: %s", dir, name, strerror(errno));
            goto fail;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *len = got;
    if (st_out)
        *st_out = st;
    return 0;

fail:
    close(fd);
    if (got)
        OPENSSL_cleanse(buf, got);
    return -1;
}

int fs_read_small(const char *path, void *buf, size_t cap, size_t *len, struct stat *st_out, char *err,
                  size_t errlen)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 1;
    if (dlen >= sizeof dir) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    if (!slash)
        strcpy(dir, ".");
    else if (dlen == 0)
        strcpy(dir, "/");
    else {
        memcpy(dir, path, dlen);
        dir[dlen] = '\0';
    }
    if (!name[0]) { /* "dir/": a directory is not a file */
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "%s: cannot open directory %s: %s", path, dir, strerror(errno));
        return -1;
    }
    int rc = fs_read_small_at(dfd, dir, name, buf, cap, len, st_out, err, errlen);
    close(dfd);
    return rc;
}

int fs_bind_unix(int fd, const char *path, mode_t mode)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    mode_t old_umask = umask(~mode & 0777);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    umask(old_umask);
    errno = e;
    return rc;
}

int fs_set_owner(const char *path, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s: is a symlink; refusing to change its owner", path);
        return -1;
    }
    if ((st.st_uid != uid || st.st_gid != gid) && lchown(path, uid, gid) < 0) {
        snprintf(err, errlen, "%s: cannot change owner to %lu:%lu: %s", path, (unsigned long)uid,
                 (unsigned long)gid, strerror(errno));
        return -1;
    }
    return 0;
}

/* One directory level of fs_chown_tree: everything inside the open directory `dfd` (named `path` in
 * messages). Takes ownership of `dfd`. */
static int fs_chown_dir(int dfd, const char *path, dev_t dev, uid_t uid, gid_t gid, int depth, char *err,
                        size_t errlen)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        snprintf(err, errlen, "%s: cannot read directory: %s", path, strerror(errno));
        close(dfd);
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char sub[4096];
        if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= (int)sizeof(sub)) {
            snprintf(err, errlen, "%s/%s: path too long", path, de->d_name);
            rc = -1;
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            snprintf(err, errlen, "%s: cannot stat: %s", sub, strerror(errno));
            rc = -1;
            break;
        }
        if (st.st_dev != dev) /* a mount point below: not ours to change */
            continue;
        /* A second name for a file elsewhere (a hard link someone who can write here made to a file
         * of ours) would carry the new owner to that file too. */
        if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && (st.st_uid != uid || st.st_gid != gid)) {
            snprintf(err, errlen, "%s: has %lu hard links; refusing to change its owner", sub,
                     (unsigned long)st.st_nlink);
            rc = -1;
            break;
        }
        if ((st.st_uid != uid || st.st_gid != gid) &&
            fchownat(dirfd(d), de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
            snprintf(err, errlen, "%s: cannot change owner to %lu:%lu: %s", sub, (unsigned long)uid,
                     (unsigned long)gid, strerror(errno));
            rc = -1;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (depth >= 16) {
                snprintf(err, errlen, "%s: more than 16 directory levels", sub);
                rc = -1;
                break;
            }
            int sfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sfd < 0) {
                snprintf(err, errlen, "%s: cannot open directory: %s", sub, strerror(errno));
                rc = -1;
                break;
            }
            rc = fs_chown_dir(sfd, sub, dev, uid, gid, depth + 1, err, errlen);
        }
    }
    if (rc == 0 && errno != 0) {
        snprintf(err, errlen, "%s: cannot read directory: %s", path, strerror(errno));
        rc = -1;
    }
    closedir(d);
    return rc;
}

int fs_chown_tree(const char *path, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        return -1;
    }
    if ((st.st_uid != uid || st.st_gid != gid) && lchown(path, uid, gid) < 0) {
        snprintf(err, errlen, "%s: cannot change owner to %lu:%lu: %s", path, (unsigned long)uid,
                 (unsigned long)gid, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return 0;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "%s: cannot open directory: %s", path, strerror(errno));
        return -1;
    }
    return fs_chown_dir(dfd, path, st.st_dev, uid, gid, 1, err, errlen);
}
