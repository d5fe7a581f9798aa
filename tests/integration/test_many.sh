#!/bin/bash
# Many services on one tor (issue 28), on the private network:
#  - OF_MANY_SERVICES (default 30) services, each one port to a local backend (all but one share a
#    backend; the last, the victim, has its own), published by one onionfront with one tor: every one's
#    descriptor on all its responsible HSDirs and every one probed end to end, with no tor restart;
#  - the victim's backend killed: it is found down; the repair ladder re-posts its descriptor, then
#    re-publishes it alone, then declines to restart the tor that hosts the others (one of N down: a
#    restart needs most), then alerts — in that order, each once; no tor restart at all, no other
#    service found down, and no other service's descriptor rebuilt or uploaded because of it.
# Telling tor's own schedule from a disturbance: the private network's ~4-minute time periods make every
# service create and upload a descriptor with a NEW id at each rotation; a re-registration of a service
# builds descriptors again with ids it had before, and a disturbed service uploads an existing id again.
# So, for the other services: no HS_DESC CREATED of an id it had before, at any time after the kill;
# and in the seconds after the victim's re-publication, no UPLOAD except of an id first created in that
# window (a rotation).
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

N=${OF_MANY_SERVICES:-30}
shared_port=$(of_free_port)
victim_port=$(of_free_port)
of_start_backend shared "$shared_port" http || exit 1
of_start_backend victim "$victim_port" http || exit 1
victim_pid=$OF_LAST_PID

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
ctl=$OF_TMP/run/control/control.sock
victim=$(printf 's%02d' $((N - 1)))
services=""
for ((i = 0; i < N; i++)); do
  name=$(printf 's%02d' "$i")
  port=$shared_port
  [[ $name == "$victim" ]] && port=$victim_port
  services+="${services:+, }{ \"name\": \"$name\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] }"
done
# Probes every 15 s (spread over the interval, at most 4 at once); two failures in a row make a service
# down (one slow probe on a loaded machine must not).
of_write_config "$config" "[ $services ]" '"probe": { "interval": 15, "timeout": 30, "window": 3, "down_after": 2 }'
of_start_onionfront "$config" "$log"

# `status --json` exits 1 or 2 while a service is degraded or down: the document is what counts.
status_json() {
  "$OF_BIN" -c "$config" status --json >"$OF_TMP/status.json.tmp" 2>/dev/null
  jq -e .status "$OF_TMP/status.json.tmp" >/dev/null 2>&1 && mv "$OF_TMP/status.json.tmp" "$OF_TMP/status.json"
}
# Services seen with their descriptor (the one clients fetch) on every responsible HSDir, at some poll so
# far: the private network's time periods last minutes, so new descriptors are uploaded every few minutes,
# and on a crowded machine the last services may be complete only after the first ones started the next
# round. Each service counts once it was complete (its name kept in published.txt).
count_published() {
  status_json || return 1
  jq -r '.services[] | select(.descriptor.hsdirs_total > 0 and .descriptor.hsdirs_confirmed >= .descriptor.hsdirs_total) | .name' \
    "$OF_TMP/status.json" >>"$OF_TMP/published.txt"
  sort -u "$OF_TMP/published.txt" | wc -l
}
all_published() { [[ $(count_published) == "$N" ]]; }
# Likewise the services the probe has reached end to end.
count_reachable() {
  status_json || return 1
  jq -r '.services[] | select(.probe.state == "reachable" or .probe.state == "degraded") | .name' \
    "$OF_TMP/status.json" >>"$OF_TMP/reachable.txt"
  sort -u "$OF_TMP/reachable.txt" | wc -l
}
all_reachable() { [[ $(count_reachable) == "$N" ]]; }
victim_state() { status_json && jq -r --arg v "$victim" '.services[] | select(.name == $v) | .probe.state' "$OF_TMP/status.json"; }
tor_restarts() { status_json && jq -r '.status.tor.restarts' "$OF_TMP/status.json"; }
tor_starts() { grep -c '\] tor: started ' "$log"; }

