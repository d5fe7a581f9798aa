#!/usr/bin/env bash
# tests/testnet/testnet.sh -- a private Tor network on 127.0.0.1 for integration
# tests, `make demo` and benchmarks: 3 directory authorities, 8 relays (all voted
# Guard, HSDir and Exit; another count with TESTNET_RELAYS when the network is
# created) and 1 client with a SocksPort, from Debian's unmodified tor and
# tor-gencert.
#
# Owns: key and torrc generation in a state directory, starting/stopping those
# tor processes by the PIDs they recorded, waiting for the client's bootstrap,
# and printing the variables other tools need to join the network.
# Latency mode (TESTNET_DELAY_MS=N > 0 at start): one delayfwd process
# (tests/tools/delayfwd.c, started and stopped by its recorded PID) listens on
# every authority's and relay's advertised ORPort and forwards to the node's
# real, NoAdvertise ORPort with N ms added in each direction, so every tor link
# (relay-relay, client-relay, service-relay) gets the delay once.
# Does not own: any tor it did not start (e.g. onionfront's own tor, which joins
# with the lines in $TESTNET_TORRC_EXTRA), the public Tor network (never
# contacted: every address is 127.0.0.1).
#
# Needs only bash, coreutils, util-linux (flock, setsid), tor and tor-gencert
# (and build/tools/delayfwd in latency mode).
# See tests/testnet/README.md for usage and measured timings.

set -u -o pipefail

readonly TN_NAME=testnet
readonly TN_AUTHS=3
readonly TN_DEFAULT_RELAYS=8
readonly TN_BLOCK_RELAYS=8                # relays whose ports lie in base .. base+49
readonly TN_MAX_RELAYS=100
readonly TN_FORMAT=1                      # bump when the on-disk layout changes
readonly TN_DEFAULT_BASE_PORT=19000
# The relay count of the network being handled: recorded in DIR/testnet.conf at
# creation (TESTNET_RELAYS, default 8); set by tn_load_base.
TN_RELAYS=$TN_DEFAULT_RELAYS
TN_BOOT_TIMEOUT=${TESTNET_BOOTSTRAP_TIMEOUT:-120}
TN_STOP_TIMEOUT=${TESTNET_STOP_TIMEOUT:-5}
TN_TOR=${TESTNET_TOR:-tor}
TN_GENCERT=${TESTNET_TOR_GENCERT:-tor-gencert}
TN_DELAYFWD=${TESTNET_DELAYFWD:-$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)/build/tools/delayfwd}
# One-way delay (ms) per tor link of the network being handled; set by tn_load_delay.
TN_DELAY=0
# The authorities' V3AuthVotingInterval (s) of the network being handled; set by tn_load_voting.
TN_VOTING=10

# ---------------------------------------------------------------- helpers

tn_say() { printf '%s: %s\n' "$TN_NAME" "$*"; }
tn_err() { printf '%s: error: %s\n' "$TN_NAME" "$*" >&2; }
tn_die() { tn_err "$@"; exit 1; }

# Set by a trapped SIGINT/SIGTERM/SIGHUP during `start`: stop, do not leave
# half a network behind.
TN_ABORT=0

# Wait for our child $1 and return its status, even if a trapped signal
# interrupts `wait` (which then returns > 128 while the child still runs).
tn_wait_pid() {
	local r
	while :; do
		wait "$1"
		r=$?
		(( r > 128 )) && kill -0 "$1" 2>/dev/null && continue
		return $r
	done
}

