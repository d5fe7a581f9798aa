#!/bin/bash
# What another local user can read of onionfront's tors' metrics (issue 37, finding 1), on the private
# network with real tor 0.4.9.11. tor serves its MetricsPort on TCP only (it refuses `MetricsPort unix:`)
# and labels every series with the service's onion address, so only a tor whose services are all public
# single onions has one:
#  - a public single onion ("web") and an anonymous service ("hidden"): onionfront's /metrics has tor's
#    figures for web; every TCP port onionfront's tors listen on, read as `nobody`, shows web's address
#    (public: the read works) and never hidden's (the anonymous services' tor has no MetricsPort);
#  - a reload adding a service with client authorization ("priv") to web's tor closes that tor's
#    MetricsPort before priv is handed over: read as `nobody`, no port shows priv's or hidden's address;
#  - after `onionfront restart-tor` the new tor's torrc has no MetricsPort and the same holds.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

port_web=$(of_free_port)
of_start_backend web "$port_web" http || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc_web="{ \"name\": \"web\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_web\" } ] }"
svc_hid="{ \"name\": \"hidden\", \"mode\": \"anonymous\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_web\" } ] }"
svc_priv() { # CLIENT_AUTH_FIELD
  printf '{ "name": "priv", %s "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ] }' "$1" "$port_web"
}
probe='"probe": { "client_tor": false }'

# priv's key and one client, offline, before the first start (as test_clientauth.sh does).
of_write_config "$config" "[ $svc_web, $svc_hid, $(svc_priv "") ]" "$probe"
"$OF_BIN" -c "$config" new-key priv >/dev/null 2>&1
entry=$("$OF_BIN" -c "$config" client-auth add priv alice 2>/dev/null |
  grep -E '^\{ "name": "alice", "public_key": "[A-Z2-7]{52}" \}$')
of_check "priv has a key and a client entry" test -n "$entry"

of_write_config "$config" "[ $svc_web, $svc_hid ]" "$probe"
of_start_onionfront "$config" "$log"
of_check "onionfront logs web's and hidden's addresses" of_wait_secs 60 \
  bash -c "grep -Eq 'service web: .*address [a-z2-7]{56}\.onion' '$log' && grep -Eq 'service hidden: .*address [a-z2-7]{56}\.onion' '$log'"
web=$(of_address_from_log "$log" web)
hid=$(of_address_from_log "$log" hidden)
web=${web%.onion}
hid=${hid%.onion}

# read_as_nobody OUT — GET /metrics, as uid nobody, from every TCP port on 127.0.0.1 that a tor below
# onionfront listens on, all answers into OUT; prints how many ports answered.
read_as_nobody() {
  local out=$1 pid port n=0
  : >"$out"
  chmod 644 "$out"
  for pid in $(of_descendants "$OF_PID" | awk '$4 == "tor" { print $1 }'); do
    for port in $(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{ print $4 }' | sed -n 's/^127\.0\.0\.1://p'); do
      runuser -u nobody -- curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >>"$out" 2>/dev/null && n=$((n + 1))
    done
  done
  echo "$n"
}
web_figures() {
  "$OF_BIN" -c "$config" status metrics 2>/dev/null | grep -q '^onionfront_tor_hs_intro_circuits{service="web",instance="1"} '
}

of_check "/metrics has tor's own figures for web (its tor's MetricsPort is read)" of_wait_secs 90 web_figures
n=$(read_as_nobody "$OF_TMP/nobody1.txt")
of_log "as nobody: $n port(s) answered"
of_check "as nobody, web's tor's MetricsPort answers with web's (public) address" grep -q "onion=\"$web\"" "$OF_TMP/nobody1.txt"
of_check "as nobody, no port shows the anonymous service's address" bash -c "! grep -q '$hid' '$OF_TMP/nobody1.txt'"
of_check "the anonymous services' tor's torrc has no MetricsPort" \
  bash -c "! grep -q '^MetricsPort' '$OF_TMP/state/anonymous/torrc'"

# --- a reload gives web's tor a service with client authorization ---------------------------------------
of_write_config "$config" "[ $svc_web, $svc_hid, $(svc_priv "\"client_auth\": [ $entry ],") ]" "$probe"
"$OF_BIN" -c "$config" status reload >/dev/null 2>&1
of_check "priv is published after the reload" of_wait_log "$log" "service priv: descriptor uploaded" 120
priv=$(of_address_from_log "$log" priv)
priv=${priv%.onion}
of_check "onionfront says it closed the tor's MetricsPort" grep -q "tor: closing its MetricsPort" "$log"
n=$(read_as_nobody "$OF_TMP/nobody2.txt")
of_log "as nobody: $n port(s) answered"
of_check "as nobody, no port shows priv's address" bash -c "! grep -q '$priv' '$OF_TMP/nobody2.txt'"
of_check "as nobody, no port shows hidden's address" bash -c "! grep -q '$hid' '$OF_TMP/nobody2.txt'"

# --- a new tor for the same services -----------------------------------------------------------------------
uploads=$(grep -c "service priv: descriptor uploaded" "$log")
"$OF_BIN" -c "$config" restart-tor >/dev/null 2>&1
priv_again() { test "$(grep -c "service priv: descriptor uploaded" "$log")" -gt "$uploads"; }
of_check "priv is published by the new tor" of_wait_secs 120 priv_again
of_check "the new tor's torrc has no MetricsPort" bash -c "! grep -q '^MetricsPort' '$OF_TMP/state/torrc'"
n=$(read_as_nobody "$OF_TMP/nobody3.txt")
of_log "as nobody: $n port(s) answered"
of_check "as nobody, no port of the new tor shows priv's address" bash -c "! grep -q '$priv' '$OF_TMP/nobody3.txt'"

of_stop_onionfront
of_summary
