#!/bin/bash
# Faults onionfront must survive, on the private Tor network with real tor (issue: reliability):
#  1. tor killed with SIGKILL: noticed at once, restarted with backoff (1 s, growing while tor keeps
#     dying before it bootstraps, back to 1 s after a successful bootstrap), every service re-published
#     with the same keys and addresses (SETCONF again, first-upload log again); time to a working fetch.
#  2. tor hung (SIGSTOP): the keepalive command times out, tor is declared dead and restarted, and the
#     stopped process does not stay behind (its pid is gone and reaped).
#  3. the control connection closed by tor: in spawn mode tor exits when its owning controller's
#     connection closes (TAKEOWNERSHIP), so there a lost connection is a tor restart (1, 2). tor closes
#     a controller connection on its own only when it exits (tried: a SETCONF of ControlPort from a
#     second controller leaves open connections alone; a second controller's TAKEOWNERSHIP followed by
#     its close makes tor exit, i.e. fault 1 again), so this is shown in attach mode: onionfront
#     attached to a separately started single-onion tor that is restarted; onionfront must reconnect
#     with backoff, re-authenticate, re-subscribe (HS_DESC seen again) and re-apply its services.
#  4. onionfront killed with SIGKILL and started again: the old tor exits by itself (owning controller
#     gone) or, when it cannot (stopped), is replaced; never two tors on one DataDirectory; a stale
#     control socket and tor.pid do not matter; same address; the page loads.
#     A SIGTERM while tor is hung (stopped) still ends onionfront and tor promptly. A DataDirectory
#     whose lock another process holds (an unknown tor) is refused at start.
#  5. disk full or read-only: a key that cannot be created and a torrc that cannot be written at start
#     stop onionfront with a message naming the file; a torrc that cannot be rewritten at a tor restart
#     is retried with backoff; the old files stay intact and no temporary file is left.
#  6. after every restart: over the control socket, HiddenServiceSingleHopMode=1,
#     HiddenServiceNonAnonymousMode=1, SocksPort 0 and no SOCKS listener.
#  7. onionfront started with SIGCHLD, SIGTERM and SIGHUP blocked by its parent (the mask survives exec)
#     still notices tor's death (1) and obeys SIGTERM (4d).
# Recovery times are printed ("recovery: ..."), not asserted.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

MNT=$OF_TMP/small
faults_cleanup() {
  local pid
  for pid in "${OF_PIDS[@]}"; do
    of_stop_pid "$pid" 15
  done
  OF_PIDS=()
  mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
  of_cleanup
}
trap faults_cleanup EXIT
trap 'faults_cleanup; exit 130' INT TERM

# ---- helpers ------------------------------------------------------------------------------------------

# Small timeouts so hangs are detected quickly: command_timeout 5 s, backoff capped at 4 s.
spawn_tor_json() {
  printf '{ "mode": "spawn", "bootstrap_timeout": 60, "command_timeout": 5, "restart_backoff_max": 4, "extra_torrc": %s }' \
    "$(of_extra_torrc_json)"
}

# write_config FILE STATE_DIR RUN_DIR TOR_JSON SERVICES_JSON
write_config() {
  cat >"$1" <<EOF
{ "state_dir": "$2", "run_dir": "$3", "log_level": "${OF_LOG_LEVEL:-info}",
  "tor": $4,
  "services": $5 }
EOF
}

svc_json() { # name virtual_port backend_port [key_dir]
  printf '{ "name": "%s", %s"ports": [ { "virtual": %s, "target": "127.0.0.1:%s" } ] }' \
    "$1" "${4:+\"key_dir\": \"$4\", }" "$2" "$3"
}

# The pid of the tor onionfront started last, from its log.
last_tor_pid() { grep -Eo 'tor: started .* \(pid [0-9]+\)' "$1" | tail -n 1 | grep -Eo '[0-9]+\)$' | tr -d ')'; }

# wait_new_tor LOG OLD_PID TIMEOUT_S — wait until onionfront has started a tor other than OLD_PID.
wait_new_tor() {
  local i p
  for ((i = 0; i < $3 * 10; i++)); do
    p=$(last_tor_pid "$1")
    [[ -n $p && $p != "$2" ]] && return 0
    sleep 0.1
  done
  return 1
}

# Is PID a process that runs (not gone, not a zombie)?
pid_alive() {
  local st
  st=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}
