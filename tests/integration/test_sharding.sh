#!/bin/bash
# Services spread over tors (tor.instances 3, tor.tors_per_service 2; issue 28), on the private network
# with real tor. The placement is recomputed here independently (Python's hashlib over the rule in
# sidecar/config/placement.h), so the test does not trust onionfront's own answer:
#  - each tor's HiddenServiceDir lines (GETCONF on its own control socket) are exactly the services
#    placed on it: cdn on tors 1 and 2, static on 1 and 3, www on 2 and 3; status's row per tor counts
#    2 services; every service is fetchable;
#  - a reload that adds mail (placed on tors 1 and 2) gives it to those two tors only: tor 3 gets no
#    SETCONF at all (no CONF_CHANGED event on its control port), and no other service moves;
#  - tor 2 SIGKILLed: the failover log names only tors that host tor 2's services; each of tor 2's
#    services that HSDirs served from it is uploaded anew by a survivor hosting it (HS_DESC UPLOADED on
#    the survivor's control port, after the kill); status names for each a tor that is up and hosts it
#    (not the killed process); a new visitor (a client tor started after the kill) reaches every
#    service; tor 2 comes back with a new pid and its own services;
#  - `onionfront restart-tor` rolls the three tors (each hands its services to the others hosting them)
#    and ends with "restarted 3 tors"; afterwards every service is still placed as before and fetchable.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init
trap of_cleanup EXIT
trap 'of_cleanup; exit 130' INT TERM

port=$(of_free_port)
of_start_backend web "$port" http || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc() { printf '{ "name": "%s", "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ] }' "$1" "$port"; }
write_config() { # NAMES...
  local list="" n
  for n in "$@"; do list+="${list:+, }$(svc "$n")"; done
  OF_TOR_INSTANCES=3 OF_TOR_PER_SERVICE=2 OF_TOR_DRAIN=3 of_write_config "$config" "[ $list ]" \
    '"probe": { "hsfetch_interval": 10, "republish_deadline": 15 }'
}
write_config cdn static www
of_start_onionfront "$config" "$log"

# The tors (1-based) hosting service NAME with 3 tors and 2 per service, computed here.
placed() {
  python3 - "$1" <<'EOF'
import hashlib, sys
name = sys.argv[1].encode()
score = lambda k: int.from_bytes(hashlib.sha256(b"onionfront placement\0" + name + b"\0" + bytes([k])).digest()[:8], "big")
print(" ".join(str(k + 1) for k in sorted(sorted(range(3), key=lambda k: (-score(k), k))[:2])))
EOF
}
ctl() { [[ $1 == 1 ]] && echo "$OF_TMP/run/control/control.sock" || echo "$OF_TMP/run/control-$1/control.sock"; }
# The service names whose key directories tor K has (GETCONF HiddenServiceDir on its control socket).
tor_services() {
  of_torctl "$(ctl "$1")" "GETCONF HiddenServiceDir" 2>/dev/null | grep -Eo 'HiddenServiceDir=[^ ]+' |
    sed 's#.*/##' | sort | tr '\n' ' ' | sed 's/ $//'
}
# The names placed on tor K among NAMES..., sorted.
want_on() {
  local k=$1 n out=()
  shift
  for n in "$@"; do [[ " $(placed "$n") " == *" $k "* ]] && out+=("$n"); done
  printf '%s\n' "${out[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
placement_holds() { # NAMES...
  local k
  for k in 1 2 3; do [[ $(tor_services "$k") == "$(want_on "$k" "$@")" ]] || return 1; done
}
show_placement() {
  local k
  for k in 1 2 3; do of_log "tor $k: has [$(tor_services "$k")], placed [$(want_on "$k" "$@")]"; done
}
it_tor() { of_tor_field "$config" "$1" "$2"; }
all_running() { [[ $(it_tor state 1) == running && $(it_tor state 2) == running && $(it_tor state 3) == running ]]; }
# The tor status names as serving service NAME, or "none".
served_by() {
  "$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    s = next(s for s in json.load(sys.stdin)["services"] if s["name"] == sys.argv[1])["served"]
    print(s["served_by"] or "none")
except Exception:
    print("none")' "$1"
}
fetch_all() { # OUTDIR NAMES... — each service fetchable (bounded per service)
  local d=$1 n
  shift
  for n in "$@"; do of_fetch_until "http://${ADDR[$n]}/" "$d/$n.html" 120 || { of_log "$n not fetchable"; return 1; }; done
}
declare -A ADDR

of_check "the placement rule puts cdn, static and www on three different pairs of tors" \
  test "$(placed cdn)|$(placed static)|$(placed www)|$(placed mail)" = "1 2|1 3|2 3|1 2"
of_check "onionfront logs the services per tor" of_wait_log "$log" "each single onion is hosted by 2 of the 3 tors .*tor 1: 2, tor 2: 2, tor 3: 2" 30
for n in cdn static www; do
  of_wait_log "$log" "service $n: .*address [a-z2-7]{56}\.onion" 30
  ADDR[$n]=$(of_address_from_log "$log" "$n")
done
of_check "the three tors run and bootstrap" of_wait_secs 150 all_running
of_check "each tor has exactly the services placed on it" of_wait_secs 30 placement_holds cdn static www
show_placement cdn static www
summary=$("$OF_BIN" -c "$config" status 2>&1)
grep "^tor [0-9]" <<<"$summary" | sed 's/^/  /' >&2
of_check "status counts 2 services on each tor" test "$(grep -c '^tor [123]: running.*, 2 services' <<<"$summary")" -eq 3
mkdir -p "$OF_TMP/pages"
of_check "every service is fetchable" fetch_all "$OF_TMP/pages" cdn static www
# Status reports each service as its own tors see it: once every tor uploaded, no problem is left (a
# service shown through a tor that does not host it would stay "no descriptor upload confirmed yet").
problems() {
  "$OF_BIN" -c "$config" status --json 2>/dev/null |
    python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["status"]["problems"]))' 2>&1
}
no_problems() { [[ -z $(problems) ]]; }
of_check "status lists no problem once every tor uploaded its services" of_wait_secs 60 no_problems
problems | sed 's/^/  problem: /' >&2