tn_usage() {
	cat <<'EOF'
usage: testnet.sh COMMAND [ARGS]
  start DIR              create (first use) or restart the network in DIR and
                         wait until the client has bootstrapped
  stop DIR               stop every node of DIR (SIGTERM, then SIGKILL)
  run DIR -- CMD ARGS... start, export the variables of `env`, run CMD, stop;
                         exit with CMD's status
  env DIR                print shell-sourceable TESTNET_* variables
  status DIR             list the nodes and whether they run (exit 0 = all run)
  stop-relay DIR N       stop relay N (1..8, or the network's relay count)
  start-relay DIR N      start relay N
  selftest               run tests/integration/test_testnet.sh
environment: TESTNET_BASE_PORT (default 19000; ports base..base+49 are used, and
  with more than 8 relays also base+100..base+99+2*(relays-8)),
  TESTNET_RELAYS (creation of a network: its relay count, 4-100, default 8;
  recorded in DIR, a different value for an existing DIR is refused),
  TESTNET_BOOTSTRAP_TIMEOUT (s, default 120), TESTNET_STOP_TIMEOUT (s, default 5),
  TESTNET_DELAY_MS (start: ms added per tor link and direction by a delayfwd in
  front of every ORPort; default 0 = none), TESTNET_DELAYFWD (its binary),
  TESTNET_VOTING_INTERVAL (start of a new or stopped network: the authorities'
  voting interval, 10-60 s, default 10; Onionbalance's --is-testnet needs 20)
EOF
}

# Seconds since the epoch with microseconds, from bash itself.
tn_now() { printf '%s' "${EPOCHREALTIME/,/.}"; }

# Print B - A (both from tn_now) with one decimal.
tn_elapsed() {
	local a=${1/./} b=${2/./}
	local d=$(( (10#$b - 10#$a) / 100000 ))
	printf '%d.%d' $((d / 10)) $((d % 10))
}

# Node names in start order: authorities, relays, client.
tn_nodes() {
	local i
	for ((i = 1; i <= TN_AUTHS; i++)); do printf 'auth%d\n' "$i"; done
	for ((i = 1; i <= TN_RELAYS; i++)); do printf 'relay%d\n' "$i"; done
	printf 'client\n'
}

# Index of an authority or of one of the first 8 relays, the nodes whose ports
# lie in base .. base+49: auth1..3 -> 0..2, relay1..8 -> 3..10.
tn_index() {
	case $1 in
	auth*) printf '%d' $(( ${1#auth} - 1 )) ;;
	relay*) printf '%d' $(( TN_AUTHS + ${1#relay} - 1 )) ;;
	esac
}

tn_nick() {
	case $1 in
	auth*) printf 'tnauth%s' "${1#auth}" ;;
	relay*) printf 'tnrelay%s' "${1#relay}" ;;
	client) printf 'tnclient' ;;
	esac
}

# Port plan (deterministic from the base port B and the relay count R; the
# README has the table):
#   B+0..B+10   ORPort of auth1..3, relay1..8
#   B+20..B+22  DirPort of auth1..3
#   B+30        client SocksPort
#   B+31..B+41  latency mode only: the real (NoAdvertise) ORPort of auth1..3,
#               relay1..8; delayfwd then listens on B+0..B+10 and forwards here
#   B+42..B+49  reserved
#   B+50..B+99  never used: callers put their own servers there (the benches'
#               backends at B+60, the self-test's HTTP server at B+90)
#   only with R > 8, E = R - 8 relays more:
#   B+100..B+99+E      ORPort of relay9..R
#   B+100+E..B+99+2E   latency mode only: their real (NoAdvertise) ORPorts
# tn_orport is the advertised ORPort (in DirAuthority lines, relays.txt);
# tn_listen_orport the port tor itself listens on.
tn_orport() {
	local r=${1#relay}
	if [[ $1 == relay* ]] && (( r > TN_BLOCK_RELAYS )); then
		printf '%d' $(( TN_BASE + 100 + r - TN_BLOCK_RELAYS - 1 ))
	else
		printf '%d' $(( TN_BASE + $(tn_index "$1") ))
	fi
}
tn_listen_orport() {
	local r=${1#relay}
	if (( TN_DELAY == 0 )); then
		tn_orport "$1"
	elif [[ $1 == relay* ]] && (( r > TN_BLOCK_RELAYS )); then
		printf '%d' $(( TN_BASE + 100 + TN_RELAYS - TN_BLOCK_RELAYS + r - TN_BLOCK_RELAYS - 1 ))
	else
		printf '%d' $(( TN_BASE + 31 + $(tn_index "$1") ))
	fi
}
# One past the highest port the network may use (in either mode).
tn_port_end() {
	if (( TN_RELAYS > TN_BLOCK_RELAYS )); then
		printf '%d' $(( TN_BASE + 100 + 2 * (TN_RELAYS - TN_BLOCK_RELAYS) ))
	else
		printf '%d' $(( TN_BASE + 50 ))
	fi
}
tn_dirport() { printf '%d' $(( TN_BASE + 20 + $(tn_index "$1") )); }
tn_socksport() { printf '%d' $(( TN_BASE + 30 )); }

# Ports node $1 listens on, one per line.
tn_node_ports() {
	case $1 in
	auth*) tn_listen_orport "$1"; echo; tn_dirport "$1"; echo ;;
	relay*) tn_listen_orport "$1"; echo ;;
	client) tn_socksport; echo ;;
	esac
}

# Print the TCP ports (decimal) on which some socket listens, v4 or v6, one per
# line. Reads /proc/net/tcp{,6} so that iproute2 is not needed.
tn_listening_ports() {
	awk '$4 == "0A" { n = split($2, a, ":"); print a[n] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		while read -r hex; do printf '%d\n' "0x$hex"; done | sort -un
}

tn_node_dir() { printf '%s/%s' "$TN_DIR" "$1"; }
tn_torrc() { printf '%s/%s/torrc' "$TN_DIR" "$1"; }

# Print the PID of node $1 if it is running a tor with this node's torrc, else
# fail. The check of /proc/PID/cmdline guards against a recycled PID (a zombie
# has an empty cmdline and so counts as stopped). No forks: called in loops.
tn_node_pid() {
	local pidfile pid comm arg torrc
	local -a args=()
	pidfile="$TN_DIR/$1/pid"
	torrc="$TN_DIR/$1/torrc"
	[[ -r $pidfile ]] || return 1
	read -r pid 2>/dev/null < "$pidfile" || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	read -r comm 2>/dev/null < "/proc/$pid/comm" || return 1
	[[ $comm == tor ]] || return 1
	mapfile -d '' args 2>/dev/null < "/proc/$pid/cmdline" || return 1
	for arg in "${args[@]}"; do
		if [[ $arg == "$torrc" ]]; then
			printf '%s' "$pid"
			return 0
		fi
	done
	return 1
}

tn_node_running() { tn_node_pid "$1" > /dev/null; }

# Set TN_DIR from $1 (made absolute) and check it can hold unix sockets.
tn_set_dir() {
	[[ -n ${1:-} ]] || { tn_usage >&2; exit 2; }
	TN_DIR=$(realpath -m -- "$1") || tn_die "cannot resolve directory '$1'"
	# torrc lines are not quoted: keep paths free of whitespace and quotes.
	[[ $TN_DIR =~ ^[A-Za-z0-9_./+-]+$ ]] ||
		tn_die "directory '$TN_DIR': use only letters, digits and _ . / + - in its path"
}

# Read the base port and the relay count from DIR/testnet.conf (existing
# network) or the environment (new network) into TN_BASE and TN_RELAYS. With
# $1 = strict (start), refuse a TESTNET_BASE_PORT or TESTNET_RELAYS that
# differs from the recorded one; others use the record. A network recorded
# without a relay count (made before the knob) has 8.
tn_load_base() {
	local conf="$TN_DIR/testnet.conf" recorded='' rec_relays=''
	if [[ -r $conf ]]; then
		recorded=$(sed -n 's/^base_port=//p' "$conf")
		rec_relays=$(sed -n 's/^relays=//p' "$conf")
		[[ -n $recorded && -z $rec_relays ]] && rec_relays=$TN_DEFAULT_RELAYS
	fi
	if [[ -n $rec_relays ]]; then
		if [[ ${1:-} == strict && -n ${TESTNET_RELAYS:-} && $TESTNET_RELAYS != "$rec_relays" ]]; then
			tn_die "$TN_DIR was created with $rec_relays relays, TESTNET_RELAYS=$TESTNET_RELAYS; unset it or use a new directory"
		fi
		TN_RELAYS=$rec_relays
	else
		TN_RELAYS=${TESTNET_RELAYS:-$TN_DEFAULT_RELAYS}
	fi
	[[ $TN_RELAYS =~ ^[0-9]{1,3}$ ]] && (( 10#$TN_RELAYS >= 4 && 10#$TN_RELAYS <= TN_MAX_RELAYS )) ||
		tn_die "relay count '$TN_RELAYS' (TESTNET_RELAYS) must be a number in 4..$TN_MAX_RELAYS"
	TN_RELAYS=$(( 10#$TN_RELAYS ))
	local longest="$TN_DIR/relay$TN_RELAYS/control"
	(( ${#longest} <= 107 )) ||
		tn_die "directory '$TN_DIR' is too long: control socket path '$longest' exceeds 107 bytes"
	if [[ -n $recorded ]]; then
		if [[ ${1:-} == strict && -n ${TESTNET_BASE_PORT:-} && $TESTNET_BASE_PORT != "$recorded" ]]; then
			tn_die "$TN_DIR was created with base port $recorded, TESTNET_BASE_PORT=$TESTNET_BASE_PORT; unset it or use a new directory"
		fi
		TN_BASE=$recorded
	else
		TN_BASE=${TESTNET_BASE_PORT:-$TN_DEFAULT_BASE_PORT}
	fi
	[[ $TN_BASE =~ ^[0-9]+$ ]] && (( TN_BASE >= 1024 && $(tn_port_end) <= 65536 )) ||
		tn_die "base port '$TN_BASE' must be a number from 1024 that leaves its $TN_RELAYS relays' ports below 65536"
}

tn_is_complete() { grep -qx 'complete=1' "$TN_DIR/testnet.conf" 2>/dev/null; }

tn_require_network() {
	tn_is_complete || tn_die "no network in $TN_DIR (run: testnet.sh start $TN_DIR)"
}

# Take the per-directory lock so that two commands do not race on one network.
tn_lock() {
	mkdir -p -- "$TN_DIR" || tn_die "cannot create $TN_DIR"
	exec 9>> "$TN_DIR/.lock" || tn_die "cannot open $TN_DIR/.lock"
	flock -w $(( TN_BOOT_TIMEOUT + 30 )) 9 || tn_die "another testnet.sh holds $TN_DIR/.lock"
}

# ---------------------------------------------------------------- generation

# The DirAuthority lines, from the authorities' generated keys.
tn_dirauthority_lines() {
	local n fp v3
	for ((n = 1; n <= TN_AUTHS; n++)); do
		fp=$(awk '{print $2}' "$TN_DIR/auth$n/data/fingerprint")
		v3=$(awk '$1 == "fingerprint" {print $2}' "$TN_DIR/auth$n/data/keys/authority_certificate")
		printf 'DirAuthority %s orport=%d v3ident=%s 127.0.0.1:%d %s\n' \
			"$(tn_nick "auth$n")" "$(tn_orport "auth$n")" "$v3" "$(tn_dirport "auth$n")" "$fp"
	done
}

# The ORPort line(s) of authority or relay $1. Latency mode: advertise the
# forwarder's port without listening on it, listen on another one unadvertised.
tn_orport_lines() {
	if (( TN_DELAY > 0 )); then
		printf 'ORPort 127.0.0.1:%d NoListen\nORPort 127.0.0.1:%d NoAdvertise\n' \
			"$(tn_orport "$1")" "$(tn_listen_orport "$1")"
	else
		printf 'ORPort 127.0.0.1:%d\n' "$(tn_orport "$1")"
	fi
}

# Write the torrc of node $1.
tn_write_torrc() {
	local node=$1 d nick
	d=$(tn_node_dir "$node")
	nick=$(tn_nick "$node")
	{
		printf '# Generated by tests/testnet/testnet.sh for node %s; rewritten by every\n# start of this node, so edits here are lost.\n' "$node"
		cat <<EOF
TestingTorNetwork 1
Nickname $nick
DataDirectory $d/data
PidFile $d/tor.pid
RunAsDaemon 1
Log notice file $d/notice.log
SafeLogging 0
DisableDebuggerAttachment 0
ShutdownWaitLength 0
GeoIPFile /dev/null
GeoIPv6File /dev/null
ControlPort unix:$d/control
CookieAuthentication 1
AssumeReachable 1
PathsNeededToBuildCircuits 0.25
TestingDirAuthVoteExit *
TestingDirAuthVoteGuard *
TestingDirAuthVoteHSDir *
TestingMinExitFlagThreshold 0
V3AuthNIntervalsValid 2
EOF
		cat "$TN_DIR/dirauthorities"
		case $node in
		auth*)
			cat <<EOF
Address 127.0.0.1
$(tn_orport_lines "$node")
DirPort 127.0.0.1:$(tn_dirport "$node")
SocksPort 0
ContactInfo $nick@testnet.invalid
AuthoritativeDirectory 1
V3AuthoritativeDirectory 1
ExitPolicy reject *:*
TestingV3AuthInitialVotingInterval 5
TestingV3AuthInitialVoteDelay 2
TestingV3AuthInitialDistDelay 2
TestingV3AuthVotingStartOffset 0
V3AuthVotingInterval $(tn_recorded_voting)
V3AuthVoteDelay 2
V3AuthDistDelay 2
EOF
			;;
		relay*)
			cat <<EOF
Address 127.0.0.1
$(tn_orport_lines "$node")
SocksPort 0
ContactInfo $nick@testnet.invalid
ExitRelay 1
ExitPolicy accept 127.0.0.0/8:*,reject *:*
EOF
			;;
		client)
			# Full descriptors: a microdescriptor's policy summary ignores
			# "accept 127.0.0.0/8:*", so with microdescriptors the client
			# sees no exit at all and cannot reach 127.0.0.1 through one.
			cat <<EOF
SocksPort 127.0.0.1:$(tn_socksport)
UseMicrodescriptors 0
EOF
			;;
		esac
		if [[ $node == auth* ]]; then
			# tor 0.4.9's authorities test a relay's reachability when its
			# descriptor is new, then only every ~21 minutes: one test lost
			# to load (seen at load average ~90) kept relays out of the
			# consensus for good, and a relay restarted by start-relay is
			# not tested again. Every relay here is on 127.0.0.1, so the
			# tests tell nothing: trust the descriptors (tor's own option).
			printf 'AuthDirTestReachability 0\n'
		fi
	} > "$d/torrc.tmp" && mv -f "$d/torrc.tmp" "$d/torrc"
}

# Write $TESTNET_TORRC_EXTRA, the lines an extra tor needs to join.
# TestingDirConnectionMaxStall: TestingTorNetwork lowers it from 5 minutes to
# 30 s, and tor then drops, without any HS_DESC event and without a retry
# before the descriptor changes, every descriptor upload whose directory
# connection read nothing for that long. A tor publishing 35 services at once
# (560 uploads) needs longer than 30 s on this machine (README.md, "Many
# services on one tor"); the public network's value keeps that from being a
# quirk of this network.
tn_write_torrc_extra() {
	{
		printf '# torrc lines for an extra tor joining the testnet in %s.\n' "$TN_DIR"
		printf '# Add your own DataDirectory, ports and services; this file sets no SocksPort.\n'
		printf 'TestingTorNetwork 1\n'
		printf 'PathsNeededToBuildCircuits 0.25\n'
		printf '# the public network'"'"'s value (TestingTorNetwork sets 30 seconds)\n'
		printf 'TestingDirConnectionMaxStall 5 minutes\n'
		cat "$TN_DIR/dirauthorities"
	} > "$TN_DIR/torrc-extra.tmp" && mv -f "$TN_DIR/torrc-extra.tmp" "$TN_DIR/torrc-extra"
}

# Generate identity keys for node $1 (and authority keys for authorities).
tn_gen_node_keys() {
	local node=$1 d nick
	d=$(tn_node_dir "$node")
	nick=$(tn_nick "$node")
	if [[ $node == auth* ]]; then
		mkdir -p -m 700 "$d/data/keys" || return 1
		# Empty passphrase on fd 0; -m 12: certificate valid 12 months.
		printf '\n' | "$TN_GENCERT" --create-identity-key --passphrase-fd 0 -m 12 \
			-a "127.0.0.1:$(tn_dirport "$node")" \
			-i "$d/data/keys/authority_identity_key" \
			-s "$d/data/keys/authority_signing_key" \
			-c "$d/data/keys/authority_certificate" > "$d/gencert.log" 2>&1 || {
			tn_err "tor-gencert failed for $node:"; cat "$d/gencert.log" >&2; return 1; }
	fi
	# Creates the relay identity keys and DataDirectory/fingerprint.
	"$TN_TOR" --ignore-missing-torrc -f /dev/null --defaults-torrc /dev/null --quiet \
		--list-fingerprint --DataDirectory "$d/data" --ORPort 1 --Nickname "$nick" \
		> "$d/fingerprint.log" 2>&1 9>&- || {
		tn_err "tor --list-fingerprint failed for $node:"; cat "$d/fingerprint.log" >&2; return 1; }
	[[ -s $d/data/fingerprint ]] || { tn_err "$node: no $d/data/fingerprint"; return 1; }
}

# Create keys, torrcs and list files for a new network in TN_DIR.
tn_generate() {
	local node t0 pids=() rc=0 p n
	t0=$(tn_now)
	if [[ -e $TN_DIR/testnet.conf ]]; then
		# An interrupted generation: remove only what this script creates.
		for node in $(tn_nodes); do rm -rf -- "${TN_DIR:?}/$node"; done
		rm -f -- "$TN_DIR"/{dirauthorities,torrc-extra,relays.txt,authorities.txt}
	elif [[ -n $(ls -A -- "$TN_DIR" 2>/dev/null | grep -vx '.lock') ]]; then
		tn_die "$TN_DIR is not empty and holds no testnet; use an empty or new directory"
	fi
	command -v "$TN_TOR" > /dev/null || tn_die "'$TN_TOR' not found (apt-get install tor)"
	command -v "$TN_GENCERT" > /dev/null || tn_die "'$TN_GENCERT' not found (apt-get install tor)"
	printf 'format=%d\nbase_port=%d\nrelays=%d\ncomplete=0\n' "$TN_FORMAT" "$TN_BASE" "$TN_RELAYS" > "$TN_DIR/testnet.conf"
	for node in $(tn_nodes); do
		mkdir -p -m 700 "$(tn_node_dir "$node")" "$(tn_node_dir "$node")/data" || tn_die "mkdir $node"
		chmod 700 "$(tn_node_dir "$node")" "$(tn_node_dir "$node")/data"
		tn_gen_node_keys "$node" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do tn_wait_pid "$p" || rc=1; done
	(( TN_ABORT )) && tn_die "interrupted during key generation; $TN_DIR will be regenerated by the next start"
	(( rc == 0 )) || tn_die "key generation failed in $TN_DIR"

	tn_dirauthority_lines > "$TN_DIR/dirauthorities"
	for node in $(tn_nodes); do tn_write_torrc "$node"; done
	tn_write_torrc_extra

	# "N nickname fingerprint orport control-socket" per node.
	for ((n = 1; n <= TN_RELAYS; n++)); do
		printf '%d %s %s %d %s\n' "$n" "$(tn_nick "relay$n")" \
			"$(awk '{print $2}' "$TN_DIR/relay$n/data/fingerprint")" \
			"$(tn_orport "relay$n")" "$TN_DIR/relay$n/control"
	done > "$TN_DIR/relays.txt"
	for ((n = 1; n <= TN_AUTHS; n++)); do
		printf '%d %s %s %d %s\n' "$n" "$(tn_nick "auth$n")" \
			"$(awk '{print $2}' "$TN_DIR/auth$n/data/fingerprint")" \
			"$(tn_orport "auth$n")" "$TN_DIR/auth$n/control"
	done > "$TN_DIR/authorities.txt"

	sed -i 's/^complete=0$/complete=1/' "$TN_DIR/testnet.conf"
	tn_say "generated keys and configs for $((TN_AUTHS + TN_RELAYS + 1)) nodes in $(tn_elapsed "$t0" "$(tn_now)") s ($TN_DIR, base port $TN_BASE)"
}

# ---------------------------------------------------------------- processes

# Refuse if a port of node $1 is taken; $2 is the output of tn_listening_ports.
# Call only when the node is not running.
tn_check_ports() {
	local port
	for port in $(tn_node_ports "$1"); do
		if grep -qx -- "$port" <<< "$2"; then
			tn_err "port $port (for $1) is already in use on this machine;" \
				"stop whatever listens there or use another TESTNET_BASE_PORT (with a new DIR)"
			return 1
		fi
	done
}

# Start node $1 unless it runs. RunAsDaemon 1: tor's parent process exits
# only once the daemon has opened its ports (0) or failed (non-zero).
tn_start_node() {
	local node=$1 d torrc i pid
	d=$(tn_node_dir "$node")
	torrc=$(tn_torrc "$node")
	tn_node_running "$node" && return 0
	rm -f -- "$d/pid" "$d/tor.pid"
	if [[ $node == client ]]; then
		# Bootstrap is judged from log lines written after this offset.
		stat -c %s -- "$d/notice.log" > "$d/boot_offset" 2>/dev/null || echo 0 > "$d/boot_offset"
	fi
	# 9>&-: the daemon must not inherit (and so hold) the directory lock.
	if ! "$TN_TOR" --defaults-torrc /dev/null -f "$torrc" > "$d/stdout.log" 2>&1 < /dev/null 9>&-; then
		tn_err "tor for $node failed to start; last lines of $d/stdout.log:"
		tail -n 5 "$d/stdout.log" >&2
		return 1
	fi
	# Keep our own record: tor deletes its PidFile when it starts to exit,
	# and may then hang (see README), so tor.pid cannot tell if it still runs.
	# Up to 30 s: under heavy load (load average ~90 seen) the daemon has
	# written its PidFile more than 5 s after its parent returned.
	for ((i = 0; i < 300; i++)); do
		if [[ -s $d/tor.pid ]] && read -r pid 2>/dev/null < "$d/tor.pid" && [[ $pid =~ ^[0-9]+$ ]]; then
			printf '%s\n' "$pid" > "$d/pid"
			tn_node_pid "$node" > /dev/null && return 0
		fi
		sleep 0.1
	done
	tn_err "tor for $node started but wrote no usable pid file $d/tor.pid"
	return 1
}

# Start the given nodes in parallel; fail if any fails.
tn_start_nodes() {
	local node pids=() p rc=0 listening
	listening=$(tn_listening_ports)
	for node in "$@"; do
		tn_node_running "$node" && continue
		tn_check_ports "$node" "$listening" || return 1
	done
	for node in "$@"; do
		tn_start_node "$node" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do tn_wait_pid "$p" || rc=1; done
	return $rc
}

# Stop the given nodes: SIGTERM, wait up to TN_STOP_TIMEOUT s, then SIGKILL.
tn_stop_nodes() {
	local node pid i left
	local -A pids=()
	for node in "$@"; do
		pid=$(tn_node_pid "$node") || continue
		pids[$node]=$pid
		kill -TERM "$pid" 2>/dev/null
	done
	for ((i = 0; i < TN_STOP_TIMEOUT * 10; i++)); do
		left=0
		for node in "${!pids[@]}"; do
			if tn_node_running "$node"; then left=1; else unset "pids[$node]"; fi
		done
		(( left )) || break
		sleep 0.1
	done
	for node in "${!pids[@]}"; do
		# Re-check: only kill a PID that is still this node's tor.
		pid=$(tn_node_pid "$node") || continue
		# Debian's tor 0.4.9 sometimes hangs after "exiting cleanly" (a relay's
		# main thread blocks in cpuworker_free_all), having removed its PidFile.
		printf '%s: warning: %s (pid %s) still runs %s s after SIGTERM; sending SIGKILL\n' \
			"$TN_NAME" "$node" "$pid" "$TN_STOP_TIMEOUT" >&2
		kill -KILL "$pid" 2>/dev/null
	done
	for ((i = 0; i < 50; i++)); do
		left=0
		for node in "${!pids[@]}"; do tn_node_running "$node" && left=1; done
		(( left )) || break
		sleep 0.1
	done
	for node in "$@"; do
		if tn_node_running "$node"; then
			tn_err "$node is still running"
			return 1
		fi
		rm -f -- "$(tn_node_dir "$node")/pid"
	done
	return 0
}

# ---------------------------------------------------------------- latency mode

# The forwarder's "LISTEN:TARGET" argument for node $1 (latency mode only).
tn_fwd_pair() { printf '%d:%d' "$(tn_orport "$1")" "$(tn_listen_orport "$1")"; }

# Print the PID of this network's delayfwd if it runs, else fail. Like
# tn_node_pid: the recorded PID counts only while /proc/PID/comm is delayfwd
# and its command line holds this network's first pair (base port:base+31).
tn_fwd_pid() {
	local pid comm arg
	local -a args=()
	[[ -r $TN_DIR/delayfwd.pid ]] || return 1
	read -r pid 2>/dev/null < "$TN_DIR/delayfwd.pid" || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	read -r comm 2>/dev/null < "/proc/$pid/comm" || return 1
	[[ $comm == delayfwd ]] || return 1
	mapfile -d '' args 2>/dev/null < "/proc/$pid/cmdline" || return 1
	for arg in "${args[@]}"; do
		if [[ $arg == "$TN_BASE:$((TN_BASE + 31))" ]]; then
			printf '%s' "$pid"
			return 0
		fi
	done
	return 1
}

tn_fwd_running() { tn_fwd_pid > /dev/null; }

# The delay the network in TN_DIR runs with (DIR/delay_ms, written by start,
# removed by stop), or 0.
tn_recorded_delay() {
	local d=0
	[[ -r $TN_DIR/delay_ms ]] && read -r d 2>/dev/null < "$TN_DIR/delay_ms"
	[[ $d =~ ^[0-9]+$ ]] || d=0
	printf '%d' "$d"
}

# Set TN_DELAY. With $1 = start: a network of which nothing runs takes
# TESTNET_DELAY_MS (default 0) and records it; a (partly) running one keeps its
# recorded delay, and a different TESTNET_DELAY_MS is refused. Otherwise: the
# recorded delay.
tn_load_delay() {
	local rec node any=0
	rec=$(tn_recorded_delay)
	if [[ ${1:-} != start ]]; then
		TN_DELAY=$rec
		return 0
	fi
	if [[ -n ${TESTNET_DELAY_MS:-} ]] && { ! [[ $TESTNET_DELAY_MS =~ ^[0-9]{1,5}$ ]] || (( 10#$TESTNET_DELAY_MS > 10000 )); }; then
		tn_die "TESTNET_DELAY_MS must be 0..10000 (ms added per link and direction), got '$TESTNET_DELAY_MS'"
	fi
	tn_fwd_running && any=1
	for node in $(tn_nodes); do tn_node_running "$node" && any=1; done
	if (( any )); then
		if [[ -n ${TESTNET_DELAY_MS:-} ]] && (( 10#$TESTNET_DELAY_MS != rec )); then
			tn_die "the network in $TN_DIR runs with a delay of $rec ms, TESTNET_DELAY_MS=$TESTNET_DELAY_MS; stop it first"
		fi
		TN_DELAY=$rec
		return 0
	fi
	TN_DELAY=$(( 10#${TESTNET_DELAY_MS:-0} ))
	if (( TN_DELAY > 0 )); then
		printf '%d\n' "$TN_DELAY" > "$TN_DIR/delay_ms"
	else
		rm -f -- "$TN_DIR/delay_ms"
	fi
}

# The voting interval recorded for TN_DIR (written by the start that generated the
# network), or 10.
tn_recorded_voting() {
	local v=10
	[[ -r $TN_DIR/voting_interval ]] && read -r v 2>/dev/null < "$TN_DIR/voting_interval"
	[[ $v =~ ^[0-9]+$ ]] || v=10
	printf '%d' "$v"
}

# Set TN_VOTING. With $1 = start: a network of which nothing runs takes
# TESTNET_VOTING_INTERVAL (10-60 s, default 10) and records it; a (partly)
# running one keeps its recorded interval, and a different one is refused.
# Onionbalance's --is-testnet mode hard-codes chutney's 20 s (see README.md).
tn_load_voting() {
	local rec node any=0
	rec=$(tn_recorded_voting)
	TN_VOTING=$rec
	[[ ${1:-} == start ]] || return 0
	if [[ -n ${TESTNET_VOTING_INTERVAL:-} ]] && { ! [[ $TESTNET_VOTING_INTERVAL =~ ^[0-9]{2}$ ]] ||
		(( 10#$TESTNET_VOTING_INTERVAL < 10 || 10#$TESTNET_VOTING_INTERVAL > 60 )); }; then
		tn_die "TESTNET_VOTING_INTERVAL must be 10..60 (seconds), got '$TESTNET_VOTING_INTERVAL'"
	fi
	for node in $(tn_nodes); do tn_node_running "$node" && any=1; done
	if (( any )); then
		if [[ -n ${TESTNET_VOTING_INTERVAL:-} ]] && (( 10#$TESTNET_VOTING_INTERVAL != rec )); then
			tn_die "the network in $TN_DIR votes every $rec s, TESTNET_VOTING_INTERVAL=$TESTNET_VOTING_INTERVAL; stop it first"
		fi
		return 0
	fi
	TN_VOTING=$(( 10#${TESTNET_VOTING_INTERVAL:-$rec} ))
	printf '%d\n' "$TN_VOTING" > "$TN_DIR/voting_interval"
}

# Start the forwarder unless it runs (latency mode). It runs in its own
# session, like the daemonised tors, and records its own PID before exec.
tn_start_fwd() {
	local node pairs=() port listening i pid
	tn_fwd_running && return 0
	[[ -x $TN_DELAYFWD ]] || {
		tn_err "latency mode needs $TN_DELAYFWD (run 'make all'; or set TESTNET_DELAYFWD)"
		return 1
	}
	listening=$(tn_listening_ports)
	for node in $(tn_nodes); do
		[[ $node == client ]] && continue
		port=$(tn_orport "$node")
		if grep -qx -- "$port" <<< "$listening"; then
			tn_err "port $port (delayfwd for $node) is already in use on this machine"
			return 1
		fi
		pairs+=("$(tn_fwd_pair "$node")")
	done
	rm -f -- "$TN_DIR/delayfwd.pid"
	# shellcheck disable=SC2016 # $$ and $0 belong to the inner bash
	setsid bash -c 'echo $$ > "$0"; exec "$@"' "$TN_DIR/delayfwd.pid" \
		"$TN_DELAYFWD" "$TN_DELAY" "${pairs[@]}" > "$TN_DIR/delayfwd.log" 2>&1 < /dev/null 9>&- &
	for ((i = 0; i < 300; i++)); do
		if grep -q '^delayfwd ready' "$TN_DIR/delayfwd.log" 2>/dev/null && pid=$(tn_fwd_pid); then
			tn_say "delayfwd (pid $pid) adds $TN_DELAY ms per direction on the ORPorts of $((TN_AUTHS + TN_RELAYS)) nodes"
			return 0
		fi
		sleep 0.1
	done
	tn_err "delayfwd did not start; $TN_DIR/delayfwd.log says: $(head -c 500 "$TN_DIR/delayfwd.log" 2>/dev/null)"
	return 1
}

# Stop the forwarder by its recorded PID: SIGTERM, SIGKILL after TN_STOP_TIMEOUT s.
tn_stop_fwd() {
	local pid i
	pid=$(tn_fwd_pid) || { rm -f -- "$TN_DIR/delayfwd.pid"; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < TN_STOP_TIMEOUT * 10; i++)); do
		tn_fwd_running || break
		sleep 0.1
	done
	if pid=$(tn_fwd_pid); then
		tn_err "delayfwd (pid $pid) still runs after SIGTERM; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null
		for ((i = 0; i < 50; i++)); do tn_fwd_running || break; sleep 0.1; done
	fi
	if tn_fwd_running; then
		tn_err "delayfwd is still running"
		return 1
	fi
	rm -f -- "$TN_DIR/delayfwd.pid"
}

# Stop every node, then the forwarder; forget the delay.
tn_stop_all() {
	local rc=0
	tn_stop_nodes $(tn_nodes) || rc=1
	tn_stop_fwd || rc=1
	(( rc == 0 )) && rm -f -- "$TN_DIR/delay_ms"
	return $rc
}

# Succeed if the client logged "Bootstrapped 100%" since it was last started.
tn_client_bootstrapped() {
	local d off
	d=$(tn_node_dir client)
	[[ -r $d/notice.log ]] || return 1
	off=$(cat "$d/boot_offset" 2>/dev/null) || off=0
	tail -c +$((off + 1)) -- "$d/notice.log" | grep -q 'Bootstrapped 100%'
}

# Last bootstrap line of the client since it was started, for error messages.
tn_client_progress() {
	local d off
	d=$(tn_node_dir client)
	off=$(cat "$d/boot_offset" 2>/dev/null) || off=0
	tail -c +$((off + 1)) -- "$d/notice.log" 2>/dev/null | grep 'Bootstrapped' | tail -n 1
}

# The client's cached consensus file (full or microdescriptor flavour).
tn_client_consensus() {
	local d
	d="$(tn_node_dir client)/data"
	if [[ -s $d/cached-consensus ]]; then
		printf '%s' "$d/cached-consensus"
	elif [[ -s $d/cached-microdesc-consensus ]]; then
		printf '%s' "$d/cached-microdesc-consensus"
	else
		return 1
	fi
}

# Nicknames of the nodes that the client's consensus lists as Running and
# HSDir, one per line; fail if it has no consensus valid now.
tn_consensus_hsdirs() {
	local f until
	f=$(tn_client_consensus) || return 1
	until=$(sed -n 's/^valid-until //p' "$f")
	[[ -n $until ]] || return 1
	(( $(date -u -d "$until UTC" +%s 2>/dev/null || echo 0) > $(date -u +%s) )) || return 1
	awk '/^r / { nick = $2 } /^s / && / Running/ && / HSDir/ { print nick }' "$f"
}

# Succeed if the client's consensus lists every node but itself as Running and
# HSDir, so that all onion-service tests see the same, complete HSDir ring.
tn_consensus_complete() {
	local listed node
	listed=$(tn_consensus_hsdirs) || return 1
	for node in $(tn_nodes); do
		[[ $node == client ]] && continue
		grep -qxF -- "$(tn_nick "$node")" <<< "$listed" || return 1
	done
}

# Nodes (nicknames) missing from the client's consensus, for error messages.
tn_consensus_missing() {
	local listed node f out=
	if ! listed=$(tn_consensus_hsdirs); then
		f=$(tn_client_consensus) || { printf 'the client has no consensus file'; return; }
		printf 'no live consensus: the newest is valid until %s UTC, now %s UTC' \
			"$(sed -n 's/^valid-until //p' "$f")" "$(date -u '+%Y-%m-%d %H:%M:%S')"
		return
	fi
	for node in $(tn_nodes); do
		[[ $node == client ]] && continue
		grep -qxF -- "$(tn_nick "$node")" <<< "$listed" || out+=" $(tn_nick "$node")"
	done
	printf 'missing:%s' "$out"
}

# Wait until the client has bootstrapped and its consensus lists all nodes
# with Running and HSDir; t0 from tn_now. Fail after TN_BOOT_TIMEOUT seconds,
# or as soon as a node dies.
tn_wait_ready() {
	local t0=$1 deadline now node last tick=0 booted=0
	deadline=$(( ${t0%.*} + TN_BOOT_TIMEOUT ))
	while :; do
		if (( TN_ABORT )); then
			tn_err "interrupted while waiting for the network"
			return 1
		fi
		if (( !booted )) && tn_client_bootstrapped; then
			tn_say "client bootstrapped in $(tn_elapsed "$t0" "$(tn_now)") s"
			booted=1
		fi
		if (( booted )) && tn_consensus_complete; then
			tn_say "consensus lists all $((TN_AUTHS + TN_RELAYS)) relays (Running, HSDir) after $(tn_elapsed "$t0" "$(tn_now)") s"
			return 0
		fi
		if (( tick++ % 5 == 0 )); then
			for node in $(tn_nodes); do
				if ! tn_node_running "$node"; then
					tn_err "$node died while waiting for the network; last lines of its log:"
					tail -n 10 "$(tn_node_dir "$node")/notice.log" >&2
					return 1
				fi
			done
			if (( TN_DELAY > 0 )) && ! tn_fwd_running; then
				tn_err "delayfwd died while waiting for the network: $(tail -n 3 "$TN_DIR/delayfwd.log" 2>/dev/null)"
				return 1
			fi
			now=$(tn_now)
			if (( ${now%.*} >= deadline )); then
				if (( booted )); then
					tn_err "client's consensus still incomplete after ${TN_BOOT_TIMEOUT} s ($(tn_consensus_missing)); logs in $TN_DIR/*/notice.log"
				else
					last=$(tn_client_progress)
					tn_err "client did not bootstrap within ${TN_BOOT_TIMEOUT} s (last: ${last:-no bootstrap line}); logs in $TN_DIR/*/notice.log"
				fi
				return 1
			fi
		fi
		sleep 0.2
	done
}

# ---------------------------------------------------------------- commands

cmd_start() {
	local t0 node all=1 nodes=()
	tn_set_dir "${1:-}"
	trap 'TN_ABORT=1' INT TERM HUP
	tn_lock
	tn_load_base strict
	tn_is_complete || tn_generate
	tn_load_delay start
	tn_load_voting start
	for node in $(tn_nodes); do
		tn_node_running "$node" || { all=0; nodes+=("$node"); }
	done
	(( TN_DELAY > 0 )) && ! tn_fwd_running && all=0
	# torrcs follow from the keys, the base port and the delay mode: rewrite
	# them so that a newer testnet.sh applies to an old DIR. Running nodes keep theirs.
	for node in "${nodes[@]}"; do tn_write_torrc "$node" || return 1; done
	(( ${#nodes[@]} )) && { tn_write_torrc_extra || return 1; }
	if (( all )) && tn_client_bootstrapped && tn_consensus_complete; then
		tn_say "already running in $TN_DIR; client bootstrapped"
		return 0
	fi
	t0=$(tn_now)
	if (( TN_DELAY > 0 )) && ! tn_start_fwd; then
		tn_err "start failed; stopping the nodes of $TN_DIR"
		tn_stop_all
		return 1
	fi
	if (( ${#nodes[@]} )); then
		tn_say "starting ${#nodes[@]} node(s) in $TN_DIR (base port $TN_BASE)"
		if ! tn_start_nodes "${nodes[@]}" || (( TN_ABORT )); then
			(( TN_ABORT )) && tn_err "interrupted while starting nodes"
			tn_err "start failed; stopping the nodes of $TN_DIR"
			tn_stop_all
			return 1
		fi
	fi
	if ! tn_wait_ready "$t0"; then
		tn_err "start failed; stopping the nodes of $TN_DIR"
		tn_stop_all
		return 1
	fi
}

cmd_stop() {
	local node n=0
	tn_set_dir "${1:-}"
	[[ -d $TN_DIR ]] || { tn_say "nothing to stop in $TN_DIR"; return 0; }
	tn_lock
	tn_load_base
	for node in $(tn_nodes); do tn_node_running "$node" && n=$((n + 1)); done
	tn_stop_all || return 1
	tn_say "stopped $n node(s) in $TN_DIR"
}

cmd_env() {
	tn_set_dir "${1:-}"
	tn_load_base
	tn_require_network
	local q
	q() { printf 'export %s=%q\n' "$1" "$2"; }
	q TESTNET_DIR "$TN_DIR"
	q TESTNET_BASE_PORT "$TN_BASE"
	q TESTNET_SOCKS_PORT "$(tn_socksport)"
	q TESTNET_CLIENT_CONTROL "$TN_DIR/client/control"
	q TESTNET_CLIENT_COOKIE "$TN_DIR/client/data/control_auth_cookie"
	q TESTNET_TORRC_EXTRA "$TN_DIR/torrc-extra"
	q TESTNET_RELAY_COUNT "$TN_RELAYS"
	q TESTNET_RELAYS_FILE "$TN_DIR/relays.txt"
	q TESTNET_AUTHORITY_COUNT "$TN_AUTHS"
	q TESTNET_AUTHORITIES_FILE "$TN_DIR/authorities.txt"
	q TESTNET_DELAY_MS "$(tn_recorded_delay)"
	q TESTNET_VOTING_INTERVAL "$(tn_recorded_voting)"
}

cmd_status() {
	local node pid all=1 ports
	tn_set_dir "${1:-}"
	tn_load_base
	tn_require_network
	tn_load_delay
	for node in $(tn_nodes); do
		ports=$(tn_node_ports "$node" | paste -sd, -)
		if pid=$(tn_node_pid "$node"); then
			printf '%-8s %-10s running  pid %-7s ports %s\n' "$node" "$(tn_nick "$node")" "$pid" "$ports"
		else
			printf '%-8s %-10s stopped  %-11s ports %s\n' "$node" "$(tn_nick "$node")" "" "$ports"
			all=0
		fi
	done
	if (( TN_DELAY > 0 )); then
		ports="$TN_BASE-$((TN_BASE + TN_AUTHS + TN_BLOCK_RELAYS - 1))"
		(( TN_RELAYS > TN_BLOCK_RELAYS )) &&
			ports+=",$((TN_BASE + 100))-$((TN_BASE + 99 + TN_RELAYS - TN_BLOCK_RELAYS))"
		if pid=$(tn_fwd_pid); then
			printf '%-8s %-10s running  pid %-7s ports %s (+%d ms each way)\n' delayfwd - "$pid" "$ports" "$TN_DELAY"
		else
			printf '%-8s %-10s stopped  %-11s ports %s (+%d ms each way)\n' delayfwd - "" "$ports" "$TN_DELAY"
			all=0
		fi
	fi
	if tn_node_running client && tn_client_bootstrapped; then
		printf 'client bootstrapped (SocksPort 127.0.0.1:%d); consensus HSDirs: %s\n' \
			"$(tn_socksport)" "$(tn_consensus_hsdirs 2>/dev/null | sort | paste -sd' ' -)"
	fi
	(( all )) && return 0
	return 3
}

tn_relay_arg() {
	[[ ${1:-} =~ ^[0-9]+$ ]] && (( $1 >= 1 && $1 <= TN_RELAYS )) ||
		tn_die "relay number must be 1..$TN_RELAYS, got '${1:-}'"
}

cmd_stop_relay() {
	tn_set_dir "${1:-}"
	tn_lock
	tn_load_base
	tn_require_network
	tn_relay_arg "${2:-}"
	tn_node_running "relay$2" || { tn_say "relay$2 is not running"; return 0; }
	tn_stop_nodes "relay$2" || return 1
	tn_say "stopped relay$2 ($(tn_nick "relay$2"))"
}

cmd_start_relay() {
	tn_set_dir "${1:-}"
	tn_lock
	tn_load_base
	tn_require_network
	tn_relay_arg "${2:-}"
	tn_node_running "relay$2" && { tn_say "relay$2 is already running"; return 0; }
	tn_load_delay
	tn_write_torrc "relay$2" || return 1
	tn_start_nodes "relay$2" || return 1
	tn_say "started relay$2 ($(tn_nick "relay$2")), pid $(tn_node_pid "relay$2")"
}

# `run`: the child's PID, and whether this run started any node.
TN_RUN_CHILD=
TN_RUN_START=
TN_RUN_STARTED=0

tn_run_cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	if [[ -n $TN_RUN_START ]]; then
		# `start` still running: it stops its nodes when told to (TN_ABORT).
		kill -TERM "$TN_RUN_START" 2>/dev/null
		tn_wait_pid "$TN_RUN_START"
		TN_RUN_START=
	fi
	if [[ -n $TN_RUN_CHILD ]]; then
		kill -TERM "$TN_RUN_CHILD" 2>/dev/null
		local i
		for ((i = 0; i < 50; i++)); do
			kill -0 "$TN_RUN_CHILD" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$TN_RUN_CHILD" 2>/dev/null
		wait "$TN_RUN_CHILD" 2>/dev/null
		TN_RUN_CHILD=
	fi
	if (( TN_RUN_STARTED )); then
		( cmd_stop "$TN_DIR" ) || rc=1
	else
		tn_say "the network was running before 'run'; leaving it running"
	fi
	exit $rc
}

cmd_run() {
	local dir=${1:-} node all=1 rc
	shift || true
	[[ ${1:-} == -- ]] && shift
	(( $# )) || { tn_usage >&2; exit 2; }
	tn_set_dir "$dir"
	if tn_is_complete 2>/dev/null; then
		TN_BASE=0; tn_load_base
		for node in $(tn_nodes); do tn_node_running "$node" || all=0; done
	else
		all=0
	fi
	(( all )) || TN_RUN_STARTED=1
	trap tn_run_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	# Start in the background too, so that a signal is handled at once.
	( cmd_start "$dir" ) &
	TN_RUN_START=$!
	tn_wait_pid "$TN_RUN_START" || { TN_RUN_START=; exit 1; }
	TN_RUN_START=
	eval "$(cmd_env "$dir")"
	# In the background so that a SIGTERM to this script is handled at once
	# (the trap stops CMD, then the network); <&0 keeps CMD's stdin.
	"$@" <&0 &
	TN_RUN_CHILD=$!
	wait "$TN_RUN_CHILD"
	rc=$?
	TN_RUN_CHILD=
	exit $rc
}

cmd_selftest() {
	local here
	here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
	exec bash "$here/../integration/test_testnet.sh" "$@"
}

main() {
	local cmd=${1:-}
	shift || true
	case $cmd in
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	run) cmd_run "$@" ;;
	env) cmd_env "$@" ;;
	status) cmd_status "$@" ;;
	stop-relay) cmd_stop_relay "$@" ;;
	start-relay) cmd_start_relay "$@" ;;
	selftest) cmd_selftest "$@" ;;
	-h|--help|help) tn_usage ;;
	*) tn_usage >&2; exit 2 ;;
	esac
}

main "$@"
