#!/bin/bash
# Rolling restarts of two tors under one onionfront (tor.instances 2, issue 11 step 2), on the private
# network with real tor, while two client loops fetch: one through a fresh circuit per request (SOCKS
# username isolation), one whose requests all share one long-lived circuit (one SOCKS username, like a
# browser tab); one client tor of the test's own, so its descriptor cache is shared by all requests:
#  - `onionfront restart-tor`: the roll ends with "restarted 2 tors", both tors have new pids, and at
#    most 2 requests of each loop failed (the goal, 0, is met in most rolls: see rt_check_failures).
#    The roll drains each tor before ending it (circdrain.h): the tor stops publishing and taking
#    introductions, each visitor's rendezvous circuit to it is closed right after its last stream
#    ended (so the next request goes out on a new circuit, to the other tor), and the tor is ended once
#    no circuit is open on it and no stream runs through it. Before, a request sent on the long-lived
#    circuit just after its tor's end failed (1-2 per roll). On failure the client tor's STREAM, CIRC and
#    HS_DESC events around it are printed. The log must show each tor drained, none cut at the drain
#    limit (tor.drain_timeout 120, the default);
#  - tor.binary is a copy of /usr/bin/tor that the test owns; replacing it with another copy (cp to a
#    temporary name, then mv over, as a package upgrade does) makes onionfront log the change with the
#    old and new versions and roll by itself: again new pids, each tor drained, the same bound;
#  - a reload (SIGHUP) that points tor.binary at another copy rolls the tors onto it.
# The client tor is the test's own (so that its control socket records the events), with tor's defaults
# except a fixed circuit build timeout of 5 s (LearnCircuitBuildTimeout 0): a visitor's tor that has run
# a while has learnt its own, while a fresh one starts from 60 s, and tor waits 3 x that + 1 s for the
# rendezvous of an introduction that was lost (see rt_check_failures). Requests may take up to 60 s.
# Timings (how long each roll took, the slowest request and every request slower than 5 s) are printed,
# not asserted.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init
trap of_cleanup EXIT
trap 'of_cleanup; exit 130' INT TERM

of_start_client_tor rclient "ControlSocket $OF_TMP/rclient/control" "CookieAuthentication 1" \
  "LearnCircuitBuildTimeout 0" "CircuitBuildTimeout 5" ||
  { of_fail "the test's client tor did not start"; of_summary; exit 1; }
TESTNET_SOCKS_PORT=$OF_CLIENT_SOCKS
TESTNET_CLIENT_CONTROL=$OF_TMP/rclient/control
port=$(of_free_port)
of_start_backend web "$port" http || exit 1
mkdir -p "$OF_TMP/bin"
cp /usr/bin/tor "$OF_TMP/bin/tor"
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
OF_TOR_INSTANCES=2 OF_TOR_BINARY=$OF_TMP/bin/tor of_write_config "$config" \
  "[ { \"name\": \"web\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] } ]" \
  '"probe": { "hsfetch_interval": 10, "republish_deadline": 15 }'
of_start_onionfront "$config" "$log"