# ---- a reload adding a service placed on tors 1 and 2 -----------------------------------------------
conf3=$OF_TMP/tor3-events.txt
"$OF_TORCTL_BIN" "$(ctl 3)" -e CONF_CHANGED -t 40 >"$conf3" 2>&1 &
of_track_pid "$!"
sleep 1
write_config cdn static www mail
of_check "the reload is accepted" "$OF_BIN" -c "$config" status reload
of_wait_log "$log" "service mail: .*address [a-z2-7]{56}\.onion" 30
ADDR[mail]=$(of_address_from_log "$log" mail)
of_check "mail is on tors 1 and 2 only, and no other service moved" of_wait_secs 30 placement_holds cdn static www mail
show_placement cdn static www mail
of_check "mail is fetchable" fetch_all "$OF_TMP/pages" mail
of_check "tor 3, which does not host mail, got no SETCONF (no CONF_CHANGED)" bash -c '! grep -q "^650.CONF_CHANGED" "$1"' _ "$conf3"

# ---- tor 2 SIGKILLed ---------------------------------------------------------------------------------
declare -A BEFORE
for n in cdn static www mail; do
  BEFORE[$n]=$(served_by "$n")
  of_log "$n: served by tor ${BEFORE[$n]} (placed on $(placed "$n"))"
done
# The survivors' HS_DESC events, stamped with their arrival time, from before the kill.
for k in 1 3; do
  "$OF_TORCTL_BIN" "$(ctl "$k")" -e HS_DESC -t 60 > >(while IFS= read -r l; do
    printf '%s %s\n' "$EPOCHREALTIME" "$l"
  done >"$OF_TMP/events-$k.txt") 2>&1 &
  of_track_pid "$!"
done
sleep 1
victim=$(it_tor pid 2)
kill_at=$EPOCHREALTIME
kill -KILL "$victim"
of_log "SIGKILLed tor 2 (pid $victim)"
of_check "onionfront logs the failover of tor 2" of_wait_log "$log" "failover: tor 2 lost" 30
line=$(grep "failover: tor 2 lost" "$log" | tail -n 1)
of_log "  $line"
told_ok() { # the tors told to upload anew host one of tor 2's services (cdn, www, mail: tors 1 and 3)
  ! grep -q "upload" <<<"$line" || grep -Eq ": tors? [13]( and [13])? uploads? new ones now" <<<"$line"
}
of_check "the failover told only tors that host tor 2's services" told_ok
# Each of tor 2's services that HSDirs served from it: a survivor hosting it uploaded it anew after the
# kill (HS_DESC UPLOADED on the survivor's own control port).
renewed_by_survivor() {
  local n k addr ok
  for n in cdn www mail; do
    [[ ${BEFORE[$n]} == 2 || ${BEFORE[$n]} == none ]] || continue
    addr=${ADDR[$n]%.onion}
    ok=""
    for k in $(placed "$n"); do
      [[ $k == 2 ]] && continue
      awk -v t="$kill_at" -v a="$addr" '$1 > t && $3 == "HS_DESC" && $4 == "UPLOADED" && $5 == a { f = 1 } END { exit !f }' \
        "$OF_TMP/events-$k.txt" && ok=1
    done
    [[ -n $ok ]] || return 1
  done
}
of_check "each of tor 2's services it served was uploaded anew by a survivor hosting it" of_wait_secs 30 renewed_by_survivor
# Status then names, for each, a tor that is up and hosts it, and not the killed process (tor 2 again
# only once it runs anew: its restarted process publishes too).
served_elsewhere() {
  local n by
  for n in cdn www mail; do
    by=$(served_by "$n")
    [[ $by != none && " $(placed "$n") " == *" $by "* && $(it_tor state "$by") == running ]] || return 1
    [[ $by != 2 || $(it_tor pid 2) != "$victim" ]] || return 1
  done
}
of_check "status names, for each of tor 2's services, a tor that is up and hosts it" of_wait_secs 60 served_elsewhere
for n in cdn www mail; do of_log "$n: served by tor $(served_by "$n") after the kill"; done
"$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["services"]:
    print(" ", s["name"], json.dumps(s.get("served")))' >&2