# --- every service published, no tor restart ---------------------------------------------------------------
t0=$(of_now)
count_addressed() { status_json && jq '[.services[] | select(.address != null)] | length' "$OF_TMP/status.json"; }
all_addressed() { [[ $(count_addressed) == "$N" ]]; }
of_check "onionfront gave all $N services an address" of_wait_secs 60 all_addressed
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
if of_wait_secs 600 all_published; then
  of_pass "every one of the $N services was on all its responsible HSDirs ($(of_elapsed "$t0") s after start)"
else
  of_fail "only $(count_published) of $N services were on all their responsible HSDirs after $(of_elapsed "$t0") s"
fi
if of_wait_secs 180 all_reachable; then
  of_pass "the probe reached every service end to end ($(of_elapsed "$t0") s after start)"
else
  of_fail "the probe reached only $(count_reachable) of $N services"
fi
of_check "no tor restart while publishing (restarts $(tor_restarts), tor started $(tor_starts) time(s))" \
  test "$(tor_restarts)" = 0 -a "$(tor_starts)" = 1
of_check "no service was found down while publishing" bash -c "! grep -q 'is down end to end' '$log'"
of_check "no control command was taken for a hung tor" bash -c "! grep -q 'no reply to a command within' '$log'"
bytes=$(wc -c <"$OF_TMP/status.json")
of_log "status --json: $bytes bytes for $N services"

# --- one service's backend killed ------------------------------------------------------------------------
# Each service's descriptor ids now (current and next): a re-registration in this time period would
# create them again (an id is the blinded key of the period), a rotation creates new ones. Read before
# the event stream starts: a rotation at this moment (its CREATED events already seen by onionfront, so
# in this list) must not be in the stream as well, where it would look like a rebuild.
status_json
jq -r '.services[] | .name as $n | .descriptor.descriptors[] | "\($n) \(.id)"' "$OF_TMP/status.json" | sort -u >"$OF_TMP/ids-before.txt"
of_check "status names the services' descriptor ids" test "$(cut -d' ' -f1 "$OF_TMP/ids-before.txt" | sort -u | wc -l)" -eq "$N"
# HS_DESC events of the service tor from before the kill to the end, each line stamped with the time;
# the kill waits for tor's answer to the subscription (its "250 OK" line).
events=$OF_TMP/hsdesc-events.txt
of_torctl "$ctl" -e HS_DESC -t 600 > >(while IFS= read -r l; do printf '%(%s)T %s\n' -1 "$l"; done >"$events") 2>&1 &
ev_pid=$!
of_track_pid "$ev_pid"
of_check "the HS_DESC event stream is subscribed" of_wait_until 30 grep -q ' 250 OK' "$events"
mark=$(wc -l <"$log")
after_mark() { tail -n +"$((mark + 1))" "$log"; }
of_stop_pid "$victim_pid"
t1=$(of_now)
of_check "the victim ($victim) is found down" of_wait_secs 180 bash -c "[[ \$('$OF_BIN' -c '$config' status --json 2>/dev/null | jq -r --arg v '$victim' '.services[] | select(.name == \$v) | .probe.state') == down ]]"
of_log "down $(of_elapsed "$t1") s after its backend was killed"
of_check "repair step 1 (re-post) for the victim" of_wait_secs 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'service $victim unreachable.*repair step 1: re-posting'"
of_check "repair step 2 (re-publish it alone) for the victim" of_wait_secs 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'service $victim unreachable.*repair step 2: re-publishing it alone'"
of_check "repair step 3 declines to restart the tor of $N services" of_wait_secs 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'service $victim unreachable.*repair step 3: not restarting its tor: tor 1 hosts $N services and 1 is down'"
of_check "then it alerts" of_wait_secs 120 bash -c "tail -n +$((mark + 1)) '$log' | grep -q 'service $victim unreachable.*nothing left to try, alerting'"
steps=$(after_mark | grep -oE 'repair step [123]: [a-z-]+|nothing left to try' | tr '\n' ',')
of_check "the steps came in order, each once ($steps)" test "$steps" = "repair step 1: re-posting,repair step 2: re-publishing,repair step 3: not,nothing left to try,"
status_json
of_check "status lists the declined restart with why" bash -c "jq -e --arg v '$victim' '.services[] | select(.name == \$v) | .probe.repairs | map(.step) == [\"repost_descriptor\",\"republish\",\"restart_tor\",\"alert\"] and (.[2].declined | test(\"1 is down\"))' '$OF_TMP/status.json' >/dev/null"
of_check "no tor restart (restarts $(tor_restarts), tor started $(tor_starts) time(s), pid $tor_pid)" \
  bash -c "test '$(tor_restarts)' = 0 -a '$(tor_starts)' = 1 && kill -0 '$tor_pid' 2>/dev/null"
