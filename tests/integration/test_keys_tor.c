/* test_keys_tor.c — sidecar/identity/keys.c against Debian's real tor (0.4.9.x), with DisableNetwork 1 and no
 * ports at all, so nothing leaves the machine:
 *   - keys onionfront creates are loaded by tor as a HiddenServiceDir, and tor's hostname is ours;
 *   - keys tor creates are loaded by onionfront with the same address;
 *   - the anonymity ("poisoning") behaviour measured for keys.c's top comment: tor 0.4.9 refuses
 *     none of (a) an anonymous service's directory reused in single onion mode, (b) a fresh keys-only
 *     directory in single onion mode, (c) a marked directory in anonymous mode, and writes no marker;
 *     onionfront refuses (a);
 *   - tor refuses a mismatched key pair (also one whose public key only differs in the sign bit, the
 *     one thing keys.c's OpenSSL-only check cannot see), as onionfront does.
 * Each tor is started by fork/exec and stopped by its PID (SIGTERM, SIGKILL after a bound); teardown
 * stops a tor a failed assertion left behind and removes the temporary directory. A missing tor is a
 * failure. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/identity/keys.h"
#include "tests/fake/tmpdir.h"

#define TOR_LOAD_TIMEOUT_MS 30000 /* until tor has loaded the service (hostname written) or exited */
#define TOR_SETTLE_MS 1000        /* a loaded tor must still be running this long after */
#define TOR_STOP_TIMEOUT_MS 10000 /* SIGTERM -> SIGKILL */

