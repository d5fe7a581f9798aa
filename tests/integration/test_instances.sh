#!/bin/bash
# Two tors under one onionfront (tor.instances 2, issue 11 step 2), on the private network with real tor:
#  - both tors run (their own DataDirectories under state_dir and state_dir/instances/2, their own
#    control sockets) and the service is fetchable; instance 2's key directory is a copy of the one key
#    (same address, 0700/0600), and `onionfront status` shows a line per tor;
#  - status names the tor whose descriptor the HSDirs serve ("served_by": copies fetched from the HSDirs
#    compared with each tor's own descriptor, or, while clients fetch the descriptor tor does not show as
#    its own, the acceptance record: "source" says which), and that tor is up; the text status says
#    "served by tor N (...)";
#  - each tor's own MetricsPort figures: /metrics has onionfront_tor_hs_* and onionfront_tor_metrics_up
#    per tor (instance="1", "2"; promcheck, and promtool when installed, accept it), status has the
#    service's figures per tor (tor_metrics_by_tor) and summed (tor_metrics), the text a row per tor;
#  - a client loop fetches through a fresh circuit per request (SOCKS username isolation) while the
#    served tor is SIGKILLed: onionfront logs the failover once (the survivor publishes anew when HSDirs served
#    the killed tor's descriptors), the killed tor comes back with a new pid, the address is unchanged
#    and the service is fetchable again. The survivor's own control port shows the order: after the kill
#    it uploads new descriptors (HS_DESC UPLOADED) without launching an introduction circuit first (the
#    PoW trigger keeps its introduction points), and that confirmation comes before the new visitor's
#    first page. A new visitor (a client tor started after the kill, with no
#    cached descriptor) reaches the service. The loop's client is a cached client (its descriptor cache
#    and its record of HSDirs already asked are shared by all its requests): its failed requests during
#    and after the kill are counted and printed, not asserted (how many hit dead introduction points
#    depends on which descriptor each HSDir served and when it refetched), with its tor's events for
#    the address when none succeeded. After the kill, status names a tor that is up and not the killed
#    process's descriptor (the survivor, or the restarted tor once HSDirs serve its new descriptor);
#    what it named over time is printed.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init
trap of_cleanup EXIT
trap 'of_cleanup; exit 130' INT TERM

# The loop's client is the test's own tor (the lane's shared client carries earlier tests' state), with
# its HS_DESC/STREAM/CIRC events recorded (stamped with their arrival time) as evidence.
of_start_client_tor iclient "ControlSocket $OF_TMP/iclient/control" "CookieAuthentication 1" ||
  { of_fail "the test's client tor did not start"; of_summary; exit 1; }
TESTNET_SOCKS_PORT=$OF_CLIENT_SOCKS
events=$OF_TMP/events.txt
"$OF_TORCTL_BIN" "$OF_TMP/iclient/control" -e HS_DESC,STREAM,CIRC -t 400 > >(while IFS= read -r l; do
  printf '%s %s\n' "$EPOCHREALTIME" "$l"
done >"$events") 2>&1 &
of_track_pid "$!"
port=$(of_free_port)
of_start_backend web "$port" http || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
OF_TOR_INSTANCES=2 of_write_config "$config" \
  "[ { \"name\": \"web\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] } ]" \
  '"probe": { "hsfetch_interval": 10, "republish_deadline": 15 }'
of_start_onionfront "$config" "$log"

it_tor() { of_tor_field "$config" "$1" "$2"; }
it_wait() { of_wait_secs "$@"; }
it_both_running() { [[ $(it_tor state 1) == running && $(it_tor state 2) == running ]]; }
# "SERVED_BY SOURCE HOLDING ANSWERED" of service web in status ("none" for null).
it_served() {
  "$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    s = next(s for s in json.load(sys.stdin)["services"] if s["name"] == "web")["served"]
    print(s["served_by"] or "none", s["source"], s["hsdirs_holding"], s["hsdirs_answered"])
except Exception:
    print("none none 0 0")'
}
# Status names a tor that is up, and not pid $1; sets SERVED.
it_served_up() {
  local by src rest
  read -r by src rest <<<"$(it_served)"
  [[ $by != none && $(it_tor state "$by") == running && $(it_tor pid "$by") != "${1:-}" ]] || return 1
  SERVED=$by
}