# Is PID gone completely: not running and reaped (no zombie either)?
pid_reaped() { [[ ! -e /proc/$1 ]]; }
not_alive() { ! pid_alive "$1"; }

# Live tor processes started with `-f TORRC` (zombies and this script's own tools excluded).
tors_on() {
  ps -eo pid=,stat=,args= | awk -v t="$1" '$2 !~ /^Z/ && $3 ~ /(^|\/)tor$/ && index($0, "-f " t " ") { print $1 }'
}
count_tors_on() { tors_on "$1" | wc -l; }

count_lines() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

# usable_after LOG PID — a tor started after tor PID has become usable ("tor: usable again").
usable_after() {
  awk -v p="(pid $2)" 'index($0, "tor: started ") && index($0, p) { seen = 1; next }
    seen && index($0, "tor: started ") { newer = 1 } newer && /tor: usable again/ { ok = 1 } END { exit !ok }' "$1"
}

# wait_count LOG REGEX N TIMEOUT_S — until LOG has at least N lines matching REGEX.
wait_count() {
  local i
  for ((i = 0; i < $4 * 10; i++)); do
    (($(count_lines "$1" "$2") >= $3)) && return 0
    sleep 0.1
  done
  return 1
}

# check_safeguards SOCKET LABEL — the non-anonymity safeguards, asked of tor itself (fault 6).
check_safeguards() {
  local out
  out=$(of_torctl "$1" "GETCONF HiddenServiceSingleHopMode HiddenServiceNonAnonymousMode SocksPort" \
    "GETINFO net/listeners/socks" 2>&1)
  of_check "$2: HiddenServiceSingleHopMode=1" grep -qE '^250.HiddenServiceSingleHopMode=1$' <<<"$out"
  of_check "$2: HiddenServiceNonAnonymousMode=1" grep -qE '^250.HiddenServiceNonAnonymousMode=1$' <<<"$out"
  of_check "$2: SocksPort 0" grep -qE '^250.SocksPort=0$' <<<"$out"
  of_check "$2: no SOCKS listener" grep -qE '^250.net/listeners/socks=$' <<<"$out"
  if ! grep -qE '^250.HiddenServiceSingleHopMode=1$' <<<"$out"; then
    printf '%s\n' "$out" >&2
  fi
}

# probe_start NAME URL OUT — from now on, fetch URL in the background (one request at a time, each
# bounded) until one works; the time from the start to the end of that request goes to $OF_TMP/probe-NAME.
# Started right after a fault, so the measurement does not include the checks that run meanwhile.
probe_start() {
  local name=$1 url=$2 out=$3
  rm -f "$OF_TMP/probe-$name"
  (
    cpid=""
    trap '[[ -n $cpid ]] && kill "$cpid" 2>/dev/null; exit 1' TERM
    t0=$(of_now)
    while (($(date +%s) - ${t0%.*} < 150)); do
      of_fetch "$url" "$out" 15 2>/dev/null &
      cpid=$!
      if wait "$cpid"; then
        of_elapsed "$t0" >"$OF_TMP/probe-$name"
        exit 0
      fi
      sleep 0.25
    done
    exit 1
  ) &
  probe_pid=$!
  of_track_pid "$probe_pid"
  eval "probe_pid_$name=$probe_pid"
}

# fetch_timed LABEL URL OUT T0 — a client that first asks once the service is up again (the fetch starts
# after the checks that wait for the new descriptor upload): fetch until it works, print the time since T0.
fetch_timed() {
  if of_fetch_until "$2" "$3" 120; then
    of_pass "$1: a client fetch works again"
    of_log "recovery: $1: a client fetch works $(of_elapsed "$4") s after the fault (first try after the re-upload)"
    return 0
  fi
  of_fail "$1: no page within 120 s"
  return 1
}

# probe_finish NAME LABEL — wait for the probe; pass with the measured time, or fail.
probe_finish() {
  local pid_var="probe_pid_$1"
  wait "${!pid_var}" 2>/dev/null
  if [[ -s $OF_TMP/probe-$1 ]]; then
    of_pass "$2: a client fetch works again"
    of_log "recovery: $2: a client fetch works $(cat "$OF_TMP/probe-$1") s after the fault (client retrying all along)"
    return 0
  fi
  of_fail "$2: no client fetch worked within 150 s"
  return 1
}