struct itest_state {
    char base[64];
    char torrc[128];
    pid_t tor_pid; /* the running tor, or 0 */
    int runs;      /* for unique DataDirectory / log names */
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Stop tor `pid` (ours): SIGTERM, then SIGKILL after the bound. Return its wait status. */
static int tor_stop(pid_t pid)
{
    int status = 0;
    if (pid <= 0)
        return 0;
    kill(pid, SIGTERM);
    long deadline = now_ms() + TOR_STOP_TIMEOUT_MS;
    while (now_ms() < deadline) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return status;
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

static int setup(void **state)
{
    struct itest_state *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    if (tmpdir_make(s->base, sizeof s->base, "test_keys_tor") < 0) {
        free(s);
        return -1;
    }
    /* tor reads /etc/tor/torrc unless told otherwise; an empty torrc of our own keeps it out. */
    snprintf(s->torrc, sizeof s->torrc, "%s/torrc", s->base);
    int fd = open(s->torrc, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        free(s);
        return -1;
    }
    close(fd);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct itest_state *s = *state;
    if (s->tor_pid > 0)
        tor_stop(s->tor_pid);
    tmpdir_remove(s->base);
    free(s);
    return 0;
}

static void sub(char *buf, size_t cap, const struct itest_state *s, const char *name)
{
    snprintf(buf, cap, "%s/%s", s->base, name);
}

static bool exists(const char *dir, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

static void unlink_in(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (unlink(p) < 0)
        assert_int_equal(errno, ENOENT);
}

static size_t read_in(const char *dir, const char *name, void *buf, size_t cap)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        fail_msg("%s: %s", p, strerror(errno));
    ssize_t n = read(fd, buf, cap);
    close(fd);
    assert_true(n >= 0);
    return (size_t)n;
}

static void write_in(const char *dir, const char *name, const void *buf, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

static void copy_in(const char *from_dir, const char *to_dir, const char *name)
{
    unsigned char buf[256];
    size_t n = read_in(from_dir, name, buf, sizeof buf);
    write_in(to_dir, name, buf, n);
}

static bool file_has(const char *path, const char *needle)
{
    const size_t cap = 256 * 1024;
    char *buf = malloc(cap);
    int fd = open(path, O_RDONLY);
    assert_non_null(buf);
    if (fd < 0) {
        free(buf);
        return false;
    }
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    bool found = n >= 0 && (buf[n] = '\0', strstr(buf, needle) != NULL);
    free(buf);
    return found;
}

/* Start tor on the HiddenServiceDir `hsdir` with a fresh DataDirectory; single onion mode if
 * `single`. Its output goes to `log_out` (a path filled in here). */
static void tor_start(struct itest_state *s, const char *hsdir, bool single, char *log_out, size_t cap)
{
    char datadir[256];
    int run = ++s->runs;

    assert_int_equal(s->tor_pid, 0);
    snprintf(datadir, sizeof datadir, "%s/data%d", s->base, run);
    assert_int_equal(mkdir(datadir, 0700), 0);
    snprintf(log_out, cap, "%s/tor%d.log", s->base, run);

    const char *argv[32];
    int i = 0;
    argv[i++] = "tor";
    argv[i++] = "-f";
    argv[i++] = s->torrc;
    argv[i++] = "--DisableNetwork";
    argv[i++] = "1";
    argv[i++] = "--SocksPort";
    argv[i++] = "0";
    argv[i++] = "--DataDirectory";
    argv[i++] = datadir;
    argv[i++] = "--HiddenServiceDir";
    argv[i++] = hsdir;
    argv[i++] = "--HiddenServicePort";
    argv[i++] = "80 127.0.0.1:8080";
    argv[i++] = "--Log";
    argv[i++] = "notice stdout";
    if (single) {
        argv[i++] = "--HiddenServiceSingleHopMode";
        argv[i++] = "1";
        argv[i++] = "--HiddenServiceNonAnonymousMode";
        argv[i++] = "1";
    }
    argv[i] = NULL;

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log_out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0)
            _exit(126);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp("tor", (char *const *)argv);
        _exit(127);
    }
    s->tor_pid = pid;
}

enum tor_outcome { TOR_LOADED, TOR_EXITED, TOR_TIMEOUT };

/* Wait until tor has loaded the service in `hsdir` (it writes `hostname`; the caller removed any old
 * one) and is still running TOR_SETTLE_MS later, or until it exits. On TOR_EXITED the tor is reaped
 * and `*wstatus` set. */
static enum tor_outcome tor_wait(struct itest_state *s, const char *hsdir, int *wstatus)
{
    long deadline = now_ms() + TOR_LOAD_TIMEOUT_MS;
    long loaded_at = 0;
    while (now_ms() < deadline) {
        pid_t r = waitpid(s->tor_pid, wstatus, WNOHANG);
        if (r == s->tor_pid) {
            s->tor_pid = 0;
            return TOR_EXITED;
        }
        if (!loaded_at && exists(hsdir, "hostname"))
            loaded_at = now_ms();
        if (loaded_at && now_ms() - loaded_at >= TOR_SETTLE_MS)
            return TOR_LOADED;
        sleep_ms(50);
    }
    return TOR_TIMEOUT;
}

/* Run tor on `hsdir` until it has loaded the service, check it did, and stop it. Return tor's
 * hostname line in `host` (cap >= 80). */
static void tor_run_expect_loaded(struct itest_state *s, const char *hsdir, bool single, char *host,
                                  char *log, size_t logcap)
{
    int st = 0;
    unlink_in(hsdir, "hostname");
    tor_start(s, hsdir, single, log, logcap);
    enum tor_outcome o = tor_wait(s, hsdir, &st);
    if (o != TOR_LOADED)
        fail_msg("tor on %s (%s mode) did not load the service: %s (wait status %d); see %s", hsdir,
                 single ? "single onion" : "anonymous", o == TOR_EXITED ? "exited" : "timeout", st, log);
    int status = tor_stop(s->tor_pid);
    s->tor_pid = 0;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* clean exit on SIGTERM */
    size_t n = read_in(hsdir, "hostname", host, 79);
    host[n] = '\0';
}

/* Run tor on `hsdir` and expect it to refuse: exit with an error before loading. */
static void tor_run_expect_refused(struct itest_state *s, const char *hsdir, bool single, char *log,
                                   size_t logcap)
{
    int st = 0;
    unlink_in(hsdir, "hostname");
    tor_start(s, hsdir, single, log, logcap);
    enum tor_outcome o = tor_wait(s, hsdir, &st);
    if (o != TOR_EXITED) {
        tor_stop(s->tor_pid);
        s->tor_pid = 0;
        fail_msg("tor on %s did not refuse it (%s); see %s", hsdir,
                 o == TOR_LOADED ? "loaded" : "timeout", log);
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    assert_false(exists(hsdir, "hostname"));
}

static void key_files_only(const char *from, const char *to)
{
    assert_int_equal(mkdir(to, 0700), 0);
    copy_in(from, to, KEYS_SECRET_FILE);
    copy_in(from, to, KEYS_PUBLIC_FILE);
}

/* (1) onionfront creates, tor loads: tor's hostname is onionfront's address; the marker survives. */
static void test_onionfront_keys_loaded_by_tor(void **state)
{
    struct itest_state *s = *state;
    struct onion_key k, k2;
    char hs[128], err[1024], host[80], want[80], log[256];
    unsigned char pub_before[64], pub_after[64];
    bool created;

    sub(hs, sizeof hs, s, "hs");
    assert_int_equal(keys_load_or_create(hs, &k, &created, err, sizeof err), 0);
    assert_true(created);
    read_in(hs, KEYS_PUBLIC_FILE, pub_before, sizeof pub_before);
    onion_key_forget_secret(&k);

    tor_run_expect_loaded(s, hs, true, host, log, sizeof log);
    snprintf(want, sizeof want, "%s.onion\n", k.address);
    assert_string_equal(host, want);
    assert_int_equal(read_in(hs, KEYS_PUBLIC_FILE, pub_after, sizeof pub_after), 64);
    assert_memory_equal(pub_before, pub_after, 64);
    assert_true(exists(hs, KEYS_POISON_FILE));
    assert_true(exists(hs, "authorized_clients")); /* tor was here */
    assert_true(file_has(log, "NON-ANONYMOUS"));

    /* And onionfront still loads it after tor used it (marked). */
    assert_int_equal(keys_load(hs, &k2, err, sizeof err), 0);
    assert_string_equal(k2.address, k.address);
    onion_key_clear(&k2);
    onion_key_clear(&k);
}

/* (2) tor creates (single onion mode), onionfront loads the same address. tor 0.4.9 leaves no marker,
 * so onionfront's rule refuses the used directory until the operator marks it; the two key files
 * alone (as mkp224o or a fresh copy leaves them) load at once. */
static void test_tor_keys_loaded_by_onionfront(void **state)
{
    struct itest_state *s = *state;
    struct onion_key k;
    char hs[128], copy[128], dst[128], err[1024], host[80], want[80], log[256], addr[ONION_ADDRESS_SIZE];

    sub(hs, sizeof hs, s, "hs");
    assert_int_equal(mkdir(hs, 0700), 0);
    tor_run_expect_loaded(s, hs, true, host, log, sizeof log);
    assert_true(exists(hs, KEYS_SECRET_FILE));
    assert_false(exists(hs, KEYS_POISON_FILE)); /* measured: tor 0.4.9 does not mark */

    assert_int_equal(keys_load(hs, &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "touch"));

    sub(copy, sizeof copy, s, "copy");
    key_files_only(hs, copy);
    assert_int_equal(keys_load(copy, &k, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s.onion\n", k.address);
    assert_string_equal(host, want);
    onion_key_clear(&k);

    write_in(hs, KEYS_POISON_FILE, "", 0);
    assert_int_equal(keys_load(hs, &k, err, sizeof err), 0);
    assert_string_equal(host, want);
    onion_key_clear(&k);

    sub(dst, sizeof dst, s, "imported");
    assert_int_equal(keys_import(hs, dst, addr, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s.onion\n", addr);
    assert_string_equal(host, want);
}

/* (3a) An anonymous service's directory, then single onion mode: tor 0.4.9 does NOT refuse (it only
 * prints its generic warnings); onionfront does, also for import. */
static void test_poison_a_anonymous_then_single(void **state)
{
    struct itest_state *s = *state;
    struct onion_key k;
    char hs[128], dst[128], err[1024], host1[80], host2[80], log1[256], log2[256];

    sub(hs, sizeof hs, s, "hs");
    tor_run_expect_loaded(s, hs, false, host1, log1, sizeof log1);
    assert_false(file_has(log1, "NON-ANONYMOUS"));
    tor_run_expect_loaded(s, hs, true, host2, log2, sizeof log2);
    assert_string_equal(host1, host2);
    assert_true(file_has(log2, "Tor will refuse to launch hidden services from the same directories"));
    assert_false(exists(hs, KEYS_POISON_FILE));

    assert_int_equal(keys_load(hs, &k, err, sizeof err), -1);
    assert_non_null(strstr(err, hs));
    assert_non_null(strstr(err, "anonymous hidden service"));
    assert_false(k.has_secret);
    sub(dst, sizeof dst, s, "dst");
    assert_int_equal(keys_import(hs, dst, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "would show where that hidden service is"));
    assert_false(exists(s->base, "dst"));
}

/* (3b) A fresh keys-only directory in single onion mode: accepted by tor, which writes no marker. */
static void test_poison_b_fresh_keys_single(void **state)
{
    struct itest_state *s = *state;
    struct onion_key k;
    char gen[128], hs[128], err[1024], host[80], want[80], log[256];

    sub(gen, sizeof gen, s, "gen");
    assert_int_equal(keys_load_or_create(gen, &k, NULL, err, sizeof err), 0);
    sub(hs, sizeof hs, s, "hs");
    key_files_only(gen, hs);
    tor_run_expect_loaded(s, hs, true, host, log, sizeof log);
    snprintf(want, sizeof want, "%s.onion\n", k.address);
    assert_string_equal(host, want);
    assert_false(exists(hs, KEYS_POISON_FILE));
    onion_key_clear(&k);
}

/* (3c) A marked directory in anonymous mode: accepted by tor, marker left alone. */
static void test_poison_c_marked_anonymous(void **state)
{
    struct itest_state *s = *state;
    struct onion_key k;
    char hs[128], err[1024], host[80], want[80], log[256];

    sub(hs, sizeof hs, s, "hs");
    assert_int_equal(keys_load_or_create(hs, &k, NULL, err, sizeof err), 0);
    assert_true(exists(hs, KEYS_POISON_FILE));
    tor_run_expect_loaded(s, hs, false, host, log, sizeof log);
    snprintf(want, sizeof want, "%s.onion\n", k.address);
    assert_string_equal(host, want);
    assert_true(exists(hs, KEYS_POISON_FILE));
    onion_key_clear(&k);
}

/* tor refuses key files from different keys, and a public key with only the sign bit flipped (which
 * keys.c's X25519-based check cannot see: tor's check covers it at start-up). */
static void test_tor_refuses_mismatched_pair(void **state)
{
    struct itest_state *s = *state;
    struct onion_key k;
    char a[128], b[128], mixed[128], flipped[128], err[1024], log[256];
    unsigned char pub[64];

    sub(a, sizeof a, s, "a");
    sub(b, sizeof b, s, "b");
    assert_int_equal(keys_load_or_create(a, &k, NULL, err, sizeof err), 0);
    onion_key_clear(&k);
    assert_int_equal(keys_load_or_create(b, &k, NULL, err, sizeof err), 0);
    onion_key_clear(&k);

    sub(mixed, sizeof mixed, s, "mixed");
    assert_int_equal(mkdir(mixed, 0700), 0);
    copy_in(a, mixed, KEYS_SECRET_FILE);
    copy_in(b, mixed, KEYS_PUBLIC_FILE);
    write_in(mixed, KEYS_POISON_FILE, "", 0);
    assert_int_equal(keys_load(mixed, &k, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not match"));
    tor_run_expect_refused(s, mixed, true, log, sizeof log);
    assert_true(file_has(log, "hs_ed25519_public_key does not match"));

    sub(flipped, sizeof flipped, s, "flipped");
    key_files_only(a, flipped);
    assert_int_equal(read_in(flipped, KEYS_PUBLIC_FILE, pub, sizeof pub), 64);
    pub[63] ^= 0x80; /* the sign of x */
    write_in(flipped, KEYS_PUBLIC_FILE, pub, sizeof pub);
    tor_run_expect_refused(s, flipped, true, log, sizeof log);
    assert_true(file_has(log, "hs_ed25519_public_key does not match"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_onionfront_keys_loaded_by_tor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tor_keys_loaded_by_onionfront, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poison_a_anonymous_then_single, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poison_b_fresh_keys_single, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poison_c_marked_anonymous, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tor_refuses_mismatched_pair, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
