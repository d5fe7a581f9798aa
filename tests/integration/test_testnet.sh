#!/usr/bin/env bash
# tests/integration/test_testnet.sh -- end-to-end test of tests/testnet/testnet.sh
# against Debian's real tor, on 127.0.0.1 only.
#
# Owns: one private network in a temporary directory (base port
# TESTNET_SELFTEST_BASE_PORT, default 19500), one extra single-onion-service tor,
# one python3 http.server, and their cleanup by PID. Checks start/stop/restart,
# env, status, stop-relay/start-relay, run (exit code and SIGTERM), port
# collisions, recycled-PID safety, exit and single-onion requests through the
# client's SocksPort.
# Does not own: the testnet.sh implementation, onionfront itself.
#
# Prints one line per check and ends with "N passed, N failed, N skipped";
# exits non-zero if any check failed. Every wait is bounded.

set -u -o pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
TESTNET="$HERE/../testnet/testnet.sh"
BASE=${TESTNET_SELFTEST_BASE_PORT:-19500}
# Only this script picks base ports: a TESTNET_BASE_PORT from the caller would
# clash with the one recorded in the test network's directory.
unset TESTNET_BASE_PORT
WORK=$(mktemp -d /tmp/testnet-selftest.XXXXXX) || exit 1
chmod 700 "$WORK"
NET="$WORK/net"
SVC="$WORK/svc"
HTTP_PORT=$((BASE + 90))
TOKEN="testnet-token-$$-$RANDOM$RANDOM"

PASS=0
FAIL=0
SKIP=0
HTTP_PID=
SLEEP_PID=
RUN_PID=
PY=

