#!/bin/bash
# The status socket, `onionfront status` and the metrics endpoint with real tor on the private network
# (issue 5, status socket and metrics; issue 6, reload over the socket):
#  - onionfront runs one service; its status socket is 0660; a second onionfront on the same config
#    refuses to start because the socket is in use;
#  - `onionfront status` shows tor running and bootstrapped, the service's address and its uploaded
#    descriptor; `status --json` carries the same as JSON;
#  - "reload" over the socket applies a new service, refuses a bad config naming the field (the old one
#    keeps running) and refuses a change of status.socket;
#  - "metrics" over the socket and GET /metrics over HTTP pass a strict text-format check
#    (tests/tools/promcheck.c; promtool too when it is installed); other paths get 404, POST 405;
#  - an unknown command is an error and the daemon keeps answering;
#  - a read-only user (status.allowed_uids/allowed_gids, uid 65534 through setpriv) reads status and
#    metrics but is refused restart-tor, log-level and reload, with the message naming status.admin_uids
#    and exit 1, and tor is not restarted; root's restart-tor runs and a second one right after it is
#    refused (at most one a minute), then the roll ends;
#  - after SIGTERM the socket file is gone and `onionfront status` says onionfront is not running.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

PROMCHECK=$OF_ROOT/build/tools/promcheck
port_a=$(of_free_port)
port_m=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
# The socket outside run_dir (0700), where the read-only user (monitoring, uid 65534) can reach it; the
# socket's group (allowed_gids[0]) lets that user connect to the 0660 socket.
RO_UID=65534
chmod 711 "$OF_TMP"
sock=$OF_TMP/status.sock
status_json="\"status\": { \"socket\": \"$sock\", \"allowed_uids\": [ $RO_UID ], \"allowed_gids\": [ $RO_UID ] }"
metrics_only="\"metrics\": { \"listen\": \"127.0.0.1:$port_m\" }"
metrics_json="$metrics_only, $status_json"
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"
svc_beta="{ \"name\": \"beta\", \"ports\": [ { \"virtual\": 81, \"target\": \"127.0.0.1:$port_a\" } ] }"
of_write_config "$config" "[ $svc_alpha ]" "$metrics_json"

ofs() { "$OF_BIN" status "$@"; }

# promcheck, and promtool when present (Debian ships it only inside the prometheus server package).
metrics_ok() { # file
  "$PROMCHECK" "$1" >"$1.check" 2>&1 || { cat "$1.check" >&2; return 1; }
  if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$1" >&2 || return 1
  fi
  return 0
}

# --- the checker itself must be able to fail ---------------------------------------------------------
printf '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 1\n' >"$OF_TMP/good.prom"
printf '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 1\na_total{x="1"} 2\n' >"$OF_TMP/dup.prom"
printf '# HELP a A.\n# HELP a A.\n# TYPE a gauge\na 1\n' >"$OF_TMP/help2.prom"
printf '# HELP a A.\n# TYPE a gauge\na{x="\\q"} 1\n' >"$OF_TMP/escape.prom"
of_check "promcheck accepts a valid exposition" "$PROMCHECK" "$OF_TMP/good.prom"
of_check "promcheck rejects a duplicate series" bash -c "! '$PROMCHECK' '$OF_TMP/dup.prom' >/dev/null"
of_check "promcheck rejects a second HELP" bash -c "! '$PROMCHECK' '$OF_TMP/help2.prom' >/dev/null"
of_check "promcheck rejects a bad escape" bash -c "! '$PROMCHECK' '$OF_TMP/escape.prom' >/dev/null"

# --- start ---------------------------------------------------------------------------------------------
of_start_onionfront "$config" "$log"
of_check "the status socket is listening" of_wait_log "$log" "status: listening on $sock" 30
of_check "the status socket is mode 0660" test "$(stat -c %a "$sock" 2>/dev/null)" = 660

