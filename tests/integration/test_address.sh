#!/bin/bash
# Never a new onion address by accident (issue 15, section 2), on the private Tor network with real tor:
#  (a) two services publish; onionfront records their addresses (state_dir/addresses.json, 0600); it
#      stops; alpha's key directory goes (an unmounted volume); at the next start alpha is REFUSED with
#      a message naming the service, its address, the key path and what to do — no key is created —
#      while beta is published and serves its page; `onionfront status` shows the refusal;
#  (b) `onionfront new-key alpha` gives alpha a new address on purpose; the record shows old -> new;
#      a reload of the running daemon publishes it and the page loads through the new address;
#  (c) `onionfront export-key alpha FILE` writes tor's hs_ed25519_secret_key (0600); a fresh state
#      directory; `onionfront import-key alpha FILE`; onionfront started on it publishes the same
#      address and the page loads through it.
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
record=$OF_TMP/state/addresses.json
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"
svc_beta="{ \"name\": \"beta\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_b\" } ] }"
of_write_config "$config" "[ $svc_alpha, $svc_beta ]"

dump_log() { tail -n "${2:-30}" "$1" >&2; }
mode_of() { stat -c %a "$1"; }
# The addresses recorded for a service, oldest first, as "address how" lines.
recorded() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for e in d["services"].get(sys.argv[2], {}).get("addresses", []):
    print(e["address"], e["how"], e.get("replaces", "-"), "published" if "first_published" in e else "-")' "$1" "$2"; }

# --- (a) record, lose the key, refuse ----------------------------------------------------------------------
of_log "=== (a) a known service whose key went missing is refused"
of_start_onionfront "$config" "$log"
of_check "a new service's key is logged at notice with its address" \
  of_wait_log "$log" "\[notice\] service alpha: created a new key, address [a-z2-7]{56}\.onion" 30
of_wait_log "$log" "service beta: .* key, address" 30
addr_a=$(of_address_from_log "$log" alpha)
addr_b=$(of_address_from_log "$log" beta)
if [[ -z $addr_a || -z $addr_b ]]; then
  of_fail "no addresses logged"
  dump_log "$log"
  of_summary
  exit 1
fi
of_check "alpha's first upload is confirmed" of_wait_log "$log" "service alpha: descriptor uploaded" 90
of_check "beta's first upload is confirmed" of_wait_log "$log" "service beta: descriptor uploaded" 90
of_check "the page loads through alpha" of_fetch_until "http://$addr_a/" "$OF_TMP/a0.html" 120
of_stop_onionfront
of_check "onionfront exits 0" test $? -eq 0
of_check "the record exists, mode 0600" test "$(mode_of "$record")" = 600
of_check "the record has alpha's address, created, first published" \
  test "$(recorded "$record" alpha)" = "${addr_a%.onion} created - published"
of_check "the record has beta's address" grep -q "${addr_b%.onion}" "$record"

rm -rf "$OF_TMP/state/keys/alpha" # the volume is not mounted
mv "$log" "$log.1"
of_start_onionfront "$config" "$log"
refusal="service alpha: REFUSED: .*${addr_a%.onion}\.onion.*$OF_TMP/state/keys/alpha/hs_ed25519_secret_key"
if of_wait_log "$log" "$refusal" 30; then
  of_pass "alpha is refused, naming its address and key path"
else
  of_fail "no refusal naming alpha's address and key path"
  dump_log "$log"
fi
of_check "the refusal says what to do (import-key, new-key)" \
  grep -qE "service alpha: REFUSED: .*onionfront import-key alpha.*onionfront new-key alpha" "$log"
of_check "no key was created for alpha" test ! -e "$OF_TMP/state/keys/alpha"
of_check "beta keeps its address" of_wait_log "$log" "service beta: loaded its key, address $addr_b" 10
of_check "beta is published" of_wait_log "$log" "service beta: descriptor uploaded" 90
of_check "the page loads through beta" of_fetch_until "http://$addr_b/" "$OF_TMP/b1.html" 120
of_check "beta serves its own backend" grep -q "Hello from beta" "$OF_TMP/b1.html"
of_check "onionfront status shows the refusal" \
  bash -c '"$1" -c "$2" status 2>&1 | grep -q "service alpha: REFUSED"' _ "$OF_BIN" "$config"
