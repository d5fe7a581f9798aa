#!/bin/bash
# Logs an operator can live with (issue 18), with real tor on the private network:
#  - under a JOURNAL_STREAM that names onionfront's stderr (here a file the test reads; systemd would
#    name the journal's socket), every line starts with its syslog priority and has no timestamp: a
#    "[warn]" line of the service tor arrives as <4>, onionfront's non-anonymity warning as <4>, info as <6>,
#    except tor's own single-onion start-up warnings (exact lines), which are <5>: a healthy start's
#    lines at warning or worse are onionfront's warning (and the testnet's TestingTorNetwork one);
#  - floods are bounded in lines, counted from the log itself: 2000 connections with a bad PROXY line
#    (one warning each without a limit) and an fd-exhaustion storm on the metrics listener (libevent's
#    "Error from accept() call", once per spin without a limit); every held-back line is accounted for
#    in a "... repeated N more times" line;
#  - log-level through the status socket (the CLI): debug for 10 s, then back to the config's level by
#    itself; refused for a user the status socket does not allow;
#  - with log_format json and log_level debug, every line of a run (start, fetch, backend kill,
#    reload, log-level, SIGTERM) parses as a JSON object with time, level, module and message, service
#    and backend fields appear, and the service's secret key and tor's control cookie appear nowhere in
#    it (raw, hex or base64).
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

port_a=$(of_free_port)
metrics_port=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1
backend_pid=$OF_LAST_PID
config=$OF_TMP/onionfront.json
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"
sock=$OF_TMP/run/status.sock

# Lines of FILE from byte OFFSET on.
from_offset() { tail -c +$(($2 + 1)) "$1"; }

# --- part 1: journald priorities ---------------------------------------------------------------------
log=$OF_TMP/journal.log
: >"$log"
of_write_config "$config" "[ $svc_alpha ]" "\"metrics\": { \"listen\": \"127.0.0.1:$metrics_port\" }"
export JOURNAL_STREAM
JOURNAL_STREAM=$(stat -c '%d:%i' "$log") # st_dev:st_ino of the file onionfront's stderr is
of_start_onionfront "$config" "$log"
unset JOURNAL_STREAM
of_wait_log "$log" "service alpha: .* address [a-z2-7]{56}\.onion" 30
addr=$(grep -Eo '[a-z2-7]{56}\.onion' "$log" | head -n 1)
if [[ -z $addr ]] || ! of_fetch_until "http://$addr/" "$OF_TMP/page.html" 180; then
  of_fail "no page over the onion (address '$addr')"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
of_pass "page fetched over the onion with JOURNAL_STREAM set"
of_check "onionfront's non-anonymity warning has priority 4" grep -q '^<4>SINGLE ONION SERVICE MODE' "$log"
# tor's own start-up warnings for the single-onion mode onionfront chose are notice (priority 5), so that
# `journalctl -p warning` on a healthy start shows only onionfront's own warning; the exact lines only.
nonanon='\[warn\] (HiddenServiceNonAnonymousMode is set\. Every hidden service on this tor instance is NON-ANONYMOUS\. '
nonanon+='If the HiddenServiceNonAnonymousMode option is changed, Tor will refuse to launch hidden services from the '
nonanon+='same directories, to protect your anonymity against config errors\. This setting is for experimental use '
nonanon+='only\.|This copy of Tor was compiled or configured to run in a non-anonymous mode\. It will provide NO '
nonanon+='ANONYMITY\.)$'
# ... and so are, on a private network only (its extra torrc sets TestingTorNetwork 1), its testing lines.
testnet='\[warn\] (TestingTorNetwork is set\. |You have used DirAuthority or AlternateDirAuthority )'
of_check "tor's HiddenServiceNonAnonymousMode warning has priority 5" \
  grep -Eq '^<5>tor: .* \[warn\] HiddenServiceNonAnonymousMode is set\.' "$log"
of_check "tor's non-anonymous mode warning has priority 5" \
  grep -Eq '^<5>tor: .* \[warn\] This copy of Tor was compiled or configured to run in a non-anonymous mode\.' "$log"
