/* test_ob_watch.c — unit tests for sidecar/balance/ob_watch.c, fed status documents as Onionbalance 0.2.2's
 * status socket writes them (parsed by ob_status_parse): a live instance whose descriptor was older than
 * Onionbalance's limit at its last publish is reported once it stayed so for longer than the bound, and
 * not a millisecond before; so is one Onionbalance holds no descriptor of, one whose descriptor lists no
 * introduction points, and one whose first descriptor came after the last publish until a later publish
 * takes it in; an instance in the master, or not live, is never reported; after a report the time starts
 * again; the bound is a few of Onionbalance's fetch rounds (testnet or not).
 *
 * Why: Onionbalance republishes only on a changed set of introduction points or its own descriptor's
 * expiry, so a master published without a live instance stays so (docs/internals.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/balance/ob_watch.h"
#include "sidecar/config/ob_config.h"

#define MASTER "2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad"
#define INST_A "nk47d24ppuzyr5hz2wdpm3uz7vkaqdpsyrdpbzmgncyjycfbnxidqgyd"
#define INST_B "afpx426fv2xuqnzebcpjeuwmco2qsungw2kbeurhmxh7jv4agbxcytqd"
#define T0 1000 /* the first look, monotonic ms */

/* A status document: the master's publish attempts (both descriptors at `published`, NULL: none yet), A
 * with its descriptor received at `a_received` (NULL: none yet) and `a_intros` points, B always fresh. */
static struct ob_status doc(const char *published, const char *a_received, int a_intros)
{
    char json[2048], a[400], pub[64] = "null";
    struct ob_status st;
    char err[200] = "";
    if (published)
        snprintf(pub, sizeof(pub), "\"%s\"", published);
    if (a_received)
        snprintf(a, sizeof(a),
                 "{\"onionAddress\": \"%s.onion\", \"introSetModified\": \"2026-12-07 12:00:00\", "
                 "\"introPointsNum\": %d, \"descriptorReceived\": \"%s\"}",
                 INST_A, a_intros, a_received);
    else
        snprintf(a, sizeof(a), "{\"onionAddress\": \"%s.onion\", \"received\": null}", INST_A);
    snprintf(json, sizeof(json),
             "{\"services\": [{\"onionAddress\": \"%s.onion\", \"publishAttemptFirstDescriptor\": %s, "
             "\"publishAttemptSecondDescriptor\": %s, \"instances\": [%s, {\"onionAddress\": \"%s.onion\", "
             "\"introSetModified\": \"2026-12-07 12:00:00\", \"introPointsNum\": 3, "
             "\"descriptorReceived\": \"2026-12-07 12:00:29\"}]}]}",
             MASTER, pub, pub, a, INST_B);
    if (ob_status_parse(json, strlen(json), MASTER, &st, err, sizeof(err)) < 0)
        fail_msg("status document refused: %s", err);
    return st;
}

static const struct ob_watch_params testnet = {.too_old_s = 20, .bound_s = 75};

static bool look(struct ob_watch *w, const struct ob_status *st, bool live, uint64_t at_ms, char *why, size_t len)
{
    why[0] = '\0';
    return ob_watch_check(w, st, INST_A, live, at_ms, &testnet, why, len);
}

static void test_params(void **state)
{
    (void)state;
    struct ob_watch_params t = ob_watch_params_for(true), p = ob_watch_params_for(false);
    assert_int_equal(t.too_old_s, 20);
    assert_int_equal(t.bound_s, OB_WATCH_ROUNDS * (20 + 5));
    assert_int_equal(p.too_old_s, 3600);
    assert_int_equal(p.bound_s, OB_WATCH_ROUNDS * (600 + 5));
}

static void test_status_keeps_received_stamp(void **state)
{
    (void)state;
    struct ob_status st = doc("2026-12-07 12:00:30", "2026-12-07 12:00:05", 3);
    assert_int_equal(st.n_instances, 2);
    assert_string_equal(st.instances[0].received_at, "2026-12-07 12:00:05");
    st = doc(NULL, NULL, 0);
    assert_false(st.instances[0].received);
    assert_string_equal(st.instances[0].received_at, "");
}

/* The fault seen: A's descriptor was 25 s old (limit 20) when Onionbalance published, and later fetches of
 * the same descriptor (same introduction points) bring no new publish. */
static void test_old_at_publish_reported_after_bound(void **state)
{
    (void)state;
    struct ob_watch w;
    char why[400];
    ob_watch_reset(&w);
    struct ob_status st = doc("2026-12-07 12:00:30", "2026-12-07 12:00:05", 3);
    assert_false(look(&w, &st, true, T0, why, sizeof(why)));
    /* Refetched after the publish: Onionbalance still holds it, the master still lacks it. */
    st = doc("2026-12-07 12:00:30", "2026-12-07 12:00:40", 3);
    assert_false(look(&w, &st, true, T0 + 30000, why, sizeof(why)));
    st = doc("2026-12-07 12:00:30", "2026-12-07 12:01:05", 3);
    assert_false(look(&w, &st, true, T0 + 75000, why, sizeof(why)));
    assert_string_equal(why, "");
    assert_true(look(&w, &st, true, T0 + 75001, why, sizeof(why)));
    assert_non_null(strstr(why, INST_A ".onion"));
    assert_non_null(strstr(why, "older than its limit"));
    /* Reported once: the time starts again. */
    assert_false(look(&w, &st, true, T0 + 76000, why, sizeof(why)));
    assert_true(look(&w, &st, true, T0 + 76000 + 75001, why, sizeof(why)));
}

