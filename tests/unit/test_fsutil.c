/* test_fsutil.c — unit tests for sidecar/core/fsutil.c: atomic writes (content, mode, no leftovers, the old
 * file intact when the write fails), private directories, small-file reads.
 *
 * Tests run as root, so permission-based denial does not make writes fail. A write failure is made
 * with RLIMIT_FSIZE (write() fails with EFBIG even for root), and a rename failure with a directory
 * standing where the file should go. Each test works in its own temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/core/fsutil.h"
#include "tests/fake/tmpdir.h"

struct fs_state {
    char dir[64];
};

static int setup(void **state)
{
    struct fs_state *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    if (tmpdir_make(s->dir, sizeof s->dir, "test_fsutil") < 0) {
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct fs_state *s = *state;
    tmpdir_remove(s->dir);
    free(s);
    return 0;
}

static void path_in(char *buf, size_t cap, const struct fs_state *s, const char *name)
{
    snprintf(buf, cap, "%s/%s", s->dir, name);
}

static void write_plain(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void assert_file_is(const char *path, const char *text)
{
    char buf[8192];
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    assert_int_equal(n, (ssize_t)strlen(text));
    assert_memory_equal(buf, text, (size_t)n);
}

/* Number of directory entries other than . and .. (to see leftover temporary files). */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void test_write_atomic_creates_with_mode(void **state)
{
    static const struct {
        mode_t mode;
    } cases[] = {{0600}, {0644}, {0400}, {0640}};
    struct fs_state *s = *state;
    char err[512], path[256], name[32];
    struct stat st;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(name, sizeof name, "f%zu", i);
        path_in(path, sizeof path, s, name);
        assert_int_equal(fs_write_atomic(s->dir, name, "hello\n", 6, cases[i].mode, err, sizeof err), 0);
        assert_file_is(path, "hello\n");
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, cases[i].mode);
    }
    assert_int_equal(count_entries(s->dir), (int)(sizeof cases / sizeof cases[0]));
}

static void test_write_atomic_replaces(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256];

    path_in(path, sizeof path, s, "torrc");
    write_plain(path, "old contents that are longer than the new ones\n", 0644);
    assert_int_equal(fs_write_atomic(s->dir, "torrc", "new\n", 4, 0600, err, sizeof err), 0);
    assert_file_is(path, "new\n");
    /* An empty file is a valid content too (the single onion marker is one). */
    assert_int_equal(fs_write_atomic(s->dir, "torrc", "", 0, 0600, err, sizeof err), 0);
    assert_file_is(path, "");
    assert_int_equal(count_entries(s->dir), 1);
}

/* fs_write_atomic_owned: the file has the given owner and mode (root giving a key copy to tor's user);
 * -1 keeps the process's. As another user than root the change of owner is refused, leaving nothing. */
static void test_write_atomic_owned(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256];
    struct stat st;

    path_in(path, sizeof path, s, "copy");
    int rc = fs_write_atomic_owned(s->dir, "copy", "secret", 6, 0600, 65534, 65534, err, sizeof err);
    if (geteuid() != 0) {
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err, "cannot give"));
        assert_int_equal(count_entries(s->dir), 0);
        return;
    }
    assert_int_equal(rc, 0);
    assert_file_is(path, "secret");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65534);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(fs_write_atomic_owned(s->dir, "copy", "new", 3, 0640, (uid_t)-1, 4242, err, sizeof err), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_gid, 4242);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(count_entries(s->dir), 1);
}

/* fs_write_at_owned as root in a directory of another user (tor's HiddenServiceDir): the file is given to
 * that user, mode 0600, so its tor can read it (ob_config); fs_write_at leaves a file ours. */