"$OF_BIN" -c "$config" run >"$OF_TMP/second.log" 2>&1 &
second=$!
of_track_pid "$second"
wait "$second"
rc=$?
of_check "a second onionfront on the same config exits 1" test "$rc" -eq 1
of_check "... saying the status socket is in use" grep -q "status.socket: .*listening on it" "$OF_TMP/second.log"
of_check "... and leaves the first one's socket alone" test -S "$sock"

# Wait (bounded) until tor has bootstrapped and the descriptor is confirmed.
uploaded() { ofs -s "$sock" --json services 2>/dev/null | grep -q '"uploaded": true'; }
deadline=$(($(date +%s) + 120))
until uploaded || (($(date +%s) > deadline)); do
  kill -0 "$OF_PID" 2>/dev/null || break
  sleep 0.5
done
of_check "the service's descriptor upload shows within 120 s ($(of_elapsed "$OF_START") s)" uploaded
addr=$(of_address_from_log "$log" alpha)

# --- onionfront status ------------------------------------------------------------------------------
ofs -c "$config" >"$OF_TMP/summary.txt" 2>&1
of_check "'onionfront status' exits 0" test $? -eq 0
cat "$OF_TMP/summary.txt" >&2
of_check "the summary says onionfront is ok" grep -Eq '^onionfront [0-9.]+: ok, up ' "$OF_TMP/summary.txt"
of_check "the summary shows tor running and bootstrapped" \
  grep -Eq '^tor: running, bootstrapped 100%, version [0-9]' "$OF_TMP/summary.txt"
of_check "the summary shows the service and its address" grep -qx "service alpha: $addr" "$OF_TMP/summary.txt"
of_check "the summary shows the port and its target" \
  grep -Eq "^  port 80 +-> 127\.0\.0\.1:$port_a\$" "$OF_TMP/summary.txt"
of_check "the summary shows the descriptor" grep -Eq '^  descriptor +(uploaded|[1-9][0-9]*/[0-9]+ HSDirs confirmed)' \
  "$OF_TMP/summary.txt"
of_check "the summary shows the backend" grep -Eq '^  backends +port 80: 1/1 up - alpha-80-0 up$' "$OF_TMP/summary.txt"

ofs -c "$config" --json >"$OF_TMP/all.json" 2>&1
of_check "'status --json' exits 0" test $? -eq 0
of_check "'status --json' has the overall state" grep -q '"state": "ok"' "$OF_TMP/all.json"
of_check "'status --json' has the service's address" grep -q "\"address\": \"$addr\"" "$OF_TMP/all.json"
of_check "'status --json' has tor's pid" grep -q "\"pid\": $(cat "$OF_TMP/state/tor/tor.pid")" "$OF_TMP/all.json"

# --- metrics ------------------------------------------------------------------------------------------
ofs -s "$sock" metrics >"$OF_TMP/socket.prom" 2>"$OF_TMP/socket.err"
of_check "'metrics' over the socket answers" test -s "$OF_TMP/socket.prom"
of_check "the socket's metrics pass the strict text-format check" metrics_ok "$OF_TMP/socket.prom"
of_check "metrics: onionfront_service_up{service=\"alpha\"} 1" grep -qx 'onionfront_service_up{service="alpha"} 1' \
  "$OF_TMP/socket.prom"
of_check "metrics: tor bootstrapped 100" grep -qx 'onionfront_tor_bootstrap_progress 100' "$OF_TMP/socket.prom"
of_check "metrics: build info" grep -Eq '^onionfront_build_info\{version="[0-9.]+"\} 1$' "$OF_TMP/socket.prom"

code=$(curl -sS -o "$OF_TMP/http.prom" -D "$OF_TMP/http.hdr" -w '%{http_code}' --max-time 10 \
  "http://127.0.0.1:$port_m/metrics")
of_check "GET /metrics answers 200" test "$code" = 200
of_check "GET /metrics has the text format's content type" \
  grep -qi '^content-type: text/plain; version=0.0.4' "$OF_TMP/http.hdr"
