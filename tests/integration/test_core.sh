#!/bin/bash
# The sidecar core on the private Tor network with real tor (issue: core):
#  - onionfront starts its own tor in single-onion mode, warns that services are not location-hidden,
#    publishes a service, and a client fetches the page through it byte for byte;
#  - the service's HS_SERVICE_INTRO and HS_SERVICE_REND circuits are one hop with ONEHOP_TUNNEL;
#  - after a restart of onionfront the address is the same and the page still loads;
#  - adding a second service at run time (SIGHUP) publishes it without a new descriptor for the first;
#  - a bad config on reload is refused and the running config stays;
#  - SIGTERM removes the services, stops tor and leaves nothing running.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

port_a=$(of_free_port)
port_b=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1
of_start_backend beta "$port_b" http || exit 1

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"
svc_beta="{ \"name\": \"beta\", \"ports\": [ { \"virtual\": 8080, \"target\": \"127.0.0.1:$port_b\" } ] }"
of_write_config "$config" "[ $svc_alpha ]"
ctl=$OF_TMP/run/control/control.sock

# --- start and fetch -------------------------------------------------------------------------------
of_start_onionfront "$config" "$log"
of_check "onionfront logs the non-anonymity warning at start" of_wait_log "$log" "NOT location-hidden" 10
of_wait_log "$log" "service alpha: .* address [a-z2-7]{56}\.onion" 30
addr=$(of_address_from_log "$log" alpha)
of_check "service alpha has an onion address" test -n "$addr"
if [[ -z $addr ]]; then
  tail -n 20 "$log" >&2
  of_summary
  exit 1
fi
of_check "the address is written in tor's hostname format" \
  grep -qx "$addr" "$OF_TMP/state/keys/alpha/hostname"

curl -sS --max-time 10 -o "$OF_TMP/direct.html" "http://127.0.0.1:$port_a/"
if of_fetch_until "http://$addr/" "$OF_TMP/onion.html" 180; then
  of_pass "page fetched over the single onion service ($(of_elapsed "$OF_START") s after start)"
  of_check "the page is byte for byte the backend's" cmp -s "$OF_TMP/direct.html" "$OF_TMP/onion.html"
else
  of_fail "no page over the onion within 180 s"
  tail -n 30 "$log" >&2
fi
of_check "onionfront logged the first descriptor upload" of_wait_log "$log" "service alpha: descriptor uploaded" 30

# --- one-hop circuits --------------------------------------------------------------------------------
# A new SOCKS username forces a fresh client circuit, so the service builds a new rendezvous circuit.
of_torctl "$ctl" -e CIRC -t 25 >"$OF_TMP/circ-events.txt" 2>&1 &
ev_pid=$!
of_track_pid "$ev_pid"
sleep 1
for i in 1 2 3; do
  curl -sS --max-time 30 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -U "iso$i$RANDOM:x" \
    -o /dev/null "http://$addr/" || true
done
wait "$ev_pid"
of_torctl "$ctl" "GETINFO circuit-status" >"$OF_TMP/circ-status.txt" 2>&1

# Count circuits of a purpose: built ones, and those that are one hop with ONEHOP_TUNNEL.
count_circs() { # file purpose -> "built onehop"
  awk -v purpose="PURPOSE=$2" '
    { sub(/^650 CIRC /, ""); sub(/^ /, "") }
    $2 == "BUILT" && index($0, purpose " ") || $2 == "BUILT" && $0 ~ purpose "$" {
      built++
      if ($3 !~ /,/ && $0 ~ /BUILD_FLAGS=[A-Z_,]*ONEHOP_TUNNEL/) onehop++
    }
    END { printf "%d %d\n", built, onehop }' "$1"
}
read -r rend_built rend_onehop < <(count_circs "$OF_TMP/circ-events.txt" HS_SERVICE_REND)
read -r intro_built intro_onehop < <(count_circs "$OF_TMP/circ-status.txt" HS_SERVICE_INTRO)
of_log "rendezvous circuits built: $rend_built, one hop: $rend_onehop; intro circuits: $intro_built, one hop: $intro_onehop"
of_check "the service built rendezvous circuits for the new client circuits" test "$rend_built" -ge 1
of_check "every HS_SERVICE_REND circuit is one hop with ONEHOP_TUNNEL" test "$rend_built" -eq "$rend_onehop"
of_check "the service has introduction circuits" test "$intro_built" -ge 1
of_check "every HS_SERVICE_INTRO circuit is one hop with ONEHOP_TUNNEL" test "$intro_built" -eq "$intro_onehop"

