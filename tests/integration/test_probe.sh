#!/bin/bash
# The end-to-end probe (issue 14) through onionfront's own client tor, on the private network:
#  - the client tor is a separate ordinary tor with its SocksPort on a unix socket in run_dir/probe/; the
#    single-onion tor still has no SocksPort;
#  - a healthy service is "reachable" with a time to first byte, every probe fetched the descriptor afresh;
#  - all backends killed: "down" at stage http (or stream), the repair ladder starts (each step logged
#    once: re-post, re-publish the service alone, restart tor — its only service is down —, alert),
#    Onion-Location is withdrawn from the include file and from the HTTP endpoint, read through a separate
#    nginx that knows only that endpoint; `onionfront status` exits 2, `check` says CRITICAL;
#  - a backend back: "reachable" again, the header returns, status exits 0;
#  - the whole private network frozen (the onion unreachable while onionfront's tors run): "down", the
#    ladder's steps in order, each once (re-post, re-publish, restart tor, alert); thawed: "reachable" again.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

NGINX=/usr/sbin/nginx
[[ -x $NGINX ]] || { of_fail "$NGINX is missing (tests/install-deps.sh test installs nginx)"; of_summary; exit 1; }

backend_port=$(of_free_port)
ol_port=$(of_free_port)
nginx_port=$(of_free_port)
of_start_backend alpha "$backend_port" http || exit 1
backend_pid=$OF_LAST_PID

ol_dir=$OF_TMP/onion-location
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$backend_port\",
        \"health\": { \"type\": \"tcp\", \"interval_ms\": 500, \"timeout_ms\": 300 } } ],
      \"probe\": { \"path\": \"/\", \"expect_status\": [200], \"body_contains\": \"alpha\" } }"
of_write_config "$config" "[ $svc ]" "\"probe\": { \"interval\": 8, \"timeout\": 20, \"window\": 3, \"down_after\": 1 },
  \"onion_location\": { \"dir\": \"$ol_dir\", \"listen\": \"127.0.0.1:$ol_port\" }"
of_start_onionfront "$config" "$log"

# The farm's web server: another nginx that knows only onionfront's HTTP endpoint (templates/).
ngx=$OF_TMP/nginx
mkdir -p "$ngx/www"
echo clearnet >"$ngx/www/page" # a file: "return" would answer before auth_request runs
sed -e "s|10\.0\.0\.5:8081|127.0.0.1:$ol_port|" -e "s|/onion-location/web;|/onion-location/alpha;|" \
  "$OF_ROOT/templates/nginx-onion-location-farm.conf" >"$ngx/onion-location-farm.conf"
# Its workers read the page under the test's 0700 directory: as root, keep them root.
cat >"$ngx/nginx.conf" <<EOF
$( ((EUID == 0)) && echo 'user root;')
pid $ngx/nginx.pid;
error_log $ngx/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $ngx/tmp;
    proxy_temp_path $ngx/tmp;
    server {
        listen 127.0.0.1:$nginx_port;
        include $ngx/onion-location-farm.conf;
        location / { root $ngx/www; }
    }
}
EOF
"$NGINX" -c "$ngx/nginx.conf" -e "$ngx/error.log" -g 'daemon off;' >"$ngx/stdout.log" 2>&1 &
of_track_pid $!

onion_header() { # the Onion-Location header nginx sends for PATH ("" if none)
  curl -s --max-time 5 -D - -o /dev/null "http://127.0.0.1:$nginx_port$1" | tr -d '\r' | sed -n 's/^[Oo]nion-[Ll]ocation: //p'
}
status_json() { "$OF_BIN" -c "$config" status --json >"$OF_TMP/status.json" 2>/dev/null; }
probe_state() { # the service's end-to-end state from `status --json`
  status_json
  jq -r '.services | .[0].probe.state // "none"' "$OF_TMP/status.json" 2>/dev/null
}
state_is() { [[ $(probe_state) == "$1" ]]; }

# --- the client tor -------------------------------------------------------------------------------------
of_check "onionfront logs the first upload" of_wait_log "$log" 'HS_DESC UPLOADED|upload confirmed|uploaded' 90
of_check "the client tor's SocksPort socket exists in run_dir/probe" of_wait_until 60 test -S "$OF_TMP/run/probe/socks.sock"
of_check "run_dir/probe is 0700" test "$(stat -c %a "$OF_TMP/run/probe")" = 700
of_check "the client torrc has a unix SocksPort" grep -q "^SocksPort unix:$OF_TMP/run/probe/socks.sock" "$OF_TMP/state/probe-torrc"
of_check "the client torrc has the network's torrc-extra" grep -q '^TestingTorNetwork 1' "$OF_TMP/state/probe-torrc"
of_check "the single-onion torrc still has SocksPort 0" grep -q '^SocksPort 0' "$OF_TMP/state/torrc"