rt_tor() { of_tor_field "$config" "$1" "$2"; }
# rt_roll FIELD [SUBFIELD] — a field of status's "roll" object ("" if absent or null).
rt_roll() { of_roll_field "$config" "$@"; }
rt_both_running() { [[ $(rt_tor state 1) == running && $(rt_tor state 2) == running ]]; }
# rt_roll_done N — N rolls have ended and no roll runs.
rt_roll_done() { [[ $(rt_roll state) == idle && $(rt_roll rolls) == "$1" ]]; }
# rt_events_start OUT — record the client tor's HS_DESC, STREAM and CIRC events with their arrival time (epoch
# seconds) for 200 s (torctl ends by itself), for the evidence printed when a request fails.
# torctl itself is the background job (its PID tracked, so the cleanup ends it; a subshell's PID would
# leave torctl running after the test); the stamping reader ends at its EOF.
rt_events_start() {
  "$OF_TORCTL_BIN" "$TESTNET_CLIENT_CONTROL" -e HS_DESC,STREAM,CIRC -t 200 > >(while IFS= read -r l; do
    printf '%s %s\n' "$EPOCHREALTIME" "$l"
  done >"$1") 2>&1 &
  of_track_pid "$!"
}
# rt_loop_report OUT EVENTS WHAT — print the loop's counts and slowest request, and for each failed request
# its times and the client tor's events for the address around it; echo the number of failures.
rt_loop_report() {
  local total failed slowest a=${addr%.onion}
  total=$(wc -l <"$1")
  failed=$(grep -c " fail$" "$1")
  slowest=$(awk '{ d = $2 - $1; if (d > m) m = d } END { printf "%.2f", m }' "$1")
  of_log "$3: $total requests, $failed failed, slowest ${slowest} s; slower than 5 s:" \
    "$(awk '$2 - $1 > 5 { printf " %s (%.1f s, %s)", strftime("%T", $1), $2 - $1, $3 }' "$1")"
  [[ -s $1.err ]] && sed 's/^/  curl: /' "$1.err" | sort | uniq -c >&2
  while read -r t0 t1 _; do
    of_log "  failed request: $(date -d "@$t0" +%T.%3N) -> $(date -d "@$t1" +%T.%3N); the client tor's events:"
    awk -v a="$t0" -v b="$t1" -v addr="$a" '$1 >= a - 1 && $1 <= b + 1 && index($0, addr) {
      cmd = "date -d @" $1 " +%T.%3N"; cmd | getline t; close(cmd); $1 = ""; print "    " t $0 }' "$2" >&2
  done < <(grep " fail$" "$1")
  echo "$failed"
}
# rt_check_failures WHAT FAILED — what a roll promises visitors. The goal is no failed request, and most
# rolls have none (docs/internals.md); what unmodified tor still leaves open: a request sent on a
# long-lived circuit while the DESTROY of that circuit (closed right after its previous stream) travels
# to the client (tor fails the stream: it never retries an onion stream elsewhere), and a fetch of a
# descriptor from an HSDir that still holds the drained tor's one (around a time-period change). A
# visitor whose introduction meets an introduction circuit of the drained tor in the instant it is
# closed no longer fails: its tor waits 3 x its circuit build timeout + 1 s for the rendezvous (16 s
# here), then introduces itself again and reaches the other tor (printed among the slow requests).
# Measured: at most 2 per loop and roll. The bound is that, and every count is printed.
rt_check_failures() {
  of_check "$1: at most 2 failed requests ($2 failed of the loop)" test "$2" -le 2
}
# rt_loops_start N — the client tor's events and two client loops for roll N: one with a fresh circuit
# per request, one whose requests all share one long-lived circuit (one SOCKS username, like a browser
# tab; it also keeps using the client's cached descriptor).
rt_loops_start() {
  rt_events_start "$OF_TMP/events$1.txt"
  OF_LOOP_MAX_TIME=60 of_client_loop_start "http://$addr/" "$OF_TMP/fresh$1.txt"
  OF_LOOP_MAX_TIME=60 OF_LOOP_USER="long$$-$1" of_client_loop_start "http://$addr/" "$OF_TMP/long$1.txt"
}
# rt_loops_finish N WHAT — stop roll N's loops, report each (failures with the client tor's events) and
# check each against the bound.
rt_loops_finish() {
  local kind failed
  for kind in fresh long; do
    of_client_loop_stop "$OF_TMP/$kind$1.txt"
  done
  for kind in fresh long; do
    failed=$(rt_loop_report "$OF_TMP/$kind$1.txt" "$OF_TMP/events$1.txt" \
      "$2: client loop ($([[ $kind == fresh ]] && echo "fresh circuit per request" || echo "one long-lived circuit"))")
    # That the loop ran across the roll, not how fast: a fresh circuit per request on a loaded machine
    # made 15 in one roll (two of them waited 28 and 41 s), where a quiet one makes 100 or more.
    of_check "$2: the $kind loop made requests during the roll" test "$(wc -l <"$OF_TMP/$kind$1.txt")" -ge 5
    rt_check_failures "$2 ($kind loop)" "$failed"
  done
}

of_check "onionfront logs the service's address" of_wait_log "$log" "service web: .*address [a-z2-7]{56}\.onion" 30
addr=$(of_address_from_log "$log" web)
of_check "both tors run and bootstrap" of_wait_secs 120 rt_both_running
of_check "the service is fetchable" of_fetch_until "http://$addr/" "$OF_TMP/page" 120
of_check "status shows no roll yet" test "$(rt_roll state)/$(rt_roll rolls)" = idle/0
sleep 10 # both tors upload (HSDirs keep the later one)