of_start_client_tor visitor ||
  { of_fail "the new visitor's client tor did not start"; of_summary; exit 1; }
SOCKS_SHARED=$TESTNET_SOCKS_PORT
TESTNET_SOCKS_PORT=$OF_CLIENT_SOCKS
of_check "a new visitor after the kill reaches every service" fetch_all "$OF_TMP/pages" cdn static www mail
TESTNET_SOCKS_PORT=$SOCKS_SHARED
back2() { local p; p=$(it_tor pid 2); [[ $(it_tor state 2) == running && -n $p && $p != "$victim" ]]; }
of_check "tor 2 comes back with a new pid" of_wait_secs 150 back2
of_check "tor 2 has its own services again" of_wait_secs 30 placement_holds cdn static www mail

# ---- a rolling restart over the three tors -----------------------------------------------------------
roll() { of_roll_field "$config" "$@"; }
roll_done() { [[ $(roll state) == idle && $(roll rolls) == 1 ]]; }
# Before the roll, tor 2's first uploads and the survivors' failover uploads settle: every service
# served, as the fetch probe found it (HSFETCH), by a tor that is up and hosts it. (Not "every HSDir
# holds that tor's descriptor": with two tors publishing, some HSDirs keep the other one's for a while.)
# On a loaded machine the roll's hand-over otherwise competes with those uploads. Bounded: the roll
# starts anyway after 90 s, and that is logged.
settled() {
  local n tor
  for n in cdn static www mail; do
    tor=$("$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    s = next(s for s in json.load(sys.stdin)["services"] if s["name"] == sys.argv[1])["served"]
    ok = s["source"] == "fetched" and s["hsdirs_holding"] > 0
    print(s["served_by"] if ok and s["served_by"] else "none")
except Exception:
    print("none")' "$n")
    [[ $tor != none && " $(placed "$n") " == *" $tor "* && $(it_tor state "$tor") == running ]] || return 1
  done
}
t_settle=$(date +%s)
sleep 20 # at least as long as before this wait was added: tor 2's own first uploads
if of_wait_secs 90 settled; then
  of_log "every service served by a tor that hosts it, $(($(date +%s) - t_settle)) s after tor 2 came back"
else
  of_log "not settled within 90 s (the roll starts anyway): $(for n in cdn static www mail; do printf '%s:%s ' "$n" "$(served_by "$n")"; done)"
fi
pids="$(it_tor pid 1) $(it_tor pid 2) $(it_tor pid 3)"
out=$("$OF_BIN" -c "$config" restart-tor 2>&1)
of_log "restart-tor: $out"
of_check "restart-tor starts a rolling restart of 3 tors" grep -q "rolling restart of 3 tors started" <<<"$out"
of_check "the roll ends" of_wait_secs 600 roll_done
of_log "roll: $(roll last_result message)"
of_log "served after the roll: $(for n in cdn static www mail; do printf '%s:%s ' "$n" "$(served_by "$n")"; done)"
of_check "the roll restarted the three tors" test "$(roll last_result ok)" = true
grep -E "restart-tor:|failover:" "$log" | sed 's/^/  /' >&2
newpids="$(it_tor pid 1) $(it_tor pid 2) $(it_tor pid 3)"
of_log "tor pids $pids -> $newpids"
new_each() {
  local a b
  read -r -a a <<<"$pids"
  read -r -a b <<<"$newpids"
  [[ ${#b[@]} -eq 3 && ${b[0]} != "${a[0]}" && ${b[1]} != "${a[1]}" && ${b[2]} != "${a[2]}" ]]
}
of_check "each tor has a new pid" new_each
of_check "after the roll each tor has exactly its placed services" of_wait_secs 30 placement_holds cdn static www mail
of_check "after the roll every service is fetchable" fetch_all "$OF_TMP/pages" cdn static www mail
of_check "no warning about a tor that cannot publish anew" bash -c '! grep -q "cannot publish anew" "$1"' _ "$log"

of_stop_onionfront
of_summary
