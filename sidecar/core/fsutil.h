/* fsutil.h — small file-system helpers for files that must never be seen half-written or too open:
 * atomic replacement of a file (temp file in the same directory, fsync, rename, fsync of the directory),
 * private (0700) directories, and handing directories to another owner (tor's User) without following
 * symlinks.
 *
 * Owns nothing beyond the call. It does not know what the files contain (keys.c, tor.c do), never logs,
 * and reports every error through the caller's buffer, naming the path. */
#ifndef ONIONFRONT_FSUTIL_H
#define ONIONFRONT_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Replace `dir`/`name` with `len` bytes of `data`, atomically: readers see either the old file or the
 * complete new one, also after a crash. The data goes to a new temporary file in `dir` (created with
 * O_CREAT|O_EXCL, mode 0600, then set to `mode`), is fsync'ed, renamed over `name`, and `dir` is
 * fsync'ed. `name` must be a plain file name (no '/'). On failure the old file (if any) is untouched,
 * the temporary file is removed, and -1 is returned with a message in `err` naming the path. */
int fs_write_atomic(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
                    char *err, size_t errlen);

/* fs_write_atomic, the new file owned by `uid`:`gid` (-1 leaves either as the process's) from before its
 * first byte (fchown of the temporary file; root giving a file to tor's user). `dir` must be one that only
 * this process's user can change: the new file is renamed into it by name. */
int fs_write_atomic_owned(const char *dir, const char *name, const void *data, size_t len, mode_t mode, uid_t uid,
                          gid_t gid, char *err, size_t errlen);

/* Create `dir`/`name` with `len` bytes of `data` and mode `mode`, atomically and only if nothing of
 * that name exists (a file, a directory or a symlink: none is followed or replaced): the data goes to a
 * temporary file as in fs_write_atomic, which is then link()ed to `name` and removed. Return 0, or -1
 * with a message in `err` naming the path ("exists already" when it does). */
int fs_write_new(const char *dir, const char *name, const void *data, size_t len, mode_t mode, char *err,
                 size_t errlen);

/* Make sure `path` is a directory private to this user: create it with mode 0700 if it does not exist
 * (its parent must exist; the parent is fsync'ed), or check an existing one with
 * fs_check_private_dir(). Set `*created` (if not NULL) to whether it was created. Return 0, or -1 with
 * a message in `err` naming the path. */
int fs_ensure_private_dir(const char *path, bool *created, char *err, size_t errlen);

/* Make sure `path` is a directory, creating it with exactly `mode` if it does not exist (its parent must
 * exist). A new directory gets its mode through a descriptor (mkdirat in the parent, then openat with
 * O_NOFOLLOW|O_DIRECTORY, fstat, fchmod), never by name: in a parent another user can write, a symlink
 * swapped in after the mkdir is refused, not followed to a file of ours. An existing directory (or
 * symlink to one) is left as it is. Return 0, or -1 with a message in `err` naming the path. */
int fs_ensure_dir(const char *path, mode_t mode, char *err, size_t errlen);

/* Check that the existing `path` (symlinks followed, as tor does) is a directory owned by this user
 * (any owner when running as root: root may prepare directories for tor's User) with no group/other
 * permission bit, except group search (0710: how root lets tor's User through a directory it owns to
 * tor's own subdirectories, without letting it list or change anything). Return 0, or -1 with a message
 * in `err` naming the path and its mode. */
int fs_check_private_dir(const char *path, char *err, size_t errlen);

/* Open the directory `path` (symlinks in it followed, as tor does) for the *at() calls below:
 * O_RDONLY|O_DIRECTORY|O_CLOEXEC. With `private`, also apply fs_check_private_dir's rule to the open
 * directory (fstat, so the directory checked is the one the descriptor names). Return the descriptor,
 * or -1 with a message in `err` naming the path. */
int fs_open_dir(const char *path, bool private, char *err, size_t errlen);

/* Read the regular file `name` (a plain name, no '/') of the open directory `dfd` (named `dir` in
 * messages) like fs_read_small. For a directory another user may write (tor's HiddenServiceDir, read
 * as root): opened with O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, so a symlink is refused (never
 * followed to a file of ours), a FIFO never blocks, and anything but a regular file of at most `cap`
 * bytes (fstat) is refused before a byte is read. Messages name the path and never quote the file.
 * Return 0, 1 if there is no such file, or -1 with a message in `err`. */
