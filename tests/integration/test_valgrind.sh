#!/bin/bash
# The shipped daemon (build/onionfront, release flags) under valgrind's memcheck, on the private Tor network
# with real tor, through a life that touches every module: start and key creation, descriptor upload,
# pages through the onion to a pool of two HTTP backends (libcurl health checks), a 2 MB body on the
# splice path, the status socket
# (status, backends, metrics), the Prometheus endpoint, an Onion-Location file, a backend killed (passive
# and active ejection), a valid reload (a service added, health settings changed), an invalid reload
# (refused), tor killed with SIGKILL (restart, re-publication) and SIGTERM.
# Passes only if valgrind reports no error (invalid reads/writes, uninitialised values, bad frees, fd
# misuse) and no definitely or indirectly lost block, and onionfront exits 0. The sanitizer build covers
# the same code in every other test; this one checks the binary that is installed.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

VALGRIND=$(command -v valgrind)
[[ -n $VALGRIND ]] || { of_fail "valgrind is missing (tests/install-deps.sh test installs it)"; of_summary; exit 1; }
REL_BIN=$OF_ROOT/build/onionfront
[[ -x $REL_BIN ]] || { of_fail "$REL_BIN is missing (make all builds it)"; of_summary; exit 1; }

declare -A port bpid
for name in a1 a2 b1; do
  port[$name]=$(of_free_port)
  of_start_backend "$name" "${port[$name]}" http || exit 1
  bpid[$name]=$OF_LAST_PID