of_check "the HTTP metrics pass the strict text-format check" metrics_ok "$OF_TMP/http.prom"
of_check "the HTTP metrics have the service" grep -qx 'onionfront_service_up{service="alpha"} 1' "$OF_TMP/http.prom"
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port_m/")
of_check "GET / answers 404" test "$code" = 404
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -X POST -d x "http://127.0.0.1:$port_m/metrics")
of_check "POST /metrics answers 405" test "$code" = 405

# --- a read-only user ------------------------------------------------------------------------------------
# Monitoring (status.allowed_uids) reads; restart-tor, log-level and reload are for admins only.
AS_RO=(setpriv --reuid="$RO_UID" --regid="$RO_UID" --clear-groups --no-new-privs)
tor_pid_before=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
"${AS_RO[@]}" "$OF_BIN" status -s "$sock" >"$OF_TMP/ro-status.out" 2>&1
of_check "uid $RO_UID (status.allowed_uids) reads the status (exit 0)" test $? -eq 0
of_check "... and sees onionfront ok" grep -Eq '^onionfront [0-9.]+: ok, up ' "$OF_TMP/ro-status.out"
"${AS_RO[@]}" "$OF_BIN" status -s "$sock" metrics >"$OF_TMP/ro.prom" 2>&1
of_check "uid $RO_UID reads the metrics" grep -qx 'onionfront_service_up{service="alpha"} 1' "$OF_TMP/ro.prom"
"${AS_RO[@]}" "$OF_BIN" restart-tor -s "$sock" >"$OF_TMP/ro-restart.out" 2>&1
rc=$?
cat "$OF_TMP/ro-restart.out" >&2
of_check "restart-tor as uid $RO_UID exits 1" test "$rc" -eq 1
ro_refusal="onionfront restart-tor: permission denied: uid $RO_UID may read status but not run admin"
ro_refusal+=" commands; add it to status.admin_uids"
of_check "... refused, naming status.admin_uids" grep -qxF "$ro_refusal" "$OF_TMP/ro-restart.out"
"${AS_RO[@]}" "$OF_BIN" log-level -s "$sock" debug 604800 >"$OF_TMP/ro-level.out" 2>&1
rc=$?
of_check "log-level debug 604800 as uid $RO_UID is refused (exit $rc)" \
  bash -c "test $rc -eq 1 && grep -q 'log-level: permission denied: uid $RO_UID' '$OF_TMP/ro-level.out'"
"${AS_RO[@]}" "$OF_BIN" status -s "$sock" reload >"$OF_TMP/ro-reload.out" 2>&1
rc=$?
of_check "reload as uid $RO_UID is refused (exit $rc)" \
  bash -c "test $rc -eq 1 && grep -q 'reload: permission denied: uid $RO_UID' '$OF_TMP/ro-reload.out'"
sleep 1
of_check "tor was not restarted (same pid $tor_pid_before)" \
  test -n "$tor_pid_before" -a "$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)" = "$tor_pid_before"
of_check "... nor a roll started" bash -c "! grep -q 'restart-tor: restarting' '$log'"
refusals=$(grep -c "status: refused .* to uid $RO_UID: it may only read" "$log")
of_check "the log names each refusal ($refusals of 3)" test "$refusals" -eq 3
ofs -s "$sock" metrics >"$OF_TMP/denied.prom" 2>&1
of_check "... and the metrics count them" grep -qx 'onionfront_status_denied_total 3' "$OF_TMP/denied.prom"

# --- bad requests -----------------------------------------------------------------------------------------
ofs -s "$sock" frobnicate >/dev/null 2>"$OF_TMP/unknown.err"
rc=$?
of_check "an unknown command exits 1" test "$rc" -eq 1
of_check "... with the daemon's reason" grep -q 'unknown command "frobnicate"' "$OF_TMP/unknown.err"
of_check "the daemon answers the next request" bash -c "'$OF_BIN' status -s '$sock' status >/dev/null"