static void test_write_at_owned(void **state)
{
    struct fs_state *s = *state;
    char err[512], sub[256], path[300];
    struct stat st;
    if (geteuid() != 0)
        skip();
    path_in(sub, sizeof sub, s, "hsdir");
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(chown(sub, 65534, 65534), 0);
    int dfd = fs_open_dir(sub, false, err, sizeof err);
    assert_true(dfd >= 0);
    assert_int_equal(fs_write_at_owned(dfd, sub, "ob_config", "MasterOnionAddress x\n", 21, 65534, 65534, err,
                                       sizeof err), 0);
    assert_int_equal(fs_write_at(dfd, sub, "own", "x", 1, err, sizeof err), 0);
    close(dfd);
    snprintf(path, sizeof path, "%s/ob_config", sub);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65534);
    assert_int_equal(st.st_mode & 07777, 0600);
    snprintf(path, sizeof path, "%s/own", sub);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_uid, 0);
}

/* fs_write_new: creates with the mode, and never replaces or follows anything already there (a file, a
 * symlink, a dangling symlink, a directory); no temporary file is left either way. */
static void test_write_new(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], target[256], link_path[256];
    struct stat st;

    path_in(path, sizeof path, s, "export.key");
    mode_t old = umask(0);
    assert_int_equal(fs_write_new(s->dir, "export.key", "secret", 6, 0600, err, sizeof err), 0);
    umask(old);
    assert_file_is(path, "secret");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(fs_write_new(s->dir, "export.key", "other", 5, 0600, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "exists already"));
    assert_file_is(path, "secret");

    path_in(target, sizeof target, s, "target");
    path_in(link_path, sizeof link_path, s, "link");
    assert_int_equal(symlink(target, link_path), 0);
    assert_int_equal(fs_write_new(s->dir, "link", "x", 1, 0600, err, sizeof err), -1);
    assert_int_equal(lstat(target, &st), -1); /* nothing written where the link points */
    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(fs_write_new(s->dir, "target", "x", 1, 0600, err, sizeof err), -1);
    assert_int_equal(count_entries(s->dir), 3); /* export.key, link, target: no temporary file */
    assert_int_equal(fs_write_new(s->dir, "a/b", "x", 1, 0600, err, sizeof err), -1);
}

/* write() fails (EFBIG from RLIMIT_FSIZE, which applies to root too): the old file stays as it was
 * and no temporary file is left behind. */
static void test_write_atomic_failed_write_keeps_old(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], big[4096];
    struct rlimit old_lim, lim;

    path_in(path, sizeof path, s, "hostname");
    write_plain(path, "old\n", 0600);
    memset(big, 'x', sizeof big);

    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_lim), 0);
    void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old_lim;
    lim.rlim_cur = 100;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = fs_write_atomic(s->dir, "hostname", big, sizeof big, 0600, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_lim), 0);
    signal(SIGXFSZ, old_sig);

    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "write"));
    assert_file_is(path, "old\n");
    assert_int_equal(count_entries(s->dir), 1);
}

/* rename() fails (a non-empty directory stands where the file goes): nothing changes. */
static void test_write_atomic_failed_rename_cleans_up(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], inner[300];

    path_in(path, sizeof path, s, "busy");
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    write_plain(inner, "keep\n", 0600);
    assert_int_equal(fs_write_atomic(s->dir, "busy", "data", 4, 0600, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "rename"));
    assert_file_is(inner, "keep\n");
    assert_int_equal(count_entries(s->dir), 1);
}

static void test_write_atomic_bad_args(void **state)
{
    static const struct {
        const char *name;
        const char *want;
    } cases[] = {
        {"a/b", "invalid file name"},
        {"", "invalid file name"},
        {".", "invalid file name"},
        {"..", "invalid file name"},
    };
    struct fs_state *s = *state;
    char err[512];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = '\0';
        assert_int_equal(fs_write_atomic(s->dir, cases[i].name, "x", 1, 0600, err, sizeof err), -1);
        assert_non_null(strstr(err, cases[i].want));
    }
    /* A directory that does not exist: the error names the path. */
    assert_int_equal(fs_write_atomic("/nonexistent-onionfront-dir", "f", "x", 1, 0600, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "/nonexistent-onionfront-dir/f"));
    assert_int_equal(count_entries(s->dir), 0);
}

