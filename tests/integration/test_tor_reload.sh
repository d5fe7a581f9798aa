#!/bin/bash
# tor reloads must not lose services (issue 15 section 5), on the private Tor network with real tor:
# tor 0.4.9.11 re-reads its torrc on SIGHUP or SIGNAL RELOAD (Debian's logrotate reloads the system tor
# daily) and drops every service added with SETCONF. onionfront must notice (CONF_CHANGED / SIGNAL RELOAD)
# and hand its services back, same keys, same address.
#  - spawn mode: `kill -HUP` the tor onionfront started (its pid from `onionfront status --json`);
#  - attach mode: `SIGNAL RELOAD` on a tor the test started, whose torrc has a service of its own and
#    gains a second one just before the reload (both must stay, next to onionfront's);
# each time, while a client fetches through the onion in a loop: onionfront logs the re-apply, tor lists
# the service's HiddenServiceDir again, a new descriptor of the same address is uploaded, the key files
# are unchanged (checksums), status says "reapplied": 1, and fetches succeed again. The number of failed
# fetches across the reload is printed (not asserted: it depends on when the client's circuit was cut).
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

port_a=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"

# status_get CONFIG EXPR — a Python expression on `onionfront status --json` (d: {"status", "services",
# ...}; svc: the first service).
status_get() {
  "$OF_BIN" -c "$1" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    svc = d["services"][0]
    print(eval(sys.argv[1]))
except Exception:
    pass' "$2"
}

# client_loop URL RESULTS STOPFILE — fetch through the onion until STOPFILE exists (at most 300 times),
# one line "<unix time> ok|fail" per fetch.
client_loop() {
  local n
  for ((n = 0; n < 300; n++)); do
    [[ -e $3 ]] && break
    if curl -sS --fail --max-time 20 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -o /dev/null "$1" \
      2>>"$2.err"; then
      echo "$(date +%s.%N) ok" >>"$2"
    else
      echo "$(date +%s.%N) fail" >>"$2"
    fi
    sleep 0.2
  done
}

# uploaded_after_reload EVENTS ADDR — EVENTS has SIGNAL RELOAD, then HS_DESC CREATED ADDR, then UPLOADED ADDR.
uploaded_after_reload() {
  awk -v a="$2" '/^650 SIGNAL RELOAD/ { r = 1 } r && $3 == "CREATED" && $4 == a { c = 1 }
    c && $3 == "UPLOADED" && $4 == a { u = 1 } END { exit !u }' "$1" 2>/dev/null
}

key_sums() { find "$1" -type f -exec sha256sum {} + | sort; }

