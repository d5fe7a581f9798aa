#!/bin/bash
# HTTPS onions (issue 41) on the private network: a port marked "tls" served by two openssl s_server
# backends with certificates from a local test CA made here with openssl (the CA is the daemon's store
# through SSL_CERT_FILE, so they verify as trusted):
#  - the renewal runbook of docs/https.md: `onionfront onion-csr` with the CA's nonce gives a CSR signed
#    with the onion key (openssl verifies it), the CA issues the TLS certificate for the onion name;
#  - backend A (the one visitors reach: B is drained) valid 90 days, backend B issued for 5 days (4 whole
#    days left): status (JSON and text) and /metrics show 89 and 4 days and name B; the shipped alert
#    rules, fed the scraped values, fire OnionTLSCertExpiring for B only (promtool test rules); `check`
#    exits 2 (CRITICAL) naming B;
#  - A swapped to a certificate for another name: the visitor's certificate and A's do not name the onion,
#    name_match 0, OnionTLSCertNameMismatch fires, `check` exits 2;
#  - both renewed (90 days, the right name): every view 89 days, no alert, `check` exits 0;
#  - a certificate expiring in 20 days on B: `check` exits 1 (WARNING), OnionTLSCertExpiresSoon fires;
#  - the shipped Grafana dashboard names only families /metrics has, its TLS panels included.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

OPENSSL=$(command -v openssl) || { of_fail "openssl is missing (tests/install-deps.sh test installs it)"; of_summary; exit 1; }
PROMTOOL=$(command -v promtool) || { of_fail "promtool is missing (tests/install-deps.sh test installs prometheus)"; of_summary; exit 1; }
pki=$OF_TMP/pki
mkdir -p "$pki"

# --- the local test CA ------------------------------------------------------------------------------------
"$OPENSSL" req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/ca.key" -out "$pki/ca.pem" \
  -days 3650 -subj "/CN=onionfront test CA" -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
of_check "openssl made the test CA" test -s "$pki/ca.pem"

port_a=$(of_free_port)
port_b=$(of_free_port)
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc="{ \"name\": \"shop\", \"ports\": [ { \"virtual\": 443, \"tls\": true,
        \"backends\": [ { \"address\": \"127.0.0.1:$port_a\" }, { \"address\": \"127.0.0.1:$port_b\", \"weight\": 0 } ],
        \"health\": { \"type\": \"tcp\", \"interval_ms\": 2000, \"timeout_ms\": 1000 } } ] }"
of_write_config "$config" "[ $svc ]" "\"probe\": { \"interval\": 5, \"timeout\": 20, \"window\": 3, \"down_after\": 2 }"
SSL_CERT_FILE=$pki/ca.pem of_start_onionfront "$config" "$log"

of_check "onionfront logs the service's address" of_wait_until 60 bash -c "grep -Eq 'service shop: [a-z ]+ key, address' '$log'"
onion=$(of_address_from_log "$log" shop)
of_log "onion: $onion"

# --- the runbook: a CSR with the CA's nonce, then the certificate ------------------------------------------
nonce=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$OF_BIN" -c "$config" onion-csr shop --ca-nonce "$nonce" --out "$pki/onion.csr" 2>"$OF_TMP/csr.err"
of_check "onion-csr wrote the CSR" test -s "$pki/onion.csr"
of_check "openssl verifies the onion CSR's signature" bash -c "'$OPENSSL' req -in '$pki/onion.csr' -noout -verify 2>&1 | grep -q 'verify OK'"
"$OPENSSL" req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/tls.key" -out "$pki/tls.csr" \
  -subj "/CN=$onion" 2>/dev/null

issue() { # issue NAME SAN DAYS — the test CA signs the TLS key for SAN
  "$OPENSSL" x509 -req -in "$pki/tls.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days "$3" \
    -extfile <(printf 'subjectAltName=%s\n' "$2") -out "$pki/$1.pem" 2>/dev/null
}
issue valid "DNS:$onion,DNS:*.$onion" 90
issue expiring "DNS:$onion" 5
issue wrongname "DNS:www.example.com" 90
issue renewed "DNS:$onion,DNS:*.$onion" 90
issue soon "DNS:$onion" 20
of_check "the CA issued the certificates" test -s "$pki/valid.pem" -a -s "$pki/expiring.pem" -a -s "$pki/wrongname.pem"