# --- healthy -> reachable -------------------------------------------------------------------------------
t0=$(of_now)
of_check "the probe reports the service reachable" of_wait_until 180 state_is reachable
of_log "reachable after $(of_elapsed "$t0") s"
cp "$OF_TMP/status.json" "$OF_TMP/status-reachable.json"
ttfb=$(jq -r '.services | .[0].probe.last.ttfb_seconds' "$OF_TMP/status-reachable.json")
desc=$(jq -r '.services | .[0].probe.last.descriptor_seconds' "$OF_TMP/status-reachable.json")
of_log "time to first byte $ttfb s, time to descriptor $desc s"
of_check "the probe has a time to first byte" awk -v t="$ttfb" 'BEGIN { exit !(t + 0 > 0) }'
of_check "the probe fetched the descriptor afresh (HS_DESC RECEIVED on the client tor)" awk -v t="$desc" 'BEGIN { exit !(t != "null" && t + 0 >= 0) }'
"$OF_BIN" -c "$config" status >/dev/null 2>&1
of_check "status exits 0 while reachable" test $? -eq 0
"$OF_BIN" -c "$config" check >"$OF_TMP/check.out" 2>&1
rc=$?
of_log "check: $(cat "$OF_TMP/check.out") (exit $rc)"
of_check "check says OK in one line" grep -qE '^ONIONFRONT OK' "$OF_TMP/check.out"
addr=$(jq -r '.services | .[0].address' "$OF_TMP/status-reachable.json")
of_check "the include file carries the header" of_wait_until 10 grep -q "$addr" "$ol_dir/alpha.conf"
of_check "the endpoint serves the header (200)" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ol_port/onion-location/alpha")" = 200
of_check "nginx serves the page" test "$(curl -s "http://127.0.0.1:$nginx_port/page")" = clearnet
of_check "nginx sends the Onion-Location header from the endpoint" of_wait_until 10 \
  bash -c "[[ \$(curl -s -D - -o /dev/null 'http://127.0.0.1:$nginx_port/page?x=1' | tr -d '\r' | sed -n 's/^[Oo]nion-[Ll]ocation: //p') == http://$addr/page?x=1 ]]"
of_check "the metrics have onionfront_service_reachable 1" bash -c "'$OF_BIN' -c '$config' status metrics | grep -q '^onionfront_service_reachable{service=\"alpha\"} 1'"
of_check "the metrics have a TTFB histogram" bash -c "'$OF_BIN' -c '$config' status metrics | grep -q '^onionfront_probe_ttfb_seconds_count{service=\"alpha\"} [1-9]'"

# --- all backends killed -> down ------------------------------------------------------------------------
of_stop_pid "$backend_pid"
t0=$(of_now)
of_check "the probe reports the service down" of_wait_until 60 state_is down
of_log "down $(of_elapsed "$t0") s after the backend was killed"
stage=$(jq -r '.services | .[0].probe.last.stage' "$OF_TMP/status.json")
of_log "failure stage: $stage ($(jq -r '.services | .[0].probe.last.detail' "$OF_TMP/status.json"))"
of_check "the failure stage is http or stream" test "$stage" = http -o "$stage" = stream
of_check "the include file is emptied" of_wait_until 5 test ! -s "$ol_dir/alpha.conf"
of_check "the endpoint answers 204 when withdrawn" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ol_port/onion-location/alpha")" = 204
of_check "nginx sends no Onion-Location" of_wait_until 5 test -z "$(onion_header /page)"
"$OF_BIN" -c "$config" status >/dev/null 2>&1
of_check "status exits 2 while down" test $? -eq 2
"$OF_BIN" -c "$config" check >"$OF_TMP/check.out" 2>&1
rc=$?
of_log "check: $(cat "$OF_TMP/check.out") (exit $rc)"
of_check "check says CRITICAL and exits 2" bash -c "grep -q '^ONIONFRONT CRITICAL' '$OF_TMP/check.out' && test $rc -eq 2"
of_check "repair step 1 (re-post the descriptor) is logged" of_wait_log "$log" 'repair step 1: re-posting' 30
of_check "repair step 2 (re-publish it alone) follows" of_wait_log "$log" 'repair step 2: re-publishing it alone' 60
of_check "repair step 3 (restart tor: its only service is down) follows" of_wait_log "$log" 'repair step 3: restarting its tor' 60
of_check "step 4 (alert) follows" of_wait_log "$log" 'nothing left to try, alerting' 90
of_check "each step is logged once" test "$(grep -c 'repair step 1' "$log")" -eq 1 -a "$(grep -c 'repair step 2' "$log")" -eq 1 -a "$(grep -c 'repair step 3' "$log")" -eq 1
status_json
of_check "status shows the repairs tried" bash -c "jq -e '.services | .[0].probe.repairs | map(.step) == [\"repost_descriptor\",\"republish\",\"restart_tor\",\"alert\"]' '$OF_TMP/status.json' >/dev/null"

