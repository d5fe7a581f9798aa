/* test_service_socket.c — unit tests for sidecar/config/service_socket.c: the path of a service port's
 * unix socket, its bounds (the caller's buffer and sun_path), and that the longest run_dir and service
 * name the config allows still fit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "sidecar/config/config.h"
#include "sidecar/config/service_socket.h"

#define SUN_PATH_LEN sizeof(((struct sockaddr_un *)0)->sun_path)

static void test_paths(void **state)
{
    static const struct {
        const char *run_dir, *service;
        uint16_t port;
        const char *want;
    } cases[] = {
        {"/run/onionfront", "web", 443, "/run/onionfront/proxy/web-443.sock"},
        {"/run/onionfront", "web", 80, "/run/onionfront/proxy/web-80.sock"},
        {"/tmp/x", "b", 65535, "/tmp/x/proxy/b-65535.sock"},
        {"/r", "api-v2", 1, "/r/proxy/api-v2-1.sock"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[SUN_PATH_LEN];
        assert_int_equal(service_socket_path(cases[i].run_dir, cases[i].service, cases[i].port, out, sizeof(out)), 0);
        assert_string_equal(out, cases[i].want);
    }
}

static void test_caller_buffer(void **state)
{
    const char *want = "/run/onionfront/proxy/web-443.sock";
    char out[64];
    (void)state;
    /* Exactly the path and its NUL fits; one byte less does not. */
    assert_int_equal(service_socket_path("/run/onionfront", "web", 443, out, strlen(want) + 1), 0);
    assert_string_equal(out, want);
    assert_int_equal(service_socket_path("/run/onionfront", "web", 443, out, strlen(want)), -1);
    assert_int_equal(service_socket_path("/run/onionfront", "web", 443, out, 20), -1);
}

static void test_sun_path_bound(void **state)
{
    char run_dir[SUN_PATH_LEN + 1], out[2 * SUN_PATH_LEN];
    (void)state;
    /* A path that fits the caller's buffer but not a unix socket address is refused. */
    memset(run_dir, 'r', SUN_PATH_LEN);
    run_dir[0] = '/';
    run_dir[SUN_PATH_LEN] = '\0';
    assert_int_equal(service_socket_path(run_dir, "web", 80, out, sizeof(out)), -1);
    /* The longest one that fits: strlen(path) == SUN_PATH_LEN - 1 ("/proxy/w-1.sock" is 15 bytes). */
    size_t dir_len = SUN_PATH_LEN - 1 - strlen("/proxy/w-1.sock");
    run_dir[dir_len] = '\0';
    assert_int_equal(service_socket_path(run_dir, "w", 1, out, sizeof(out)), 0);
    assert_int_equal(strlen(out), SUN_PATH_LEN - 1);
    run_dir[dir_len] = 'r';
    run_dir[dir_len + 1] = '\0';
    assert_int_equal(service_socket_path(run_dir, "w", 1, out, sizeof(out)), -1);
}

static void test_config_limits_fit(void **state)
{
    /* The longest run_dir and service name the config allows still fit sun_path. */
    char run_dir[CONFIG_RUN_DIR_MAX + 1], svc[CONFIG_SERVICE_NAME_MAX + 1], out[SUN_PATH_LEN];
    (void)state;
    memset(run_dir, 'r', CONFIG_RUN_DIR_MAX);
    run_dir[0] = '/';
    run_dir[CONFIG_RUN_DIR_MAX] = '\0';
    memset(svc, 's', CONFIG_SERVICE_NAME_MAX);
    svc[CONFIG_SERVICE_NAME_MAX] = '\0';
    assert_int_equal(service_socket_path(run_dir, svc, 65535, out, sizeof(out)), 0);
    assert_true(strlen(out) < SUN_PATH_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_caller_buffer),
        cmocka_unit_test(test_sun_path_bound),
        cmocka_unit_test(test_config_limits_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