of_check "no other service was found down" bash -c "! tail -n +$((mark + 1)) '$log' | grep 'is down end to end' | grep -qv 'service $victim '"
of_check "no control command was taken for a hung tor" bash -c "! grep -q 'no reply to a command within' '$log'"
sleep 5 # the window after the re-publication (below) must have passed
of_stop_pid "$ev_pid"
sleep 1 # the time stamper writes the last lines

# The victim's re-publication: its time, and what it did to the victim and to the others.
rp_line=$(after_mark | grep -m1 "service $victim unreachable.*repair step 2: re-publishing")
rp_at=$(date -d "$(cut -c1-19 <<<"$rp_line")" +%s)
window_end=$((rp_at + 15))
addr_of() { jq -r --arg n "$1" '.services[] | select(.name == $n) | .address' "$OF_TMP/status.json" | sed 's/\.onion$//'; }
victim_addr=$(addr_of "$victim")
of_check "the victim's re-publication made tor create new descriptors of it" \
  awk -v a="$victim_addr" -v t="$rp_at" '$1 >= t - 1 && $3 == "HS_DESC" && $4 == "CREATED" && $5 == a { n++ } END { exit !(n >= 1) }' "$events"
victim_old=$(awk -v a="$victim_addr" -v t="$rp_at" '$1 >= t - 1 && $3 == "HS_DESC" && $4 == "CREATED" && $5 == a { print $8 }' "$events" |
  while read -r id; do grep -qxF "$victim $id" "$OF_TMP/ids-before.txt" && echo "$id"; done | wc -l)
of_log "the victim's re-publication created $victim_old descriptor(s) with ids it had before (a re-registration, as the check below looks for)"
rebuilt="" disturbed=""
for ((i = 0; i < N - 1; i++)); do
  name=$(printf 's%02d' "$i")
  a=$(addr_of "$name")
  # a rebuild: CREATED with an id the service had before the kill
  for id in $(awk -v a="$a" '$3 == "HS_DESC" && $4 == "CREATED" && $5 == a { print $8 }' "$events"); do
    grep -qxF "$name $id" "$OF_TMP/ids-before.txt" && rebuilt+=" $name:${id:0:8}"
  done
  # an upload in the window after the re-publication of an id not created in that window (not a rotation)
  new_ids=$(awk -v a="$a" -v s="$rp_at" -v e="$window_end" '$1 >= s - 1 && $1 <= e && $3 == "HS_DESC" && $4 == "CREATED" && $5 == a { print $8 }' "$events")
  for id in $(awk -v a="$a" -v s="$rp_at" -v e="$window_end" '$1 >= s && $1 <= e && $3 == "HS_DESC" && $4 == "UPLOAD" && $5 == a { print $8 }' "$events" | sort -u); do
    grep -qxF -- "$id" <<<"$new_ids" || disturbed+=" $name:${id:0:8}"
  done
done
rotated=$(awk -v s="$rp_at" -v e="$window_end" '$1 >= s - 1 && $1 <= e && $3 == "HS_DESC" && $4 == "CREATED"' "$events" | grep -vc " $victim_addr ")
((rotated > 0)) && of_log "$rotated descriptors of other services were created in the window: a time-period rotation"
of_check "no other service's descriptor was rebuilt after the kill${rebuilt:+ (rebuilt:$rebuilt)}" test -z "$rebuilt"
of_check "no other service uploaded an existing descriptor after the victim's re-publication${disturbed:+ ($disturbed)}" test -z "$disturbed"

of_stop_onionfront
of_check "onionfront exits 0" test $? -eq 0
of_check "no sanitizer report in onionfront's log" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log'"
((OF_FAILED)) && grep -E '\] probe: |repair|restart|no reply' "$log" | tail -n 40 >&2
of_summary