tor_dirs() { of_torctl "$OF_TMP/run/control/control.sock" "GETCONF HiddenServiceDir" 2>&1; }
dirs=$(tor_dirs)
of_check "tor has beta's key directory" grep -qF "$OF_TMP/state/keys/beta" <<<"$dirs"
of_check "tor was never given alpha's key directory" bash -c '! grep -qF "$1" <<<"$2"' _ "$OF_TMP/state/keys/alpha" "$dirs"
of_check "the record still says alpha's address" test "$(recorded "$record" alpha | cut -d' ' -f1)" = "${addr_a%.onion}"

# --- (b) a new address on purpose ------------------------------------------------------------------------------
of_log "=== (b) new-key changes alpha's address on purpose"
"$OF_BIN" -c "$config" new-key alpha >"$OF_TMP/new-key.out" 2>&1
rc=$?
of_check "new-key exits 0 (exit $rc)" test "$rc" -eq 0
addr_n=$(grep -Eo 'address [a-z2-7]{56}\.onion' "$OF_TMP/new-key.out" | tail -n 1 | cut -d' ' -f2)
of_check "new-key prints the new address" test -n "$addr_n"
of_check "the new address is not the old one" test "$addr_n" != "$addr_a"
of_check "the record shows the change: old, then new by new-key replacing the old" \
  test "$(recorded "$record" alpha | cut -d' ' -f1-3 | tr '\n' ' ')" = \
  "${addr_a%.onion} created - ${addr_n%.onion} new-key ${addr_a%.onion} "
kill -HUP "$OF_PID"
of_check "the reload publishes the new key" of_wait_log "$log" "service alpha: loaded its key, address $addr_n" 15
of_check "reload applied" of_wait_log "$log" "reload: applied" 15
of_check "the page loads through alpha's new address" of_fetch_until "http://$addr_n/" "$OF_TMP/a2.html" 120
of_check "alpha's new address serves alpha's backend" grep -q "Hello from alpha" "$OF_TMP/a2.html"

# --- (c) export -> fresh state directory -> import: the same address ----------------------------------------------
of_log "=== (c) export-key, a fresh state directory, import-key"
keyfile=$OF_TMP/alpha.key
"$OF_BIN" -c "$config" export-key alpha "$keyfile" >"$OF_TMP/export.out" 2>&1
of_check "export-key exits 0" test $? -eq 0
of_check "the export is tor's format, 96 bytes, mode 0600" \
  bash -c 'test "$(stat -c %a:%s "$1")" = 600:96 && head -c 29 "$1" | grep -q "== ed25519v1-secret: type0 =="' _ "$keyfile"
of_check "export-key refuses to overwrite a file" bash -c '! "$1" -c "$2" export-key alpha "$3" 2>/dev/null' _ \
  "$OF_BIN" "$config" "$keyfile"
of_check "export-key never writes a key to its output" bash -c '! grep -q "ed25519v1-secret" "$1"' _ "$OF_TMP/export.out"
of_stop_onionfront
of_check "onionfront exits 0" test $? -eq 0

config2=$OF_TMP/fresh.json
log2=$OF_TMP/fresh.log
sed "s|\"$OF_TMP/state\"|\"$OF_TMP/state2\"|" "$config" >"$config2"
"$OF_BIN" -c "$config2" import-key alpha "$keyfile" >"$OF_TMP/import.out" 2>&1
of_check "import-key into the fresh state directory exits 0" test $? -eq 0
of_check "import-key prints the same address" grep -q "$addr_n" "$OF_TMP/import.out"
of_check "the fresh record says alpha was imported" \
  test "$(recorded "$OF_TMP/state2/addresses.json" alpha | cut -d' ' -f1-2)" = "${addr_n%.onion} import-key"
of_start_onionfront "$config2" "$log2"
of_check "onionfront on the fresh state loads the imported key" \
  of_wait_log "$log2" "service alpha: loaded its key, address $addr_n" 30
of_check "the page loads through the imported key's address" of_fetch_until "http://$addr_n/" "$OF_TMP/a3.html" 120
of_stop_onionfront
of_check "onionfront exits 0" test $? -eq 0
of_check "no sanitizer report in onionfront's logs" \
  bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log' '$log.1' '$log2'"
of_summary
