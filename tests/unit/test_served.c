/* test_served.c — unit tests for sidecar/publish/served.c: reading a descriptor's outer layer (a table of bodies
 * and the outcome), comparing fetched copies with each tor's own descriptor, the acceptance record's
 * rule, and the JSON status shows. The trackers' side (copies and own descriptors recorded from tor's
 * events, served_find over two trackers) is in test_descriptor.c, where the recorded events are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/publish/served.h"
#include "tests/fake/fake_desc.h"

/* ---- served_ident_parse ---------------------------------------------------------------------------- */

static void test_parse_good(void **state)
{
    (void)state;
    char body[1024], err[128];
    struct served_ident id;
    static const char *const eols[] = {"\n", "\r\n"};
    for (size_t i = 0; i < 2; i++) {
        fake_desc_body(body, sizeof(body), 0x5a, 8583920, eols[i]);
        assert_int_equal(served_ident_parse(body, strlen(body), &id, err, sizeof(err)), 0);
        assert_true(id.valid);
        assert_true(id.revision == 8583920);
        for (size_t k = 0; k < SERVED_KEY_LEN; k++)
            assert_int_equal(id.signing_key[k], 0x5a);
    }
    /* The length counts, not a NUL: a body cut before its revision-counter line is not read past. */
    fake_desc_body(body, sizeof(body), 0x5a, 7, "\n");
    size_t cut = (size_t)(strstr(body, "revision-counter") - body);
    assert_int_equal(served_ident_parse(body, cut, &id, err, sizeof(err)), -1);
    assert_false(id.valid);
}

/* Each body (made from a good one by replacing `from` with `to`) is refused with `why` in the message. */
static void test_parse_table(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *why;
    } cases[] = {
        {"revision-counter 42", "revision-counter x42", "revision-counter"},
        {"revision-counter 42", "revision-counter 42x", "revision-counter"},
        {"revision-counter 42", "revision-counter 99999999999999999999999", "revision-counter"},
        {"revision-counter 42", "", "no revision-counter"},
        {"descriptor-signing-key-cert", "descriptor-signing-key-crt", "no descriptor-signing-key-cert"},
        {"-----BEGIN ED25519 CERT-----", "-----BEGIN CERT-----", "no BEGIN"},
        {"-----END ED25519 CERT-----", "-----END CERT-----", "bad base64"}, /* reads on into the next lines */
        {"AQgAB51u", "AQgA*51u", "bad base64"}, /* the first characters of the certificate */
        {"AQgAB51u", "AQcAB51u", "not a version 1"}, /* cert type 07, not 08 */
    };
    char good[1024], body[1100], err[128];
    struct served_ident id;
    fake_desc_body(good, sizeof(good), 1, 42, "\n");
    assert_int_equal(strncmp(strstr(good, "-----\n") + 6, "AQgAB51u", 8), 0); /* the fixture as assumed */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *at = strstr(good, cases[i].from);
        assert_non_null(at);
        snprintf(body, sizeof(body), "%.*s%s%s", (int)(at - good), good, cases[i].to, at + strlen(cases[i].from));
        err[0] = '\0';
        if (served_ident_parse(body, strlen(body), &id, err, sizeof(err)) != -1 || id.valid)
            fail_msg("case %zu accepted", i);
        if (!strstr(err, cases[i].why))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].why);
    }
    /* The body ends inside the certificate. */
    size_t cut = (size_t)(strstr(good, "-----END") - good);
    assert_int_equal(served_ident_parse(good, cut, &id, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "no END"));
    /* A certificate inside the encrypted part is not the outer layer's. */
    const char *enc = "hs-descriptor 3\nsuperencrypted\ndescriptor-signing-key-cert\n";
    assert_int_equal(served_ident_parse(enc, strlen(enc), &id, err, sizeof(err)), -1);
    assert_int_equal(served_ident_parse("", 0, &id, err, sizeof(err)), -1);
}

/* ---- served_compare -------------------------------------------------------------------------------- */