# --- restart: same address -----------------------------------------------------------------------------
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "onionfront's tor (pid $tor_pid) is gone after shutdown" bash -c "! kill -0 $tor_pid 2>/dev/null"
of_check "onionfront logged that the services were removed" grep -q "services: removed from tor" "$log"

mv "$log" "$log.1"
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service alpha: .* address" 30
addr2=$(of_address_from_log "$log" alpha)
of_check "after a restart the address is the same" test "$addr" = "$addr2"
of_check "after a restart onionfront loads the key instead of creating one" grep -q "service alpha: loaded its key" "$log"
if of_fetch_until "http://$addr/" "$OF_TMP/onion2.html" 180; then
  of_pass "page fetched after the restart"
else
  of_fail "no page after the restart"
fi
of_wait_log "$log" "service alpha: descriptor uploaded" 60

# --- add a second service at run time -----------------------------------------------------------------
of_torctl "$ctl" -e HS_DESC -t 15 >"$OF_TMP/hsdesc-events.txt" 2>&1 &
ev_pid=$!
of_track_pid "$ev_pid"
sleep 1
# alpha's descriptor ids so far (their first 8 characters, as onionfront logs them)
alpha_ids_before=$(grep -oE "service alpha: (new )?descriptor [A-Za-z0-9+/]{8}" "$log" | awk '{print $NF}' | sort -u)
of_check "onionfront logged alpha's descriptor ids" test -n "$alpha_ids_before"
of_write_config "$config" "[ $svc_alpha, $svc_beta ]"
kill -HUP "$OF_PID"
of_check "reload applied" of_wait_log "$log" "reload: applied" 10
of_wait_log "$log" "service beta: .* address [a-z2-7]{56}" 10
addr_b=$(of_address_from_log "$log" beta)
of_check "the new service's descriptor is uploaded" of_wait_log "$log" "service beta: descriptor uploaded" 60
if of_fetch_until "http://$addr_b:8080/" "$OF_TMP/beta.html" 120; then
  of_check "the new service serves its own backend" grep -q "Hello from beta" "$OF_TMP/beta.html"
else
  of_fail "no page from the new service"
fi
wait "$ev_pid"
alpha_id=${addr%.onion}
beta_id=${addr_b%.onion}
of_check "HS_DESC events were captured for the new service" grep -q "HS_DESC UPLOAD $beta_id" "$OF_TMP/hsdesc-events.txt"
# A reload that disturbed alpha would make tor build alpha's descriptors again: HS_DESC CREATED with ids
# alpha had before. A time-period rotation in the window (the test network's periods last ~4 minutes)
# creates one with a new id instead, and tor's own re-uploads (UPLOAD alone) are not the reload's doing.
alpha_rebuilt=""
for id in $(grep -E "HS_DESC CREATED $alpha_id " "$OF_TMP/hsdesc-events.txt" | awk '{print $NF}' | cut -c1-8); do
  grep -qxF -- "$id" <<<"$alpha_ids_before" && alpha_rebuilt+=" $id"
done
if [[ -n $alpha_rebuilt ]]; then
  of_fail "adding a service rebuilt the first's descriptors ($alpha_rebuilt)"
  grep -E "HS_DESC [A-Z]+ $alpha_id" "$OF_TMP/hsdesc-events.txt" | head >&2
elif grep -qE "HS_DESC CREATED $alpha_id " "$OF_TMP/hsdesc-events.txt"; then
  of_log "alpha got a descriptor with a new id in the window: a time-period rotation"
  of_pass "adding a service did not rebuild the first's descriptors (a rotation's new one only)"
else
  of_pass "adding a service caused no new descriptor for the first"
fi

# --- a bad config on reload is refused -----------------------------------------------------------------
cp "$config" "$OF_TMP/good.json"
echo '{ "state_dir": "'"$OF_TMP"'/state", "run_dir": "'"$OF_TMP"'/run", "services": [ { "name": "x", "ports": [ { "virtual": 0, "target": "127.0.0.1:1" } ] } ] }' >"$config"
kill -HUP "$OF_PID"
of_check "a bad config on reload is reported with its field" of_wait_log "$log" "reload: .*services\[0\]\.ports\[0\]\.virtual" 10
of_check "the running services keep working after a refused reload" of_fetch "http://$addr/" "$OF_TMP/onion3.html" 60
cp "$OF_TMP/good.json" "$config"

# --- shutdown ----------------------------------------------------------------------------------------------
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "no tor left running after shutdown (pid $tor_pid)" bash -c "! kill -0 $tor_pid 2>/dev/null"
of_check "no sanitizer report in onionfront's logs" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log' '$log.1'"
of_summary