# --- reload over the socket -----------------------------------------------------------------------------
of_write_config "$config" "[ $svc_alpha, $svc_beta ]" "$metrics_json"
ofs -s "$sock" reload >"$OF_TMP/reload1.out" 2>&1
rc=$?
cat "$OF_TMP/reload1.out" >&2
of_check "reload over the socket succeeds" test "$rc" -eq 0
of_check "... and says what it applied" grep -q "^reloaded: applied .*services changed in tor" "$OF_TMP/reload1.out"
ofs -s "$sock" --json services >"$OF_TMP/services2.json" 2>&1
of_check "the new service is listed after the reload" grep -q '"name": "beta"' "$OF_TMP/services2.json"

cp "$config" "$OF_TMP/good.json"
echo '{ "state_dir": "'"$OF_TMP"'/state", "run_dir": "'"$OF_TMP"'/run", "services": [ { "name": "x", "ports": [ { "virtual": 0, "target": "127.0.0.1:1" } ] } ] }' >"$config"
ofs -s "$sock" reload >"$OF_TMP/reload2.out" 2>&1
rc=$?
cat "$OF_TMP/reload2.out" >&2
of_check "reload of a bad config exits 1" test "$rc" -eq 1
of_check "... reporting the field path" grep -q 'services\[0\]\.ports\[0\]\.virtual' "$OF_TMP/reload2.out"
of_check "... and keeping the running config" grep -q "keeping the running config" "$OF_TMP/reload2.out"
ofs -s "$sock" --json services >"$OF_TMP/services3.json" 2>&1
of_check "both services are still there" bash -c "grep -q '\"name\": \"alpha\"' '$OF_TMP/services3.json' &&
  grep -q '\"name\": \"beta\"' '$OF_TMP/services3.json'"

of_write_config "$config" "[ $svc_alpha, $svc_beta ]" "$metrics_only, \"status\": { \"socket\": \"$OF_TMP/other.sock\" }"
ofs -s "$sock" reload >"$OF_TMP/reload3.out" 2>&1
rc=$?
of_check "a reload that moves the status socket is refused" test "$rc" -eq 1
of_check "... naming status.socket" grep -q "status.socket changed, which needs a restart" "$OF_TMP/reload3.out"
cp "$OF_TMP/good.json" "$config"

# --- restart-tor by an admin, and its rate limit ---------------------------------------------------------
ofs -s "$sock" restart-tor >"$OF_TMP/restart1.out" 2>&1
of_check "restart-tor as root starts a restart" test $? -eq 0
ofs -s "$sock" restart-tor >"$OF_TMP/restart2.out" 2>&1
rc=$?
cat "$OF_TMP/restart2.out" >&2
again_re='restart-tor: the last restart-tor started [0-9]+ s ago; at most one every 60 s: try again in [0-9]+ s'
of_check "a second restart-tor right after it is refused (exit $rc)" \
  bash -c "test $rc -eq 1 && grep -Eq '$again_re' '$OF_TMP/restart2.out'"
of_check "... and one roll started" test "$(grep -c 'restart-tor: restarting the one tor' "$log")" -eq 1
roll_done() { ofs -c "$config" 2>/dev/null | grep -q 'restart-tor: last ok'; }
of_check "the restart ends" of_wait_until 180 roll_done

# --- shutdown -------------------------------------------------------------------------------------------
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "the status socket file is removed" test ! -e "$sock"
ofs -c "$config" >/dev/null 2>"$OF_TMP/down.err"
rc=$?
of_check "'onionfront status' exits 2 when onionfront is not running" test "$rc" -eq 2
of_check "... and says so" grep -q "onionfront is not running" "$OF_TMP/down.err"
# tor's lines keep tor's level but for the warnings the product expects of tor (torwarn.c: notice); the
# refused reloads above are logged as errors on purpose. The tests run onionfront as root without
# tor.user, so tor stays root and warns about it: a warning an operator should see, expected here only.
of_check "no warnings in onionfront's log (besides the non-anonymity one and the refused reloads)" \
  bash -c "! grep -E '^[0-9-]+ [0-9:.]+ \[(warn|error)\]' '$log' | grep -v 'NOT location-hidden' | grep -v '\] reload: ' |
    grep -v '\[warn\] $OF_TOR_AS_ROOT_WARNING'"
of_check "no sanitizer report in onionfront's log" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log'"
of_summary