static void test_in_master_never_reported(void **state)
{
    (void)state;
    struct ob_watch w;
    char why[400];
    ob_watch_reset(&w);
    for (unsigned i = 0; i < 10; i++) {
        /* Published 10 s after each fetch: within the limit. */
        char pub[32], rec[32];
        snprintf(rec, sizeof(rec), "2026-12-07 12:%02u:05", i);
        snprintf(pub, sizeof(pub), "2026-12-07 12:%02u:15", i);
        struct ob_status st = doc(pub, rec, 3);
        assert_false(look(&w, &st, true, T0 + i * 60000, why, sizeof(why)));
    }
    /* B, fresh at every publish, neither. */
    struct ob_status st = doc("2026-12-07 12:00:30", "2026-12-07 12:00:05", 3);
    assert_false(ob_watch_check(&w, &st, INST_B, true, T0, &testnet, why, sizeof(why)));
    assert_false(ob_watch_check(&w, &st, INST_B, true, T0 + 500000, &testnet, why, sizeof(why)));
}

static void test_no_descriptor_and_no_intro_points(void **state)
{
    (void)state;
    struct ob_watch w;
    char why[400];
    ob_watch_reset(&w);
    struct ob_status st = doc("2026-12-07 12:00:30", NULL, 0);
    assert_false(look(&w, &st, true, T0, why, sizeof(why)));
    assert_false(look(&w, &st, true, T0 + 75000, why, sizeof(why)));
    assert_true(look(&w, &st, true, T0 + 75001, why, sizeof(why)));
    assert_non_null(strstr(why, "holds no descriptor"));
    ob_watch_reset(&w);
    st = doc("2026-12-07 12:00:30", "2026-12-07 12:00:25", 0);
    assert_false(look(&w, &st, true, T0, why, sizeof(why)));
    assert_true(look(&w, &st, true, T0 + 75001, why, sizeof(why)));
    assert_non_null(strstr(why, "no introduction points"));
}

/* Onionbalance published at 12:00:30 without any descriptor of A; A's first came at 12:00:40. */
static struct ob_status first_descriptor_after_publish(struct ob_watch *w)
{
    char why[400];
    ob_watch_reset(w);
    struct ob_status st = doc("2026-12-07 12:00:30", NULL, 0);
    assert_false(look(w, &st, true, T0, why, sizeof(why)));
    return doc("2026-12-07 12:00:30", "2026-12-07 12:00:40", 3);
}

/* Published before A's first descriptor arrived: left out until a later publish, which takes it in. */
static void test_none_at_publish_until_next_publish(void **state)
{
    (void)state;
    struct ob_watch w;
    char why[400];
    struct ob_status st = first_descriptor_after_publish(&w);
    assert_false(look(&w, &st, true, T0 + 40000, why, sizeof(why)));
    st = doc("2026-12-07 12:00:50", "2026-12-07 12:00:40", 3);
    assert_false(look(&w, &st, true, T0 + 50000, why, sizeof(why)));
    assert_false(look(&w, &st, true, T0 + 200000, why, sizeof(why)));
    /* Without that later publish it is reported, with its reason. */
    st = first_descriptor_after_publish(&w);
    assert_true(look(&w, &st, true, T0 + 75001, why, sizeof(why)));
    assert_non_null(strstr(why, "before it held a descriptor"));
}

/* A down or remote instance is Onionbalance's to leave out: its time starts when it is live. */
static void test_not_live_never_reported(void **state)
{
    (void)state;
    struct ob_watch w;
    char why[400];
    ob_watch_reset(&w);
    struct ob_status st = doc("2026-12-07 12:00:30", "2026-12-07 12:00:05", 3);
    assert_false(look(&w, &st, false, T0, why, sizeof(why)));
    assert_false(look(&w, &st, false, T0 + 500000, why, sizeof(why)));
    assert_false(look(&w, &st, true, T0 + 600000, why, sizeof(why)));
    assert_false(look(&w, &st, true, T0 + 675000, why, sizeof(why)));
    assert_true(look(&w, &st, true, T0 + 675001, why, sizeof(why)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_status_keeps_received_stamp),
        cmocka_unit_test(test_old_at_publish_reported_after_bound),
        cmocka_unit_test(test_in_master_never_reported),
        cmocka_unit_test(test_no_descriptor_and_no_intro_points),
        cmocka_unit_test(test_none_at_publish_until_next_publish),
        cmocka_unit_test(test_not_live_never_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
