#!/bin/bash
# trace_failover.sh — what a new visitor's tor does across a SIGKILL of the served tor (issue 29), with
# timestamps: not part of make bench or make test; run by hand on the private network:
#   TESTNET_BASE_PORT=28000 bash tests/testnet/testnet.sh run /tmp/trace-net -- bash tests/bench/trace_failover.sh
# One onionfront with two tors and one service. Each of TRACE_REPS (3) rounds: two client tors are
# started and left 10 s (as browsers that have been open a moment), the tor onionfront's status names
# served is SIGKILLed; one client asks in that instant, the other 0.5 s later. Printed, relative to the
# kill: when each was answered; the first client's HS_DESC/CIRC/STREAM events (which HSDir it fetched
# from and when, its introduction circuits, its fetch again); the survivor's HS_DESC UPLOADED events.
# Everything is written to $OF_TMP/trace.txt and printed at the end. Bounded: every wait has a limit.
set -u
source "$(dirname "$0")/../integration/lib.sh"
of_require_testnet
of_init
trap of_cleanup EXIT
REPS=${TRACE_REPS:-3}
out=$OF_TMP/trace.txt
rel() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
port=$(of_free_port)
of_start_backend web "$port" http || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
OF_TOR_INSTANCES=2 of_write_config "$config" \
  "[ { \"name\": \"web\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] } ]"
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service web: .*address [a-z2-7]{56}\.onion" 30 || { of_log "no address"; exit 1; }
addr=$(of_address_from_log "$log" web)
of_fetch_until "http://$addr/" "$OF_TMP/page" 120 || { of_log "not fetchable"; exit 1; }
sleep 15 # both tors upload their descriptors
served() {
  "$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    s = next(s for s in json.load(sys.stdin)["services"] if s["name"] == "web")["served"]
    print(s["served_by"] or 1)
except Exception:
    print(1)'
}
# ask SOCKS_PORT USER_PREFIX KILL_AT: fetch until answered (at most 10 tries); print the time from the kill.
ask() {
  local j
  for ((j = 1; j <= 10; j++)); do
    if curl -s -o /dev/null --fail --max-time 10 -x "socks5h://$2-$j:x@127.0.0.1:$1" "http://$addr/"; then
      printf '%s' "$(rel "$3" "$EPOCHREALTIME") s (try $j)"
      return 0
    fi
  done
  printf 'not answered in 10 tries'
}
for ((rep = 1; rep <= REPS; rep++)); do
  k=$(served)
  o=$((3 - k))
  victim=$(of_tor_field "$config" pid "$k")
  sctl=$OF_TMP/run/control/control.sock
  ((o > 1)) && sctl=$OF_TMP/run/control-$o/control.sock
  of_start_client_tor "now$rep" "ControlSocket $OF_TMP/now$rep/control" "CookieAuthentication 1" || exit 1
  now_pid=$OF_LAST_PID now_socks=$OF_CLIENT_SOCKS
  of_start_client_tor "late$rep" || exit 1
  late_pid=$OF_LAST_PID late_socks=$OF_CLIENT_SOCKS
  cev=$OF_TMP/client-events-$rep.txt sev=$OF_TMP/survivor-events-$rep.txt
  "$OF_TORCTL_BIN" "$OF_TMP/now$rep/control" -e HS_DESC,CIRC,STREAM -t 60 > >(while IFS= read -r l; do
    printf '%s %s\n' "$EPOCHREALTIME" "$l"
  done >"$cev") 2>&1 &
  of_track_pid "$!"
  "$OF_TORCTL_BIN" "$sctl" -e HS_DESC -t 60 > >(while IFS= read -r l; do
    printf '%s %s\n' "$EPOCHREALTIME" "$l"
  done >"$sev") 2>&1 &
  of_track_pid "$!"
  sleep 10
  kill_at=$EPOCHREALTIME
  kill -KILL "$victim"
  (sleep 0.5; printf 'round %d: the client asking 0.5 s after the kill: answered %s after the kill\n' "$rep" \
    "$(ask "$late_socks" "late$rep" "$kill_at")" >>"$out") &
  late_job=$!
  printf 'round %d: SIGKILL of tor %d (served); tor %d survives\n' "$rep" "$k" "$o" >>"$out"
  printf 'round %d: the client asking at the kill: answered %s after the kill\n' "$rep" \
    "$(ask "$now_socks" "now$rep" "$kill_at")" >>"$out"
  wait "$late_job"
  sleep 3
  {
    echo "  the first client's events (s after the kill; circuit builds left out):"
    awk -v k="$kill_at" '$1 >= k && !/ (LAUNCHED|EXTENDED|BUILT|SENTCONNECT) / {
      printf "  %+.3f", $1 - k; for (i = 3; i <= NF && i <= 8; i++) printf " %s", $i; print "" }' "$cev" | head -40
    echo "  the survivor's HS_DESC UPLOADED (s after the kill):"
    awk -v k="$kill_at" '$1 >= k && $3 == "HS_DESC" && $4 == "UPLOADED" { printf " %+.2f", $1 - k }' "$sev"
    echo
  } >>"$out"
  of_stop_pid "$now_pid" 15
  of_stop_pid "$late_pid" 15
  for ((i = 0; i < 120; i++)); do
    [[ $(of_tor_field "$config" state "$k") == running ]] && break
    sleep 1
  done
  sleep 30 # the restarted tor uploads; HSDirs may serve it next round
done
cat "$out"