dump_log() { of_log "--- last lines of $1"; grep -v '\[notice\]\|\[warn\] You\|TestingTorNetwork\|DirAuthority\|NON-ANONYMOUS\|NO ANONYMITY' "$1" | tail -n "${2:-25}" >&2; }

# ---- start: two services -----------------------------------------------------------------------------
port_a=$(of_free_port)
port_b=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1
of_start_backend beta "$port_b" http || exit 1

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
state=$OF_TMP/state
torrc=$state/torrc
ctl=$OF_TMP/run/control/control.sock
write_config "$config" "$state" "$OF_TMP/run" "$(spawn_tor_json)" \
  "[ $(svc_json alpha 80 "$port_a"), $(svc_json beta 8080 "$port_b") ]"

# Started with SIGCHLD, SIGTERM and SIGHUP blocked (case 1 needs SIGCHLD): onionfront unblocks them.
of_start_onionfront_blocked "$config" "$log" "CHLD TERM HUP"
of_wait_log "$log" "service beta: .* address [a-z2-7]{56}\.onion" 30
addr_a=$(of_address_from_log "$log" alpha)
addr_b=$(of_address_from_log "$log" beta)
if [[ -z $addr_a || -z $addr_b ]]; then
  of_fail "onionfront did not log the services' addresses"
  dump_log "$log"
  of_summary
  exit 1
fi
curl -sS --max-time 10 -o "$OF_TMP/direct-a.html" "http://127.0.0.1:$port_a/"
if of_fetch_until "http://$addr_a/" "$OF_TMP/a0.html" 120 && of_fetch_until "http://$addr_b:8080/" "$OF_TMP/b0.html" 60; then
  of_pass "both services answer before any fault ($(of_elapsed "$OF_START") s after start)"
else
  of_fail "the services do not answer before any fault"
  dump_log "$log"
  of_summary
  exit 1
fi
of_wait_log "$log" "service beta: descriptor uploaded" 30
check_safeguards "$ctl" "at start"
sha_keys() { sha256sum "$state"/keys/*/hs_ed25519_secret_key "$state"/keys/*/hostname 2>/dev/null; }
keys_before=$(sha_keys)

# ---- 1. tor killed with SIGKILL ---------------------------------------------------------------------------
of_log "=== 1. tor killed with SIGKILL"
published=$(count_lines "$log" "services: 2 services handed to tor")
uploaded_a=$(count_lines "$log" "service alpha: descriptor uploaded")
uploaded_b=$(count_lines "$log" "service beta: descriptor uploaded")
usable=$(count_lines "$log" "tor: usable again")
old=$(last_tor_pid "$log")
t0=$(of_now)
kill -KILL "$old"
# alpha: a client that keeps trying from the moment of the fault; beta: one that asks after the re-upload
probe_start a1 "http://$addr_a/" "$OF_TMP/a1.html"
if of_wait_log "$log" "(tor \(pid $old\) killed by signal 9|control connection lost: .*); restarting tor in 1 s" 15; then
  of_pass "SIGKILL of tor (pid $old) noticed after $(of_elapsed "$t0") s, restart in 1 s"
else
  of_fail "onionfront did not react to tor's SIGKILL (with a 1 s backoff) within 15 s"
  dump_log "$log" 10
fi
of_check "the exit status of the killed tor is logged" of_wait_log "$log" "tor \(pid $old\) killed by signal 9" 10
of_check "a new tor is started" wait_new_tor "$log" "$old" 10
new=$(last_tor_pid "$log")
of_check "the killed tor (pid $old) is reaped" of_wait_until 5 pid_reaped "$old"
of_check "tor is usable again after the restart" wait_count "$log" "tor: usable again" $((usable + 1)) 60
of_check "both services are handed to the new tor (SETCONF again)" \
  wait_count "$log" "services: 2 services handed to tor" $((published + 1)) 5
of_check "service alpha's first upload is logged again" \
  wait_count "$log" "service alpha: descriptor uploaded" $((uploaded_a + 1)) 60
of_check "service beta's first upload is logged again" \
  wait_count "$log" "service beta: descriptor uploaded" $((uploaded_b + 1)) 60
