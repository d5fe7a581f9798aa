#!/bin/bash
# Bounded resources for every peer (issue 15, section 4), with real tor on the private network. The
# review's floods, bounded in count and time, on loopback, against onionfront run with a low
# RLIMIT_NOFILE (prlimit) so that running out of file descriptors is real:
#  - 1,200 slow connections to the metrics endpoint, each trickling a byte every 4 s and reconnecting
#    when closed (before: they took every descriptor, and libevent logged "Error from accept() call: Too
#    many open files" in a loop);
#  - 80 slow connections to the status socket from one allowed user (nobody), a byte every 4 s (before:
#    one user could hold every slot).
# While they run: a page is fetched through the onion, `onionfront status` (root) answers, the log stays
# small (a line count bound), and the counters show that the limits were hit. Afterwards: /metrics,
# the status socket and the onion answer again, and onionfront stops cleanly.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

NOFILE=${OF_LIMITS_NOFILE:-512}          # the daemon's soft and hard RLIMIT_NOFILE
FLOOD_S=${OF_LIMITS_FLOOD_S:-60}         # how long each flood lasts
LOG_LINES_MAX=${OF_LIMITS_LOG_LINES:-400} # log lines the daemon may write while the floods run
LOG_BYTES_ABORT=$((100 * 1024 * 1024))   # a log this large ends the floods early (the bug is back)
SLOWPEERS=$OF_ROOT/build/tools/slowpeers
NOBODY=65534

port_a=$(of_free_port)
port_m=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1

# The status socket where nobody can reach it: OF_TMP is entered (not listed) by others, pub/ holds the
# socket (group nogroup through allowed_gids[0], 0660) and a copy of the flood tool.
chmod 711 "$OF_TMP"
mkdir -m 711 "$OF_TMP/pub"
install -m 755 "$SLOWPEERS" "$OF_TMP/pub/slowpeers"
sock=$OF_TMP/pub/status.sock
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"
extra="\"metrics\": { \"listen\": \"127.0.0.1:$port_m\" },
  \"status\": { \"socket\": \"$sock\", \"allowed_uids\": [ $NOBODY ], \"allowed_gids\": [ $NOBODY ] }"
# tor inherits the low limit; it wants ConnLimit (default 1000) descriptors.
cp "$TESTNET_TORRC_EXTRA" "$OF_TMP/torrc-extra"
echo "ConnLimit 64" >>"$OF_TMP/torrc-extra"
TESTNET_TORRC_EXTRA=$OF_TMP/torrc-extra of_write_config "$config" "[ $svc_alpha ]" "$extra"

# of_start_onionfront, under prlimit (which execs the daemon: $! is onionfront's pid).
OF_START=$(of_now)
prlimit --nofile="$NOFILE:$NOFILE" "$OF_BIN" -c "$config" run >>"$log" 2>&1 &
OF_PID=$!
of_track_pid "$OF_PID"

of_wait_log "$log" "service alpha: .* address [a-z2-7]{56}\.onion" 30
addr=$(of_address_from_log "$log" alpha)
if [[ -z $addr ]] || ! of_fetch_until "http://$addr/" "$OF_TMP/before.html" 180; then
  of_fail "no page over the onion before the floods"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
of_pass "page fetched over the onion before the floods (daemon's RLIMIT_NOFILE $NOFILE)"
of_check "the status socket answers before the floods" "$OF_BIN" status -s "$sock" status

# --- the floods --------------------------------------------------------------------------------------
lines_before=$(wc -l <"$log")
"$SLOWPEERS" tcp "127.0.0.1:$port_m" 1200 4000 "$FLOOD_S" >"$OF_TMP/flood-metrics.out" 2>&1 &
flood_m=$!
of_track_pid "$flood_m"
setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
  "$OF_TMP/pub/slowpeers" unix "$sock" 80 4000 "$FLOOD_S" "status
" >"$OF_TMP/flood-status.out" 2>&1 &
flood_s=$!
of_track_pid "$flood_s"
flood_start=$(of_now)