serve() { # serve a|b CERT — (re)start that backend's s_server with CERT
  local which=$1 port pidvar="pid_$1"
  [[ $which == a ]] && port=$port_a || port=$port_b
  [[ -n ${!pidvar:-} ]] && of_stop_pid "${!pidvar}"
  "$OPENSSL" s_server -quiet -www -accept "127.0.0.1:$port" -cert "$pki/$2.pem" -key "$pki/tls.key" \
    >"$OF_TMP/s_server-$which.log" 2>&1 &
  printf -v "$pidvar" %s $!
  of_track_pid "${!pidvar}"
  of_wait_until 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
}
serve a valid
serve b expiring

status_json() { "$OF_BIN" -c "$config" status --json >"$OF_TMP/status.json" 2>/dev/null; }
# jtrue [JQ_ARGS...] FILTER — FILTER is true on the last status JSON (jq 1.6 -e says yes to an empty file).
jtrue() { [[ -s $OF_TMP/status.json ]] && jq -e "$@" "$OF_TMP/status.json" >/dev/null 2>&1; }
tls_is() { # tls_is JQ_FILTER — true once the status JSON's services[0].probe.tls passes FILTER
  status_json # exits 1 or 2 while a certificate is a problem
  jtrue ".services[0].probe.tls | $1"
}
metric() { "$OF_BIN" -c "$config" status metrics | grep -F "$1" | awk '{ print $2 }'; }
check_rc() {
  "$OF_BIN" -c "$config" check >"$OF_TMP/check.out" 2>&1
  local rc=$?
  of_log "check: $(cat "$OF_TMP/check.out") (exit $rc)"
  return $rc
}
# A backend's restart (serve) costs a probe or a health check: the probe's window and the pool show it for
# a few rounds. `check` is asked once those have passed, so its verdict is the certificates'.
settled() { status_json; jtrue '.status.problems | all(startswith("service shop: TLS: "))'; }
sha() { "$OPENSSL" x509 -in "$pki/$1.pem" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr A-F a-f; }

