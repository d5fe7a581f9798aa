#!/bin/bash
# Per-service DoS defences (issue 13), on the private Tor network with real tor 0.4.9.11:
#  - a service with "dos": PoW on (queue rate/burst), the intro-point DoS defence on, 4 intro points:
#    tor's GETCONF HiddenServiceOptions lists each option for the service's directory; the descriptor
#    fetched from an HSDir by the network's client and decrypted with stem (python3-stem, test tool only)
#    carries a "pow-params v1" line in its inner layer; the page is fetched over the onion;
#  - a reload of onionfront that turns PoW off (and changes nothing else): the same address, one
#    SETCONF (tor's options lose the PoW lines); tor then uploads the descriptor again, observed on the
#    service tor's HS_DESC events (tor 0.4.9.11: UPLOAD/UPLOADED to every responsible HSDir with the same
#    descriptor ids and no CREATED event), and a descriptor fetched afterwards has no pow-params line;
#  - tor's MetricsPort (127.0.0.1 only) is read by onionfront: `status --json services` shows per service
#    pow_enabled and tor_metrics (PoW suggested effort and queue, introductions received >= 1 after the
#    fetches, rejected, rendezvous created/errors), and /metrics the onionfront_tor_hs_* samples;
#  - bad input: PoW asked of a tor binary without the pow module (a wrapper script around tor that
#    answers "pow: no") is refused by check-config and at start, with an error naming
#    services[0].dos.pow.enabled (the same check runs on reload: sidecar/reload.c).
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

of_require_stem || exit 1

port=$(of_free_port)
of_start_backend web "$port" http || exit 1
svc_json() { # POW_ENABLED
  printf '[ { "name": "web", "dos": { "pow": { "enabled": %s, "queue_rate": 100, "queue_burst": 1000 },
    "intro": { "enabled": true, "rate_per_sec": 30, "burst_per_sec": 300 }, "num_intro_points": 4,
    "max_streams": 50, "max_streams_close_circuit": true },
    "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ] } ]' "$1" "$port"
}
config=$OF_TMP/dos.json
log=$OF_TMP/dos.log
ctl=$OF_TMP/run/control/control.sock
keydir=$OF_TMP/state/keys/web

# has_option NAME VALUE — tor's GETCONF HiddenServiceOptions has NAME=VALUE.
has_option() {
  of_torctl "$ctl" "GETCONF HiddenServiceOptions" | sed 's/^250[- ]//' | grep -qxF "$1=$2"
}

# inner_has_pow OUT — fetch the descriptor into OUT; true if it was fetched and has a pow-params line.
fetch_desc() { "$PY" "$FETCH" "$TESTNET_CLIENT_CONTROL" "$addr" >"$1" 2>"$1.err"; }

# --- PoW on at start ------------------------------------------------------------------------------------
of_write_config "$config" "$(svc_json true)"
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service web: .* address [a-z2-7]{56}\.onion" 60
addr=$(of_address_from_log "$log" web)
if [[ -z $addr ]]; then
  of_fail "the service has no address"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
of_wait_log "$log" "service web: descriptor uploaded" 120
if of_fetch_until "http://$addr/" "$OF_TMP/page0.html" 180; then
  of_pass "page fetched over the onion with PoW and the intro DoS defence on"
else
  of_fail "no page over the onion with the defences on"
  tail -n 30 "$log" >&2
fi
for kv in HiddenServicePoWDefensesEnabled=1 HiddenServicePoWQueueRate=100 HiddenServicePoWQueueBurst=1000 \
  HiddenServiceEnableIntroDoSDefense=1 HiddenServiceEnableIntroDoSRatePerSec=30 \
  HiddenServiceEnableIntroDoSBurstPerSec=300 HiddenServiceNumIntroductionPoints=4 HiddenServiceMaxStreams=50 \
  HiddenServiceMaxStreamsCloseCircuit=1; do
  of_check "GETCONF HiddenServiceOptions shows $kv" has_option "${kv%%=*}" "${kv#*=}"
done
of_torctl "$ctl" "GETCONF HiddenServiceOptions" >"$OF_TMP/getconf-on.txt" 2>&1
if fetch_desc "$OF_TMP/inner-on.txt"; then
  of_pass "descriptor fetched from an HSDir and decrypted"
else
  of_fail "cannot fetch/decrypt the descriptor: $(cat "$OF_TMP/inner-on.txt.err")"
fi
of_check "the descriptor's inner layer carries pow-params v1" grep -Eq '^pow-params v1 ' "$OF_TMP/inner-on.txt"
of_log "pow line: $(grep -E '^pow-params' "$OF_TMP/inner-on.txt")"
of_check "the descriptor lists 4 introduction points" \
  test "$(grep -c '^introduction-point ' "$OF_TMP/inner-on.txt")" -eq 4

# --- tor's MetricsPort, read by onionfront: per-service values in status and /metrics --------------------
mp=$(of_torctl "$ctl" "GETCONF MetricsPort" "GETCONF MetricsPortPolicy" 2>&1)
of_log "tor: $(tr '\n' ' ' <<<"$mp")"
of_check "tor's MetricsPort is on 127.0.0.1 only" grep -Eq '^250[- ]MetricsPort=127\.0\.0\.1:[0-9]+$' <<<"$mp"
of_check "and only 127.0.0.1 may read it" grep -q 'MetricsPortPolicy=accept 127.0.0.1' <<<"$mp"
svc_field() { # FIELD — services[0].FIELD from onionfront status --json services, as JSON
  "$OF_BIN" -c "$config" status --json services 2>/dev/null |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0].get(sys.argv[1])))' "$1"
}
intro_seen() { # the page fetches above reached tor as introductions; a scrape (every 10 s) shows them
  svc_field tor_metrics | python3 -c 'import json,sys; t=json.load(sys.stdin); sys.exit(0 if t and t.get("introductions_received", 0) >= 1 else 1)'
}
of_check "status shows tor's introductions_received >= 1 for the service" of_wait_until 40 intro_seen
tm=$(svc_field tor_metrics)
of_log "status tor_metrics: $tm"
for k in pow_suggested_effort pow_queue_length introductions_received introductions_rejected rendezvous_created \
  rendezvous_errors; do
  of_check "status tor_metrics has $k" grep -q "\"$k\": [0-9]" <<<"$tm"