static struct served_ident ident(unsigned char key_byte, uint64_t rev)
{
    struct served_ident id = {.valid = true, .revision = rev};
    memset(id.signing_key, key_byte, sizeof(id.signing_key));
    return id;
}

/* `spec`: one character per HSDir: '1'/'2'/'3' a copy with key byte 1-3, '-' none. */
static size_t copies_of(const char *spec, struct served_copy *out)
{
    size_t n = strlen(spec);
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].fp, sizeof(out[i].fp), "%040zu", i);
        snprintf(out[i].nick, sizeof(out[i].nick), "hsdir%u", (unsigned)(i % 100));
        if (spec[i] != '-')
            out[i].ident = ident((unsigned char)(spec[i] - '0'), 100 + i);
    }
    return n;
}

static void test_compare_table(void **state)
{
    (void)state;
    /* own: tor 0 has key 1, tor 1 key 2 (key 3 is nobody's now). */
    static const struct {
        const char *copies;
        bool tor1_known; /* tor 1's own descriptor was read */
        int tor;
        enum served_source source;
        unsigned holding, asked;
        const char *per_dir; /* per HSDir: '0'/'1' tor, 'o' other, '-' none */
    } cases[] = {
        {"22222222", true, 1, SERVED_SOURCE_FETCHED, 8, 8, "11111111"},
        {"11111111", true, 0, SERVED_SOURCE_FETCHED, 8, 8, "00000000"},
        {"11122222", true, 1, SERVED_SOURCE_FETCHED, 5, 8, "00011111"},
        {"22211111", true, 0, SERVED_SOURCE_FETCHED, 5, 8, "11100000"},
        {"1122", true, 0, SERVED_SOURCE_FETCHED, 2, 4, "0011"},        /* a tie: the lower index */
        {"33-23333", true, 1, SERVED_SOURCE_FETCHED, 1, 8, "oo-1oooo"}, /* most copies are nobody's */
        {"22222222", false, -1, SERVED_SOURCE_NONE, 0, 8, "oooooooo"},  /* tor 1's own not known */
        {"--------", true, -1, SERVED_SOURCE_NONE, 0, 8, "--------"},
        {"", true, -1, SERVED_SOURCE_NONE, 0, 0, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct served_ident own[2] = {ident(1, 5), cases[i].tor1_known ? ident(2, 6) : (struct served_ident){0}};
        struct served_copy copies[SERVED_HSDIRS_MAX];
        struct served_result r;
        size_t n = copies_of(cases[i].copies, copies);
        served_compare(own, NULL, 2, copies, n, &r);
        if (r.tor != cases[i].tor || r.source != cases[i].source || r.holding != cases[i].holding ||
            r.asked != cases[i].asked || r.n != n)
            fail_msg("case %zu (%s): tor %d source %s holding %u asked %u n %zu", i, cases[i].copies, r.tor,
                     served_source_str(r.source), r.holding, r.asked, r.n);
        for (size_t k = 0; k < n; k++) {
            char c = r.dirs[k].tor >= 0 ? (char)('0' + r.dirs[k].tor) : r.dirs[k].tor == SERVED_OTHER ? 'o' : '-';
            if (c != cases[i].per_dir[k])
                fail_msg("case %zu, HSDir %zu: %c, expected %c", i, k, c, cases[i].per_dir[k]);
            assert_string_equal(r.dirs[k].fp, copies[k].fp);
        }
    }
}

/* More copies than the result holds: bounded, never overrun. */
static void test_compare_bounded(void **state)
{
    (void)state;
    struct served_copy copies[SERVED_HSDIRS_MAX + 4];
    struct served_ident own[1] = {ident(1, 5)};
    struct served_result r;
    for (size_t i = 0; i < SERVED_HSDIRS_MAX + 4; i++) {
        memset(&copies[i], 0, sizeof(copies[i]));
        copies[i].ident = ident(1, 1);
    }
    served_compare(own, NULL, 1, copies, SERVED_HSDIRS_MAX + 4, &r);
    assert_int_equal(r.n, SERVED_HSDIRS_MAX);
    assert_int_equal(r.holding, SERVED_HSDIRS_MAX);
    assert_int_equal(r.tor, 0);
}

/* tor shows only its "current" descriptor: copies of the other one match no own descriptor, but the
 * descriptor learned from an HSDir that accepted a tor's upload does; own keys win over learned ones. */
static void test_compare_learned(void **state)
{
    (void)state;
    struct served_ident own[2] = {ident(1, 5), ident(2, 6)}, learned[2] = {{0}, ident(3, 7)};
    struct served_copy copies[8];
    struct served_result r;
    served_compare(own, learned, 2, copies, copies_of("33333-11", copies), &r);
    assert_int_equal(r.tor, 1);
    assert_int_equal(r.source, SERVED_SOURCE_ACCEPTED_COPY);
    assert_int_equal(r.holding, 5);
    assert_int_equal(r.dirs[6].tor, 0);
    served_compare(own, learned, 2, copies, copies_of("3322222-", copies), &r);
    assert_int_equal(r.tor, 1); /* 2 learned + 5 own copies: tor 1 matched its own descriptor */
    assert_int_equal(r.source, SERVED_SOURCE_FETCHED);
    assert_int_equal(r.holding, 7);
    served_compare(own, NULL, 2, copies, copies_of("33333333", copies), &r);
    assert_int_equal(r.tor, -1);
    assert_string_equal(served_source_str(r.source), "none");
}

/* ---- served_attribute ------------------------------------------------------------------------------ */

static void test_attribute_table(void **state)
{
    (void)state;
    /* A copy fetched at 100; per tor: upload started, accepted (-1: no). */
    static const struct {
        struct served_upload u[3];
        size_t n;
        int expect;
    } cases[] = {
        {{{10, 11, false}, {20, 21, false}}, 2, 1},   /* the last upload, accepted */
        {{{20, 21, false}, {10, 11, false}}, 2, 0},
        {{{10, 11, false}, {20, -1, false}}, 2, -1},  /* the last one pending or failed */
        {{{10, 11, false}, {20, -1, true}}, 2, 0},    /* the last one refused (a same-second tie): tor 0's */
        {{{10, -1, true}, {20, -1, true}}, 2, -1},    /* every one refused: someone else's */
        {{{10, 11, false}, {20, 120, false}}, 2, -1}, /* accepted only after the copy was fetched */
        {{{10, 11, false}, {150, 151, false}}, 2, 0}, /* an upload after the fetch does not count */
        {{{20, 21, false}, {20, 22, false}}, 2, -1},  /* started at once: not known */
        {{{20, 21, false}, {20, -1, true}}, 2, 0},    /* at once, but one refused */
        {{{-1, -1, false}, {-1, -1, false}}, 2, -1},
        {{{-1, -1, false}, {30, 31, false}, {5, 6, false}}, 3, 1},
        {{{99.5, 99.9, false}}, 1, 0},
    };
    struct served_copy copy = {.at = 100};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (served_attribute(&copy, cases[i].u, cases[i].n) != cases[i].expect)
            fail_msg("case %zu: %d, expected %d", i, served_attribute(&copy, cases[i].u, cases[i].n), cases[i].expect);
}

/* The per-HSDir table: an answer replaces the HSDir's entry, the table stays bounded, keep prunes. */
static void test_copies_table(void **state)
{
    (void)state;
    struct served_copies t = {.n = 0};
    char fp[41];
    struct served_ident a = ident(1, 1), none = {0};
    for (unsigned i = 0; i < SERVED_HSDIRS_MAX + 3; i++) {
        snprintf(fp, sizeof(fp), "%040u", i);
        served_copies_note(&t, fp, "n", "D", &a, i);
    }
    assert_int_equal(t.n, SERVED_HSDIRS_MAX);
    served_copies_note(&t, t.c[3].fp, "n", "E", &none, 99);
    assert_int_equal(t.n, SERVED_HSDIRS_MAX);
    assert_false(t.c[3].ident.valid);
    assert_string_equal(t.c[3].desc_id, "E");
    assert_true(t.c[3].at == 99);
    char k5[41], k3[41], k99[41];
    snprintf(k5, sizeof(k5), "%040u", 5u);
    snprintf(k3, sizeof(k3), "%040u", 3u);
    snprintf(k99, sizeof(k99), "%040u", 99u); /* not in the table */
    const char *keep[] = {k5, k3, k99};
    served_copies_keep(&t, keep, 3);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.c[0].fp, keep[1]);
    assert_string_equal(t.c[1].fp, keep[0]);
}