fetch_timed "SIGKILL of tor: beta" "http://$addr_b:8080/" "$OF_TMP/b1.html" "$t0"
probe_finish a1 "SIGKILL of tor: alpha"
of_check "alpha's page is the backend's byte for byte" cmp -s "$OF_TMP/direct-a.html" "$OF_TMP/a1.html"
dirs=$(of_torctl "$ctl" "GETCONF HiddenServiceDir" 2>&1)
of_check "the new tor serves both key directories" \
  bash -c 'grep -qF "HiddenServiceDir=$1" <<<"$3" && grep -qF "HiddenServiceDir=$2" <<<"$3"' _ \
  "$state/keys/alpha" "$state/keys/beta" "$dirs"
of_check "exactly one tor runs on our torrc" test "$(count_tors_on "$torrc")" -eq 1
check_safeguards "$ctl" "after the SIGKILL restart"

# Backoff: a tor that dies before it bootstraps doubles the wait; a bootstrap resets it.
of_log "=== 1b. backoff grows while tor dies before bootstrapping"
boots=$(count_lines "$log" "tor: bootstrapped in")
usable=$(count_lines "$log" "tor: usable again")
twos=$(count_lines "$log" "restarting tor in 2 s")
kill -KILL "$new"
of_check "a bootstrapped tor's death is again followed by a 1 s backoff" \
  of_wait_log "$log" "killed by signal 9; restarting tor in 1 s|control connection lost: .*; restarting tor in 1 s" 10
if wait_new_tor "$log" "$new" 10; then
  early=$(last_tor_pid "$log")
  kill -KILL "$early"
  if (($(count_lines "$log" "tor: bootstrapped in") > boots)); then
    of_log "tor $early bootstrapped before it could be killed; backoff growth not judged"
    of_pass "backoff growth (not judged: tor was too fast)"
  else
    of_check "a tor killed before it bootstrapped is restarted after 2 s" \
      wait_count "$log" "restarting tor in 2 s" $((twos + 1)) 10
  fi
  # Counted from the start of the tor after $early: when $early itself bootstrapped before its SIGKILL,
  # its own "usable again" must not pass for the next tor's.
  of_check "tor is usable again after two quick deaths" of_wait_until 60 usable_after "$log" "$early"
else
  of_fail "no tor started after the second SIGKILL"
fi
check_safeguards "$ctl" "after two quick restarts"

# ---- 2. tor hung (SIGSTOP) ------------------------------------------------------------------------------------
of_log "=== 2. tor hung (SIGSTOP)"
usable=$(count_lines "$log" "tor: usable again")
stopped=$(last_tor_pid "$log")
t0=$(of_now)
kill -STOP "$stopped"
# keepalive every 10 s + command_timeout 5 s
if of_wait_log "$log" "control connection lost: .*no reply to a command within 5\.000 s.*; restarting tor in 1 s" 20; then
  of_pass "hung tor (pid $stopped) declared dead after $(of_elapsed "$t0") s; restart in 1 s (backoff was reset by the last bootstrap)"
else
  of_fail "a hung tor was not declared dead within 20 s (or not with a 1 s backoff)"
  dump_log "$log" 10
fi
of_check "a new tor is started" wait_new_tor "$log" "$stopped" 10
of_check "the stopped tor (pid $stopped) is gone and reaped" of_wait_until 5 pid_reaped "$stopped"
of_check "onionfront logged how the stopped tor ended" grep -q "previous tor (pid $stopped) killed by signal 9" "$log"
of_check "tor is usable again after the hang" wait_count "$log" "tor: usable again" $((usable + 1)) 60
fetch_timed "SIGSTOP of tor" "http://$addr_a/" "$OF_TMP/a2.html" "$t0"
of_check "exactly one tor runs on our torrc" test "$(count_tors_on "$torrc")" -eq 1
check_safeguards "$ctl" "after the hang restart"

# ---- 4. onionfront killed with SIGKILL ----------------------------------------------------------------------
of_log "=== 4a. onionfront killed with SIGKILL: its tor exits by itself"
old=$(last_tor_pid "$log")
kill -KILL "$OF_PID"
wait "$OF_PID" 2>/dev/null
t0=$(of_now)
if of_wait_until 10 not_alive "$old"; then
  of_pass "the orphaned tor (pid $old) exited by itself $(of_elapsed "$t0") s after its owning controller died"
else
  of_fail "the orphaned tor (pid $old) still runs 10 s after onionfront died"