of_check "onionfront logs the service's address" of_wait_log "$log" "service web: .*address [a-z2-7]{56}\.onion" 30
addr=$(of_address_from_log "$log" web)
of_check "both tors run and bootstrap" it_wait 120 it_both_running
of_check "the service is fetchable" of_fetch_until "http://$addr/" "$OF_TMP/page" 120
pid1=$(it_tor pid 1)
pid2=$(it_tor pid 2)
of_log "tor 1 pid $pid1, tor 2 pid $pid2"
of_check "two distinct tor processes" test -n "$pid1" -a -n "$pid2" -a "$pid1" != "$pid2"
of_check "tor 2 runs on its own DataDirectory" grep -q -- "instances/2/torrc" "/proc/$pid2/cmdline"
copy=$OF_TMP/state/instances/2/keys/web
of_check "tor 2's key directory is private" test "$(stat -c %a "$copy")" = 700 -a \
  "$(stat -c %a "$copy/hs_ed25519_secret_key")" = 600
of_check "tor 2's key is the same key" cmp -s "$copy/hs_ed25519_secret_key" \
  "$OF_TMP/state/keys/web/hs_ed25519_secret_key"
summary=$("$OF_BIN" -c "$config" status 2>&1)
of_check "status shows a line per tor" grep -q "^tor 2: running" <<<"$summary"
# Let both tors upload their descriptors (each publishes; HSDirs keep the later one).
sleep 10
SERVED=""
of_check "status names the tor whose descriptor the HSDirs serve, and it is up" it_wait 60 it_served_up
of_log "served: $(it_served) (tor, source, HSDirs holding it, HSDirs answered)"
summary=$("$OF_BIN" -c "$config" status 2>&1)
of_check "the text status says which tor is served" \
  grep -Eq "^  served by +tor [12] \(([0-9]+/[0-9]+ HSDirs|by accepted uploads)" <<<"$summary"
grep "served by" <<<"$summary" | sed 's/^/  /' >&2
# Every tor's own figures (MetricsPort), not only tor 1's: an instance label per tor in /metrics (a valid
# exposition), a row per tor under the service's "dos" line, and the sum in status.
it_both_scraped() {
  METRICS=$("$OF_BIN" -c "$config" status metrics 2>/dev/null)
  grep -q '^onionfront_tor_metrics_up{instance="1"} 1$' <<<"$METRICS" &&
    grep -q '^onionfront_tor_metrics_up{instance="2"} 1$' <<<"$METRICS" &&
    grep -q '^onionfront_tor_hs_intro_circuits{service="web",instance="1"} ' <<<"$METRICS" &&
    grep -q '^onionfront_tor_hs_intro_circuits{service="web",instance="2"} ' <<<"$METRICS"
}
METRICS=""
of_check "/metrics has each tor's own tor_hs figures for the service (instance=\"1\" and \"2\")" it_wait 40 it_both_scraped
grep -E '^onionfront_tor_(metrics_up|hs_intro_circuits|hs_introductions_received_total)' <<<"$METRICS" | sed 's/^/  /' >&2
printf '%s\n' "$METRICS" >"$OF_TMP/metrics.prom"
of_check "promcheck accepts /metrics with two tors" "$OF_ROOT/build/tools/promcheck" "$OF_TMP/metrics.prom"
if command -v promtool >/dev/null; then
  of_check "promtool check metrics is clean with two tors" bash -c 'out=$(promtool check metrics <"$1" 2>&1) && [[ -z $out ]] || { printf "%s\n" "$out" >&2; false; }' _ "$OF_TMP/metrics.prom"