of_check "any other [warn] line of the service tor has priority 4" grep -Eq '^<4>tor: .* \[warn\] ' "$log"
of_check "no other tor [warn] line below priority 4" \
  bash -c "! grep -E '^<[5-7]>tor: .* \[(warn|err)\] ' '$log' | grep -Ev '^<5>tor: [^[]*$nonanon' |
    grep -Ev '^<5>tor: [^[]*$testnet'"
of_check "tor's TestingTorNetwork warning has priority 5 on the private network" \
  grep -Eq '^<5>tor: .* \[warn\] TestingTorNetwork is set\.' "$log"
# A healthy start (up to the page fetched): the lines at warning or worse of onionfront and its service
# tor are onionfront's own warning and, as this test runs as root without tor.user, that tor runs as root
# (true here; with tor.user it is notice: test_torwarn). What tor says of the private network is notice
# (above). The probe's client tor is left out: on an 11-relay network it also warns that no node fits its
# layer-2 vanguards.
grep -E '^<[0-4]>' "$log" | grep -v '^<[0-4]>probe-tor: ' >"$OF_TMP/start-warnings.log"
grep -Ev '^<4>SINGLE ONION SERVICE MODE|^<4>tor: [^[]*\[warn\] You are running Tor as root\.' \
  "$OF_TMP/start-warnings.log" >"$OF_TMP/start-warnings-other.log"
of_check "a healthy start warns only once, onionfront's own warning (and tor run as root by the test)" \
  test ! -s "$OF_TMP/start-warnings-other.log"
head -n 5 "$OF_TMP/start-warnings-other.log" | cut -c 1-300 >&2
of_check "an info line has priority 6" grep -q '^<6>status: listening on ' "$log"
of_check "tor's notice lines have priority 5" grep -Eq '^<5>tor: .* \[notice\] Bootstrapped 100%' "$log"
of_check "no timestamps under the journal" bash -c "! grep -Eq '^(<[0-7]>)?[0-9]{4}-[0-9]{2}-[0-9]{2} ' '$log'"

# log-level: refused for a user the status socket does not allow (the same rule as reload) ...
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  before=$(grep -c 'log: log level' "$log")
  if setpriv --reuid=nobody --regid=nogroup --clear-groups "$OF_BIN" log-level -s "$sock" debug 60 \
    >"$OF_TMP/nobody.out" 2>&1; then
    of_fail "log-level as nobody was accepted: $(cat "$OF_TMP/nobody.out")"
  else
    of_check "log-level as nobody is refused by the status socket ($(head -c 120 "$OF_TMP/nobody.out"))" \
      grep -q '^onionfront log-level: ' "$OF_TMP/nobody.out"
  fi
  of_check "the refused log-level changed nothing" test "$(grep -c 'log: log level' "$log")" -eq "$before"
fi
# ... and for an allowed one: debug for 10 s (room for a loaded machine), then back to info by itself.
"$OF_BIN" -c "$config" log-level debug 10 >"$OF_TMP/loglevel.out" 2>&1
of_check "onionfront log-level debug 10 succeeds" grep -q "log level debug for 10 s, then info" "$OF_TMP/loglevel.out"
of_check "the change is logged at notice" grep -q '^<5>log: log level debug for 10 s' "$log"
"$OF_BIN" -c "$config" status >/dev/null 2>&1
of_check "debug lines (priority 7) are written meanwhile" of_wait_log "$log" '^<7>status: client pid' 5
for ((i = 0; i < 160; i++)); do # a status request makes a debug call, which ends an override that is over
  grep -q 'log: level back to info after 10 s of log-level debug' "$log" && break
  sleep 0.25
  "$OF_BIN" -c "$config" status >/dev/null 2>&1
done
of_check "the level goes back to info by itself" grep -q '^<5>log: level back to info after 10 s' "$log"
after=$(wc -c <"$log")
"$OF_BIN" -c "$config" status >/dev/null 2>&1
of_check "no debug lines after that" bash -c "! tail -c +$((after + 1)) '$log' | grep -q '^<7>'"