fi
mv "$log" "$log.1"
log_all="$log.1"
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service alpha: .* address" 30
of_check "after the restart alpha has the same address" test "$(of_address_from_log "$log" alpha)" = "$addr_a"
of_check "after the restart beta has the same address" test "$(of_address_from_log "$log" beta)" = "$addr_b"
of_check "the keys were loaded, not created" bash -c "! grep -q 'created a new key' '$log'"
of_check "tor is started again" wait_new_tor "$log" "" 10
of_check "tor bootstraps" of_wait_log "$log" "tor: bootstrapped in" 60
of_check "the service is uploaded again" of_wait_log "$log" "service alpha: descriptor uploaded" 60
fetch_timed "SIGKILL of onionfront, restarted at once (its tor exited by itself)" "http://$addr_a/" "$OF_TMP/a3.html" "$t0"
of_check "exactly one tor runs on our torrc" test "$(count_tors_on "$torrc")" -eq 1
check_safeguards "$ctl" "after onionfront's restart"

of_log "=== 4b. onionfront killed while its tor is stopped: the leftover tor is replaced"
left=$(last_tor_pid "$log")
kill -STOP "$left"
kill -KILL "$OF_PID"
wait "$OF_PID" 2>/dev/null
of_check "the stopped tor (pid $left) is still there, holding the DataDirectory" pid_alive "$left"
cat "$log" >>"$log_all"
: >"$log"
of_start_onionfront "$config" "$log"
t0=$OF_START
of_check "onionfront finds the tor from the earlier run" \
  of_wait_log "$log" "a tor from an earlier onionfront run \(pid $left\) still uses" 10
of_check "the leftover tor (pid $left) is ended" of_wait_until 15 not_alive "$left"
of_check "a new tor is started" wait_new_tor "$log" "$left" 20
of_check "tor bootstraps" of_wait_log "$log" "tor: bootstrapped in" 60
of_check "the service is uploaded again" of_wait_log "$log" "service alpha: descriptor uploaded" 60
fetch_timed "SIGKILL of onionfront with a stopped tor, restarted" "http://$addr_a/" "$OF_TMP/a4.html" "$t0"
of_check "exactly one tor runs on our torrc" test "$(count_tors_on "$torrc")" -eq 1
check_safeguards "$ctl" "after replacing the leftover tor"

of_log "=== 4c. onionfront and tor both killed: stale control socket and tor.pid"
left=$(last_tor_pid "$log")
kill -STOP "$left"
kill -KILL "$OF_PID"
wait "$OF_PID" 2>/dev/null
kill -KILL "$left"
of_wait_until 5 not_alive "$left"
of_check "a stale control socket is left behind" test -S "$ctl"
of_check "a stale tor.pid is left behind" grep -qx "$left" "$state/tor/tor.pid"
cat "$log" >>"$log_all"
: >"$log"
of_start_onionfront_blocked "$config" "$log" "CHLD TERM HUP" # 4d's SIGTERM must reach it
t0=$OF_START
of_check "tor bootstraps despite the stale files" of_wait_log "$log" "tor: bootstrapped in" 60
of_check "the service is uploaded again" of_wait_log "$log" "service beta: descriptor uploaded" 60
fetch_timed "SIGKILL of onionfront and tor, restarted" "http://$addr_b:8080/" "$OF_TMP/b5.html" "$t0"
of_check "exactly one tor runs on our torrc" test "$(count_tors_on "$torrc")" -eq 1
check_safeguards "$ctl" "after the stale-socket restart"
of_check "the key files never changed" test "$(sha_keys)" = "$keys_before"

of_log "=== 4d. SIGTERM to onionfront while its tor is hung: shutdown stays bounded"
last=$(last_tor_pid "$log")
kill -STOP "$last"
t0=$(of_now)
of_stop_onionfront
rc=$?
took=$(of_elapsed "$t0")
of_check "onionfront exits 0 on SIGTERM with its tor hung" test "$rc" -eq 0
# the removal SETCONF times out (command_timeout 5 s), then SIGTERM+SIGCONT end tor at once: tor exits
# on its own SIGTERM handling, not by the SIGKILL that would follow the 10 s grace (the mechanism is
# checked, the time only printed)
of_log "recovery: shutdown with tor hung took $took s"
of_check "the hung tor ended by SIGTERM (exited), not by the SIGKILL after the grace" \
  of_wait_log "$log" "tor: tor \(pid $last\) exited with status" 5