static void test_ensure_private_dir_creates_0700(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256];
    struct stat st;
    bool created = false;

    path_in(path, sizeof path, s, "keys");
    /* Even under a umask that would strip the owner's bits, the result is exactly 0700. */
    mode_t old_umask = umask(0777);
    int rc = fs_ensure_private_dir(path, &created, err, sizeof err);
    umask(old_umask);
    assert_int_equal(rc, 0);
    assert_true(created);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);

    /* Second call: exists, fine, not created. */
    assert_int_equal(fs_ensure_private_dir(path, &created, err, sizeof err), 0);
    assert_false(created);
}

static void test_private_dir_modes(void **state)
{
    static const struct {
        mode_t mode;
        int want; /* 0 accepted, -1 refused */
    } cases[] = {
        {0700, 0}, {0500, 0}, {0710, 0}, {0750, -1}, {0755, -1}, {0701, -1}, {0720, -1}, {0777, -1}, {0702, -1},
    };
    struct fs_state *s = *state;
    char err[512], path[256], ms[6];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/d%zu", s->dir, i);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_int_equal(chmod(path, cases[i].mode), 0);
        err[0] = '\0';
        assert_int_equal(fs_check_private_dir(path, err, sizeof err), cases[i].want);
        assert_int_equal(fs_ensure_private_dir(path, NULL, err, sizeof err), cases[i].want);
        if (cases[i].want < 0) {
            assert_non_null(strstr(err, path));
            assert_non_null(strstr(err, fs_mode_str(cases[i].mode, ms)));
        }
        /* Never "fixed" behind the operator's back. */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, cases[i].mode);
    }
}

static void test_private_dir_refuses_others(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], missing[300];

    path_in(path, sizeof path, s, "plainfile");
    write_plain(path, "x", 0600);
    assert_int_equal(fs_ensure_private_dir(path, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "not a directory"));

    /* The parent must exist: no recursive creation. */
    snprintf(missing, sizeof missing, "%s/no/such", s->dir);
    assert_int_equal(fs_ensure_private_dir(missing, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, missing));
    assert_int_equal(fs_check_private_dir(missing, err, sizeof err), -1);
    assert_non_null(strstr(err, missing));
}

static void test_read_small(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], buf[16];
    size_t len = 99;
    struct stat st;

    path_in(path, sizeof path, s, "f");
    write_plain(path, "0123456789", 0640);
    assert_int_equal(fs_read_small(path, buf, 10, &len, &st, err, sizeof err), 0);
    assert_int_equal(len, 10);
    assert_memory_equal(buf, "0123456789", 10);
    assert_int_equal(st.st_mode & 07777, 0640);

    /* One byte too small a buffer: error naming the path. */
    assert_int_equal(fs_read_small(path, buf, 9, &len, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "longer"));

    /* Missing: 1, nothing set. */
    path_in(path, sizeof path, s, "missing");
    len = 99;
    assert_int_equal(fs_read_small(path, buf, sizeof buf, &len, NULL, err, sizeof err), 1);
    assert_int_equal(len, 99);

    /* A directory is not a file. */
    assert_int_equal(fs_read_small(s->dir, buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, s->dir));
}

static void test_mode_str(void **state)
{
    char ms[6];
    (void)state;
    assert_string_equal(fs_mode_str(0100644, ms), "0644");
    assert_string_equal(fs_mode_str(040700, ms), "0700");
    assert_string_equal(fs_mode_str(01777, ms), "1777");
}

/* fs_chown_tree hands a whole tree to another user without following symlinks out of it; fs_set_owner
 * changes one entry and refuses a symlink. (Tests run as root.) */