# reload_case LABEL CONFIG LOG CTL KEYDIR RELOAD_CMD... — the checks above around one reload of tor.
reload_case() {
  local label=$1 config=$2 log=$3 ctl=$4 keydir=$5
  shift 5
  local addr keys_before keys_after events=$OF_TMP/$label-events.txt results=$OF_TMP/$label-fetches.txt
  local stop=$OF_TMP/$label-stop loop_pid ev_pid t_reload i
  of_wait_log "$log" "service alpha: .* address [a-z2-7]{56}\.onion" 30
  addr=$(of_address_from_log "$log" alpha)
  of_check "$label: service alpha has an address" test -n "$addr"
  if ! of_fetch_until "http://$addr/" "$OF_TMP/$label-0.html" 180; then
    of_fail "$label: no page over the onion before the reload"
    tail -n 30 "$log" >&2
    return 1
  fi
  of_pass "$label: page fetched before the reload"
  keys_before=$(key_sums "$keydir")

  client_loop "http://$addr/" "$results" "$stop" &
  loop_pid=$!
  of_track_pid "$loop_pid"
  of_torctl "$ctl" -e HS_DESC,CONF_CHANGED,SIGNAL -t 120 >"$events" 2>&1 &
  ev_pid=$!
  of_track_pid "$ev_pid"
  sleep 3 # a few fetches before the reload
  t_reload=$(date +%s.%N)
  of_log "$label: reloading tor: $*"
  "$@"

  of_check "$label: tor reported the reload (SIGNAL RELOAD)" of_wait_log "$events" "^650 SIGNAL RELOAD" 10
  if of_wait_log "$log" "services: tor reloaded its configuration and dropped 1 service; re-applied" 10; then
    of_pass "$label: onionfront logs that tor dropped the service and it was re-applied" \
      "(seen $(of_elapsed "$t_reload") s after the reload)"
  else
    of_fail "$label: onionfront did not log a re-apply"
  fi
  of_check "$label: tor lists the service's HiddenServiceDir again" \
    bash -c 'grep -qxF "250 HiddenServiceDir=$2" <<<"$("$1" "$3" "GETCONF HiddenServiceDir" | sed "s/^250-/250 /")"' \
    _ "$OF_TORCTL_BIN" "$keydir" "$ctl"
  # (Uploads of the descriptors from before the reload may still be arriving: only one that follows a
  # CREATED after the reload counts.)
  of_check "$label: a new descriptor of the same address is created and uploaded after the reload" \
    of_wait_until 60 uploaded_after_reload "$events" "${addr%.onion}"
  keys_after=$(key_sums "$keydir")
  of_check "$label: the key files are unchanged" test "$keys_before" == "$keys_after"
  of_check "$label: the hostname is the same address" grep -qx "$addr" "$keydir/hostname"
  of_check "$label: status reports the same address, uploaded, reapplied once" \
    test "$(status_get "$config" 'svc["address"] == "'"$addr"'" and svc["uploaded"] and svc["reapplied"] == 1')" == True

  # Let the client run on until it succeeded after the reload, and 5 s more; then stop it (bounded: one
  # fetch takes at most 20 s).
  for ((i = 0; i < 1200; i++)); do
    awk -v t="$t_reload" '$1 > t && $2 == "ok" { found = 1 } END { exit !found }' "$results" 2>/dev/null && break
    sleep 0.1
  done
  sleep 5
  touch "$stop"
  for ((i = 0; i < 250; i++)); do
    kill -0 "$loop_pid" 2>/dev/null || break
    sleep 0.1
  done
  of_stop_pid "$loop_pid" 5
  of_stop_pid "$ev_pid" 5
  local before after fails_across
  before=$(awk -v t="$t_reload" '$1 < t' "$results" | wc -l)
  after=$(awk -v t="$t_reload" '$1 >= t && $2 == "ok"' "$results" | wc -l)
  fails_across=$(grep -c fail "$results")
  of_log "$label: client loop: $(wc -l <"$results") fetches ($before before the reload), $fails_across failed" \
    "across the reload; $after succeeded after it"
  [[ $fails_across -gt 0 ]] && of_log "$label: fetch errors: $(sort "$results.err" | uniq -c | head -n 5 | tr '\n' ';')"
  of_check "$label: the client loop fetched before the reload" test "$before" -ge 1
  of_check "$label: fetches succeed again after the reload" test "$after" -ge 1
  of_check "$label: the last fetch of the loop succeeded" test "$(tail -n 1 "$results" | awk '{print $2}')" == ok
  of_check "$label: a fresh fetch after the recovery succeeds" of_fetch "http://$addr/" "$OF_TMP/$label-1.html" 30
  of_check "$label: no warnings from onionfront's own modules" \
    bash -c "! grep -E '\[warn\] (service|services|verify|descriptor)' '$log'"
}

# --- spawn mode: kill -HUP the tor onionfront started ---------------------------------------------------
config=$OF_TMP/spawn.json
log=$OF_TMP/spawn.log
of_write_config "$config" "[ $svc_alpha ]"
of_start_onionfront "$config" "$log"
of_wait_log "$log" "tor: bootstrapped in" 120
tor_pid=""
for ((i = 0; i < 10; i++)); do
  tor_pid=$(status_get "$config" 'd["status"]["tor"]["pid"] or ""')
  [[ -n $tor_pid ]] && break
  sleep 1
