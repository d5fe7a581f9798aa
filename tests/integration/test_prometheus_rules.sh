#!/bin/bash
# templates/prometheus-alerts.yml: `promtool check rules` accepts it and `promtool test rules` fires each
# alert on the series in tests/prometheus/alerts-test.yml (and not on the healthy ones). A broken copy of
# the test (an alert expected for a healthy service) must fail, so the check can fail. No tor involved.
set -u
source "$(dirname "$0")/lib.sh"
of_init

PROMTOOL=$(command -v promtool) || { of_fail "promtool is missing (tests/install-deps.sh test installs prometheus)"; of_summary; exit 1; }
rules=$OF_ROOT/templates/prometheus-alerts.yml
tests=$OF_ROOT/tests/prometheus/alerts-test.yml
of_check "promtool check rules accepts the shipped rules" "$PROMTOOL" check rules "$rules"
for a in OnionTLSCertExpiresSoon OnionTLSCertExpiring; do
  of_check "the test fires $a" grep -q "alertname: $a" "$OF_ROOT/tests/prometheus/tls-alerts-test.yml"
done
for a in OnionServiceDown OnionDescriptorNotConfirmed OnionBackendPoolEmpty OnionNotSingleOnion OnionTorRestartLoop \
  OnionTLSCertNameMismatch \
  OnionbalanceNotPublishing; do
  of_check "the test fires $a" grep -q "alertname: $a" "$tests"
done
(cd "$(dirname "$tests")" && "$PROMTOOL" test rules "$(basename "$tests")") >"$OF_TMP/test.out" 2>&1
rc=$?
cat "$OF_TMP/test.out" >&2
of_check "promtool test rules passes" test $rc -eq 0
(cd "$(dirname "$tests")" && "$PROMTOOL" test rules tls-alerts-test.yml) >"$OF_TMP/tls.out" 2>&1
rc=$?
cat "$OF_TMP/tls.out" >&2
of_check "promtool test rules passes for the TLS certificate alerts over weeks" test $rc -eq 0
# The same tests, expecting OnionServiceDown for the healthy service too: promtool must say no.
mkdir -p "$OF_TMP/broken"
sed -e "s|\.\./\.\./templates/|$OF_ROOT/templates/|" -e 's/exp_labels: {severity: page, instance: a, service: web}/exp_labels: {severity: page, instance: a, service: ok}/' \
  "$tests" >"$OF_TMP/broken/alerts-test.yml"
(cd "$OF_TMP/broken" && "$PROMTOOL" test rules alerts-test.yml) >/dev/null 2>&1
of_check "promtool test rules fails on a wrong expectation" test $? -ne 0
of_summary