# Flood 1: 2000 connections to the data-path socket, each with a bad PROXY line.
flood_start=$(wc -c <"$log")
python3 - "$OF_TMP/run/proxy/alpha-80.sock" <<'EOF'
import socket, sys
for i in range(2000):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"GARBAGE IN\r\n")
    s.close()
EOF
sleep 1.5 # let the window end; the next line (or the shutdown) writes the summary
# Streams over limits.max_open_streams are closed at accept without a line of their own: counted here.
capped=$(curl -s --max-time 10 "http://127.0.0.1:$metrics_port/metrics" |
  awk '/^onionfront_proxy_rejected_streams_total\{/ && /reason="stream_limit"/ { n += $NF } END { print n + 0 }')

# Flood 2: the metrics listener without file descriptors (the review's 1.69 GB). The soft limit is
# lowered to what onionfront has open now, 30 connections wait, and after 3 s the limit goes back.
nofile=$(prlimit --pid "$OF_PID" --nofile --output SOFT --noheadings | tr -d ' ')
nfd=$(ls "/proc/$OF_PID/fd" | wc -l)
prlimit --pid "$OF_PID" --nofile="$nfd:" 2>/dev/null
python3 - "$metrics_port" <<'EOF'
import socket, sys, time
conns = []
for i in range(30):
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", int(sys.argv[1])))
    except BlockingIOError: pass
    conns.append(s)
time.sleep(3)
for s in conns: s.close()
EOF
prlimit --pid "$OF_PID" --nofile="$nofile:" 2>/dev/null
sleep 1.5
"$OF_BIN" -c "$config" status >/dev/null 2>&1 # a line after the windows: their summaries are written
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM (journal run)" test $? -eq 0
from_offset "$log" "$flood_start" >"$OF_TMP/flood.log"
python3 - "$OF_TMP/flood.log" <<'EOF' >"$OF_TMP/flood.txt"
import re, sys
lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
bad = [l for l in lines if "closing it" in l and "stream " in l and "proxy alpha:80" in l]
written = [l for l in bad if "... repeated" not in l]
held = sum(int(m.group(1)) for l in bad for m in [re.search(r"\.\.\. repeated (\d+) more time", l)] if m)
accept = [l for l in lines if "accept" in l.lower()]
acc_held = sum(int(m.group(1)) for l in accept for m in [re.search(r"\.\.\. repeated (\d+) more time", l)] if m)
print(len(lines), len(written), held, len(accept), acc_held)
EOF
read -r total written held accept_lines accept_held <"$OF_TMP/flood.txt"
of_log "flood: $total lines in all; bad PROXY lines: $written written + $held held back, $capped closed at the stream limit; accept lines: $accept_lines ($accept_held held back)"
# Not an exact sum: a client that closes before onionfront reads its line ends that stream another way.
of_check "the repeats were counted in a summary line, not written (held back > 0)" test "$held" -gt 0
of_check "2000 bad PROXY lines became at most 10% as many lines" test "$written" -le 200
of_check "the fd-exhaustion storm wrote a bounded number of accept lines (<= 100)" test "$accept_lines" -le 100
of_check "the floods together wrote fewer than 500 lines" test "$total" -lt 500
of_check "every journal line has a priority" bash -c "! grep -Ev '^<[3-7]>' '$log' | grep -q ."

# --- part 2: JSON lines at debug level ------------------------------------------------------------------
jlog=$OF_TMP/json.log
OF_LOG_LEVEL=debug of_write_config "$config" "[ $svc_alpha ]" '"log_format": "json"'
of_start_onionfront "$config" "$jlog"
if of_fetch_until "http://$addr/" "$OF_TMP/page2.html" 180; then
  of_pass "page fetched with log_format json"
else
  of_fail "no page with log_format json"
