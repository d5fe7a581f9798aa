/* test_placement.c — unit tests for sidecar/config/placement.c, which tors host each service with
 * tor.tors_per_service.
 *
 * Why: a service's tors must depend on its name alone (a reload adding a service moves none), be the
 * same on every run and machine (the integration test and operators recompute them), spread evenly,
 * and move as little as rendezvous hashing promises when tors are added.
 *
 * Covers: per_service >= tors -> every tor; exactly per_service tors otherwise; known answers computed
 * independently (Python's hashlib over the documented input); 500 names on 4 tors with 2 each -> every
 * tor between 200 and 300; 3 -> 4 tors with one each: a service that moves, moves to the new tor only;
 * clamping of 0 and too many tors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "sidecar/config/placement.h"

static void test_all_tors(void **state)
{
    (void)state;
    assert_int_equal(placement_mask("www", 1, 1), 0x1);
    assert_int_equal(placement_mask("www", 2, 2), 0x3);
    assert_int_equal(placement_mask("www", 4, 4), 0xf);
    assert_int_equal(placement_mask("www", 3, 9), 0x7);
}

/* sha256("onionfront placement\0" + name + "\0" + byte(k))[0:8] big-endian, highest scores taken, a tie to
 * the lower tor number: computed with Python's hashlib, not with this code. */
static void test_known_answers(void **state)
{
    static const struct {
        const char *name;
        unsigned m3c2, m4c2, m3c1, m4c1;
    } want[] = {
        {"www", 6, 6, 2, 2},   {"static", 5, 12, 4, 4}, {"api", 6, 12, 4, 8},
        {"video", 6, 6, 4, 4}, {"web", 5, 9, 1, 8},     {"irc", 6, 6, 4, 4},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(placement_mask(want[i].name, 3, 2), want[i].m3c2);
        assert_int_equal(placement_mask(want[i].name, 4, 2), want[i].m4c2);
        assert_int_equal(placement_mask(want[i].name, 3, 1), want[i].m3c1);
        assert_int_equal(placement_mask(want[i].name, 4, 1), want[i].m4c1);
    }
}

static void test_even_spread(void **state)
{
    unsigned per_tor[4] = {0};
    char name[16];
    (void)state;
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof(name), "svc%d", i);
        unsigned m = placement_mask(name, 4, 2);
        assert_int_equal(placement_count(m), 2);
        assert_int_equal(m & ~0xfu, 0);
        for (unsigned k = 0; k < 4; k++)
            per_tor[k] += m >> k & 1u;
    }
    for (unsigned k = 0; k < 4; k++) {
        print_message("tor %u hosts %u of 500 (2 of 4 each)\n", k + 1, per_tor[k]);
        assert_in_range(per_tor[k], 200, 300);
    }
}

/* Rendezvous hashing: a fourth tor takes about a quarter of the services, each from wherever it was,
 * and no other service moves between the first three. */
static void test_adding_a_tor_moves_little(void **state)
{
    char name[16];
    unsigned moved = 0;
    (void)state;
    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof(name), "svc%d", i);
        unsigned before = placement_mask(name, 3, 1), after = placement_mask(name, 4, 1);
        if (before != after) {
            assert_int_equal(after, 0x8);
            moved++;
        }
    }
    assert_in_range(moved, 60, 140); /* ~100 */
}

static void test_clamped(void **state)
{
    (void)state;
    assert_int_equal(placement_mask("www", 0, 0), 0x1);
    assert_int_equal(placement_count(placement_mask("www", 99, 1)), 1);
    assert_int_equal(placement_mask("www", 99, 99), (1u << PLACEMENT_MAX_TORS) - 1);
    assert_int_equal(placement_count(0), 0);
    assert_int_equal(placement_count(0xb), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_tors),
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_even_spread),
        cmocka_unit_test(test_adding_a_tor_moves_little),
        cmocka_unit_test(test_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
