#!/bin/bash
# The systemd units, as `make install` writes them (issue: reliability/security/deployment):
#  - `systemd-analyze verify` accepts onionfront.service and the onion-location path/service units with
#    no message at all (it reports unknown keys only as warnings, exit status 0), with the installed
#    binary behind ExecStart= and the installed man pages behind Documentation=;
#  - `systemd-analyze security --offline` puts onionfront.service's exposure at or below 1.2 ("OK"),
#    and the same check fails for the unit stripped of its sandbox (so the threshold really bites);
#  - the notify/watchdog/restart/user settings the daemon relies on are there;
#  - the sysusers.d entry creates the unit's user (in a scratch root);
#  - the daemon speaks the notify protocol as Type=notify/WatchdogSec= expect, to a datagram socket
#    standing in for systemd's (on the private network): STATUS= while tor starts, READY=1 only after tor
#    bootstrapped with the services handed over, STATUS= when the service becomes reachable,
#    RELOADING=1/READY=1 around SIGHUP, STOPPING=1 at SIGTERM, WATCHDOG=1 at half WATCHDOG_USEC; and
#    tor does not inherit NOTIFY_SOCKET;
#  - `systemctl reload` tells the truth: the unit's ExecReload= line, run as systemd runs it (its words,
#    the config path pointed at this test's file), exits 0 for a good config and non-zero with the reason
#    on stderr for a refused one (a bad value, a field that needs a restart, a '#' comment), and the
#    running config stays (the service and its port still served, as `status services` shows).
# The unit checks work without systemd as PID 1.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

threshold=12 # systemd-analyze's exposure times 10: 1.2 measured with systemd 252, "OK"

if ! command -v systemd-analyze >/dev/null; then
  of_fail "systemd-analyze is missing (tests/install-deps.sh test installs systemd)"
  of_summary
  exit 1
fi

prefix=$OF_TMP/usr
units=$prefix/lib/systemd/system
if ! make -C "$OF_ROOT" --no-print-directory install PREFIX="$prefix" >"$OF_TMP/install.log" 2>&1; then
  of_fail "make install PREFIX=$prefix"
  tail -n 20 "$OF_TMP/install.log" >&2
  of_summary
  exit 1
fi
of_check "the unit's ExecStart= is the installed binary" \
  grep -qx "ExecStart=$prefix/bin/onionfront -c /etc/onionfront/onionfront.json run" "$units/onionfront.service"

# --- verify --------------------------------------------------------------------------------------------
verify_out=$(cd "$OF_TMP" && MANPATH=$prefix/share/man systemd-analyze verify "$units/onionfront.service" \
  "$units/onionfront-onion-location.path" "$units/onionfront-onion-location.service" 2>&1)
verify_rc=$?
of_log "systemd-analyze verify: exit $verify_rc${verify_out:+, said: $verify_out}"
of_check "systemd-analyze verify exits 0" test "$verify_rc" -eq 0
of_check "systemd-analyze verify has nothing to say" test -z "$verify_out"

# A broken unit must be caught by the same check (unknown key, missing binary).
sed -e 's/^UMask=0077$/UMask=0077\nNoSuchOption=yes/' -e "s|$prefix/bin/onionfront|$OF_TMP/nonexistent|" \
  "$units/onionfront.service" >"$OF_TMP/onionfront.service"
bad_out=$(cd "$OF_TMP" && systemd-analyze verify --man=no "$OF_TMP/onionfront.service" 2>&1)
of_check "verify reports a broken copy of the unit" grep -q NoSuchOption <<<"$bad_out"

# --- security exposure ---------------------------------------------------------------------------------
sec_out=$(systemd-analyze security --offline=true --threshold="$threshold" "$units/onionfront.service" 2>&1)
sec_rc=$?
score_line=$(grep -Eo 'Overall exposure level for onionfront.service: [0-9.]+ [A-Z]+' <<<"$sec_out")
echo "$score_line"
of_log "systemd-analyze security: $score_line (threshold $((threshold / 10)).$((threshold % 10)))"
of_check "exposure is at most $((threshold / 10)).$((threshold % 10))" test "$sec_rc" -eq 0
of_check "exposure is rated OK or better" grep -Eq ' (OK|SAFE|PERFECT)$' <<<"$score_line"
if [[ $sec_rc -ne 0 ]]; then
  grep '✗' <<<"$sec_out" >&2
fi