/* ---- served_by_rounds ------------------------------------------------------------------------------ */

static void test_rounds_table(void **state)
{
    (void)state;
#define R(at, c, rj) {at, c, rj}
    static const struct {
        struct served_round r[3];
        size_t n;
        int expect;
    } cases[] = {
        {{R(10, true, false), R(12, true, false)}, 2, 1},   /* the later complete round */
        {{R(12, true, false), R(10, true, false)}, 2, 0},
        {{R(10, true, false), R(12, false, false)}, 2, -1}, /* a later round still open: may replace it */
        {{R(10, true, false), R(12, false, true)}, 2, 0},   /* refused everywhere: changed nothing */
        {{R(12, true, false), R(12, true, false)}, 2, -1},  /* same time: the HSDirs kept one, not known which */
        {{R(-1, false, false), R(-1, false, false)}, 2, -1},
        {{R(-1, false, false), R(5, true, false), R(3, true, false)}, 3, 1},
        {{R(7, true, false)}, 1, 0},
    };
#undef R
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (served_by_rounds(cases[i].r, cases[i].n) != cases[i].expect)
            fail_msg("case %zu: %d, expected %d", i, served_by_rounds(cases[i].r, cases[i].n), cases[i].expect);
}

/* ---- JSON ------------------------------------------------------------------------------------------ */