# Let the floods build up: every connection is open after the first round (a few seconds).
sleep 8
fds=$(ls "/proc/$OF_PID/fd" 2>/dev/null | wc -l)
of_log "onionfront has $fds file descriptors open during the floods (limit $NOFILE)"

# Each check counts only if both floods were still running when it succeeded (order, not timing).
flooding() { kill -0 "$flood_m" 2>/dev/null && kill -0 "$flood_s" 2>/dev/null; }
if of_fetch_until "http://$addr/" "$OF_TMP/during.html" 40 && flooding; then
  of_pass "page fetched over the onion during the floods ($(of_elapsed "$flood_start") s into them)"
  of_check "... byte for byte" cmp -s "$OF_TMP/before.html" "$OF_TMP/during.html"
else
  of_fail "no page over the onion while the floods ran"
fi
if timeout 20 "$OF_BIN" status -s "$sock" status >"$OF_TMP/status-during.out" 2>&1 && flooding; then
  of_pass "onionfront status (root) answers during the floods"
else
  of_fail "onionfront status (root) did not answer while the floods ran: $(head -c 300 "$OF_TMP/status-during.out")"
fi
timeout 20 "$OF_BIN" status -s "$sock" metrics >"$OF_TMP/during.prom" 2>/dev/null
of_check "the metrics endpoint hit its connection cap" \
  grep -Eq '^onionfront_metrics_http_pauses_total\{reason="full"\} [1-9]' "$OF_TMP/during.prom"
of_check "the status socket refused nobody's connections beyond the per-user limit" \
  grep -Eq '^onionfront_status_connections_total\{result="over_uid_limit"\} [1-9]' "$OF_TMP/during.prom"

# Wait for the floods to end (they are bounded by FLOOD_S), watching that the log does not balloon.
aborted=0
while kill -0 "$flood_m" 2>/dev/null || kill -0 "$flood_s" 2>/dev/null; do
  if (($(stat -c %s "$log") > LOG_BYTES_ABORT)); then
    of_log "the log passed $LOG_BYTES_ABORT bytes; ending the floods early"
    aborted=1
    of_stop_pid "$flood_m" 5
    of_stop_pid "$flood_s" 5
    break
  fi
  sleep 1
done
wait "$flood_m" 2>/dev/null
wait "$flood_s" 2>/dev/null
of_log "metrics flood: $(cat "$OF_TMP/flood-metrics.out")"
of_log "status flood (uid $NOBODY): $(cat "$OF_TMP/flood-status.out")"
lines=$(($(wc -l <"$log") - lines_before))
of_log "the daemon wrote $lines log lines during the $FLOOD_S s of floods"
of_check "the log stayed small during the floods ($lines lines, bound $LOG_LINES_MAX)" \
  test "$aborted" -eq 0 -a "$lines" -le "$LOG_LINES_MAX"
if grep -q "Error from accept() call" "$log"; then
  of_fail "libevent logged accept errors itself (a listener without an error callback)"
fi
of_check "onionfront is still running" kill -0 "$OF_PID"

# --- afterwards ----------------------------------------------------------------------------------------
code=000
for ((i = 0; i < 30; i++)); do
  code=$(curl -sS -o "$OF_TMP/after.prom" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port_m/metrics" 2>/dev/null)
  [[ $code == 200 ]] && break
  sleep 1
done
of_check "GET /metrics answers 200 after the floods" test "$code" = 200
of_check "the status socket answers after the floods" "$OF_BIN" status -s "$sock" status
of_check "nobody may use the status socket again after the floods" \
  setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$OF_BIN" status -s "$sock" status
if of_fetch_until "http://$addr/" "$OF_TMP/after.html" 60; then
  of_pass "page fetched over the onion after the floods"
else
  of_fail "no page over the onion after the floods"
fi
of_check "the metrics count the data path's rejections by reason, stream_limit included" \
  grep -Eq '^onionfront_proxy_rejected_streams_total\{service="alpha",port="80",reason="stream_limit"\} 0$' \
  "$OF_TMP/after.prom"

of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM after the floods" test $? -eq 0
of_summary