# The same unit without its [Service] sandbox lines must fail the threshold.
awk '/^NoNewPrivileges=/ { skip = 1 } /^\[Install\]/ { skip = 0 } !skip' "$units/onionfront.service" \
  >"$OF_TMP/unsandboxed.service"
systemd-analyze security --offline=true --threshold="$threshold" "$OF_TMP/unsandboxed.service" >/dev/null 2>&1
of_check "the unsandboxed unit fails the same threshold" test $? -ne 0

# --- what the daemon relies on ---------------------------------------------------------------------------
for setting in Type=notify NotifyAccess=main WatchdogSec=30s Restart=on-failure \
  "ExecReload=$prefix/bin/onionfront -c /etc/onionfront/onionfront.json reload" \
  User=onionfront StateDirectory=onionfront StateDirectoryMode=0700 RuntimeDirectory=onionfront \
  RuntimeDirectoryMode=0710 PrivateUsers=yes ConfigurationDirectory=onionfront CapabilityBoundingSet= UMask=0077 LimitCORE=0; do
  of_check "onionfront.service has $setting" grep -qxF "$setting" "$units/onionfront.service"
done

# --- the unit's user ----------------------------------------------------------------------------------
mkdir -p "$OF_TMP/sysroot/etc"
if systemd-sysusers --root="$OF_TMP/sysroot" "$prefix/lib/sysusers.d/onionfront.conf" >"$OF_TMP/sysusers.log" 2>&1; then
  of_check "sysusers.d creates the user onionfront with home /var/lib/onionfront" \
    grep -Eq '^onionfront:x:[0-9]+:[0-9]+:[^:]*:/var/lib/onionfront:' "$OF_TMP/sysroot/etc/passwd"
else
  of_fail "systemd-sysusers: $(cat "$OF_TMP/sysusers.log")"
fi

# --- the notify protocol, from the real daemon ----------------------------------------------------------------
notify_sock=$OF_TMP/notify.sock
notify_log=$OF_TMP/notify.log
# A stand-in for systemd's socket: one line per datagram, its newlines shown as "|".
perl -e 'use Socket; $| = 1;
  socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
  bind($s, pack_sockaddr_un($ARGV[0])) or die "bind: $!";
  while (defined(recv($s, my $buf, 4096, 0))) { $buf =~ s/\n/|/g; print "$buf\n"; }' "$notify_sock" >"$notify_log" 2>&1 &
of_track_pid $!
for ((i = 0; i < 50; i++)); do [[ -S $notify_sock ]] && break; sleep 0.1; done

port=$(of_free_port)
of_start_backend alpha "$port" http || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
of_write_config "$config" "[ { \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] } ]"
OF_START=$(of_now)
NOTIFY_SOCKET=$notify_sock WATCHDOG_USEC=1000000 "$OF_BIN" -c "$config" run >>"$log" 2>&1 &
OF_PID=$!
of_track_pid "$OF_PID"

of_check "READY=1 is sent" of_wait_log "$notify_log" '^READY=1\|STATUS=running: ' 120
of_check "STATUS= told of tor's bootstrap before READY=1" \
  awk '/^STATUS=tor bootstrapping/ { b = 1 } /^READY=1/ { exit !b }' "$notify_log"
of_check "READY=1 came after tor bootstrapped" grep -q 'tor: bootstrapped in' "$log"
of_check "STATUS= tells when the service is reachable" \
  of_wait_log "$notify_log" '^STATUS=running: 1 of 1 services reachable$' 120
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
if [[ -n $tor_pid && -r /proc/$tor_pid/environ ]]; then
  of_check "tor did not inherit NOTIFY_SOCKET" \
    test -z "$(tr '\0' '\n' <"/proc/$tor_pid/environ" | grep '^NOTIFY_SOCKET=')"
else
  of_fail "no tor process to look at (state/tor/tor.pid)"
fi

# WATCHDOG=1 after the latest line matching $1 (order in the notify log, not a count per second).
pings_after() { awk -v m="$1" '$0 ~ m { n = 0; seen = 1; next } seen && /^WATCHDOG=1$/ { n++ } END { exit !(n >= 2) }' "$notify_log"; }
wait_pings_after() { # REGEX: two WATCHDOG=1 after it, waited for (bounded)
  local i
  for ((i = 0; i < 300; i++)); do pings_after "$1" && return 0; sleep 0.1; done
  return 1
}
of_check "WATCHDOG=1 keeps coming after READY=1" wait_pings_after '^READY=1'