# --- a backend back -> reachable ------------------------------------------------------------------------
of_start_backend alpha "$backend_port" http || exit 1
t0=$(of_now)
of_check "the probe reports the service reachable again" of_wait_until 180 bash -c "s=\$('$OF_BIN' -c '$config' status --json | jq -r '.services | .[0].probe.state'); [[ \$s == reachable || \$s == degraded ]]"
of_log "reachable again $(of_elapsed "$t0") s after the backend came back"
of_check "the include file carries the header again" of_wait_until 10 grep -q "$addr" "$ol_dir/alpha.conf"
of_check "nginx sends the header again" of_wait_until 10 test -n "$(onion_header /page)"
of_check "'reachable again' is logged" grep -q 'reachable again end to end' "$log"

# --- the onion unreachable from the network: the ladder on a tor-level outage ---------------------------
# Every authority and relay of the private network is frozen (SIGSTOP by the PIDs testnet.sh recorded,
# each checked to be a tor on that node's torrc): the service's descriptor and introduction points are
# out of reach, while both of onionfront's tors stay up and answer on their control ports (so only the
# ladder, not the tor supervisor, acts). A detached watchdog thaws them after a bound even if this script
# is killed; the trap thaws them on any exit.
frozen=()
thaw() { ((${#frozen[@]})) && kill -CONT "${frozen[@]}" 2>/dev/null; frozen=(); }
trap 'thaw; of_cleanup' EXIT
trap 'thaw; of_cleanup; exit 130' INT TERM
for node in "$TESTNET_DIR"/auth* "$TESTNET_DIR"/relay*; do
  pid=$(cat "$node/pid" 2>/dev/null) || continue
  [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$node/torrc" && frozen+=("$pid")
done
mark=$(wc -l <"$log")
after_mark() { tail -n +"$((mark + 1))" "$log"; }
of_check "the private network's nodes are found to freeze (${#frozen[@]})" test "${#frozen[@]}" -ge 4
setsid bash -c 'sleep 240; kill -CONT "$@" 2>/dev/null' _ "${frozen[@]}" </dev/null >/dev/null 2>&1 &
kill -STOP "${frozen[@]}"
t0=$(of_now)
of_log "froze ${#frozen[@]} nodes of the private network"
of_check "network frozen: the probe reports the service down" of_wait_until 120 state_is down
of_log "down $(of_elapsed "$t0") s after the freeze, stage $(jq -r '.services | .[0].probe.last.stage' "$OF_TMP/status.json")"
of_check "network frozen: repair step 1 (re-post) is logged" of_wait_until 60 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'repair step 1: re-posting'"
of_check "network frozen: repair step 2 (re-publish) follows" of_wait_until 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'repair step 2: re-publishing'"
of_check "network frozen: repair step 3 (restart tor) follows" of_wait_until 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'repair step 3: restarting its tor'"
of_check "network frozen: step 4 (alert) follows" of_wait_until 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'nothing left to try, alerting'"
thaw
of_log "thawed the network $(of_elapsed "$t0") s after the freeze"
steps=$(after_mark | grep -oE 'repair step [123]|nothing left to try' | tr '\n' ',')
of_check "network frozen: the steps came in order, each once ($steps)" test "$steps" = "repair step 1,repair step 2,repair step 3,nothing left to try,"
of_check "network frozen: onionfront's tor was restarted by the ladder" bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'tor: started'"
t0=$(of_now)
of_check "network thawed: the probe reports the service reachable again" of_wait_until 300 bash -c "s=\$('$OF_BIN' -c '$config' status --json | jq -r '.services | .[0].probe.state'); [[ \$s == reachable || \$s == degraded ]]"
of_log "reachable again $(of_elapsed "$t0") s after the thaw"

of_stop_onionfront
of_check "onionfront exits 0" test $? -eq 0
of_check "with onionfront gone nginx still serves the page, without the header" \
  bash -c "[[ \$(curl -s http://127.0.0.1:$nginx_port/page) == clearnet && -z \$(curl -s -D - -o /dev/null http://127.0.0.1:$nginx_port/page | grep -i '^onion-location') ]]"
((OF_FAILED)) && grep -E '\] probe: |repair|restarting tor' "$log" | tail -n 40 >&2
of_summary