done
of_check "spawn: onionfront status names its tor's pid ($tor_pid)" test -n "$tor_pid"
of_check "spawn: that pid is a tor" bash -c '[[ $(cat /proc/$1/comm 2>/dev/null) == tor ]]' _ "$tor_pid"
reload_case spawn "$config" "$log" "$OF_TMP/run/control/control.sock" "$OF_TMP/state/keys/alpha" \
  kill -HUP "$tor_pid"
of_check "spawn: the same tor still runs (reloaded, not restarted)" \
  test "$(status_get "$config" 'd["status"]["tor"]["pid"]')" == "$tor_pid"
of_stop_onionfront
of_check "spawn: onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "spawn: no sanitizer report" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log'"

# --- attach mode: SIGNAL RELOAD on a tor of the operator --------------------------------------------------
ext=$OF_TMP/ext
mkdir -p "$ext/data" "$ext/ctl"
chmod 700 "$ext" "$ext/data" "$ext/ctl"
ext_ctl=$ext/ctl/control.sock
{
  grep -v '^#' "$TESTNET_TORRC_EXTRA"
  cat <<EOF
DataDirectory $ext/data
ControlPort unix:$ext_ctl
CookieAuthentication 1
SocksPort 0
HiddenServiceSingleHopMode 1
HiddenServiceNonAnonymousMode 1
Log notice stdout
HiddenServiceDir $ext/own
HiddenServicePort 80 127.0.0.1:$port_a
EOF
} >"$ext/torrc"
tor -f "$ext/torrc" --defaults-torrc /dev/null >>"$ext/tor.log" 2>&1 &
ext_pid=$!
of_track_pid "$ext_pid"
for ((i = 0; i < 300; i++)); do
  [[ -S $ext_ctl ]] && break
  sleep 0.1
done
of_check "attach: the operator's tor opened its control socket" test -S "$ext_ctl"
aconfig=$OF_TMP/attach.json
alog=$OF_TMP/attach.log
cat >"$aconfig" <<EOF
{ "state_dir": "$OF_TMP/astate", "run_dir": "$OF_TMP/arun", "log_level": "${OF_LOG_LEVEL:-info}",
  "tor": { "mode": "attach", "control_socket": "$ext_ctl", "bootstrap_timeout": 120, "command_timeout": 20 },
  "services": [ $svc_alpha ] }
EOF
of_start_onionfront "$aconfig" "$alog"
of_wait_log "$alog" "services: 1 service handed to tor" 60
# The operator adds a service of their own to the torrc, then reloads (as logrotate would, without one).
echo "HiddenServiceDir $ext/own2" >>"$ext/torrc"
echo "HiddenServicePort 80 127.0.0.1:$port_a" >>"$ext/torrc"
reload_case attach "$aconfig" "$alog" "$ext_ctl" "$OF_TMP/astate/keys/alpha" \
  of_torctl "$ext_ctl" "SIGNAL RELOAD"
dirs=$(of_torctl "$ext_ctl" "GETCONF HiddenServiceDir" 2>&1)
of_check "attach: the tor's own services (the old and the one added to its torrc) are kept beside ours" \
  bash -c 'grep -qF "HiddenServiceDir=$2/own" <<<"$1" && grep -qF "HiddenServiceDir=$2/own2" <<<"$1"' _ "$dirs" "$ext"
of_stop_onionfront
of_check "attach: onionfront exits 0 on SIGTERM" test $? -eq 0
dirs=$(of_torctl "$ext_ctl" "GETCONF HiddenServiceDir" 2>&1)
of_check "attach: at shutdown our service is removed and the tor's own stay" \
  bash -c '! grep -qF "$3" <<<"$1" && grep -qF "HiddenServiceDir=$2/own2" <<<"$1"' _ "$dirs" "$ext" "$OF_TMP/astate/keys/alpha"
of_check "attach: no sanitizer report" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$alog'"
of_stop_pid "$ext_pid" 15
of_summary
