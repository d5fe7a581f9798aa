/* test_config_hint.c — unit tests for sidecar/config/config_hint.c: the likely cause of a JSON syntax error and
 * the nearest valid key.
 *
 * Why: jansson says where it stopped ("string or '}' expected near '/'"), not why; people write
 * comments and trailing commas into config files, and save them with a byte order mark.
 *
 * Covers, as tables: each mistake (line comment, block comment, '#' comment, trailing comma in an object and in a
 * list, single quotes, an empty or blank file, a BOM) -> the cause at its own line and column; things
 * that only look like one inside a string ("http://x", "a,}") -> jansson's own message; a mistake after
 * the real error is not blamed; no text (the file vanished) -> jansson's. Unknown keys -> the nearest
 * key (a typo, a missing letter, a transposition, case) or none when nothing is close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "sidecar/config/config_hint.h"

/* Parse `text` with jansson as config.c does and explain the error. */
static const char *explain(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &je);
    assert_null(j);
    config_hint_json_error(text, strlen(text), je.text, je.line, je.column, (size_t)je.position, err, errlen);
    return err;
}

static void test_json_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\n  // the site\n  \"a\": 1\n}", "line 2, column 3: a comment, but JSON has no comments (// or /* */): "
                                           "remove it"},
        {"{\"a\": 1, /* why */ \"b\": 2}", "line 1, column 10: a comment, but JSON has no comments"},
        {"# my onion\n{\"a\": 1}", "line 1: '#' comments are not JSON (JSON has no comments): remove the comment"},
        {"{\n  \"a\": 1, # port\n  \"b\": 2\n}", "line 2: '#' comments are not JSON"},
        {"{\"a\": \"#not a comment\", }", "line 1, column 23: a comma after the last item"},
        {"{\"a\": 1,\n}", "line 1, column 8: a comma after the last item of a list or object, which JSON does not "
                          "allow (no trailing comma): remove it"},
        {"{\"a\": [1, 2, ]}", "line 1, column 12: a comma after the last item"},
        {"{'a': 1}", "line 1, column 2: a single quote ('), but JSON strings and keys take double quotes (\")"},
        {"", "the file is empty: a config is one JSON object, { ... }"},
        {" \n\t\n", "the file is empty"},
        {"\xef\xbb\xbf{\"a\": 1}", "the file starts with a UTF-8 byte order mark (the bytes EF BB BF), which JSON "
                                   "does not allow"},
        /* inside strings nothing is a mistake: jansson's message */
        {"{\"a\": \"http://x\", \"b\": \"a,}\" \"c\"}", "line 1, column 32: '}' expected near '\"c\"'"},
        /* a comment after the real error is not its cause */
        {"{\"a\": }\n// note", "line 1, column 7: unexpected token near '}'"},
        {"{\"a\": 1} x", "line 1, column 10: end of file expected near 'x'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512];
        explain(cases[i].text, err, sizeof(err));
        if (strncmp(err, cases[i].want, strlen(cases[i].want)) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err, cases[i].want);
    }
    char err[256];
    config_hint_json_error(NULL, 0, "unable to open x: No such file or directory", -1, -1, 0, err, sizeof(err));
    assert_string_equal(err, "unable to open x: No such file or directory");
}

static void test_nearest(void **state)
{
    (void)state;
    static const char *const keys[] = {"virtual", "target", "backends", "balance", "health", "proxy_protocol", NULL};
    static const struct {
        const char *key, *want;
    } cases[] = {
        {"backend", "backends"}, {"tagret", "target"},  {"Backends", "backends"}, {"helth", "health"},
        {"virtaul", "virtual"},  {"proxyprotocol", "proxy_protocol"},
        {"x", NULL},             {"port", NULL},        {"ba", NULL},             {"", NULL},
        {"weights", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = config_hint_nearest(cases[i].key, keys);
        if (cases[i].want ? !got || strcmp(got, cases[i].want) != 0 : got != NULL)
            fail_msg("\"%s\": got %s, want %s", cases[i].key, got ? got : "none",
                     cases[i].want ? cases[i].want : "none");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_nearest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
