/* test_certwatch.c — a service's certificate watch (certwatch.h) without a network: nothing read yet is
 * no problem and no sample; a transfer that got no certificate is a warning naming the endpoint and why,
 * a read_ok 0 sample and "error" in the JSON; the thresholds are the ones the alert rules and `check`
 * use. Reading real chains is tlscert's (test_tlscert.c) and test_tls.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sidecar/core/metrics.h"
#include "sidecar/probe/certwatch.h"

#define ADDR "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd"

static const char *scrape(const struct certwatch_svc *cw, struct metrics *m)
{
    for (int k = 0; k < CERTWATCH_N_METRICS; k++) {
        assert_int_equal(certwatch_metric_family((enum certwatch_metric)k, m), 0);
        assert_int_equal(certwatch_metric(cw, "shop", (enum certwatch_metric)k, m), 0);
    }
    return metrics_text(m, NULL);
}

static void test_nothing_read_yet(void **state)
{
    (void)state;
    struct certwatch_svc *cw = certwatch_new(ADDR);
    assert_non_null(cw);
    json_t *problems = json_array();
    assert_int_equal(certwatch_problems(cw, "shop", problems), CERTWATCH_OK);
    assert_int_equal(json_array_size(problems), 0);
    json_t *j = certwatch_to_json(cw);
    assert_true(json_is_null(json_object_get(j, "onion")));
    assert_int_equal(json_array_size(json_object_get(j, "backends")), 0);
    struct metrics *m = metrics_new();
    assert_null(strstr(scrape(cw, m), "service=\"shop\"")); /* no sample before a read */
    metrics_free(m);
    json_decref(j);
    json_decref(problems);
    certwatch_free(cw);
    certwatch_free(NULL);
}

static void test_no_certificate_is_a_warning(void **state)
{
    (void)state;
    struct certwatch_svc *cw = certwatch_new(ADDR);
    CURL *easy = curl_easy_init(); /* never performed: no chain */
    certwatch_prepare(easy);
    certwatch_onion_done(cw, easy, CURLE_SSL_CONNECT_ERROR, "TLS handshake failed");
    curl_easy_cleanup(easy);
    json_t *problems = json_array();
    assert_int_equal(certwatch_problems(cw, "shop", problems), CERTWATCH_WARNING);
    assert_string_equal(json_string_value(json_array_get(problems, 0)),
                        "service shop: TLS: the certificate visitors get: no certificate read: TLS handshake failed");
    json_t *j = certwatch_to_json(cw);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "onion"), "error")), "TLS handshake failed");
    assert_true(json_is_string(json_object_get(json_object_get(j, "onion"), "time")));
    struct metrics *m = metrics_new();
    const char *text = scrape(cw, m);
    assert_non_null(strstr(text, "onionfront_tls_cert_read_ok{service=\"shop\",endpoint=\"onion\"} 0"));
    assert_null(strstr(text, "onionfront_tls_cert_expiry_timestamp_seconds{")); /* nothing to say */
    metrics_free(m);
    json_decref(j);
    json_decref(problems);
    certwatch_free(cw);
}

static void test_thresholds(void **state)
{
    (void)state;
    /* templates/prometheus-alerts.yml and docs/https.md say 30 and 7 days. */
    assert_int_equal(CERTWATCH_WARN_DAYS, 30);
    assert_int_equal(CERTWATCH_CRIT_DAYS, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_read_yet),
        cmocka_unit_test(test_no_certificate_is_a_warning),
        cmocka_unit_test(test_thresholds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