static void test_chown_tree(void **state)
{
    struct fs_state *s = *state;
    char tree[256], sub[300], file[320], link[300], outside[256], err[512] = "";
    struct stat st;
    const uid_t uid = 65534;
    const gid_t gid = 65534;
    path_in(tree, sizeof tree, s, "tree");
    path_in(outside, sizeof outside, s, "outside");
    snprintf(sub, sizeof sub, "%s/a", tree);
    snprintf(file, sizeof file, "%s/a/key", tree);
    snprintf(link, sizeof link, "%s/link", tree);
    assert_int_equal(mkdir(tree, 0700), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_plain(file, "secret", 0600);
    write_plain(outside, "not ours", 0644);
    assert_int_equal(symlink(outside, link), 0);

    assert_int_equal(fs_chown_tree(tree, uid, gid, err, sizeof err), 0);
    const char *mine[] = {tree, sub, file, link};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(lstat(mine[i], &st), 0);
        assert_int_equal(st.st_uid, uid);
        assert_int_equal(st.st_gid, gid);
    }
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600); /* modes kept */
    assert_int_equal(stat(outside, &st), 0);     /* the symlink's target is untouched */
    assert_int_equal(st.st_uid, 0);

    /* fs_set_owner: one entry only, back to root; the directory's contents keep their owner. */
    assert_int_equal(fs_set_owner(tree, 0, 0, err, sizeof err), 0);
    assert_int_equal(stat(tree, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_uid, uid);
    assert_int_equal(fs_set_owner(link, 0, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "symlink"));

    char missing[256];
    path_in(missing, sizeof missing, s, "missing");
    assert_int_equal(fs_chown_tree(missing, uid, gid, err, sizeof err), -1);
    assert_non_null(strstr(err, missing));
    assert_int_equal(fs_set_owner(missing, uid, gid, err, sizeof err), -1);
    assert_non_null(strstr(err, missing));
}

/* What another user who can write a directory plants there for a root reader: a symlink to a file of
 * root's, a FIFO, a directory, a huge file. fs_read_small_at refuses each without following, blocking or
 * reading it, and never quotes the file. (alarm: an open that blocks on the FIFO fails the test instead
 * of hanging it.) */
