/* test_addrbook.c — unit tests for sidecar/identity/addrbook.c, the record of every address each service had.
 *
 * Why: the record is what stands between a missing key volume and a service silently getting a new
 * address; a record that loses an entry, accepts a corrupt file or decides wrongly defeats that.
 *
 * Covers: a missing file is an empty record; save -> load round trip (entries, publication, deliberate
 * changes with old and new address and time); the file is written atomically with mode 0600 (no temporary
 * file left, an old file replaced whole, a directory umask of 0 does not widen it); corrupt files (not
 * JSON, wrong shape, a bad address, an unknown "how", another format, too large) give an error naming the
 * file and the place; an accidental change is refused by note_key; the decision table of addrbook_check
 * (unknown, same, missing, different) and the refusal message's content. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "sidecar/identity/addrbook.h"
#include "tests/fake/tmpdir.h"

#define A1 "q2udacihu6vjdfbkedkmfveszq3vbwopsl2vj3bj4r3gyadi3hmrq4yd"
#define A2 "as4pev4iivew7sgd76r3wv4zheyygpf2dwpuumdaquk2btm4ynoursqd"
#define A3 "25njqamcweflpvkl73j4szahhihoc4xt3ktcgjnpaingr5yhkenl5sid"
#define EMPTY "{\"format\":\"onionfront-addresses 1\",\"services\":{}}"
#define T0 ((time_t)1796292000) /* 2026-12-03T10:00:00Z */

struct st {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    if (!s || tmpdir_make(s->dir, sizeof(s->dir), "test_addrbook") < 0)
        return -1;
    snprintf(s->path, sizeof(s->path), "%s/%s", s->dir, ADDRBOOK_FILE);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    struct st *s = *state;
    int rc = tmpdir_remove(s->dir);
    free(s);
    return rc;
}

