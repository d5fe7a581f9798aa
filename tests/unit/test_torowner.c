/* test_torowner.c — sidecar/tor/torowner.c: whether onionfront may work with an attached tor's user.
 * A table of (peer credentials, claimed uid, onionfront's uid) -> refused or not and what the message
 * names. The case a unix socket cannot produce here is the point of the first rows: root with no peer
 * credentials (a TCP control port) and a tor claiming another user's uid is refused, never trusted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sidecar/tor/torowner.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void test_table(void **state)
{
    (void)state;
    static const struct {
        long peer, claimed;
        uid_t self;
        bool refused;
        const char *says; /* in the message when refused */
    } cases[] = {
        /* root, no peer credentials (TCP): tor's word alone gets no key directory */
        {-1, 4242, 0, true, "says it runs as uid 4242, but its control connection carries no peer credentials"},
        /* root, no credentials, nothing claimed or root claimed: nothing to hand over */
        {-1, -1, 0, false, NULL},
        {-1, 0, 0, false, NULL},
        /* root, the kernel vouches: whatever tor claims, the peer's uid is the one handed the directories */
        {4242, 4242, 0, false, NULL},
        {4242, 5000, 0, false, NULL},
        /* not root: only a tor of onionfront's own user */
        {998, 998, 998, false, NULL},
        {101, 101, 998, true, "the attached tor runs as uid 101"},
        {101, 998, 998, true, "onionfront as uid 998"}, /* a claim of our uid does not help */
        {-1, 101, 998, false, NULL},                     /* unknown: tor's SETCONF says the rest */
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char out[512] = "";
        bool got = torowner_problem(cases[i].peer, cases[i].claimed, cases[i].self, out, sizeof(out));
        if (got != cases[i].refused)
            fail_msg("case %zu: refused %d, want %d (%s)", i, got, cases[i].refused, out);
        if (cases[i].says && !strstr(out, cases[i].says))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, out, cases[i].says);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