fi
of_stop_pid "$backend_pid" 5 # the backend dies: health checks and the data path log it
of_wait_log "$jlog" '"backend .*: up -> down' 30
curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -o /dev/null "http://$addr/" 2>/dev/null
kill -HUP "$OF_PID"
of_check "reload applied (json)" of_wait_log "$jlog" '"reload: applied' 10
"$OF_BIN" -c "$config" log-level notice 1 >/dev/null 2>&1
"$OF_BIN" -c "$config" log-level config >/dev/null 2>&1
cp "$OF_TMP/state/tor/control_auth_cookie" "$OF_TMP/cookie" 2>/dev/null # tor removes it when it exits
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM (json run)" test $? -eq 0
python3 - "$jlog" <<'EOF' >"$OF_TMP/json-check.txt" 2>&1
import json, sys
raw = open(sys.argv[1], "rb").read()
bad, objs = 0, []
for n, line in enumerate(raw.split(b"\n")[:-1], 1):
    try:
        o = json.loads(line.decode("utf-8"))
        assert isinstance(o, dict)
        for k in ("time", "level", "module", "message"):
            assert isinstance(o[k], str), k
        assert o["level"] in ("debug", "info", "notice", "warn", "error"), o["level"]
        objs.append(o)
    except Exception as e:
        bad += 1
        print("line %d is not a log object (%s): %r" % (n, e, line[:200]))
has = lambda f: any(f(o) for o in objs)
print("lines", len(objs))
print("bad", bad)
print("service_field", int(has(lambda o: o.get("service") == "alpha")))
print("backend_field", int(has(lambda o: o.get("backend") and o.get("service") == "alpha")))
print("tor_warn", int(has(lambda o: o["module"] == "tor" and o["level"] == "warn" and "[warn]" in o["message"])))
print("debug", int(has(lambda o: o["level"] == "debug")))
print("stopped", int(has(lambda o: o["message"] == "onionfront: stopped")))
print("reload", int(has(lambda o: o["module"] == "reload")))
EOF
field() { awk -v k="$1" '$1 == k { print $2 }' "$OF_TMP/json-check.txt"; }
of_log "json run: $(field lines) lines, $(field bad) not JSON"
of_check "every line of the json run parses as a log object" test "$(field bad)" = 0
of_check "the json run has lines (start to SIGTERM)" test "$(field lines)" -gt 50
of_check "the json run has debug lines" test "$(field debug)" = 1
of_check "lines about the service carry \"service\"" test "$(field service_field)" = 1
of_check "lines about a backend carry \"backend\" and \"service\"" test "$(field backend_field)" = 1
of_check "tor's [warn] is level warn, module tor" test "$(field tor_warn)" = 1
of_check "the reload and the shutdown are in the json log" test "$(field reload)$(field stopped)" = 11
grep -v '^lines\|^bad\|^service_field\|^backend_field\|^tor_warn\|^debug\|^stopped\|^reload' "$OF_TMP/json-check.txt" | head -5 >&2

# Key material at debug level: the secret key (tor's format: a 32-byte header, then 64 bytes) and
# tor's control cookie appear in neither run's log, in any common encoding.
python3 - "$OF_TMP/state/keys/alpha/hs_ed25519_secret_key" "$OF_TMP/cookie" \
  "$jlog" "$log" <<'EOF' >"$OF_TMP/leak.txt" 2>&1
import base64, sys
key = open(sys.argv[1], "rb").read()[32:]
cookie = open(sys.argv[2], "rb").read()
assert len(key) == 64 and len(cookie) == 32
logs = b"".join(open(p, "rb").read() for p in sys.argv[3:])
found = []
for name, secret in (("secret key", key), ("secret key, first half", key[:32]), ("cookie", cookie)):
    if not secret:
        continue
    for enc, text in (("raw", secret), ("hex", secret.hex().encode()), ("HEX", secret.hex().upper().encode()),
                      ("base64", base64.b64encode(secret)), ("base64 unpadded", base64.b64encode(secret).rstrip(b"="))):
        if text[:24] in logs:
            found.append("%s (%s)" % (name, enc))
print("checked %d+%d bytes; found: %s" % (len(key), len(cookie), ", ".join(found) or "nothing"))
sys.exit(1 if found else 0)
EOF
leak_rc=$?
of_log "$(cat "$OF_TMP/leak.txt")"
of_check "no key material or cookie in the logs at debug level" test "$leak_rc" -eq 0
of_check "no sanitizer report in onionfront's logs" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log' '$jlog'"
of_summary