done
metrics_port=$(of_free_port)
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
vglog=$OF_TMP/valgrind.log
# Health checks run inside onionfront, which valgrind slows many times over, on a machine shared with
# other test lanes: a 400 ms timeout with fall 2 once took both backends down at the same moment (a page
# got an empty reply, "no_backend"). A dead backend is still found at once (connection refused).
health_interval=1500
with_beta=0
write_config() {
  local services
  services="[ { \"name\": \"web\", \"ports\": [ { \"virtual\": 80, \"balance\": \"least_conn\",
      \"backends\": [ { \"name\": \"a1\", \"address\": \"127.0.0.1:${port[a1]}\" },
                      { \"name\": \"a2\", \"address\": \"127.0.0.1:${port[a2]}\" } ],
      \"health\": { \"type\": \"http\", \"path\": \"/health\", \"interval_ms\": $health_interval,
                    \"timeout_ms\": 1200, \"rise\": 1, \"fall\": 3 } } ] }"
  ((with_beta)) && services+=", { \"name\": \"beta\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:${port[b1]}\" } ] }"
  services+=" ]"
  of_write_config "$config" "$services" "\"metrics\": { \"listen\": \"127.0.0.1:$metrics_port\" },
  \"onion_location\": { \"dir\": \"$OF_TMP/onion-location\" }"
}
write_config

# valgrind runs in the daemon's own process (same PID), so lib.sh's tracking and SIGTERM reach the daemon.
# Children (tor) are not traced: tor is not ours to check.
OF_START=$(of_now)
"$VALGRIND" --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --track-fds=no --error-exitcode=99 --num-callers=30 \
  --log-file="$vglog" "$REL_BIN" -c "$config" run >>"$log" 2>&1 &
OF_PID=$!
of_track_pid "$OF_PID"

of_wait_log "$log" "service web: .* address [a-z2-7]{56}\.onion" 120 ||
  { of_fail "no onion address within 120 s under valgrind"; tail -n 20 "$log" "$vglog" >&2; of_summary; exit 1; }
addr=$(of_address_from_log "$log" web)
of_check "a descriptor is uploaded under valgrind" of_wait_log "$log" "service web: descriptor uploaded" 240
of_check "a page loads through the onion" of_fetch_until "http://$addr/" "$OF_TMP/page" 120
ok=0
for ((i = 0; i < 10; i++)); do of_fetch "http://$addr/" "$OF_TMP/page" 30 && ok=$((ok + 1)); done
of_check "10 more pages load (got $ok)" test "$ok" -eq 10
# A body past PROXY_SPLICE_MIN (64 KiB): the stream moves to splice(2) pipes (issue 16) under valgrind.
of_check "a 2 MB body loads through the onion (the splice path)" of_fetch "http://$addr/bytes/2097152" "$OF_TMP/bulk" 120
of_check "the 2 MB body has every byte" test "$(stat -c %s "$OF_TMP/bulk" 2>/dev/null)" = 2097152
spliced=$("$REL_BIN" status --json -s "$OF_TMP/run/status.sock" backends | jq '[.. | .streams_spliced? // empty] | add // 0')
of_check "the status counts that stream as spliced ($spliced)" test "${spliced:-0}" -ge 1

of_check "status answers" "$REL_BIN" status -s "$OF_TMP/run/status.sock"
of_check "status --json backends answers" "$REL_BIN" status --json -s "$OF_TMP/run/status.sock" backends
of_check "status metrics answers" "$REL_BIN" status -s "$OF_TMP/run/status.sock" metrics
of_check "the metrics endpoint answers" curl -sf --max-time 20 -o "$OF_TMP/metrics" "http://127.0.0.1:$metrics_port/metrics"
of_check "the Onion-Location file carries the address" of_wait_log "$OF_TMP/onion-location/web.conf" "$addr" 60

# A backend dies: health checks and passive ejection take it out; pages keep loading from a1.
of_stop_pid "${bpid[a2]}" 5
of_check "backend a2 is marked down" of_wait_log "$log" "backend a2: up -> down" 60
ok=0
for ((i = 0; i < 5; i++)); do of_fetch "http://$addr/" "$OF_TMP/page" 30 && ok=$((ok + 1)); done
of_check "pages load with a2 down (got $ok of 5)" test "$ok" -eq 5

# A valid reload: a service added, health settings changed in place.
with_beta=1 health_interval=1700 write_config
kill -HUP "$OF_PID"
of_check "the reload is applied" of_wait_log "$log" "reload: applied" 60
of_check "the added service gets an address" of_wait_log "$log" "service beta: .* address [a-z2-7]{56}\.onion" 60
# An invalid one: refused, the running config stays.
echo '{ "state_dir": 5 }' >"$config"
kill -HUP "$OF_PID"
of_check "the invalid reload is refused" of_wait_log "$log" "reload: .*keeping the running config" 60

# tor killed: onionfront restarts it and publishes again.
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
if [[ -n $tor_pid ]] && kill -KILL "$tor_pid" 2>/dev/null; then
  of_check "tor is restarted and usable again" of_wait_log "$log" "tor: usable again" 180
  of_check "a page loads after the tor restart" of_fetch_until "http://$addr/" "$OF_TMP/page" 180
else
  of_fail "could not kill onionfront's tor (pid '${tor_pid}')"
fi

of_stop_onionfront
rc=$?
of_check "onionfront exits 0 under valgrind (exit $rc; 99 = valgrind found errors)" test "$rc" -eq 0
of_check "valgrind's log has an error summary" grep -q "ERROR SUMMARY:" "$vglog"
of_check "valgrind reports 0 errors" grep -Eq "ERROR SUMMARY: 0 errors" "$vglog"
of_check "no definitely lost blocks" bash -c "! grep -Eq 'definitely lost: [1-9]' '$vglog'"
of_check "no indirectly lost blocks" bash -c "! grep -Eq 'indirectly lost: [1-9]' '$vglog'"
if ! grep -Eq "ERROR SUMMARY: 0 errors" "$vglog"; then
  sed -n '1,120p' "$vglog" >&2
fi
grep -E "ERROR SUMMARY|definitely lost|indirectly lost|in use at exit" "$vglog" | sed 's/^==[0-9]*== */valgrind: /' >&2
of_summary