static void test_json(void **state)
{
    (void)state;
    struct served_ident own[2] = {ident(1, 5), ident(2, 6)};
    struct served_copy copies[4];
    struct served_result r;
    served_compare(own, NULL, 2, copies, copies_of("223-", copies), &r);
    json_t *j = served_to_json(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "served_by")), 2); /* 1-based */
    assert_string_equal(json_string_value(json_object_get(j, "source")), "fetched");
    assert_int_equal(json_integer_value(json_object_get(j, "hsdirs_holding")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "hsdirs_answered")), 4);
    json_t *dirs = json_object_get(j, "hsdirs");
    assert_int_equal(json_array_size(dirs), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(dirs, 0), "tor")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(dirs, 1), "revision")), 101);
    assert_true(json_is_null(json_object_get(json_array_get(dirs, 2), "tor")));
    assert_true(json_is_true(json_object_get(json_array_get(dirs, 2), "other")));
    assert_true(json_is_null(json_object_get(json_array_get(dirs, 3), "revision")));
    assert_true(json_is_false(json_object_get(json_array_get(dirs, 3), "other")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(dirs, 3), "nick")), "hsdir3");
    json_decref(j);

    served_compare(own, NULL, 2, copies, 0, &r);
    j = served_to_json(&r);
    assert_true(json_is_null(json_object_get(j, "served_by")));
    assert_string_equal(json_string_value(json_object_get(j, "source")), "none");
    json_decref(j);
    assert_string_equal(served_source_str(SERVED_SOURCE_UPLOADS), "uploads");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),    cmocka_unit_test(test_parse_table),  cmocka_unit_test(test_compare_table),
        cmocka_unit_test(test_compare_bounded), cmocka_unit_test(test_compare_learned),
        cmocka_unit_test(test_attribute_table), cmocka_unit_test(test_copies_table),  cmocka_unit_test(test_rounds_table),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