of_check "no SIGKILL was needed" bash -c "! grep -q 'tor (pid $last) killed by signal 9' '$log'"
of_check "its tor (pid $last) is gone and reaped" of_wait_until 5 pid_reaped "$last"
of_check "no tor runs on our torrc" test "$(count_tors_on "$torrc")" -eq 0
cat "$log" >>"$log_all"

of_log "=== 4e. a process onionfront does not know holds the DataDirectory lock: no second tor"
exec {lockfd}<"$state/tor/lock"
flock -x "$lockfd" # this shell now holds the lock as a foreign tor would (tor uses flock(2) too)
: >"$log"
of_start_onionfront "$config" "$log"
of_wait_until 15 not_alive "$OF_PID"
wait "$OF_PID"
rc=$?
exec {lockfd}<&-
of_check "with the DataDirectory locked onionfront refuses to start (exit $rc)" test "$rc" -eq 1
of_check "the error says the DataDirectory is locked by another tor" \
  grep -qE "cannot start tor: $state/tor/lock is locked: another tor is running on DataDirectory" "$log"
of_check "no tor was started" bash -c "! grep -q 'tor: started' '$log'"
cat "$log" >>"$log_all"

# ---- 3. control connection closed by tor (attach mode) ------------------------------------------------------
of_log "=== 3. attach mode: the attached tor closes the connection (restart)"
ext=$OF_TMP/ext
mkdir -p "$ext/data" "$ext/ctl"
chmod 700 "$ext" "$ext/data" "$ext/ctl"
ext_ctl=$ext/ctl/control.sock
{
  grep -v '^#' "$TESTNET_TORRC_EXTRA"
  cat <<EOF
DataDirectory $ext/data
PidFile $ext/data/tor.pid
ControlPort unix:$ext_ctl
CookieAuthentication 1
SocksPort 0
HiddenServiceSingleHopMode 1
HiddenServiceNonAnonymousMode 1
Log notice stdout
EOF
} >"$ext/torrc"
start_ext_tor() {
  tor -f "$ext/torrc" --defaults-torrc /dev/null >>"$ext/tor.log" 2>&1 &
  ext_pid=$!
  of_track_pid "$ext_pid"
  of_wait_until 30 test -S "$ext_ctl"
}
if ! start_ext_tor; then
  of_fail "the separately started tor did not open its control socket"
  tail -n 20 "$ext/tor.log" >&2
fi
port_d=$(of_free_port)
of_start_backend delta "$port_d" http || exit 1
aconfig=$OF_TMP/attach.json
alog=$OF_TMP/attach.log
write_config "$aconfig" "$OF_TMP/astate" "$OF_TMP/arun" \
  "{ \"mode\": \"attach\", \"control_socket\": \"$ext_ctl\", \"bootstrap_timeout\": 60, \"command_timeout\": 5, \"restart_backoff_max\": 4 }" \
  "[ $(svc_json delta 80 "$port_d") ]"
of_start_onionfront "$aconfig" "$alog"
of_wait_log "$alog" "service delta: .* address [a-z2-7]{56}\.onion" 30
addr_d=$(of_address_from_log "$alog" delta)
of_check "attached: the service is uploaded" of_wait_log "$alog" "service delta: descriptor uploaded" 60
if of_fetch_until "http://$addr_d/" "$OF_TMP/d0.html" 120; then
  of_pass "attached: the page loads"
else
  of_fail "attached: no page"
  dump_log "$alog"
fi
check_safeguards "$ext_ctl" "attached tor"

t0=$(of_now)
amark=$(wc -l <"$alog")
of_stop_pid "$ext_pid" 15
of_check "attached: the closed connection is noticed (reconnect in 1 s)" \
  of_wait_log "$alog" "control connection lost: .*tor closed the control connection; reconnecting in 1 s" 20
# tor stays down for a while: the reconnect attempts must back off, not spin
of_check "attached: reconnect attempts back off (1 s, then 2 s)" \
  of_wait_log "$alog" "cannot connect to tor: .*; reconnecting in 2 s" 20