static void put(const struct st *s, const char *text)
{
    FILE *f = fopen(s->path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static struct addrbook *load_ok(const struct st *s)
{
    char err[1024] = "";
    struct addrbook *b = addrbook_load(s->dir, err, sizeof(err));
    if (!b)
        fail_msg("addrbook_load: %s", err);
    return b;
}

static void save_ok(const struct addrbook *b)
{
    char err[1024] = "";
    if (addrbook_save(b, err, sizeof(err)) < 0)
        fail_msg("addrbook_save: %s", err);
}

static void test_missing_file_is_empty(void **state)
{
    struct st *s = *state;
    struct addrbook *b = load_ok(s);
    assert_null(addrbook_address(b, "web"));
    assert_int_equal(addrbook_count(b, "web"), 0);
    assert_string_equal(addrbook_path(b), s->path);
    addrbook_free(b);
    addrbook_free(NULL);
}

/* Each address's mode: recorded, read back after a save, "single" for an entry without one (records from
 * before per-service modes) and for an unknown service; a new key may be of another mode; a bad mode
 * value makes the record corrupt. */
static void test_mode(void **state)
{
    struct st *s = *state;
    char err[512];
    struct addrbook *b = load_ok(s);
    assert_int_equal(addrbook_mode(b, "hid"), SERVICE_MODE_SINGLE);
    assert_int_equal(addrbook_note_key(b, "hid", A1, ADDRBOOK_CREATED, SERVICE_MODE_ANONYMOUS, T0, err, sizeof(err)), 1);
    assert_int_equal(addrbook_note_key(b, "web", A2, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), 1);
    save_ok(b);
    addrbook_free(b);
    b = load_ok(s);
    assert_int_equal(addrbook_mode(b, "hid"), SERVICE_MODE_ANONYMOUS);
    assert_int_equal(addrbook_mode(b, "web"), SERVICE_MODE_SINGLE);
    assert_int_equal(addrbook_note_key(b, "web", A3, ADDRBOOK_NEW_KEY, SERVICE_MODE_ANONYMOUS, T0 + 9, err, sizeof(err)), 1);
    assert_int_equal(addrbook_mode(b, "web"), SERVICE_MODE_ANONYMOUS);
    addrbook_free(b);
    static const char old[] = "{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": "
                              "[{\"address\": \"" A1 "\", \"since\": \"x\", \"how\": \"created\"}]}}}";
    b = addrbook_parse(s->dir, "old", old, strlen(old), err, sizeof(err));
    assert_non_null(b);
    assert_int_equal(addrbook_mode(b, "web"), SERVICE_MODE_SINGLE);
    addrbook_free(b);
    static const char bad[] = "{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": "
                              "[{\"address\": \"" A1 "\", \"since\": \"x\", \"how\": \"created\", \"mode\": "
                              "\"hidden\"}]}}}";
    assert_null(addrbook_parse(s->dir, "bad", bad, strlen(bad), err, sizeof(err)));
    assert_non_null(strstr(err, "services.web.addresses[0].mode"));
}

static void test_round_trip(void **state)
{
    struct st *s = *state;
    char err[512];
    struct addrbook *b = load_ok(s);
    assert_int_equal(addrbook_note_key(b, "web", A1, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), 1);
    assert_int_equal(addrbook_note_key(b, "api", A2, ADDRBOOK_LOADED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), 1);
    assert_int_equal(addrbook_note_key(b, "web", A1, ADDRBOOK_LOADED, SERVICE_MODE_SINGLE, T0 + 5, err, sizeof(err)), 0); /* known */
    assert_int_equal(addrbook_note_published(b, "web", A1, T0 + 4), 1);
    assert_int_equal(addrbook_note_published(b, "web", A1, T0 + 9), 0);  /* the first one counts */
    assert_int_equal(addrbook_note_published(b, "web", A2, T0 + 9), 0);  /* not web's address */
    assert_int_equal(addrbook_note_published(b, "nope", A2, T0 + 9), 0); /* unknown service */
    save_ok(b);
    addrbook_free(b);

    b = load_ok(s);
    assert_string_equal(addrbook_address(b, "web"), A1);
    assert_string_equal(addrbook_address(b, "api"), A2);
    /* a deliberate change: new-key */
    assert_int_equal(addrbook_note_key(b, "web", A3, ADDRBOOK_NEW_KEY, SERVICE_MODE_SINGLE, T0 + 3600, err, sizeof(err)), 1);
    assert_string_equal(addrbook_address(b, "web"), A3);
    assert_int_equal(addrbook_count(b, "web"), 2);
    save_ok(b);
    addrbook_free(b);

    /* the file says it all, in order: old entry published and replaced, new entry replaces it */
    json_error_t jerr;
    json_t *doc = json_load_file(s->path, 0, &jerr);
    assert_non_null(doc);
    json_t *web = json_object_get(json_object_get(json_object_get(doc, "services"), "web"), "addresses");
    assert_int_equal(json_array_size(web), 2);
    const char *a = NULL, *since = NULL, *how = NULL, *pub = NULL, *repl = NULL, *repls = NULL;
    assert_int_equal(json_unpack(json_array_get(web, 0), "{s:s, s:s, s:s, s:s, s:s}", "address", &a, "since",
                                 &since, "how", &how, "first_published", &pub, "replaced", &repl),
                     0);
    assert_string_equal(a, A1);
    assert_string_equal(since, "2026-12-03T10:00:00Z");
    assert_string_equal(how, "created");
    assert_string_equal(pub, "2026-12-03T10:00:04Z");
    assert_string_equal(repl, "2026-12-03T11:00:00Z");
    assert_int_equal(json_unpack(json_array_get(web, 1), "{s:s, s:s, s:s, s:s}", "address", &a, "since", &since,
                                 "how", &how, "replaces", &repls),
                     0);
    assert_string_equal(a, A3);
    assert_string_equal(since, "2026-12-03T11:00:00Z");
    assert_string_equal(how, "new-key");
    assert_string_equal(repls, A1);
    assert_null(json_object_get(json_array_get(web, 1), "first_published"));
    json_decref(doc);

    /* and an import back to the first address is one more deliberate change */
    b = load_ok(s);
    assert_int_equal(addrbook_note_key(b, "web", A1, ADDRBOOK_IMPORTED, SERVICE_MODE_SINGLE, T0 + 7200, err, sizeof(err)), 1);
    assert_string_equal(addrbook_address(b, "web"), A1);
    assert_int_equal(addrbook_count(b, "web"), 3);
    addrbook_free(b);
}

static void test_accidental_change_refused(void **state)
{
    struct st *s = *state;
    char err[512] = "";
    struct addrbook *b = load_ok(s);
    assert_int_equal(addrbook_note_key(b, "web", A1, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), 1);
    assert_int_equal(addrbook_note_key(b, "web", A2, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, A1));
    assert_int_equal(addrbook_note_key(b, "web", A2, ADDRBOOK_LOADED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), -1);
    assert_int_equal(addrbook_note_key(b, "web", "not-an-address", ADDRBOOK_NEW_KEY, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), -1);
    assert_string_equal(addrbook_address(b, "web"), A1);
    assert_int_equal(addrbook_count(b, "web"), 1);
    addrbook_free(b);
}

static void test_written_atomically_0600(void **state)
{
    struct st *s = *state;
    char err[512];
    struct stat st;
    put(s, "old contents that are not JSON");
    assert_int_equal(chmod(s->path, 0644), 0);
    mode_t old = umask(0);
    struct addrbook *b = addrbook_parse(s->dir, s->path, EMPTY, strlen(EMPTY), err, sizeof(err));
    assert_non_null(b);
    assert_int_equal(addrbook_note_key(b, "web", A1, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), 1);
    save_ok(b);
    umask(old);
    addrbook_free(b);
    assert_int_equal(lstat(s->path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600); /* a new file, not the old 0644 one rewritten */
    assert_non_null(strstr(slurp(s->path), A1));
    /* nothing but the record in the directory: no temporary file left */
    DIR *d = opendir(s->dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
            n++;
    closedir(d);
    assert_int_equal(n, 1);
    /* a save into a directory that is gone fails with the file's name */
    char gone[160];
    snprintf(gone, sizeof(gone), "%s/gone", s->dir);
    b = addrbook_parse(gone, "x", EMPTY, strlen(EMPTY), err, sizeof(err));
    assert_non_null(b);
    assert_int_equal(addrbook_save(b, err, sizeof(err)), -1);
    assert_non_null(strstr(err, gone));
    addrbook_free(b);
}

static void test_corrupt_files(void **state)
{
    struct st *s = *state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", "line 1"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {", "line 1"},
        {"[]", "object"},
        {"{\"format\": \"onionfront-addresses 2\", \"services\": {}}", "format"},
        {"{\"format\": \"onionfront-addresses 1\"}", "services"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {}, \"extra\": 1}", "extra"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": []}", "services"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": []}}}",
         "services.web.addresses"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": [{\"address\": \"abc\", "
         "\"since\": \"x\", \"how\": \"created\"}]}}}",
         "services.web.addresses[0].address"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": [{\"address\": \"" A1
         "\", \"since\": \"x\", \"how\": \"guessed\"}]}}}",
         "services.web.addresses[0].how"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": [{\"address\": \"" A1
         "\", \"since\": 5, \"how\": \"created\"}]}}}",
         "services.web.addresses[0]"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": [{\"address\": \"" A1
         "\", \"since\": \"x\", \"how\": \"new-key\", \"replaces\": \"zz\"}]}}}",
         "services.web.addresses[0].replaces"},
        {"{\"format\": \"onionfront-addresses 1\", \"services\": {\"web\": {\"addresses\": [], \"x\": 1}}}",
         "services.web"},
        {"{\"format\": \"onionfront-addresses 1\", \"format\": \"onionfront-addresses 1\", \"services\": {}}",
         "duplicate"},
    };
    char err[1024];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        put(s, cases[i].text);
        err[0] = '\0';
        struct addrbook *b = addrbook_load(s->dir, err, sizeof(err));
        if (b || !strstr(err, s->path) || !strstr(err, cases[i].want) || !strstr(err, "backup"))
            fail_msg("case %zu (%s): %s", i, cases[i].text, b ? "accepted" : err);
    }
    /* larger than the cap */
    FILE *f = fopen(s->path, "w");
    assert_non_null(f);
    for (int i = 0; i < ADDRBOOK_MAX_BYTES / 64 + 2; i++)
        fputs("                                                               \n", f);
    fclose(f);
    assert_null(addrbook_load(s->dir, err, sizeof(err)));
    assert_non_null(strstr(err, s->path));
    /* not a regular file */
    unlink(s->path);
    assert_int_equal(mkdir(s->path, 0700), 0);
    assert_null(addrbook_load(s->dir, err, sizeof(err)));
    assert_non_null(strstr(err, s->path));
    rmdir(s->path);
}

/* The decision: unknown -> a key may be made; the recorded key -> go; missing or different -> refused,
 * with a message naming the service, the expected address, the key path and what to do. */
static void test_check_table(void **state)
{
    struct st *s = *state;
    char err[512], msg[2048];
    struct addrbook *b = load_ok(s);
    assert_int_equal(addrbook_note_key(b, "web", A1, ADDRBOOK_CREATED, SERVICE_MODE_SINGLE, T0, err, sizeof(err)), 1);
    static const struct {
        const char *service, *key_address, *key_error;
        enum addrbook_verdict want;
    } cases[] = {
        {"api", NULL, "no key", ADDRBOOK_UNKNOWN},
        {"api", A2, NULL, ADDRBOOK_UNKNOWN},
        {"web", A1, NULL, ADDRBOOK_SAME},
        {"web", NULL, "/k/web: cannot stat directory: No such file or directory", ADDRBOOK_MISSING},
        {"web", A2, NULL, ADDRBOOK_DIFFERENT},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        strcpy(msg, "untouched");
        enum addrbook_verdict v =
            addrbook_check(b, cases[i].service, "/k/web", cases[i].key_address, cases[i].key_error, msg, sizeof(msg));
        if (v != cases[i].want)
            fail_msg("case %zu: %s, expected %s", i, addrbook_verdict_str(v), addrbook_verdict_str(cases[i].want));
        if (v == ADDRBOOK_UNKNOWN || v == ADDRBOOK_SAME) {
            assert_string_equal(msg, "untouched");
            continue;
        }
        static const char *const must[] = {"service web: REFUSED", A1, "/k/web/hs_ed25519_secret_key",
                                           "onionfront import-key web", "2026-12-03T10:00:00Z"};
        for (size_t j = 0; j < sizeof(must) / sizeof(must[0]); j++)
            if (!strstr(msg, must[j]))
                fail_msg("case %zu: \"%s\" lacks \"%s\"", i, msg, must[j]);
        if (v == ADDRBOOK_MISSING && (!strstr(msg, "onionfront new-key web") || !strstr(msg, "No such file")))
            fail_msg("case %zu: \"%s\" lacks new-key or the key's error", i, msg);
        if (v == ADDRBOOK_DIFFERENT && !strstr(msg, A2))
            fail_msg("case %zu: \"%s\" lacks the key's address", i, msg);
    }
    /* once published, the message says since when */
    assert_int_equal(addrbook_note_published(b, "web", A1, T0 + 60), 1);
    assert_int_equal(addrbook_check(b, "web", "/k/web", NULL, "gone", msg, sizeof(msg)), ADDRBOOK_MISSING);
    assert_non_null(strstr(msg, "published since 2026-12-03T10:01:00Z"));
    addrbook_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_missing_file_is_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accidental_change_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_atomically_0600, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_table, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