ok() { PASS=$((PASS + 1)); printf 'ok - %s\n' "$*"; }
not_ok() { FAIL=$((FAIL + 1)); printf 'not ok - %s\n' "$*"; }
skip() { SKIP=$((SKIP + 1)); printf 'skip - %s\n' "$*"; }
check() { # check DESCRIPTION CMD ARGS...
	local what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
elapsed() { local a=${1/./} b=${2/./}; local d=$(( (10#$b - 10#$a) / 100000 )); printf '%d.%d' $((d / 10)) $((d % 10)); }

# PIDs of processes whose command line mentions $1 (a path under WORK).
pids_mentioning() {
	local p
	for p in /proc/[0-9]*; do
		[[ -r $p/cmdline ]] || continue
		if tr '\0' '\n' 2>/dev/null < "$p/cmdline" | grep -qF -- "$1"; then
			printf '%s\n' "${p#/proc/}"
		fi
	done
}

# Stop the service tor by its PID file, checking it is that tor.
stop_service_tor() {
	local pid i
	[[ -r $SVC/pid ]] || return 0
	read -r pid < "$SVC/pid" || return 0
	tr '\0' '\n' 2>/dev/null < "/proc/$pid/cmdline" | grep -qxF -- "$SVC/torrc" || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		tr '\0' '\n' 2>/dev/null < "/proc/$pid/cmdline" | grep -qxF -- "$SVC/torrc" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

kill_child() { # kill_child PID: our own child, TERM then KILL
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	kill_child "$RUN_PID"
	stop_service_tor
	kill_child "$HTTP_PID"
	kill_child "$SLEEP_PID"
	"$TESTNET" stop "$NET" > /dev/null 2>&1
	"$TESTNET" stop "$WORK/net2" > /dev/null 2>&1
	local left
	left=$(pids_mentioning "$WORK")
	if [[ -n $left ]]; then
		echo "warning: processes still mention $WORK: $left" >&2
	fi
	if [[ ${TESTNET_SELFTEST_KEEP:-0} == 1 ]]; then
		echo "kept $WORK"
	else
		rm -rf -- "$WORK"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

finish() {
	printf '%d passed, %d failed, %d skipped\n' "$PASS" "$FAIL" "$SKIP"
	(( FAIL == 0 ))
	exit $?
}

# ---------------------------------------------------------------- helpers

# Python is optional: it serves HTTP and speaks to control ports. Use the real
# interpreter, not a wrapper script, so that $! is the python process.
if command -v python3 > /dev/null 2>&1; then
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PY=
fi

# A tiny control-port client: ctl SOCKET COOKIE CMD... prints the replies.
cat > "$WORK/ctl.py" <<'PYEOF'
import socket, sys
path, cookie = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(path)
f = s.makefile("rwb")
def cmd(c):
    f.write(c.encode() + b"\r\n"); f.flush()
    out = []
    while True:
        line = f.readline().decode().rstrip("\r\n")
        if not line:
            sys.exit("control connection closed")
        out.append(line)
        if line[3:4] == "+":          # data block ends with "."
            while True:
                l = f.readline().decode().rstrip("\r\n")
                out.append(l)
                if l == ".":
                    break
        elif line[3:4] == " ":
            return out
with open(cookie, "rb") as c:
    r = cmd("AUTHENTICATE " + c.read().hex())
if not r[-1].startswith("250"):
    sys.exit("AUTHENTICATE failed: %r" % r)
for c in sys.argv[3:]:
    for l in cmd(c):
        print(l)
PYEOF

ctl() { timeout 20 "$PY" "$WORK/ctl.py" "$@"; }

# PIDs of the children of $1 whose command name is $2.
children_of() {
	local p stat
	for p in /proc/[0-9]*; do
		read -r stat 2>/dev/null < "$p/stat" || continue
		# pid (comm) state ppid ...; comm has no spaces for the ones we look for
		set -- "$1" "$2" $stat
		[[ $6 == "$1" && $4 == "($2)" ]] && printf '%s\n' "${p#/proc/}"
	done
}

# TCP ports on which something listens (decimal, one per line).
listening_ports() {
	awk '$4 == "0A" { n = split($2, a, ":"); print a[n] }' /proc/net/tcp /proc/net/tcp6 |
		while read -r h; do printf '%d\n' "0x$h"; done
}

# Nicknames that the client's consensus lists as Running.
consensus_running() {
	local f="$NET/client/data/cached-consensus"
	[[ -s $f ]] || f="$NET/client/data/cached-microdesc-consensus"
	awk '/^r / { nick = $2 } /^s / && / Running/ { print nick }' "$f" 2>/dev/null
}

# ---------------------------------------------------------------- tests

echo "# testnet selftest in $WORK, base port $BASE"

# 1. fresh start
t0=$(now)
out=$(TESTNET_BASE_PORT=$BASE timeout 200 "$TESTNET" start "$NET" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "fresh start exits 0" test "$rc" -eq 0
check "start reports the bootstrap time" grep -q 'client bootstrapped in [0-9]*\.[0-9] s' <<< "$out"
echo "# fresh start took $(elapsed "$t0" "$(now)") s in all"
if (( rc != 0 )); then
	echo "# the network did not start; skipping the rest"
	finish
fi

# 2. status
out=$("$TESTNET" status "$NET")
rc=$?
check "status exits 0 with all nodes running" test "$rc" -eq 0
check "status lists 12 running nodes" test "$(grep -c ' running ' <<< "$out")" -eq 12

# 3. env
envout=$("$TESTNET" env "$NET")
check "env exits 0" test $? -eq 0
eval "$envout"
check "TESTNET_DIR is the state directory" test "${TESTNET_DIR:-}" = "$NET"
check "TESTNET_SOCKS_PORT is base+30" test "${TESTNET_SOCKS_PORT:-}" = "$((BASE + 30))"
check "TESTNET_CLIENT_CONTROL is a unix socket" test -S "${TESTNET_CLIENT_CONTROL:-/nonexistent}"
check "TESTNET_CLIENT_COOKIE exists (32 bytes)" test "$(stat -c %s "${TESTNET_CLIENT_COOKIE:-/nonexistent}" 2>/dev/null)" = 32
check "TESTNET_RELAY_COUNT is 8" test "${TESTNET_RELAY_COUNT:-}" = 8
check "relays file has 8 lines with 40-hex fingerprints" \
	test "$(grep -cE '^[1-8] tnrelay[1-8] [0-9A-F]{40} [0-9]+ /' "${TESTNET_RELAYS_FILE:-/nonexistent}")" -eq 8
fingerprints() { awk '{ print $2, $3 }' "$NET/relays.txt" 2>/dev/null; }
fps_fresh=$(fingerprints)
check "torrc-extra has 3 DirAuthority lines" test "$(grep -c '^DirAuthority ' "${TESTNET_TORRC_EXTRA:-/nonexistent}")" -eq 3
check "torrc-extra sets TestingTorNetwork and no SocksPort" \
	bash -c 'grep -qx "TestingTorNetwork 1" "$1" && ! grep -qi "^SocksPort" "$1"' _ "${TESTNET_TORRC_EXTRA:-/nonexistent}"
socks_ok=1
(exec 3<> "/dev/tcp/127.0.0.1/$TESTNET_SOCKS_PORT") 2>/dev/null || socks_ok=0
check "client SocksPort accepts TCP connections" test "$socks_ok" -eq 1

# 4. idempotent start
t0=$(now)
out=$(timeout 60 "$TESTNET" start "$NET" 2>&1)
rc=$?
check "start on a running network exits 0 and says so" \
	bash -c '[[ $1 -eq 0 ]] && grep -q "already running" <<< "$2"' _ "$rc" "$out"
echo "# idempotent start took $(elapsed "$t0" "$(now)") s"

# 5. a second network on the same ports is refused and leaves nothing behind
out=$(TESTNET_BASE_PORT=$BASE timeout 60 "$TESTNET" start "$WORK/net2" 2>&1)
rc=$?
check "a second network on busy ports is refused" test "$rc" -ne 0
check "the refusal names the busy port" grep -q "port $BASE .*already in use" <<< "$out"
check "the refused network left no process" test -z "$(pids_mentioning "$WORK/net2")"

# 6. control ports (needs python3 for a unix-socket client)
if [[ -n $PY ]]; then
	out=$(ctl "$TESTNET_CLIENT_CONTROL" "$TESTNET_CLIENT_COOKIE" "GETINFO status/bootstrap-phase" 2>&1)
	check "client control port: cookie auth + bootstrap PROGRESS=100" grep -q 'PROGRESS=100' <<< "$out"
	read -r _ _ _ _ relay1_ctl < <(sed -n '1p' "$TESTNET_RELAYS_FILE")
	out=$(ctl "$relay1_ctl" "$NET/relay1/data/control_auth_cookie" "GETINFO config-file" 2>&1)
	check "relay1 control port answers GETINFO" grep -qF "config-file=$NET/relay1/torrc" <<< "$out"
else
	skip "control-port checks: python3 not installed"
fi

# 7. a request through an exit to a local HTTP server, and 8. to a single onion
http_ok=0
if [[ -z $PY ]]; then
	skip "exit request: python3 not installed (no HTTP backend)"
	skip "single onion request: python3 not installed (no HTTP backend)"
elif grep -qx "$HTTP_PORT" < <(listening_ports); then
	skip "exit and onion requests: HTTP port $HTTP_PORT is in use"
else
	mkdir -p "$WORK/www"
	printf '%s\n' "$TOKEN" > "$WORK/www/token.txt"
	"$PY" -m http.server "$HTTP_PORT" --bind 127.0.0.1 --directory "$WORK/www" > "$WORK/http.log" 2>&1 &
	HTTP_PID=$!
	for ((i = 0; i < 50; i++)); do
		if curl -s --max-time 2 "http://127.0.0.1:$HTTP_PORT/token.txt" 2>/dev/null | grep -qxF "$TOKEN"; then
			http_ok=1
			break
		fi
		sleep 0.2
	done
	check "local HTTP backend serves the token" test "$http_ok" -eq 1
fi

if (( http_ok )); then
	t0=$(now)
	body=$(curl -s --max-time 30 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" \
		"http://127.0.0.1:$HTTP_PORT/token.txt" 2>&1)
	check "exit request through the client reaches 127.0.0.1 ($(elapsed "$t0" "$(now)") s)" \
		test "$body" = "$TOKEN"

	# The extra tor: torrc-extra + single onion service, no SocksPort.
	mkdir -p -m 700 "$SVC" "$SVC/data"
	cat > "$SVC/torrc" <<EOF
%include $TESTNET_TORRC_EXTRA
DataDirectory $SVC/data
PidFile $SVC/pid
RunAsDaemon 1
Log notice file $SVC/notice.log
ShutdownWaitLength 0
SocksPort 0
ControlPort unix:$SVC/control
CookieAuthentication 1
HiddenServiceSingleHopMode 1
HiddenServiceNonAnonymousMode 1
HiddenServiceDir $SVC/hs
HiddenServicePort 80 127.0.0.1:$HTTP_PORT
EOF
	t0=$(now)
	tor --defaults-torrc /dev/null -f "$SVC/torrc" > "$SVC/stdout.log" 2>&1 < /dev/null
	rc=$?
	check "single-onion tor with torrc-extra starts" test "$rc" -eq 0
	onion=
	for ((i = 0; i < 100; i++)); do
		[[ -s $SVC/hs/hostname ]] && { read -r onion < "$SVC/hs/hostname"; break; }
		sleep 0.1
	done
	check "single onion has a hostname" test -n "$onion"
	got=
	if [[ -n $onion ]]; then
		deadline=$(( ${t0%.*} + 120 ))
		while (( $(date +%s) < deadline )); do
			got=$(curl -s --max-time 30 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" \
				"http://$onion/token.txt" 2>/dev/null)
			[[ $got == "$TOKEN" ]] && break
			sleep 1
		done
	fi
	check "request to the single onion through the client SocksPort ($(elapsed "$t0" "$(now)") s after its tor started)" \
		test "$got" = "$TOKEN"
	t1=$(now)
	got=$(curl -s --max-time 30 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" "http://$onion/token.txt" 2>/dev/null)
	check "second request to the single onion ($(elapsed "$t1" "$(now)") s)" test "$got" = "$TOKEN"
	circs=$(ctl "$SVC/control" "$SVC/data/control_auth_cookie" "GETINFO circuit-status" 2>&1)
	check "the service has a one-hop HS_SERVICE_INTRO circuit (single onion)" \
		bash -c 'awk "/PURPOSE=HS_SERVICE_INTRO/ && \$2 == \"BUILT\" && \$3 !~ /,/" <<< "$1" | grep -q .' _ "$circs"
	stop_service_tor
fi

# 9. stop-relay / start-relay
relay_pid=$(cat "$NET/relay1/pid" 2>/dev/null)
out=$(timeout 30 "$TESTNET" stop-relay "$NET" 1 2>&1)
check "stop-relay 1 exits 0" test $? -eq 0
check "relay1's tor is gone" bash -c '! grep -qxF "$1" < <(tr "\0" "\n" 2>/dev/null < /proc/$2/cmdline)' _ "$NET/relay1/torrc" "${relay_pid:-0}"
out=$("$TESTNET" status "$NET")
rc=$?
check "status exits 3 with relay1 stopped" test "$rc" -eq 3
check "status shows relay1 stopped and 11 running" \
	bash -c 'grep -q "^relay1 .* stopped" <<< "$1" && [[ $(grep -c " running " <<< "$1") -eq 11 ]]' _ "$out"
closed=1
grep -qx "$(sed -n 's/^1 [^ ]* [^ ]* \([0-9]*\) .*/\1/p' "$TESTNET_RELAYS_FILE")" < <(listening_ports) && closed=0
check "relay1's ORPort is closed" test "$closed" -eq 1
# Authorities run with AuthDirTestReachability 0, so they keep voting a stopped
# relay Running: it stays in the consensus (see tests/testnet/README.md).
if consensus_running | grep -qx tnrelay1; then
	echo "# info: tnrelay1 is still listed Running in the client's consensus after stop-relay"
fi
out=$(timeout 30 "$TESTNET" start-relay "$NET" 1 2>&1)
check "start-relay 1 exits 0" test $? -eq 0
check "relay1 runs again" bash -c '"$1" status "$2" | grep -q "^relay1 .* running"' _ "$TESTNET" "$NET"
t0=$(now)
out=$(timeout 200 "$TESTNET" start "$NET" 2>&1)
rc=$?
back=0
(( rc == 0 )) && consensus_running | grep -qx tnrelay1 && back=1
check "start waits until tnrelay1 is back in the consensus ($(elapsed "$t0" "$(now)") s)" test "$back" -eq 1
if (( !back )); then
	printf '# start (exit %d) said: %s\n' "$rc" "${out//$'\n'/ | }"
	for n in client auth1 relay1; do # the network is removed at the end: keep its story here
		tail -n 6 "$NET/$n/notice.log" 2>/dev/null | sed "s/^/# $n: /"
	done
fi

# 10. stop
out=$(timeout 60 "$TESTNET" stop "$NET" 2>&1)
check "stop exits 0" test $? -eq 0
check "stop leaves no process of the network" test -z "$(pids_mentioning "$NET/")"
"$TESTNET" status "$NET" > /dev/null
check "status exits 3 when stopped" test $? -eq 3

# 11. a recycled PID is not killed
sleep 300 &
SLEEP_PID=$!
echo "$SLEEP_PID" > "$NET/relay2/pid"
"$TESTNET" stop "$NET" > /dev/null 2>&1
check "stop does not kill a foreign process whose PID is in a pid file" kill -0 "$SLEEP_PID"
kill_child "$SLEEP_PID"
SLEEP_PID=
rm -f "$NET/relay2/pid"

# 12. restart with state
t0=$(now)
out=$(timeout 200 "$TESTNET" start "$NET" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
check "restart with state exits 0" test "$rc" -eq 0
echo "# restart with state took $(elapsed "$t0" "$(now)") s"
# What "with state" means, checked as an outcome rather than a time: the relays keep their keys.
check "restart with state keeps the relays' identities (the fresh start's fingerprints)" \
	test -n "$fps_fresh" -a "$(fingerprints)" = "$fps_fresh"
"$TESTNET" stop "$NET" > /dev/null 2>&1

# 13. run: exit code, environment, stop afterwards
t0=$(now)
timeout 200 "$TESTNET" run "$NET" -- bash -c \
	'[[ -n $TESTNET_SOCKS_PORT && -S $TESTNET_CLIENT_CONTROL ]] && exit 7; exit 1' > "$WORK/run.log" 2>&1
rc=$?
check "run passes the environment and returns CMD's exit code 7 ($(elapsed "$t0" "$(now)") s)" test "$rc" -eq 7
check "run stops the network afterwards" test -z "$(pids_mentioning "$NET/")"

# 14. run is cleaned up on SIGTERM
"$TESTNET" run "$NET" -- sleep 300 > "$WORK/run2.log" 2>&1 &
RUN_PID=$!
# Bounded like the other starts (200 s): a loaded machine may take long, the outcome is what counts.
up=0
deadline=$((SECONDS + 200))
while ((SECONDS < deadline)); do
	if grep -q 'consensus lists all' "$WORK/run2.log" && [[ -n $(children_of "$RUN_PID" sleep) ]]; then
		up=1
		break
	fi
	kill -0 "$RUN_PID" 2>/dev/null || break
	sleep 0.1
done
check "run starts the network and CMD" test "$up" -eq 1
((up)) || sed 's/^/# run2.log: /' "$WORK/run2.log" | tail -n 30
run_child=$(children_of "$RUN_PID" sleep)
kill -TERM "$RUN_PID"
stopped=0
for ((i = 0; i < 300; i++)); do
	kill -0 "$RUN_PID" 2>/dev/null || { stopped=1; break; }
	sleep 0.1
done
wait "$RUN_PID" 2>/dev/null
rc=$?
RUN_PID=
check "run exits promptly on SIGTERM (status $rc)" test "$stopped" -eq 1
check "run stopped the network on SIGTERM" test -z "$(pids_mentioning "$NET/")"
check "run stopped CMD on SIGTERM" bash -c '[[ -z $1 ]] || ! kill -0 "$1" 2>/dev/null' _ "$run_child"

finish