# No busy retry: the failed attempts since the stop are at least the first backoff (1 s) apart, however
# long the machine took to get here (a spinning retry would log them milliseconds apart).
failed_since_stop() { (($(tail -n +"$((amark + 1))" "$alog" | grep -c "cannot connect to tor") >= 2)); }
of_wait_until 20 failed_since_stop
gaps=$(tail -n +"$((amark + 1))" "$alog" | grep -E "cannot connect to tor" | awk '
  { split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; if (n++) { g = s - last; if (min == "" || g < min) min = g } last = s }
  END { printf "%d %.2f\n", n, min == "" ? 0 : min }')
read -r attempts min_gap <<<"$gaps"
of_check "attached: no busy retry while tor is down ($attempts failed attempts, at least $min_gap s apart)" \
  awk -v n="$attempts" -v g="$min_gap" 'BEGIN { exit !(n >= 2 && g >= 0.9) }'
t_restart=$(of_now)
start_ext_tor || of_fail "the attached tor did not come back"
of_check "attached: reconnected and verified again" wait_count "$alog" "tor: verified single-hop" 2 20
of_check "attached: the service is applied again (SETCONF)" wait_count "$alog" "services: 1 service handed to tor" 2 10
of_check "attached: HS_DESC events arrive on the new connection (first upload logged again)" \
  wait_count "$alog" "service delta: descriptor uploaded" 2 60
dirs=$(of_torctl "$ext_ctl" "GETCONF HiddenServiceDir" 2>&1)
of_check "attached: the restarted tor has the service again" grep -qF "HiddenServiceDir=$OF_TMP/astate/keys/delta" <<<"$dirs"
of_log "attached: tor was down for $(awk -v a="$t0" -v b="$t_restart" 'BEGIN { printf "%.1f", b - a }') s"
fetch_timed "attach mode, tor stopped for ~3.5 s and started again" "http://$addr_d/" "$OF_TMP/d1.html" "$t0" || dump_log "$alog"
check_safeguards "$ext_ctl" "attached tor after its restart"
of_stop_onionfront
of_check "attached: onionfront exits 0 on SIGTERM" test $? -eq 0
dirs=$(of_torctl "$ext_ctl" "GETCONF HiddenServiceDir" 2>&1)
of_check "attached: the service is removed from the attached tor at shutdown" \
  bash -c '! grep -qF "$1" <<<"$2"' _ "$OF_TMP/astate/keys/delta" "$dirs"
of_stop_pid "$ext_pid" 15

# ---- 5. disk full / read-only -----------------------------------------------------------------------------------
of_log "=== 5. disk full and read-only"
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=4m,mode=0700 tmpfs "$MNT" 2>"$OF_TMP/mount.err"; then
  of_fail "cannot mount a small tmpfs for the disk-full tests: $(cat "$OF_TMP/mount.err")"
else
  sstate=$MNT/state
  storrc=$sstate/torrc
  sconfig=$OF_TMP/small.json
  slog=$OF_TMP/small.log
  write_config "$sconfig" "$sstate" "$OF_TMP/srun" "$(spawn_tor_json)" "[ $(svc_json epsilon 80 "$port_a") ]"
  fill() { dd if=/dev/zero of="$MNT/filler" bs=64k >/dev/null 2>&1; sync; }
  no_tmp_files() { [[ -z $(find "$MNT" -name '.*.tmp-*' 2>/dev/null) ]]; }

  # 5a. a new key cannot be written at start
  mkdir -m 700 "$sstate"
  fill
  of_start_onionfront "$sconfig" "$slog"
  of_wait_until 15 not_alive "$OF_PID"
  wait "$OF_PID"
  rc=$?
  of_check "disk full: onionfront refuses to start (exit $rc)" test "$rc" -eq 1
  of_check "disk full: the error names the key file and the cause" \
    grep -qE "service epsilon: $sstate/keys/epsilon/[a-z0-9_]+: .*No space left on device" "$slog"
  of_check "disk full: no secret key was written" test ! -e "$sstate/keys/epsilon/hs_ed25519_secret_key"
  of_check "disk full: no temporary file is left" no_tmp_files
  rm -f "$MNT/filler"

  # 5b. running; tor killed while the disk is full: the torrc cannot be rewritten
  : >"$slog"
  of_start_onionfront "$sconfig" "$slog"
  of_wait_log "$slog" "service epsilon: .* address [a-z2-7]{56}\.onion" 30
  addr_e=$(of_address_from_log "$slog" epsilon)
  of_check "on the small disk: tor bootstraps" of_wait_log "$slog" "tor: bootstrapped in" 60
  of_check "on the small disk: the page loads" of_fetch_until "http://$addr_e/" "$OF_TMP/e0.html" 120
  cp -p "$storrc" "$OF_TMP/torrc.saved"
  skeys=$(sha256sum "$sstate"/keys/epsilon/* | sort)
  fill
  old=$(last_tor_pid "$slog")
  t0=$(of_now)
  kill -KILL "$old"
  if of_wait_log "$slog" "cannot start tor: $storrc: write to .* failed: No space left on device; restarting tor in [0-9]+ s" 10; then
    of_pass "disk full at a tor restart: the error names the torrc and the cause"
  else
    of_fail "disk full at a tor restart: no clear error"
    dump_log "$slog" 10
  fi
  of_check "disk full: the restart is retried (backoff grows)" \
    of_wait_log "$slog" "cannot start tor: .*; restarting tor in [24] s" 10
  of_check "disk full: onionfront keeps running" pid_alive "$OF_PID"
  of_check "disk full: the old torrc is intact" cmp -s "$storrc" "$OF_TMP/torrc.saved"
  of_check "disk full: no temporary file is left" no_tmp_files
  of_check "disk full: no tor runs meanwhile" test "$(count_tors_on "$storrc")" -eq 0
  rm -f "$MNT/filler"
  t_free=$(of_now)
  of_check "space freed: tor is started again" wait_new_tor "$slog" "$old" 10
  of_check "space freed: tor is usable again" of_wait_log "$slog" "tor: usable again" 60
  of_check "space freed: the service is uploaded again" wait_count "$slog" "service epsilon: descriptor uploaded" 2 60
  fetch_timed "disk full during a tor restart, counted from freeing space" "http://$addr_e/" "$OF_TMP/e1.html" "$t_free" || dump_log "$slog"
  check_safeguards "$OF_TMP/srun/control/control.sock" "after the disk-full restart"
  of_stop_onionfront
  of_check "onionfront exits 0 after the disk-full episode" test $? -eq 0

  # 5c. stopped; the disk is full or read-only at the next start: refuse, old files intact
  cp -p "$storrc" "$OF_TMP/torrc.saved"
  fill
  cat "$slog" >>"$slog.1"
  : >"$slog"
  of_start_onionfront "$sconfig" "$slog"
  of_wait_until 15 not_alive "$OF_PID"
  wait "$OF_PID"
  rc=$?
  of_check "disk full at start: onionfront refuses to start (exit $rc)" test "$rc" -eq 1
  of_check "disk full at start: the error names the torrc and the cause" \
    grep -qE "cannot start tor: $storrc: write to .* failed: No space left on device" "$slog"
  of_check "disk full at start: the old torrc is intact" cmp -s "$storrc" "$OF_TMP/torrc.saved"
  of_check "disk full at start: the key files are intact" test "$(sha256sum "$sstate"/keys/epsilon/* | sort)" = "$skeys"
  of_check "disk full at start: no temporary file is left" no_tmp_files
  rm -f "$MNT/filler"
  mount -o remount,ro "$MNT"
  : >"$slog"
  of_start_onionfront "$sconfig" "$slog"
  of_wait_until 15 not_alive "$OF_PID"
  wait "$OF_PID"
  rc=$?
  of_check "read-only at start: onionfront refuses to start (exit $rc)" test "$rc" -eq 1
  of_check "read-only at start: the error names the torrc and the cause" \
    grep -qE "cannot start tor: $storrc: .*Read-only file system" "$slog"
  of_check "read-only at start: the old torrc is intact" cmp -s "$storrc" "$OF_TMP/torrc.saved"
  of_check "read-only at start: no tor was started" test "$(count_tors_on "$storrc")" -eq 0
  grep -hE "onionfront: |cannot start tor" "$slog" | tail -n 2 | sed 's/^/    message: /' >&2
  umount "$MNT"
fi

# ---- end ----------------------------------------------------------------------------------------------------------
of_check "no sanitizer report in onionfront's logs" \
  bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log_all' '$alog' $OF_TMP/small.log*"
of_check "no warning in the attach run besides the non-anonymity notice and the reconnect messages" \
  bash -c "! grep -E '\[(warn|error)\]' '$alog' | grep -vE 'SINGLE ONION|tor: control connection lost|cannot connect to tor|cannot use tor.s control socket'"
of_summary