static void test_read_small_at_refuses_plants(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], secret[256], buf[64];
    size_t len = 99;
    path_in(secret, sizeof secret, s, "root-only");
    write_plain(secret, "TOPSECRET line\n", 0600);
    int dfd = fs_open_dir(s->dir, false, err, sizeof err);
    assert_true(dfd >= 0);

    path_in(path, sizeof path, s, "link");
    assert_int_equal(symlink(secret, path), 0);
    err[0] = '\0';
    assert_int_equal(fs_read_small_at(dfd, s->dir, "link", buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "symlink"));
    assert_null(strstr(err, "TOPSECRET"));
    /* fs_read_small (by path) too: the last component is never followed */
    assert_int_equal(fs_read_small(path, buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "symlink"));

    path_in(path, sizeof path, s, "fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10);
    err[0] = '\0';
    assert_int_equal(fs_read_small_at(dfd, s->dir, "fifo", buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    alarm(0);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "not a regular file"));

    path_in(path, sizeof path, s, "sub");
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(fs_read_small_at(dfd, s->dir, "sub", buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));

    /* Too big by fstat: refused before reading (the message gives the size, not the content). */
    path_in(path, sizeof path, s, "big");
    write_plain(path, "TOPSECRET but far too long for the buffer of sixty-four bytes given here .......", 0600);
    assert_int_equal(fs_read_small_at(dfd, s->dir, "big", buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than 64 bytes"));
    assert_null(strstr(err, "TOPSECRET"));

    assert_int_equal(fs_read_small_at(dfd, s->dir, "../x", buf, sizeof buf, &len, NULL, err, sizeof err), -1);
    assert_int_equal(fs_read_small_at(dfd, s->dir, "missing", buf, sizeof buf, &len, NULL, err, sizeof err), 1);
    assert_int_equal(len, 99);
    assert_int_equal(fs_read_small_at(dfd, s->dir, "root-only", buf, sizeof buf, &len, NULL, err, sizeof err), 0);
    assert_int_equal(len, 15);
    close(dfd);

    /* fs_open_dir with `private` applies the private-directory rule to what it opened. */
    assert_int_equal(chmod(s->dir, 0755), 0);
    assert_int_equal(fs_open_dir(s->dir, true, err, sizeof err), -1);
    assert_non_null(strstr(err, "0755"));
    assert_int_equal(chmod(s->dir, 0700), 0);
}

/* fs_bind_unix: the socket file has the asked mode from the start, whatever the umask, and the umask is
 * restored; fs_set_dir_owner_mode refuses a symlink; fs_dir_others_can_write. */
static void test_bind_and_dir_modes(void **state)
{
    struct fs_state *s = *state;
    char err[512], path[256], target[256];
    struct stat st;
    path_in(path, sizeof path, s, "sock");
    mode_t old = umask(0);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(fs_bind_unix(fd, path, 0660), 0);
    assert_int_equal(umask(old), 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0660);
    close(fd);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(fs_bind_unix(fd, path, 0666), -1); /* exists: bind never replaces or follows */
    assert_int_equal(errno, EADDRINUSE);
    close(fd);

    path_in(target, sizeof target, s, "target");
    assert_int_equal(mkdir(target, 0700), 0);
    path_in(path, sizeof path, s, "dirlink");
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(fs_set_dir_owner_mode(path, 0, 65534, 0710, err, sizeof err), -1);
    assert_non_null(strstr(err, "symlink"));
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(st.st_gid, getegid());
    assert_int_equal(fs_set_dir_owner_mode(target, 0, 65534, 0710, err, sizeof err), 0);
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0710);
    assert_int_equal(st.st_gid, 65534);

    int dfd = open(target, O_RDONLY | O_DIRECTORY);
    assert_false(fs_dir_others_can_write(dfd));
    assert_int_equal(fchmod(dfd, 0730), 0);
    assert_true(fs_dir_others_can_write(dfd));
    assert_int_equal(fchmod(dfd, 01777), 0);
    assert_false(fs_dir_others_can_write(dfd)); /* sticky: nobody else may rename or remove our names */
    assert_int_equal(fchown(dfd, 65534, (gid_t)-1), 0);
    assert_true(fs_dir_others_can_write(dfd));
    close(dfd);
}

/* fs_chown_tree never hands over a second name of a file (a hard link planted to a file of ours). */
static void test_chown_tree_refuses_hard_link(void **state)
{
    struct fs_state *s = *state;
    char tree[256], outside[256], lnk[300], err[512] = "";
    struct stat st;
    path_in(tree, sizeof tree, s, "tree");
    path_in(outside, sizeof outside, s, "ours");
    snprintf(lnk, sizeof lnk, "%s/hs_ed25519_secret_key", tree);
    assert_int_equal(mkdir(tree, 0700), 0);
    write_plain(outside, "root's", 0600);
    assert_int_equal(link(outside, lnk), 0);
    assert_int_equal(fs_chown_tree(tree, 65534, 65534, err, sizeof err), -1);
    assert_non_null(strstr(err, lnk));
    assert_non_null(strstr(err, "hard link"));
    assert_int_equal(stat(outside, &st), 0);
    assert_int_equal(st.st_uid, 0);
}

/* fs_ensure_dir: exactly the mode asked for whatever the umask; an existing directory is left alone; a
 * file of that name, or a missing parent, is an error naming the path. */
static void test_ensure_dir(void **state)
{
    struct fs_state *s = *state;
    char dir[256], file[256], err[512] = "";
    struct stat st;
    snprintf(dir, sizeof dir, "%s/www", s->dir);
    mode_t old = umask(077);
    int rc = fs_ensure_dir(dir, 0755, err, sizeof err);
    umask(old);
    assert_int_equal(rc, 0);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    assert_int_equal(chmod(dir, 0750), 0);
    assert_int_equal(fs_ensure_dir(dir, 0755, err, sizeof err), 0);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0750); /* the operator's, untouched */
    snprintf(file, sizeof file, "%s/plain", s->dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(fs_ensure_dir(file, 0755, err, sizeof err), -1);
    assert_non_null(strstr(err, "exists and is not a directory"));
    snprintf(dir, sizeof dir, "%s/no/such", s->dir);
    assert_int_equal(fs_ensure_dir(dir, 0755, err, sizeof err), -1);
    assert_non_null(strstr(err, dir));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_atomic_creates_with_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_owned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_at_owned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_failed_write_keeps_old, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_failed_rename_cleans_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_bad_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_new, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ensure_private_dir_creates_0700, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_dir_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_dir_refuses_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_small, setup, teardown),
        cmocka_unit_test(test_mode_str),
        cmocka_unit_test_setup_teardown(test_chown_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_small_at_refuses_plants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_and_dir_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chown_tree_refuses_hard_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ensure_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