# alerts_test FILE NAME EXPECTED... — a promtool unit test of the shipped rules fed the scraped expiry and
# name gauges (as seconds left at evaluation time 0) that expects exactly the alerts given as
# "ALERT ENDPOINT" words; promtool's exit status.
alerts_test() {
  local out=$OF_TMP/metrics.txt
  "$OF_BIN" -c "$config" status metrics >"$out"
  python3 - "$out" "$(date +%s)" "$OF_ROOT/templates/prometheus-alerts.yml" "$@" >"$OF_TMP/alerts-$1.yml" <<'EOF' || return 1
import re, sys
metrics, now, rules, expected = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[5:]
series, values = [], {}
for line in open(metrics):
    m = re.match(r'(onionfront_tls_cert_(expiry_timestamp_seconds|name_match))\{service="([^"]*)",endpoint="([^"]*)"\} (\S+)', line)
    if not m:
        continue
    name, kind, svc, ep, v = m.group(1), m.group(2), m.group(3), m.group(4), float(m.group(5))
    if kind == "expiry_timestamp_seconds":
        v = int(v) - now
        values[ep] = v
    series.append("      - series: '%s{service=\"%s\", endpoint=\"%s\"}'\n        values: '%dx10'\n" % (name, svc, ep, v))
if "onion" not in values or len(values) < 3:
    sys.exit("the metrics lack the expiry of the visitor's certificate or of a backend's")
def human(s):  # Prometheus' humanizeDuration for whole seconds of a day or more
    return "%dd %dh %dm %ds" % (s // 86400, s % 86400 // 3600, s % 3600 // 60, s % 60)
print("rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:" % rules)
print("".join(series), end="")
print("    alert_rule_test:")
for alert in ("OnionTLSCertExpiresSoon", "OnionTLSCertExpiring", "OnionTLSCertNameMismatch"):
    at = "6m" if alert == "OnionTLSCertNameMismatch" else "0m"
    exp = [e.split()[1] for e in expected if e.split()[0] == alert]
    print("      - eval_time: %s\n        alertname: %s\n        exp_alerts:%s" % (at, alert, "" if exp else " []"))
    for ep in exp:
        sev = "ticket" if alert == "OnionTLSCertExpiresSoon" else "page"
        what = "does not name the onion" if alert == "OnionTLSCertNameMismatch" else "expires in " + human(values[ep])
        print("          - exp_labels: {severity: %s, service: shop, endpoint: \"%s\"}" % (sev, ep))
        print("            exp_annotations: {summary: \"the TLS certificate of shop (%s) %s\"}" % (ep, what))
EOF
  "$PROMTOOL" test rules "$OF_TMP/alerts-$1.yml" >"$OF_TMP/promtool-$1.out" 2>&1
  local rc=$?
  ((rc == 0)) || cat "$OF_TMP/promtool-$1.out" >&2
  return $rc
}

# --- A valid, B expiring in 5 days ---------------------------------------------------------------------------
t0=$(of_now)
of_check "status shows the visitor's certificate and both backends'" of_wait_until 240 tls_is \
  '.onion.days_left == 89 and (.backends | length) == 2 and .backends[0].days_left == 89 and .backends[1].days_left == 4'
of_log "certificates read $(of_elapsed "$t0") s after the start"
jq '.services[0].probe.tls' "$OF_TMP/status.json" >&2
of_check "the visitor gets A's certificate" test -n "$(sha valid)" -a "$(jq -r '.services[0].probe.tls.onion.sha256' "$OF_TMP/status.json")" = "$(sha valid)"
of_check "B's certificate is another than the visitor's" test "$(jq -r '.services[0].probe.tls.backends[1].same_as_onion' "$OF_TMP/status.json")" = false
of_check "the certificates name the onion and are trusted (the test CA)" \
  jtrue '.services[0].probe.tls | .onion.name_matches and .onion.trust == "trusted" and .backends[1].name_matches'
of_check "status names B's certificate as expiring in 4 days" \
  jtrue --arg b "service shop: TLS: backend 127.0.0.1:$port_b: the certificate expires in 4 days" '.status.problems | index($b) != null'
of_check "status says the certificates are critical" jtrue '.status.certificates == "critical"'
"$OF_BIN" -c "$config" status shop >"$OF_TMP/status-shop.txt" 2>&1
cat "$OF_TMP/status-shop.txt" >&2
of_check "status shop's text shows B's 4 days" grep -Eq "tls 127.0.0.1:$port_b +expires .* \(4 days\), trusted, not the certificate visitors get" "$OF_TMP/status-shop.txt"
of_check "status shop's text shows the visitor's 89 days" grep -Eq "tls visitor +expires .* \(89 days\), trusted" "$OF_TMP/status-shop.txt"
end_b=$(date -d "$("$OPENSSL" x509 -in "$pki/expiring.pem" -noout -enddate | sed 's/notAfter=//')" +%s)
of_check "/metrics has B's notAfter" test "$(metric "onionfront_tls_cert_expiry_timestamp_seconds{service=\"shop\",endpoint=\"127.0.0.1:$port_b\"}")" = "$end_b"
end_a=$(date -d "$("$OPENSSL" x509 -in "$pki/valid.pem" -noout -enddate | sed 's/notAfter=//')" +%s)
of_check "/metrics has the visitor's notAfter (A's)" test "$(metric 'onionfront_tls_cert_expiry_timestamp_seconds{service="shop",endpoint="onion"}')" = "$end_a"
of_check "/metrics: the visitor's certificate names the onion" test "$(metric 'onionfront_tls_cert_name_match{service="shop",endpoint="onion"}')" = 1
of_check "promtool check metrics accepts /metrics" bash -c "'$OF_BIN' -c '$config' status metrics | '$PROMTOOL' check metrics"
of_check "the shipped rules fire OnionTLSCertExpiring for B only" alerts_test expiring "OnionTLSCertExpiring 127.0.0.1:$port_b"
of_check "the swap is behind the probe and the health checks (no problem but TLS)" of_wait_until 60 settled
check_rc
of_check "check exits 2 (CRITICAL) naming B" bash -c "test $? -eq 2 && grep -q '^ONIONFRONT CRITICAL - service shop: TLS: backend 127.0.0.1:$port_b' '$OF_TMP/check.out'"

# --- A swapped to a certificate for another name -------------------------------------------------------------
serve a wrongname
of_check "status shows the visitor's certificate does not name the onion" of_wait_until 120 tls_is \
  '.onion.name_matches == false and .backends[0].name_matches == false' # not null: A's certificate read again
of_check "status names the mismatch" \
  jtrue --arg p "service shop: TLS: the certificate visitors get: the certificate (CN=$onion) does not name $onion" '.status.problems | index($p) != null'
of_check "/metrics: name_match 0 for the visitor's" test "$(metric 'onionfront_tls_cert_name_match{service="shop",endpoint="onion"}')" = 0
of_check "the shipped rules fire OnionTLSCertNameMismatch for the visitor's and A's" alerts_test wrongname \
  "OnionTLSCertExpiring 127.0.0.1:$port_b" "OnionTLSCertNameMismatch onion" "OnionTLSCertNameMismatch 127.0.0.1:$port_a"
of_check "the swap is behind the probe and the health checks (no problem but TLS)" of_wait_until 60 settled
check_rc
of_check "check exits 2 (CRITICAL)" test $? -eq 2

# --- both renewed ----------------------------------------------------------------------------------------------
serve a renewed
serve b renewed
of_check "status shows every certificate renewed" of_wait_until 120 tls_is \
  '.onion.days_left == 89 and .onion.name_matches and all(.backends[]; .days_left == 89 and .name_matches and .same_as_onion)'
of_check "status says the certificates are ok" jtrue '.status.certificates == "ok"'
of_check "the alerts clear (promtool: none fires)" alerts_test renewed
of_check "the swap is behind the probe and the health checks (no problem but TLS)" of_wait_until 60 settled
check_rc
of_check "check exits 0 (OK)" test $? -eq 0

# --- 20 days left on B: a warning ---------------------------------------------------------------------------
serve b soon
of_check "status shows B's 19 days" of_wait_until 120 tls_is '.backends[1].days_left == 19'
of_check "the shipped rules fire OnionTLSCertExpiresSoon for B" alerts_test soon "OnionTLSCertExpiresSoon 127.0.0.1:$port_b"
of_check "the swap is behind the probe and the health checks (no problem but TLS)" of_wait_until 60 settled
check_rc
of_check "check exits 1 (WARNING) naming B" bash -c "test $? -eq 1 && grep -q '^ONIONFRONT WARNING - service shop: TLS: backend 127.0.0.1:$port_b' '$OF_TMP/check.out'"

# The shipped Grafana dashboard shows only families this daemon exports (its TLS panels included).
"$OF_BIN" -c "$config" status metrics >"$OF_TMP/metrics-final.txt"
unknown=""
for fam in $(grep -o 'onionfront_[a-z_]*' "$OF_ROOT/templates/grafana-dashboard.json" | sed 's/_bucket$//' | sort -u); do
  grep -q "^# TYPE $fam " "$OF_TMP/metrics-final.txt" || unknown+=" $fam"
done
of_check "every family of templates/grafana-dashboard.json is in /metrics${unknown:+ (not:$unknown)}" test -z "$unknown"
of_check "the dashboard has the TLS panels" grep -q 'onionfront_tls_cert_expiry_timestamp_seconds' "$OF_ROOT/templates/grafana-dashboard.json"
of_check "onionfront stops cleanly (no sanitizer report)" of_stop_onionfront
of_summary