int fs_read_small_at(int dfd, const char *dir, const char *name, void *buf, size_t cap, size_t *len,
                     struct stat *st_out, char *err, size_t errlen);

/* Replace `name` (a plain name) in the open directory `dfd` (named `dir` in messages) with `len` bytes of
 * `data`, mode 0600, for a directory another user may write (tor's HiddenServiceDir): a temporary file
 * created with O_CREAT|O_EXCL|O_NOFOLLOW, fsync'ed and renamed over `name` (a planted symlink of that name
 * is replaced, never followed), then `dfd` fsync'ed. Return 0, or -1 with a message naming the path. */
int fs_write_at(int dfd, const char *dir, const char *name, const void *data, size_t len, char *err,
                size_t errlen);
/* fs_write_at, the new file owned by `uid`:`gid` (fchown on its descriptor before the rename; (uid_t)-1:
 * this process's): a file tor's User must read in a directory onionfront writes as root. */
int fs_write_at_owned(int dfd, const char *dir, const char *name, const void *data, size_t len, uid_t uid,
                      gid_t gid, char *err, size_t errlen);

/* Is the open directory `dfd` one that a user other than this process's (or root) could change: owned
 * by another user, or group/other-writable without the sticky bit? A path-based chown/chmod/bind inside
 * such a directory can be redirected by a planted symlink; callers must not do one there. Returns true
 * also when fstat fails. */
bool fs_dir_others_can_write(int dfd);

/* Make the directory `path` (not a symlink: O_NOFOLLOW) owned by `uid`:`gid` with exactly `mode`,
 * through a descriptor (fchown/fchmod), so a name swapped after the check cannot redirect the change.
 * Return 0, or -1 with a message in `err` naming the path. */
int fs_set_dir_owner_mode(const char *path, uid_t uid, gid_t gid, mode_t mode, char *err, size_t errlen);

/* Read the whole regular file `path` into `buf` (capacity `cap`): fs_read_small_at on its directory,
 * so the last component must not be a symlink. A file longer than `cap` is an error
 * (so a caller that wants exactly N bytes passes cap N+1 and checks the length). Set `*len` to the
 * number of bytes read and, if `st_out` is not NULL, the file's stat (from the open descriptor, so
 * the mode checked is that of the bytes read). Return 0, 1 if the file does not exist (nothing set),
 * or -1 with a message in `err` naming the path. The caller wipes `buf` if it holds a secret; on
 * error the partially read bytes are wiped here. */
int fs_read_small(const char *path, void *buf, size_t cap, size_t *len, struct stat *st_out, char *err,
                  size_t errlen);

/* bind() the unix socket `fd` to `path` so that the socket file is created with exactly `mode` (the
 * umask is set around the bind and restored: process-wide, but onionfront is single-threaded), instead
 * of a chmod by name afterwards, which a symlink swapped in after the bind would redirect. Return 0, or
 * -1 with errno set (the caller names the socket in its message). */
int fs_bind_unix(int fd, const char *path, mode_t mode);

/* Describe `mode`'s permission bits as "0644". `out` needs 6 bytes. Return `out`. */
const char *fs_mode_str(mode_t mode, char out[6]);

/* Give `path` itself (not what it contains) to `uid`:`gid`. A symlink is refused, not followed. Modes
 * are kept. Return 0, or -1 with a message in `err` naming the path. (Used as root, to hand the
 * directories a tor with the User option works in to that user.) */
int fs_set_owner(const char *path, uid_t uid, gid_t gid, char *err, size_t errlen);

/* Give `path` and, if it is a directory, everything below it to `uid`:`gid`, without following
 * symlinks (a symlink itself is changed, not its target) and without leaving the file system of
 * `path`. At most 16 levels deep. Modes are kept. Return 0, or -1 with a message in `err` naming the
 * first path that failed. */
int fs_chown_tree(const char *path, uid_t uid, gid_t gid, char *err, size_t errlen);

#endif