# ---- onionfront restart-tor ------------------------------------------------------------------------
pid1=$(rt_tor pid 1)
pid2=$(rt_tor pid 2)
of_log "tor 1 pid $pid1, tor 2 pid $pid2"
rt_loops_start 1
sleep 5
roll_at=$(of_now)
out=$("$OF_BIN" -c "$config" restart-tor 2>&1)
of_check "restart-tor starts a rolling restart" grep -q "rolling restart of 2 tors started" <<<"$out"
out2=$("$OF_BIN" -c "$config" restart-tor 2>&1)
# Refused for the minimum interval between commands, which also says that a roll is running.
of_check "a second restart-tor is refused while the roll runs" grep -Eq "already running|a rolling restart is running now" <<<"$out2"
of_check "status shows the roll" grep -q "^restart-tor: tor [12] of 2" <<<"$("$OF_BIN" -c "$config" status 2>&1)"
of_check "the roll ends" of_wait_secs 400 rt_roll_done 1
of_log "roll 1: $(rt_roll last_result message) (status: $(rt_roll last_result seconds) s; seen after $(of_elapsed "$roll_at") s)"
of_check "the roll restarted both tors" test "$(rt_roll last_result ok)" = true
new1=$(rt_tor pid 1)
new2=$(rt_tor pid 2)
of_log "tor 1 pid $pid1 -> $new1, tor 2 pid $pid2 -> $new2"
of_check "both tors have new pids" test -n "$new1" -a -n "$new2" -a "$new1" != "$pid1" -a "$new2" != "$pid2"
sleep 10
grep -E "restart-tor:|failover:" "$log" | sed 's/^/  /' >&2
rt_drained() { grep -cE "restart-tor: tor [0-9] drained: no visitor's circuit or stream open" "$log"; }
rt_cut() { grep -cE "restart-tor: tor [0-9] still has [0-9]+ visitor" "$log"; }
of_check "the roll drained each tor before ending it" test "$(rt_drained)" -eq 2
of_check "no tor was ended with visitors' circuits open" test "$(rt_cut)" -eq 0
rt_loops_finish 1 "restart-tor"

# ---- a new tor binary --------------------------------------------------------------------------------
sleep 5
pid1=$new1
pid2=$new2
rt_loops_start 2
sleep 5
cp /usr/bin/tor "$OF_TMP/bin/tor.new"
mv -f "$OF_TMP/bin/tor.new" "$OF_TMP/bin/tor"
swap_at=$(of_now)
of_log "replaced $OF_TMP/bin/tor"
of_check "onionfront logs the new binary with both versions" \
  of_wait_log "$log" "tor.binary $OF_TMP/bin/tor changed .*Tor version|tor.binary $OF_TMP/bin/tor changed .*[0-9]+\.[0-9]+\.[0-9]+" 70
of_log "binary change seen after $(of_elapsed "$swap_at") s"
of_check "the binary change starts a roll that ends" of_wait_secs 400 rt_roll_done 2
of_log "roll 2: $(rt_roll last_result message) (status: $(rt_roll last_result seconds) s; $(of_elapsed "$swap_at") s after the swap)"
of_check "the second roll restarted both tors" test "$(rt_roll last_result ok)" = true
new1=$(rt_tor pid 1)
new2=$(rt_tor pid 2)
of_check "both tors have new pids again" test -n "$new1" -a -n "$new2" -a "$new1" != "$pid1" -a "$new2" != "$pid2"
of_check "tor 1 runs the new file" test "$(readlink "/proc/$new1/exe")" = "$OF_TMP/bin/tor"
sleep 10
grep -E "restart-tor:|tor.binary|failover:" "$log" | sed -n '/tor.binary changed/,$p' | sed 's/^/  /' >&2
of_check "the binary-change roll drained each tor" test "$(rt_drained)" -eq 4
of_check "no tor was ended with visitors' circuits open (binary change)" test "$(rt_cut)" -eq 0
rt_loops_finish 2 "the binary-change roll"

# ---- a reload that changes tor.binary ------------------------------------------------------------------
cp /usr/bin/tor "$OF_TMP/bin/tor2"
sed -i "s|\"binary\": \"$OF_TMP/bin/tor\"|\"binary\": \"$OF_TMP/bin/tor2\"|" "$config"
of_check "the config names the second copy" grep -q "$OF_TMP/bin/tor2" "$config"
kill -HUP "$OF_PID"
of_check "the reload applies tor.binary by a roll" of_wait_log "$log" "reload: applied .*tor.binary changed: rolling" 30
of_check "that roll ends" of_wait_secs 400 rt_roll_done 3
of_check "the third roll restarted both tors" test "$(rt_roll last_result ok)" = true
rt_runs_tor2() { [[ $(readlink "/proc/$(rt_tor pid "$1")/exe") == "$OF_TMP/bin/tor2" ]]; }
of_check "both tors run the reloaded tor.binary" rt_runs_tor2 1
of_check "both tors run the reloaded tor.binary (tor 2)" rt_runs_tor2 2
of_check "the address is unchanged" test "$(of_address_from_log "$log" web)" = "$addr"
of_check "onionfront stops cleanly" of_stop_onionfront
of_summary