fi
by_tor=$("$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
s = next(s for s in json.load(sys.stdin)["services"] if s["name"] == "web")
print(" ".join(str(t["instance"]) for t in s["tor_metrics_by_tor"] or []), "sum" if s["tor_metrics"] else "nosum")')
of_log "status tor_metrics_by_tor instances: $by_tor"
of_check "status has the service's figures from each tor, and their sum" test "$by_tor" = "1 2 sum"
summary=$("$OF_BIN" -c "$config" status 2>&1)
of_check "the text status has a row per tor under the service's dos line" \
  bash -c 'grep -A2 "^  dos " <<<"$1" | grep -q "^    tor 1 " && grep -A2 "^  dos " <<<"$1" | grep -q "^    tor 2 "' _ "$summary"
grep -A2 "^  dos " <<<"$summary" | sed 's/^/  /' >&2

# A client loop: one request every 0.2 s, each on a fresh circuit (a new SOCKS username).
loop_out=$OF_TMP/loop.txt
of_client_loop_start "http://$addr/" "$loop_out"
sleep 5
# Kill the served tor (tor 2 if status named none: the check above failed then).
k=${SERVED:-2}
o=$((3 - k))
victim=$(it_tor pid "$k")
# The survivor's HS_DESC and CIRC events, stamped with their arrival time.
sctl=$OF_TMP/run/control/control.sock
((o > 1)) && sctl=$OF_TMP/run/control-$o/control.sock
sevents=$OF_TMP/survivor-events.txt
"$OF_TORCTL_BIN" "$sctl" -e HS_DESC,CIRC -t 200 > >(while IFS= read -r l; do
  printf '%s %s\n' "$EPOCHREALTIME" "$l"
done >"$sevents") 2>&1 &
of_track_pid "$!"
sleep 1
kill_at=$(of_now)
of_log "SIGKILL tor $k (pid $victim), the served one; tor $o survives"
kill -KILL "$victim"
of_check "onionfront logs the failover once" of_wait_log "$log" "failover: tor $k lost" 20
# A new visitor: a client tor started now, with no cached descriptor and no HSDir asked yet.
new_at="" new_socks=""
if of_start_client_tor newclient; then
  new_socks=$OF_CLIENT_SOCKS
  new_start=$(of_now)
  new_ok() { curl -sS --fail --max-time 20 --socks5-hostname "127.0.0.1:$new_socks" -o "$OF_TMP/page-new" \
    "http://$addr/" 2>>"$OF_TMP/newclient.err"; }
  of_check "a new visitor (a client tor started after the kill) reaches the service" of_wait_secs 90 new_ok
  new_ok_at=$(of_now)
  new_at=$(of_elapsed "$kill_at")
  of_log "the new visitor's first page $(of_elapsed "$new_start") s after its tor bootstrapped, $new_at s after the kill"
else
  of_fail "the new visitor's client tor did not start"
fi
# What status names over the next 20 s (one sample a second), then: a tor that is up, not the killed one.
seen=""
for ((i = 0; i < 20; i++)); do
  read -r by src rest <<<"$(it_served)"
  [[ ${seen##* } == "$by/$src" ]] || seen+=" $by/$src"
  sleep 1
done
of_log "served after the kill (tor/source, as it changed):$seen"
SERVED=""
of_check "after the kill, status names a served tor that is up, not the killed process" it_wait 60 it_served_up "$victim"
of_log "served: $(it_served); tor $k pid now $(it_tor pid "$k")"
new_pid_ok() { local p; p=$(it_tor pid "$k"); [[ -n $p && $p != "$victim" && $(it_tor state "$k") == running ]]; }
of_check "the killed tor comes back with a new pid" it_wait 120 new_pid_ok
sleep 20
of_client_loop_stop "$loop_out"
of_check "the address is unchanged" test "$(of_address_from_log "$log" web)" = "$addr"
back_at=$(of_now)
# Through the new visitor's tor (the loop's cached client is reported below, not asserted).
fetch_new() { local TESTNET_SOCKS_PORT=${new_socks:-$TESTNET_SOCKS_PORT}; of_fetch_until "http://$addr/" "$OF_TMP/page2" 150; }
of_check "the service is fetchable after the kill" fetch_new
of_log "a fetch after the loop: $(of_elapsed "$back_at") s"
of_check "exactly one failover line for the kill" test "$(grep -c "failover: tor $k lost" "$log")" = 1
of_check "the failover made the survivor upload anew" grep -q "failover: tor $k lost.*tor $o uploads new ones" "$log"
# The order on the survivor's control port, after the kill: its first confirmed upload, and no
# introduction circuit launched before it; that confirmation before the new visitor's first page.
a=${addr%.onion}
up_at=$(awk -v k="$kill_at" -v a="$a" '$1 >= k && $3 == "HS_DESC" && $4 == "UPLOADED" && $5 == a { print $1; exit }' "$sevents")
intro_before=$(awk -v k="$kill_at" -v u="${up_at:-9e18}" '$1 >= k && $1 < u && $3 == "CIRC" && $5 == "LAUNCHED" &&
  /PURPOSE=HS_SERVICE_INTRO/' "$sevents" | wc -l)
of_log "survivor: first HS_DESC UPLOADED $(awk -v a="$kill_at" -v b="${up_at:-nan}" 'BEGIN { printf "%.2f", b - a }') s after the kill, $intro_before" \
  "introduction circuits launched before it; $(awk -v k="$kill_at" '$1 >= k && $4 == "UPLOADED"' "$sevents" | wc -l)" \
  "uploads confirmed since the kill"
of_check "the survivor's upload after the kill was confirmed (HS_DESC UPLOADED on its control port)" test -n "$up_at"
of_check "no introduction circuit launched by the survivor before that upload (same introduction points)" \
  test "$intro_before" = 0
of_check "the survivor's upload was confirmed before the new visitor's first page" \
  awk -v u="${up_at:-9e18}" -v n="${new_ok_at:-0}" 'BEGIN { exit !(u < n) }'
# Each loop line: start end result. "Done before" ended before the kill; "in flight" spanned it.
total=$(wc -l <"$loop_out")
failed=$(grep -c " fail$" "$loop_out")
done_before=$(awk -v k="$kill_at" '$2 < k && $3 == "fail"' "$loop_out" | wc -l)
in_flight=$(awk -v k="$kill_at" '$1 < k && $2 >= k && $3 == "fail"' "$loop_out" | wc -l)
after=$(awk -v k="$kill_at" '$1 >= k && $3 == "fail"' "$loop_out" | wc -l)
first_ok=$(awk -v k="$kill_at" '$1 >= k && $3 == "ok" { printf "%.1f", $2 - k; exit }' "$loop_out")
of_log "client loop (fresh circuit per request, one client tor: its descriptor cache is shared): $total requests," \
  "$failed failed: $done_before done before the kill, $in_flight in flight at the kill, $after started after it;" \
  "first success ${first_ok:-none} s after the kill"
grep "failover:" "$log" | sed 's/^/  /' >&2
of_check "the loop made requests" test "$total" -gt 5
of_check "every request done before the kill succeeded" test "$done_before" = 0
if [[ -z $first_ok ]]; then
  # Evidence for a cached client that never recovered: its tor's events for the address after the kill,
  # its notices, and what onionfront logged about descriptors.
  a=${addr%.onion}
  of_log "no request of the cached client succeeded after the kill; its tor's events for the address:"
  awk -v k="$kill_at" -v addr="$a" '$1 >= k - 1 && index($0, addr)' "$events" | head -n 60 | sed 's/^/    /' >&2
  tail -n 20 "$OF_TMP/iclient/notice.log" | sed 's/^/    client: /' >&2
  grep -E "failover|descriptor|HSDir" "$log" | tail -n 30 | cut -c1-220 | sed 's/^/    /' >&2
fi
of_check "onionfront stops cleanly" of_stop_onionfront
of_summary