kill -HUP "$OF_PID"
of_check "SIGHUP: RELOADING=1" of_wait_log "$notify_log" '^RELOADING=1\|STATUS=reloading ' 10
ready_after_reload() { awk '/^RELOADING=1/ { r = 1; next } r && /^READY=1/ { ok = 1 } END { exit !ok }' "$notify_log"; }
for ((i = 0; i < 50; i++)); do ready_after_reload && break; sleep 0.1; done
of_check "SIGHUP: READY=1 again after it" ready_after_reload

of_check "WATCHDOG=1 keeps coming after the reload's READY=1" wait_pings_after '^READY=1'

# --- ExecReload=, as `systemctl reload onionfront` runs it ---------------------------------------------
reload_line=$(sed -n 's/^ExecReload=//p' "$units/onionfront.service" | tail -n 1)
read -ra reload_cmd <<<"${reload_line//\/etc\/onionfront\/onionfront.json/$config}"
of_log "ExecReload=: ${reload_cmd[*]}"
cp "$config" "$OF_TMP/good.json"
exec_reload() { # LABEL: run it; its exit status in reload_rc, its stderr in $OF_TMP/reload.err
  "${reload_cmd[@]}" >"$OF_TMP/reload.out" 2>"$OF_TMP/reload.err"
  reload_rc=$?
  of_log "$1: ExecReload= exit $reload_rc: $(cat "$OF_TMP/reload.out" "$OF_TMP/reload.err")"
}
still_serving() { # the running config's service and port, from the daemon itself
  "$OF_BIN" -c "$OF_TMP/good.json" status services --json 2>/dev/null |
    python3 -c 'import json, sys; s = json.load(sys.stdin); sys.exit(not (len(s) == 1 and s[0]["name"] == "alpha" and [p["virtual"] for p in s[0]["ports"]] == [80]))'
}
exec_reload "unchanged config"
of_check "ExecReload=, a good config: exit 0" test "$reload_rc" -eq 0
of_check "ExecReload=, a good config: says it reloaded" grep -q '^reloaded: applied ' "$OF_TMP/reload.out"
# refused by the daemon: a field that needs a restart
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["tor"]["instances"] = 2; json.dump(c, open(sys.argv[2], "w"))' \
  "$OF_TMP/good.json" "$config"
exec_reload "tor.instances changed"
of_check "ExecReload=, tor.instances changed: exit non-zero" test "$reload_rc" -ne 0
of_check "... the reason on stderr" grep -q 'tor.instances changed, which needs a restart' "$OF_TMP/reload.err"
of_check "... the daemon logged the same refusal" grep -q 'reload: tor.instances changed' "$log"
# a bad value
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["services"][0]["ports"][0]["virtual"] = 70000; json.dump(c, open(sys.argv[2], "w"))' \
  "$OF_TMP/good.json" "$config"
exec_reload "a port of 70000"
of_check "ExecReload=, a port of 70000: exit non-zero" test "$reload_rc" -ne 0
of_check "... the reason on stderr names the field" grep -q 'services\[0\]\.ports\[0\]\.virtual' "$OF_TMP/reload.err"
# not JSON
{ echo '# my onion'; cat "$OF_TMP/good.json"; } >"$config"
exec_reload "a '#' comment"
of_check "ExecReload=, a '#' comment: exit non-zero" test "$reload_rc" -ne 0
of_check "... the reason on stderr" grep -q 'line 1' "$OF_TMP/reload.err"
of_check "after the refusals onionfront runs" kill -0 "$OF_PID"
of_check "... with the running config: alpha, port 80 (status services)" still_serving
cp "$OF_TMP/good.json" "$config"
of_stop_onionfront
of_check "SIGTERM: onionfront exits 0" test $? -eq 0
of_check "SIGTERM: STOPPING=1" grep -q '^STOPPING=1|STATUS=stopping' "$notify_log"
# How many per second is printed, not asserted (a busy machine sends fewer; test_sdnotify shows by the
# loop's own timer order that there are never more than one per half WATCHDOG_USEC).
elapsed=$(of_elapsed "$OF_START")
pings=$(grep -c '^WATCHDOG=1$' "$notify_log")
of_log "WATCHDOG=1 pings: $pings in $elapsed s (one per 0.5 s expected on an idle machine)"
of_check "the watchdog found the loop never blocked" test -z "$(grep 'event loop was blocked' "$log")"
of_log "notifications: $(grep -v '^WATCHDOG=1$' "$notify_log" | tr '\n' ' ')"

of_summary