done
of_check "status says PoW is enabled" test "$(svc_field pow_enabled)" = true
mt=$("$OF_BIN" -c "$config" status metrics 2>&1)
of_check "/metrics has the PoW suggested effort for the service" \
  grep -Eq '^onionfront_tor_hs_pow_suggested_effort\{service="web",instance="1"\} [0-9]' <<<"$mt"
of_check "/metrics has its introductions received" \
  grep -Eq '^onionfront_tor_hs_introductions_received_total\{service="web",instance="1"\} [1-9]' <<<"$mt"
of_check "/metrics says tor's MetricsPort was read" grep -q '^onionfront_tor_metrics_up{instance="1"} 1$' <<<"$mt"

# --- a reload that turns PoW off ------------------------------------------------------------------------
events=$OF_TMP/events.txt
of_torctl "$ctl" -e HS_DESC -t 120 >"$events" 2>&1 &
ev_pid=$!
of_track_pid "$ev_pid"
sleep 1
key_before=$(sha256sum "$keydir/hs_ed25519_secret_key")
of_write_config "$config" "$(svc_json false)"
t_reload=$(of_now)
of_check "reload with PoW off is applied" "$OF_BIN" -c "$config" status reload
no_pow_options() {
  local o
  o=$(of_torctl "$ctl" "GETCONF HiddenServiceOptions") && grep -q "HiddenServiceDir=$keydir" <<<"$o" && ! grep -q PoW <<<"$o"
}
of_check "tor's options lose the PoW lines (the service's other lines stay)" of_wait_until 20 no_pow_options
of_check "the intro DoS defence stays" has_option HiddenServiceEnableIntroDoSDefense 1
of_check "same key after the reload" test -n "$key_before" -a "$key_before" == "$(sha256sum "$keydir/hs_ed25519_secret_key")"
addr_now=$("$OF_BIN" -c "$config" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["services"][0]["address"])')
of_check "same address after the reload" test "$addr_now" == "$addr"
a=${addr%.onion}
# tor 0.4.9.11 re-encodes and uploads the service's descriptors when its options change: UPLOAD and
# UPLOADED follow, without a CREATED (same descriptor ids, same intro points).
if of_wait_until 60 bash -c "grep -q '^650 HS_DESC UPLOAD $a ' '$events' && grep -q '^650 HS_DESC UPLOADED $a ' '$events'"; then
  of_pass "tor uploaded the service's descriptor again after the reload ($(of_elapsed "$t_reload") s)"
else
  of_fail "no descriptor upload within 60 s of the reload"
  cat "$events" >&2
fi
sleep 3
of_log "HS_DESC after the reload: $(grep -c ' CREATED ' "$events") CREATED, $(grep -c ' UPLOAD ' "$events") UPLOAD," \
  "$(grep -c ' UPLOADED ' "$events") UPLOADED"
nopow() { fetch_desc "$OF_TMP/inner-off.txt" && ! grep -q '^pow-params' "$OF_TMP/inner-off.txt"; }
of_check "a descriptor fetched after the reload has no pow-params line" of_wait_until 90 nopow
of_check "the page is still served" of_fetch "http://$addr/" "$OF_TMP/page1.html" 30
of_check "status says PoW is off now" test "$(svc_field pow_enabled)" = false

# --- a reload asking PoW of a tor without the module is refused; so is such a start ---------------------
of_stop_pid "$ev_pid" 5
nopow_tor=$OF_TMP/nopow-tor
cat >"$nopow_tor" <<EOS
#!/bin/sh
[ "\$1" = --list-modules ] && { printf 'relay: yes\\ndirauth: yes\\ndircache: yes\\npow: no\\n'; exit 0; }
exec /usr/bin/tor "\$@"
EOS
chmod 755 "$nopow_tor"
sed 's|"mode": "spawn",|"mode": "spawn", "binary": "'"$nopow_tor"'",|' "$config" >"$OF_TMP/nopow.json"
sed -i 's|"enabled": false, "queue_rate"|"enabled": true, "queue_rate"|' "$OF_TMP/nopow.json"
out=$("$OF_BIN" check-config "$OF_TMP/nopow.json" 2>&1)
of_log "check: $out"
of_check "check-config names services[0].dos.pow.enabled for a tor without the pow module" \
  grep -q 'services\[0\].dos.pow.enabled: this tor (0.4.9.11) was built without the pow module' <<<"$out"
of_stop_onionfront
of_check "onionfront stopped cleanly" test $? -eq 0
log2=$OF_TMP/nopow.log
of_start_onionfront "$OF_TMP/nopow.json" "$log2"
of_wait_until 20 bash -c "! kill -0 $OF_PID 2>/dev/null"
of_check "start with PoW on a tor without the module fails" bash -c "! kill -0 $OF_PID 2>/dev/null"
of_check "and says why, naming the field" grep -q 'services\[0\].dos.pow.enabled: this tor' "$log2"
of_summary
