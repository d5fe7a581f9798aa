#!/usr/bin/env bash
# tests/bench/run.sh — `make bench`: onionfront measured against tor alone (part A, issue 7) and against
# HAProxy (part B, issue 4's bench), each figure repeated and reported as min/median/max, every comparison
# a ratio of medians from the same run. Not part of `make test`; nothing here asserts: goals are printed
# next to the numbers with ✓/✗.
#
# Part A, on a private Tor network with every tor link delayed (tests/testnet/testnet.sh latency mode,
#   TESTNET_DELAY_MS), four set-ups serving the same backend (build/tools/backend http):
#   (a) a hidden service on tor alone (HiddenServiceDir in its torrc: 3 hops on the service side),
#   (b) a single onion service on tor alone (same torrc + HiddenServiceSingleHopMode/NonAnonymousMode),
#   (c) the same single onion managed by onionfront (build/onionfront, its own tor, its data path),
#   (d) an anonymous service ("mode": "anonymous", issue 17) under its own onionfront, served by the
#       anonymous tor onionfront spawns for it: multi-hop circuits like (a), so slower than (b)/(c) by
#       design; (d)/(a) is onionfront's cost on a hidden service, (d)/(c) the cost of privacy. Only (c)
#       gets the tor-kill and backend-kill series (onionfront's supervisor and pool, the same for both).
#   Client: the network's client tor. "Cold" = after SIGNAL NEWNYM, which purges the client's onion
#   service state (descriptor cache, intro-point failures, HSDir request history; the script checks that
#   the descriptors are gone); tor runs at most one NEWNYM per 10 s, and each cold fetch gets its own.
#   "Cached" = a new SOCKS username (a new circuit, IsolateSOCKSAuth) with the descriptor cached.
#   "Open circuit" = a new stream on the circuit of the previous request (same SOCKS username).
#   Start and recovery times poll the client with HSFETCH (every HSDir, every 0.25 s; tor's own retries
#   are rate-limited to one per HSDir per 5 s in test networks) and fetch once it holds a descriptor.
# Part B, on loopback without tor: the same server (build/tools/loadgen serve) reached directly, through
#   HAProxy in TCP mode (unix socket with accept-proxy, nbthread 1) and through onionfront's data path
#   (build/bench/proxybench: sidecar/datapath/proxy.c on its own loop, no tor), both fed tor's PROXY v1 line first.
# Part C (tests/bench/part_c.sh, issue 11): tor restarts and SIGKILLs with tor alone and onionfront with
#   one and two tors, on a private network of its own (base BENCH_C_BASE_PORT, 31000); its header
#   describes the measurements.
# Part D, Onionbalance on the latency network voting every 20 s: tests/bench/part_d.sh (its header).
# Part E (tests/bench/part_e.sh, issue 28): many services (N = 10, 50, 200, 500), tor alone against
#   onionfront with 1, 2 and 4 tors, on a private network of its own (base BENCH_E_BASE_PORT, 32000);
#   its header describes the measurements. Not in the default BENCH_PARTS: it takes hours at the full
#   N list (every set-up publishes every service from scratch); `BENCH_PARTS=E make bench` runs it.
#
# Owns: a temporary directory, the private network in it (stopped at exit), and every process it starts
# (tracked by PID, ended by PID at exit). Writes build/bench/results.md, build/bench/bench.svg and the raw
# samples in build/bench/raw/, and refreshes the section of each part it ran in tests/bench/RESULTS.md (the
# recorded measurements; BENCH_RESULTS=FILE writes another file, BENCH_RESULTS= none). Environment: BENCH_REPS (10), BENCH_PARTS ("A B C D"), BENCH_DELAY_MS (10),
# BENCH_BASE_PORT (30000: A uses base..base+99, B base+100.., D base+300..base+399), BENCH_DOWNLOAD_BYTES (50000000),
# BENCH_DOWNLOAD_REPS (3), BENCH_BULK_BYTES (1000000000), BENCH_RATE_SECONDS (3), BENCH_CONC (32), BENCH_B_REPS (2 x BENCH_REPS: part B's rate rounds), BENCH_KEEP=1 keeps the temp dir,
# BENCH_NET_DIR=DIR uses (and leaves running) a latency network already started with testnet.sh.
# Part E: BENCH_E_NS ("10 50 200 500"), BENCH_E_REPS (1), BENCH_E_COLS ("alone of1 of2 of4 of4s2"),
# BENCH_E_BASE_PORT (32000), BENCH_E_RELAYS (8: part E's network's relay count, testnet.sh's TESTNET_RELAYS),
# BENCH_E_TIMEOUT (300 + 6 x N s per set-up), BENCH_E_IDLE_SECONDS (30), BENCH_E_WINDOW (30), BENCH_E_RENDERS (20).

set -u -o pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/build/bench
RAW=$OUT/raw
TESTNET=$ROOT/tests/testnet/testnet.sh
OF=$ROOT/build/onionfront
BACKEND=$ROOT/build/tools/backend
TORCTL=$ROOT/build/tools/torctl
LOADGEN=$ROOT/build/tools/loadgen
PROXYBENCH=$ROOT/build/bench/proxybench
RESULTS=${BENCH_RESULTS-$ROOT/tests/bench/RESULTS.md}

REPS=${BENCH_REPS:-10}
PARTS=${BENCH_PARTS:-A B C D}
DELAY=${BENCH_DELAY_MS:-10}
BASE=${BENCH_BASE_PORT:-30000}
DL_BYTES=${BENCH_DOWNLOAD_BYTES:-50000000}
# Fewer download repetitions than the other figures: at 10 ms per link one circuit carries only ~1 MB/s
# (single onion; ~0.5 MB/s for the hidden service; tor's windows, not the CPU), so 10 x 3 x 50 MB alone
# would take ~35 minutes, beyond make bench's 30-minute budget.
DL_REPS=${BENCH_DOWNLOAD_REPS:-3}
BULK_BYTES=${BENCH_BULK_BYTES:-1000000000}
RATE_SECONDS=${BENCH_RATE_SECONDS:-3}
# Part B's rate runs are short and noisy: twice as many rounds, each round all three paths back to
# back (rotated), so a round's ratio compares runs under the same load (its spread is reported).
B_REPS=${BENCH_B_REPS:-$((REPS * 2))}
CONC=${BENCH_CONC:-32}
KILL_REQUESTS=20
PROXY_LINE='PROXY TCP6 fc00:dead:beef:4dad::0:1 ::1 1 80\r\n' # what tor sends (TOR-FACTS.md)

W=
NETDIR=
PIDS=()
NET_STARTED=0
T_BEGIN=$EPOCHREALTIME

# ---------------------------------------------------------------- helpers

now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
say() { printf '%s bench: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# wait_until SECONDS COMMAND...: poll every 0.5 s until COMMAND succeeds; fails on timeout (parts C, D).
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.5
	done
}
die() { say "error: $*"; exit 1; }

track() { PIDS+=("$1"); }

# Ending a process we started (TERM, a bounded wait, KILL, reap): the integration tests' helper.
source "$(dirname "$0")/../integration/lib.sh"

cleanup() {
	local pid
	trap - EXIT INT TERM HUP
	for pid in "${PIDS[@]}"; do of_stop_pid "$pid" 20; done
	PIDS=()
	net_stop
	if [[ -n $W && -d $W && -z ${BENCH_KEEP:-} ]]; then rm -rf -- "$W"; fi
	[[ -n ${BENCH_KEEP:-} && -n $W ]] && say "kept $W"
}

# CPU seconds (utime + stime) of the given PIDs together.
cpu_of() {
	local pid sum=0 hz f
	hz=$(getconf CLK_TCK)
	for pid in "$@"; do
		[[ -r /proc/$pid/stat ]] || continue
		f=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		f=${f##*) }
		# shellcheck disable=SC2086
		set -- $f
		sum=$((sum + ${12} + ${13}))
	done
	awk -v t="$sum" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz }'
}

# The PIDs of $1's children whose command is tor.
tor_children() {
	local c comm
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		read -r comm < "/proc/$c/comm" 2>/dev/null && [[ $comm == tor ]] && printf '%s\n' "$c"
	done
}

# The PID of the service tor of onionfront set-up $1 (its torrc is state/torrc): not the probe's client
# tor, which is a child too and comes first once the service tor was restarted.
service_tor() {
	local t
	for t in $(tor_children "${SPID[$1]}"); do
		grep -qaF -- "$W/$1/state/torrc" "/proc/$t/cmdline" 2>/dev/null && printf '%s\n' "$t"
	done
}

# "min median max n" of the numbers in file $1 (empty if none).
stats() {
	[[ -s $1 ]] || { echo ""; return; }
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s %d\n", v[1], m, v[NR], NR }'
}
median() { local s; s=$(stats "$1"); [[ -n $s ]] && set -- $s && printf '%s' "$2"; }

# Cell text for file $1 with printf format $2: "**median** (min–max)", or "—".
cell() {
	local s
	s=$(stats "$1")
	[[ -n $s ]] || { printf '—'; return; }
	set -- $s "$2"
	# shellcheck disable=SC2059 # the format is the caller's
	printf "**$5** ($5–$5)" "$2" "$1" "$3"
}

# Ratio of medians of files $1/$2, two decimals, or "—".
ratio() {
	local a b
	a=$(median "$1") b=$(median "$2")
	[[ -n $a && -n $b ]] || { printf '—'; return; }
	awk -v a="$a" -v b="$b" 'BEGIN { if (b == 0) print "—"; else printf "%.2f", a / b }'
}

# ✓ if awk condition $2 holds for x = $1 (a number), ✗ if not, ? without a number.
mark() {
	[[ $1 =~ ^[0-9.]+$ ]] || { printf '?'; return; }
	awk -v x="$1" "BEGIN { exit !($2) }" && printf '✓' || printf '✗'
}

record() { printf '%s\n' "$2" >> "$RAW/$1.txt"; } # record NAME VALUE

# ---------------------------------------------------------------- part A: tor set-ups

declare -A SPID ADDR KEYDIR
SETUPS=(a b c d)
declare -A LABEL=([a]="(a) hidden service, tor alone" [b]="(b) single onion, tor alone" [c]="(c) single onion, onionfront"
	[d]="(d) anonymous service, onionfront (multi-hop like a: slower by design)")
USERN=0
LAST_NEWNYM=0
SERVERS=

ctl() { "$TORCTL" "$TESTNET_CLIENT_CONTROL" "$@"; }

newuser() { USERN=$((USERN + 1)); printf 'u%d-%d' "$USERN" "$$"; }

# fetch ADDR USER [PATH] [MAX_TIME]: print "time_starttransfer size time_total" for a 200, else fail.
fetch() {
	local out
	out=$(curl -sS -o /dev/null --max-time "${4:-60}" -x "socks5h://$2:x@127.0.0.1:$TESTNET_SOCKS_PORT" \
		-w '%{http_code} %{time_starttransfer} %{size_download} %{time_total}' "http://$1${3:-/}" 2>/dev/null)
	[[ $out == 200\ * ]] || return 1
	printf '%s\n' "${out#200 }"
}

# torrc of tor-alone set-up $1 (a or b) with key directory $2 and backend ports $3...
write_torrc() {
	local s=$1 keydir=$2 p
	shift 2
	{
		printf '%%include %s\n' "$TESTNET_TORRC_EXTRA"
		printf 'DataDirectory %s\nSocksPort 0\nRunAsDaemon 0\n' "$W/$s/data"
		printf 'Log notice file %s\nControlPort unix:%s\nCookieAuthentication 1\n' "$W/$s/notice.log" "$W/$s/control"
		[[ $s == b ]] && printf 'HiddenServiceSingleHopMode 1\nHiddenServiceNonAnonymousMode 1\n'
		printf 'HiddenServiceDir %s\n' "$keydir"
		for p in "$@"; do printf 'HiddenServicePort 80 127.0.0.1:%d\n' "$p"; done
	} > "$W/$s/torrc"
}

# Set-ups run by onionfront: (c) a single onion, (d) an anonymous service.
is_of() { [[ $1 == c || $1 == d ]]; }

# onionfront's config for set-up $1 (c or d), key directory $2 and the backends JSON $3.
write_of_config() {
	local mode=single
	[[ $1 == d ]] && mode=anonymous
	cat > "$W/$1/onionfront.json" <<EOF
{
  "state_dir": "$W/$1/state",
  "run_dir": "$W/$1/run",
  "log_level": "info",
  "tor": { "mode": "spawn", "bootstrap_timeout": 300, "instances": ${OF_TOR_INSTANCES:-1}, "renewal": "${OF_TOR_RENEWAL:-pow}", "extra_torrc": $(extra_torrc_json) },
  "services": [ { "name": "bench", "mode": "$mode", "key_dir": "$2",
                  "ports": [ { "virtual": 80, "backends": $3 } ] } ]
}
EOF
}

extra_torrc_json() {
	local first=1 line
	printf '['
	while IFS= read -r line; do
		[[ -z $line || $line == \#* ]] && continue
		((first)) || printf ', '
		printf '"%s"' "$line"
		first=0
	done < "$TESTNET_TORRC_EXTRA"
	printf ']'
}

backends_json() { # ports...
	local first=1 p n=0
	printf '['
	for p in "$@"; do
		n=$((n + 1))
		((first)) || printf ', '
		printf '{"name": "web%d", "address": "127.0.0.1:%d"}' "$n" "$p"
		first=0
	done
	printf ']'
}

# Start set-up $1 with a fresh key directory named $2; sets SPID, KEYDIR, ADDR.
start_setup() {
	local s=$1 keydir="$W/$1/keys-$2" i
	mkdir -p "$W/$s" && chmod 700 "$W/$s"
	KEYDIR[$s]=$keydir
	if is_of "$s"; then
		write_of_config "$s" "$keydir" "$(backends_json "$WEB1")"
		# A new key on purpose each time: without its address record onionfront treats "bench" as a new
		# service (with it, the known service would be refused for its empty key directory), and without
		# the other tors' copies of the last set-up's key (onionfront refuses to overwrite a copy holding
		# a different key: the set-up after one with two tors never started).
		rm -rf "$W/$s/state/addresses.json" "$W/$s/state/instances"
		"$OF" -c "$W/$s/onionfront.json" run >> "$W/$s/onionfront.log" 2>&1 &
	else
		write_torrc "$s" "$keydir" "$WEB1"
		tor -f "$W/$s/torrc" --defaults-torrc /dev/null > /dev/null 2>> "$W/$s/stderr.log" &
	fi
	SPID[$s]=$!
	track "${SPID[$s]}"
	for ((i = 0; i < 600; i++)); do
		if [[ -s $keydir/hostname ]]; then
			ADDR[$s]=$(tr -d ' \n' < "$keydir/hostname")
			return 0
		fi
		kill -0 "${SPID[$s]}" 2>/dev/null || break
		sleep 0.05
	done
	say "set-up $s did not write $keydir/hostname; logs in $W/$s"
	return 1
}

stop_setup() { of_stop_pid "${SPID[$1]}" 30; }

# onionfront's last log line about backend web2's state ("added to pool", "... -> up", "... -> down").
web2_state() {
	grep -E 'backend web2: (added to pool|.* -> (up|down))' "$W/c/onionfront.log" 2>/dev/null | tail -n 1
}

# The service-side PIDs of set-up $1: tor, and for (c) and (d) onionfront and its tors (for (d) also
# its single-onion tor, which runs without a service, and for both the probe's client tor).
service_pids() {
	printf '%s\n' "${SPID[$1]}"
	is_of "$1" && tor_children "${SPID[$1]}"
}

# The latest sample of figure $1 of each set-up, "a/b/c/d" (set-ups without one left out).
latest() {
	local s
	for s in "${SETUPS[@]}"; do tail -qn1 "$RAW/$1_$s.txt" 2>/dev/null; done | paste -sd/ -
}

# Poll until a fetch of onion address $1 works or $2 seconds pass: HSFETCH from every HSDir every 0.25 s
# until the client holds a descriptor, then fetch with a new circuit. Fails on timeout.
poll_fetch() {
	local addr=$1 limit=$2 t0 id=${1%.onion}
	t0=$(now)
	while awk -v e="$(since "$t0")" -v l="$limit" 'BEGIN { exit !(e < l) }'; do
		if ctl "GETINFO hs/client/desc/id/$id" > /dev/null 2>&1; then
			fetch "$addr" "$(newuser)" / 10 > /dev/null && return 0
		fi
		ctl "HSFETCH $id $SERVERS" > /dev/null 2>&1
		sleep 0.25
	done
	return 1
}

# SIGNAL NEWNYM, at least 10.5 s after the previous one (tor delays earlier ones), and wait until the
# client has dropped the descriptors of every set-up.
newnym() {
	local wait s i cached
	wait=$(awk -v l="$LAST_NEWNYM" -v n="$(now)" 'BEGIN { w = l + 10.5 - n; printf "%.2f", (w > 0 ? w : 0) }')
	sleep "$wait"
	ctl "SIGNAL NEWNYM" > /dev/null || say "SIGNAL NEWNYM failed"
	LAST_NEWNYM=$(now)
	for ((i = 0; i < 50; i++)); do
		cached=0
		for s in "${SETUPS[@]}"; do
			ctl "GETINFO hs/client/desc/id/${ADDR[$s]%.onion}" > /dev/null 2>&1 && cached=1
		done
		((cached)) || return 0
		sleep 0.2
	done
	say "warning: a descriptor is still cached 10 s after NEWNYM: cold figures of this round are not cold"
	return 1
}

# net_start DIR BASE_PORT [VOTING_INTERVAL [RELAYS]]: start a private network with DELAY ms per link in
# DIR (RELAYS relays when given, else testnet.sh's 8), or use BENCH_NET_DIR (development: a latency network
# already running, left running; it must vote at VOTING_INTERVAL and have RELAYS relays when they are
# given); take its environment, DELAY and SERVERS (every HSDir, for HSFETCH).
net_start() {
	if [[ -n ${BENCH_NET_DIR:-} ]]; then
		NETDIR=$BENCH_NET_DIR
		bash "$TESTNET" status "$NETDIR" > /dev/null || die "no running network in $NETDIR"
	else
		say "private network with ${DELAY} ms per link and direction${3:+, voting every $3 s} (base port $2)"
		NETDIR=$1
		mkdir -p "$NETDIR"
		NET_STARTED=1
		env TESTNET_BASE_PORT="$2" TESTNET_DELAY_MS="$DELAY" ${3:+TESTNET_VOTING_INTERVAL="$3"} \
			${4:+TESTNET_RELAYS="$4"} TESTNET_BOOTSTRAP_TIMEOUT="${BENCH_BOOTSTRAP_TIMEOUT:-300}" \
			bash "$TESTNET" start "$NETDIR" >&2 || die "the private network did not start"
	fi
	eval "$(bash "$TESTNET" env "$NETDIR")"
	[[ -z ${3:-} || $TESTNET_VOTING_INTERVAL == "$3" ]] || die "the network in $NETDIR votes every $TESTNET_VOTING_INTERVAL s, not $3 s"
	[[ -z ${4:-} || $TESTNET_RELAY_COUNT == "$4" ]] || die "the network in $NETDIR has $TESTNET_RELAY_COUNT relays, not $4"
	DELAY=$TESTNET_DELAY_MS
	((DELAY > 0)) || say "warning: the network in $NETDIR has no link delay"
	SERVERS=$(awk '{ printf "SERVER=$%s ", $3 }' "$TESTNET_RELAYS_FILE" "$TESTNET_AUTHORITIES_FILE")
}

# Stop the network net_start started (not BENCH_NET_DIR's).
net_stop() {
	((NET_STARTED)) || return 0
	bash "$TESTNET" stop "$NETDIR" >&2 || say "testnet stop failed (see $NETDIR)"
	NET_STARTED=0
}

part_a() {
	local r s i order u out size total c0 c1 fails t0 pid tpid

	net_start "$W/net" "$BASE"

	WEB1=$((BASE + 60)) WEB2=$((BASE + 61))
	"$BACKEND" http "127.0.0.1:$WEB1" web1 > "$W/web1.log" 2>&1 &
	WEB1_PID=$!
	track "$WEB1_PID"
	# Sanity check of the delay: a request through three relays to the backend (6 delayed link crossings
	# each way for the request and the answer, plus circuit set-up).
	for ((i = 0; i < 20; i++)); do
		out=$(curl -sS -o /dev/null --max-time 30 -x "socks5h://exitcheck:x@127.0.0.1:$TESTNET_SOCKS_PORT" \
			-w '%{time_starttransfer}' "http://127.0.0.1:$WEB1/" 2>/dev/null) && break
		sleep 0.5
	done
	say "exit request through the delayed network: first byte after ${out:-?} s"

	# -- time from start until the first successful fetch; a fresh key (new address) each time, the
	#    DataDirectory kept (a restart); rep 0 is a warm-up that fills the DataDirectories.
	for ((r = 0; r <= REPS; r++)); do
		order=("${SETUPS[@]:r % ${#SETUPS[@]}}" "${SETUPS[@]:0:r % ${#SETUPS[@]}}")
		for s in "${order[@]}"; do
			t0=$(now)
			if ! start_setup "$s" "start$r"; then
				stop_setup "$s"
				continue
			fi
			if poll_fetch "${ADDR[$s]}" 90; then
				((r > 0)) && record "start_$s" "$(since "$t0")"
				say "start series $r/$REPS: $s reachable after $(since "$t0") s"
			else
				say "start series $r/$REPS: $s not reachable within 90 s (counted as a failure, not a time)"
				((r > 0)) && record "start_fail_$s" 1
			fi
			stop_setup "$s"
		done
	done

	# -- the four set-ups, running side by side for the latency, throughput and CPU series
	for s in "${SETUPS[@]}"; do start_setup "$s" main || die "set-up $s did not start"; done
	for s in "${SETUPS[@]}"; do
		poll_fetch "${ADDR[$s]}" 180 || die "set-up $s (${ADDR[$s]}) not reachable"
	done
	say "set-ups up: a=${ADDR[a]} b=${ADDR[b]} c=${ADDR[c]} d=${ADDR[d]}"

	# -- idle CPU of each set-up's service side (tor's periodic work; onionfront's health checks and
	#    keepalives), all four over the same 10 windows of 2 s: a 50 MB download takes ~50 s at ~1 MB/s,
	#    so this shows how much of the CPU per GB below is background (measured: ~0).
	local -A IDLE=() I0=()
	sleep 5
	for ((r = 1; r <= 10; r++)); do
		for s in "${SETUPS[@]}"; do mapfile -t pid < <(service_pids "$s"); I0[$s]=$(cpu_of "${pid[@]}"); done
		t0=$(now)
		sleep 2
		for s in "${SETUPS[@]}"; do
			mapfile -t pid < <(service_pids "$s")
			record "idle_$s" "$(awk -v a="${I0[$s]}" -v b="$(cpu_of "${pid[@]}")" -v t="$(since "$t0")" 'BEGIN { printf "%.2f", (b - a) / t * 100 }')"
		done
	done
	for s in "${SETUPS[@]}"; do IDLE[$s]=$(median "$RAW/idle_$s.txt"); done
	say "idle CPU, % of a core (a/b/c/d): ${IDLE[a]}/${IDLE[b]}/${IDLE[c]}/${IDLE[d]}"

	# Each set-up gets its own NEWNYM before its cold fetch, and 2 s pass before each fetch that needs new
	# circuits: a fetch right after another one found the client's pool of pre-built circuits used up and
	# took ~0.2 s longer (a first run with one NEWNYM per round of three showed this as a position effect).
	local -A U=()
	for ((r = 1; r <= REPS; r++)); do
		order=("${SETUPS[@]:r % ${#SETUPS[@]}}" "${SETUPS[@]:0:r % ${#SETUPS[@]}}")
		for s in "${order[@]}"; do
			newnym
			sleep 2
			if out=$(fetch "${ADDR[$s]}" "$(newuser)"); then record "cold_$s" "${out%% *}"; else record "fail_cold_$s" 1; fi
			sleep 2
			U[$s]=$(newuser)
			if out=$(fetch "${ADDR[$s]}" "${U[$s]}"); then record "cached_$s" "${out%% *}"; else record "fail_cached_$s" 1; fi
			if out=$(fetch "${ADDR[$s]}" "${U[$s]}"); then record "open_$s" "${out%% *}"; else record "fail_open_$s" 1; fi
		done
		# The four downloads of a round run at the same time, each on its own circuit to its own service:
		# their speed is bound by tor's windows over the delayed links, not by the CPUs or the client
		# (measured ~1 MB/s alone), and this keeps make bench within 30 minutes. Each set-up's CPU delta
		# counts only its own service-side processes.
		if ((r <= DL_REPS)); then
			local -A DLP=()
			for s in "${order[@]}"; do
				(
					mapfile -t pid < <(service_pids "$s")
					c0=$(cpu_of "${pid[@]}")
					out=$(fetch "${ADDR[$s]}" "${U[$s]}" "/bytes/$DL_BYTES" 900) || exit 1
					printf '%s %s %s\n' "$out" "$c0" "$(cpu_of "${pid[@]}")"
				) > "$W/dl_$s" &
				DLP[$s]=$!
			done
			for s in "${order[@]}"; do
				if wait "${DLP[$s]}" && read -r _ size total c0 c1 < "$W/dl_$s"; then
					record "mbps_$s" "$(awk -v b="$size" -v t="$total" 'BEGIN { printf "%.3f", b / t / 1e6 }')"
					record "cpugb_$s" "$(awk -v c0="$c0" -v c1="$c1" -v b="$size" 'BEGIN { printf "%.3f", (c1 - c0) / b * 1e9 }')"
				else
					record "fail_dl_$s" 1
				fi
			done
		fi
		say "latency round $r/$REPS (a/b/c/d): cold $(latest cold), cached $(latest cached), open $(latest open)" \
			"$( ((r <= DL_REPS)) && printf 'MB/s %s' "$(latest mbps)")"
	done

	# -- (c): kill onionfront's tor; time until a fetch works again (onionfront restarts it)
	for ((r = 1; r <= REPS; r++)); do
		fetch "${ADDR[c]}" "$(newuser)" / 30 > /dev/null || say "tor-kill $r: (c) not reachable before the kill"
		tpid=$(service_tor c)
		[[ -n $tpid ]] || { say "tor-kill $r: onionfront has no service tor"; break; }
		t0=$(now)
		kill -KILL "$tpid"
		if poll_fetch "${ADDR[c]}" 180; then
			record torkill_c "$(since "$t0")"
			say "tor-kill $r/$REPS: reachable again after $(since "$t0") s"
		else
			record fail_torkill_c 1
			say "tor-kill $r/$REPS: not reachable within 180 s"
		fi
	done

	# -- backend-kill series: two backends, one killed; tor's own two HiddenServicePort targets (b)
	#    against onionfront's pool (c). Both reconfigured in place by SIGHUP (no republication).
	write_torrc b "${KEYDIR[b]}" "$WEB1" "$WEB2"
	kill -HUP "${SPID[b]}"
	write_of_config c "${KEYDIR[c]}" "$(backends_json "$WEB1" "$WEB2")"
	kill -HUP "${SPID[c]}"
	for ((i = 0; i < 100; i++)); do grep -q 'Received reload signal' "$W/b/notice.log" && break; sleep 0.1; done
	grep -q 'Received reload signal' "$W/b/notice.log" || say "warning: tor (b) did not log its reload"
	sleep 1
	for ((r = 1; r <= REPS; r++)); do
		for s in b c; do
			: > "$W/web2.log"
			"$BACKEND" http "127.0.0.1:$WEB2" web2 > "$W/web2.log" 2>&1 &
			WEB2_PID=$!
			track "$WEB2_PID"
			for ((i = 0; i < 50; i++)); do grep -q listening "$W/web2.log" && break; sleep 0.1; done
			if [[ $s == c ]]; then
				# onionfront must have web2 in its pool and up (again, after its rise checks) before the kill.
				for ((i = 0; i < 200; i++)); do
					out=$(web2_state)
					[[ -n $out && $out != *'-> down'* ]] && break
					sleep 0.1
				done
				[[ -n $out && $out != *'-> down'* ]] || say "backend-kill $r: onionfront does not show web2 up: ${out:-nothing}"
			fi
			u=$(newuser)
			for ((i = 0; i < 3; i++)); do fetch "${ADDR[$s]}" "$u" / 30 > /dev/null; done
			of_stop_pid "$WEB2_PID" 10
			fails=0
			for ((i = 0; i < KILL_REQUESTS; i++)); do
				fetch "${ADDR[$s]}" "$u" / 30 > /dev/null || fails=$((fails + 1))
			done
			record "bkill_$s" "$fails"
			say "backend-kill series $r/$REPS: $s: $fails of $KILL_REQUESTS failed"
		done
	done
	[[ -n ${WEB2_PID:-} ]] && of_stop_pid "$WEB2_PID"
	for s in "${SETUPS[@]}"; do stop_setup "$s"; done
	net_stop
}

# ---------------------------------------------------------------- part B: data path vs HAProxy

# record ratio_NAME A/B for one round (nothing when either run failed or B is 0).
round_ratio() {
	[[ -n $2 && -n $3 ]] || return 0
	local x
	x=$(awk -v a="$2" -v b="$3" 'BEGIN { if (b > 0) printf "%.3f", a / b }')
	[[ -n $x ]] && record "ratio_$1" "$x"
}

# One more rate run against proxy NAME (PID, TARGET) under `strace -c -f`: system calls per connection
# (raw/syscalls_NAME.txt) and the calls that make them up (raw/syscalls_NAME_detail.txt). strace slows
# the proxy down; the counts per connection are what is read, not the rate.
syscalls_per_conn() {
	local name=$1 pid=$2 target=$3 st out req
	command -v strace > /dev/null || { say "strace not installed: no system call counts"; return 0; }
	strace -c -f -p "$pid" -o "$W/strace_$name.txt" 2> "$W/strace_$name.err" &
	st=$!
	sleep 0.5
	out=$("$LOADGEN" rate "$target" -c "$CONC" -d "$RATE_SECONDS" -s 1024 -p "$PROXY_LINE") || say "loadgen rate $name under strace failed: $out"
	kill -INT "$st" 2> /dev/null
	wait "$st" 2> /dev/null
	req=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<< "$out")
	[[ -n $req && $req -gt 0 && -s $W/strace_$name.txt ]] || { say "no system call counts for $name"; return 0; }
	# strace -c lines: % time, seconds, usecs/call, calls, [errors,] name; the total line lacks usecs/call.
	awk -v r="$req" '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { n += $4 } END { printf "%.1f\n", n / r }' \
		"$W/strace_$name.txt" > "$RAW/syscalls_$name.txt"
	awk -v r="$req" '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" && $4 / r >= 0.5 { printf "%s %.1f\n", $NF, $4 / r }' \
		"$W/strace_$name.txt" | sort -k2,2gr > "$RAW/syscalls_${name}_detail.txt"
	say "system calls per connection, $name: $(cat "$RAW/syscalls_$name.txt") ($(paste -sd' ' "$RAW/syscalls_${name}_detail.txt"))"
}

part_b() {
	local port=$((BASE + 100)) r t prefix out req cpu
	local -A RND
	say "part B: loopback, $CONC connections, ${RATE_SECONDS} s per run, new connection per 1 KB request, $B_REPS rounds"
	"$LOADGEN" serve "127.0.0.1:$port" > "$W/serve.log" 2>&1 &
	local srv=$!
	track "$srv"
	"$PROXYBENCH" "$W/pb" "127.0.0.1:$port" > "$W/proxybench.log" 2>&1 &
	local pb=$!
	track "$pb"
	cat > "$W/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
defaults
    mode tcp
    timeout connect 3s
    timeout client 30s
    timeout server 30s
frontend fe
    bind unix@$W/haproxy.sock accept-proxy
    default_backend be
backend be
    server b0 127.0.0.1:$port
EOF
	haproxy -db -f "$W/haproxy.cfg" > "$W/haproxy.log" 2>&1 &
	local hp=$!
	track "$hp"
	for ((r = 0; r < 100; r++)); do
		grep -q listening "$W/serve.log" && grep -q '^ready' "$W/proxybench.log" && [[ -S $W/haproxy.sock ]] && break
		sleep 0.1
	done
	grep -q '^ready' "$W/proxybench.log" || die "proxybench did not start: $(cat "$W/proxybench.log")"
	[[ -S $W/haproxy.sock ]] || die "haproxy did not start: $(cat "$W/haproxy.log")"
	local -A TGT=([direct]="127.0.0.1:$port" [haproxy]="unix:$W/haproxy.sock" [onionfront]="$(sed -n 's/^ready //p' "$W/proxybench.log")")
	local -A WATCH=([direct]=$srv [haproxy]=$hp [onionfront]=$pb)
	local paths=(direct haproxy onionfront)
	for ((r = 1; r <= B_REPS; r++)); do
		RND=()
		for t in "${paths[@]:r % 3}" "${paths[@]:0:r % 3}"; do
			prefix=()
			[[ $t != direct ]] && prefix=(-p "$PROXY_LINE")
			out=$("$LOADGEN" rate "${TGT[$t]}" -c "$CONC" -d "$RATE_SECONDS" -s 1024 "${prefix[@]}" -w "${WATCH[$t]}") ||
				{ say "loadgen rate $t failed: $out"; continue; }
			req=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<< "$out")
			RND[rps_$t]=$(sed -n 's/.*rps=\([0-9.]*\).*/\1/p' <<< "$out")
			record "rps_$t" "${RND[rps_$t]}"
			record "errors_$t" "$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<< "$out")"
			cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' <<< "$out")
			RND[cpu_$t]=$(awk -v c="$cpu" -v n="$req" 'BEGIN { printf "%.2f", c / n * 1e6 }')
			[[ $t != direct ]] && record "cpuconn_$t" "${RND[cpu_$t]}"
		done
		round_ratio rps "${RND[rps_onionfront]:-}" "${RND[rps_haproxy]:-}"
		round_ratio cpuconn "${RND[cpu_onionfront]:-}" "${RND[cpu_haproxy]:-}"
		say "rate run $r/$B_REPS: req/s direct/haproxy/onionfront $(tail -qn1 "$RAW"/rps_{direct,haproxy,onionfront}.txt | paste -sd/ -)"
	done
	syscalls_per_conn haproxy "$hp" "${TGT[haproxy]}"
	syscalls_per_conn onionfront "$pb" "${TGT[onionfront]}"
	for ((r = 1; r <= REPS; r++)); do
		RND=()
		for t in "${paths[@]:r % 3}" "${paths[@]:0:r % 3}"; do
			prefix=()
			[[ $t != direct ]] && prefix=(-p "$PROXY_LINE")
			out=$("$LOADGEN" bulk "${TGT[$t]}" -s "$BULK_BYTES" "${prefix[@]}" -w "${WATCH[$t]}") ||
				{ say "loadgen bulk $t failed: $out"; record "fail_bulk_$t" 1; continue; }
			record "bulk_$t" "$(sed -n 's/.*mbps=\([0-9.]*\).*/\1/p' <<< "$out")"
			cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' <<< "$out")
			RND[$t]=$(awk -v c="$cpu" -v b="$BULK_BYTES" 'BEGIN { printf "%.3f", c / b * 1e9 }')
			[[ $t != direct ]] && record "bulkcpu_$t" "${RND[$t]}"
		done
		round_ratio bulkcpu "${RND[onionfront]:-}" "${RND[haproxy]:-}"
		say "bulk run $r/$REPS: MB/s direct/haproxy/onionfront $(tail -qn1 "$RAW"/bulk_{direct,haproxy,onionfront}.txt | paste -sd/ -)"
	done
	of_stop_pid "$hp"
	of_stop_pid "$pb"
	of_stop_pid "$srv"
}

# ---------------------------------------------------------------- report

count() { [[ -s $RAW/$1.txt ]] && wc -l < "$RAW/$1.txt" || echo 0; }
sum() { [[ -s $RAW/$1.txt ]] && awk '{ s += $1 } END { print s }' "$RAW/$1.txt" || echo 0; }

# Part A's figure $1 as the four set-ups' cells (printf format $2), "| a | b | c | d".
cells_a() {
	local s
	for s in "${SETUPS[@]}"; do printf '| %s ' "$(cell "$RAW/$1_$s.txt" "$2")"; done
}

# Part A's ratios of figure $1: "| (c)/(b) | (c)/(a) | (d)/(a) | (d)/(c)".
ratios_a() {
	local p
	for p in c:b c:a d:a d:c; do printf '| %s ' "$(ratio "$RAW/$1_${p%:*}.txt" "$RAW/$1_${p#*:}.txt")"; done
}

report_a() {
	local m f x
	echo "### Part A — onionfront vs tor alone (private network, ${DELAY} ms per link and direction)"
	echo
	echo "Medians in bold, (min–max), $REPS repetitions each unless noted; ratios are of medians from this run. (d) is an anonymous service (\"mode\": \"anonymous\") under onionfront: its circuits are multi-hop like (a)'s, so it is slower than (b) and (c) by design; (d)/(a) is what onionfront costs a hidden service, (d)/(c) the cost of privacy."
	echo
	echo "| measure | ${LABEL[a]} | ${LABEL[b]} | ${LABEL[c]} | ${LABEL[d]} | (c)/(b) | (c)/(a) | (d)/(a) | (d)/(c) | goal |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for m in cold cached open; do
		case $m in
		cold) f="time to first byte, cold client (descriptor fetch + new rendezvous), s" ;;
		cached) f="time to first byte, cached descriptor + new rendezvous, s" ;;
		open) f="time to first byte, new stream on an open circuit, s" ;;
		esac
		x=$(ratio "$RAW/${m}_c.txt" "$RAW/${m}_b.txt")
		echo "| $f $(cells_a "$m" %.3f)$(ratios_a "$m")| (c) ≤ 1.05× (b): $(mark "$x" 'x <= 1.05') |"
	done
	x=$(ratio "$RAW/start_c.txt" "$RAW/start_b.txt")
	echo "| start → first successful fetch, s (c, d: onionfront incl. its tors; new key each time) $(cells_a start %.2f)$(ratios_a start)| (c) ≤ 0.85× (b): $(mark "$x" 'x <= 0.85') |"
	echo "| tor killed (SIGKILL) → fetch works again, s | n/a: no supervisor, stays down | n/a: no supervisor, stays down | $(cell "$RAW/torkill_c.txt" %.2f) | not measured (same supervisor as c) | — | — | — | — | — |"
	echo "| download of $((DL_BYTES / 1000000)) MB on an open circuit, MB/s ($(count mbps_c) repetitions; a, b, c, d at the same time) $(cells_a mbps %.2f)$(ratios_a mbps)| — |"
	echo "| service-side CPU per GB downloaded, s (tor; c, d: onionfront + its tors; same downloads) $(cells_a cpugb %.2f)$(ratios_a cpugb)| — |"
	echo "| service-side idle CPU, % of one core (10 windows of 2 s) $(cells_a idle %.2f)$(ratios_a idle)| — |"
	x=$(sum bkill_c)
	echo "| one of two backends killed: failed requests of $KILL_REQUESTS per series (total of $(count bkill_c) series) | — | $(cell "$RAW/bkill_b.txt" %g) (total $(sum bkill_b)) — tor's random choice among HiddenServicePort targets | $(cell "$RAW/bkill_c.txt" %g) (total $x) — onionfront's pool | not measured (same pool as c) | — | — | — | — | (c) 0 failed: $( (($(count bkill_c) > 0)) && mark "$x" 'x == 0' || printf '?') |"
	echo
	local fails=""
	for f in "$RAW"/fail_*.txt "$RAW"/start_fail_*.txt; do
		[[ -e $f ]] || continue
		fails+=" $(basename "$f" .txt)=$(wc -l < "$f")"
	done
	[[ -n $fails ]] && echo "Failed measurements (left out of the figures):$fails" && echo
	(($(count mbps_c) < REPS)) && echo "Downloads: $(count mbps_c) repetitions, not $REPS: with ${DELAY} ms per link one circuit carries about 1 MB/s (tor's flow-control windows over an 80–120 ms round trip, with the CPUs mostly idle), so $REPS × ${#SETUPS[@]} × $((DL_BYTES / 1000000)) MB would not fit make bench's 30 minutes." && echo
	echo "Reference before this work (TOR-FACTS.md, medians at 10 ms): hidden service 1.30 / 0.98 / 0.31 s, single onion 0.93 / 0.59 / 0.18 s. Goal (c)/(a) on a new rendezvous ≈ 0.6: measured $(ratio "$RAW/cached_c.txt" "$RAW/cached_a.txt")."
	echo
}

report_b() {
	local x y z
	echo "### Part B — onionfront's data path vs HAProxy (loopback, no tor)"
	echo
	echo "Same server (loadgen serve) for all three; HAProxy 2.6 (Debian) in TCP mode, nbthread 1, unix socket with accept-proxy; onionfront's data path = sidecar/datapath/proxy.c in build/bench/proxybench. $CONC concurrent clients, a new connection per 1 KB request (as tor delivers streams), ${RATE_SECONDS} s per run; CPU = utime+stime of the proxy process. Medians in bold, (min–max), $B_REPS rate rounds and $REPS bulk rounds, each round the three paths back to back; \"per round\": the ratio within each round, median (min–max), which shows the run-to-run spread. Goals from issue 16; onionfront copies bulk streams with splice(2) once they passed $((64)) KiB."
	echo
	echo "| measure | direct | HAProxy | onionfront | onionfront/HAProxy | goal |"
	echo "|---|---|---|---|---|---|"
	x=$(ratio "$RAW/rps_onionfront.txt" "$RAW/rps_haproxy.txt")
	echo "| requests/s, 1 KB, new connection per request ($B_REPS rounds) | $(cell "$RAW/rps_direct.txt" %.0f) | $(cell "$RAW/rps_haproxy.txt" %.0f) | $(cell "$RAW/rps_onionfront.txt" %.0f) | $x; per round $(cell "$RAW/ratio_rps.txt" %.2f) | ≥ 1.0: $(mark "$x" 'x >= 1.0') |"
	y=$(ratio "$RAW/cpuconn_onionfront.txt" "$RAW/cpuconn_haproxy.txt")
	echo "| proxy CPU per connection, µs | — | $(cell "$RAW/cpuconn_haproxy.txt" %.1f) | $(cell "$RAW/cpuconn_onionfront.txt" %.1f) | $y; per round $(cell "$RAW/ratio_cpuconn.txt" %.2f) | ≤ 0.9: $(mark "$y" 'x <= 0.9') |"
	x=$(ratio "$RAW/syscalls_onionfront.txt" "$RAW/syscalls_haproxy.txt")
	echo "| system calls per connection (strace -c -f, one more rate run each) | — | $(cell "$RAW/syscalls_haproxy.txt" %.1f) | $(cell "$RAW/syscalls_onionfront.txt" %.1f) | $x | — |"
	z=$(ratio "$RAW/bulk_onionfront.txt" "$RAW/bulk_haproxy.txt")
	echo "| bulk $((BULK_BYTES / 1000000)) MB on one connection, MB/s | $(cell "$RAW/bulk_direct.txt" %.0f) | $(cell "$RAW/bulk_haproxy.txt" %.0f) | $(cell "$RAW/bulk_onionfront.txt" %.0f) | $z | — |"
	z=$(ratio "$RAW/bulkcpu_onionfront.txt" "$RAW/bulkcpu_haproxy.txt")
	echo "| proxy CPU per GB (bulk), s | — | $(cell "$RAW/bulkcpu_haproxy.txt" %.2f) | $(cell "$RAW/bulkcpu_onionfront.txt" %.2f) | $z; per round $(cell "$RAW/ratio_bulkcpu.txt" %.2f) | ≤ 0.5: $(mark "$z" 'x <= 0.5') |"
	echo
	local t
	for t in haproxy onionfront; do
		[[ -s $RAW/syscalls_${t}_detail.txt ]] &&
			echo "System calls per connection, $t: $(awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }' "$RAW/syscalls_${t}_detail.txt")." && echo
	done
	echo "Request errors (all runs): direct $(sum errors_direct), HAProxy $(sum errors_haproxy), onionfront $(sum errors_onionfront)."
	echo
}

# Data file for a gnuplot histogram with error bars: label, then median min max per column.
plot_rows() { # OUTFILE LABEL:prefix... -- suffixes...
	local out=$1 item lab pre suf s
	shift
	local items=() sufs=()
	while [[ $1 != -- ]]; do items+=("$1"); shift; done
	shift
	sufs=("$@")
	: > "$out"
	for item in "${items[@]}"; do
		lab=${item%%:*} pre=${item#*:}
		printf '"%s"' "$lab" >> "$out"
		for suf in "${sufs[@]}"; do
			s=$(stats "$RAW/${pre}_$suf.txt")
			if [[ -n $s ]]; then set -- $s; printf ' %s %s %s' "$2" "$1" "$3" >> "$out"; else printf ' NaN NaN NaN' >> "$out"; fi
		done
		printf '\n' >> "$out"
	done
}

plot() {
	command -v gnuplot > /dev/null || { say "gnuplot not installed: no plot"; return 0; }
	local panels=0 g="$W/plot.gp"
	[[ -s $RAW/cold_c.txt || -s $RAW/cold_b.txt ]] && panels=$((panels + 2))
	[[ -s $RAW/rps_onionfront.txt ]] && panels=$((panels + 1))
	((panels)) || return 0
	plot_rows "$W/ttfb.dat" "cold:cold" "cached desc.:cached" "open circuit:open" -- a b c d
	plot_rows "$W/times.dat" "start → fetch:start" "tor killed → fetch:torkill" -- a b c d
	plot_rows "$W/rps.dat" "req/s (1 KB, new conn.):rps" -- direct haproxy onionfront
	{
		printf 'set terminal svg size %d,460 dynamic font "sans,11"\n' $((panels * 440))
		printf 'set output "%s"\n' "$OUT/bench.svg"
		printf 'set multiplot layout 1,%d title "onionfront make bench, %s (%s)"\n' "$panels" "$(date -u +%Y-%m-%d)" "$(nproc) cores"
		printf 'set style data histogram\nset style histogram errorbars gap 1 lw 1\nset style fill solid 0.6 border -1\n'
		printf 'set key below horizontal\nset grid ytics\nset yrange [0:*]\n'
		if [[ -s $RAW/cold_c.txt || -s $RAW/cold_b.txt ]]; then
			printf 'set title "Part A: time to first byte, s (median, min-max)"\n'
			printf 'plot "%s" using 2:3:4:xtic(1) title "(a) hidden service", "" using 5:6:7 title "(b) single onion, tor", "" using 8:9:10 title "(c) onionfront", "" using 11:12:13 title "(d) anonymous, onionfront"\n' "$W/ttfb.dat"
			printf 'set title "Part A: start / recovery, s"\n'
			printf 'plot "%s" using 2:3:4:xtic(1) title "(a)", "" using 5:6:7 title "(b)", "" using 8:9:10 title "(c)", "" using 11:12:13 title "(d)"\n' "$W/times.dat"
		fi
		if [[ -s $RAW/rps_onionfront.txt ]]; then
			printf 'set title "Part B: requests/s on loopback"\n'
			printf 'plot "%s" using 2:3:4:xtic(1) title "direct", "" using 5:6:7 title "HAProxy", "" using 8:9:10 title "onionfront"\n' "$W/rps.dat"
		fi
		printf 'unset multiplot\n'
	} > "$g"
	gnuplot "$g" 2> "$W/gnuplot.err" || say "gnuplot failed: $(cat "$W/gnuplot.err")"
}

machine() {
	printf '%s, %s cores (%s), Linux %s; load average at the end: %s' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" "$(uname -r)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
}

# results_update PART FILE: replace PART's section of $RESULTS (the lines between "<!-- bench part PART:
# begin -->" and "<!-- bench part PART: end -->") with FILE, or add the section at the end; the other parts'
# sections and the text outside them stay. Written to a temporary file in the same directory, then renamed.
results_update() {
	local begin="<!-- bench part $1: begin -->" end="<!-- bench part $1: end -->" tmp
	[[ -n $RESULTS ]] || return 0
	tmp=$(mktemp "$RESULTS.XXXXXX") || { say "cannot write $RESULTS"; return 1; }
	if grep -qxF -- "$begin" "$RESULTS" 2>/dev/null && grep -qxF -- "$end" "$RESULTS"; then
		awk -v b="$begin" -v e="$end" -v f="$2" '
			$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
			$0 == e { skip = 0 }
			!skip' "$RESULTS" > "$tmp"
	else
		{ [[ -f $RESULTS ]] && cat "$RESULTS" && echo; echo "$begin"; cat "$2"; echo "$end"; } > "$tmp"
	fi
	chmod 644 "$tmp" && mv -f -- "$tmp" "$RESULTS" || { rm -f -- "$tmp"; say "cannot write $RESULTS"; return 1; }
	say "part $1 recorded in $RESULTS"
}

# results_record PART: PART's report (report_a ...) with a line naming this run under its heading, into
# $RESULTS.
results_record() {
	local part=$1 f="$W/report-$1.md"
	"report_${part,,}" > "$f.raw" || return 1
	{
		head -n 1 "$f.raw"
		echo
		echo "Run of $(machine) (\`BENCH_PARTS="$PARTS"\`, \`BENCH_REPS=$REPS\`; written by \`make bench\`)."
		tail -n +2 "$f.raw"
	} > "$f"
	results_update "$part" "$f"
}

# Part C (issue 11: tor restarts and crashes, one and two tors) and its report.
source "$(dirname "$0")/part_c.sh"
# Part D (Onionbalance, issue 12) lives in its own file; it uses the helpers above.
source "$(dirname "$0")/part_d.sh"
# Part E (many services, issue 28).
source "$(dirname "$0")/part_e.sh"

# ---------------------------------------------------------------- main

main() {
	local f
	for f in "$OF" "$BACKEND" "$TORCTL" "$LOADGEN" "$ROOT/build/tools/delayfwd"; do
		[[ -x $f ]] || die "$f is missing: run 'make bench' (or 'make all build/bench/proxybench')"
	done
	for f in tor curl jq; do command -v "$f" > /dev/null || die "$f is not installed (tests/install-deps.sh bench)"; done
	if [[ " $PARTS " == *" B "* ]]; then # only part B runs HAProxy and proxybench
		[[ -x $PROXYBENCH ]] || die "$PROXYBENCH is missing: run 'make bench' (or 'make all build/bench/proxybench')"
		command -v haproxy > /dev/null || die "haproxy is not installed (tests/install-deps.sh bench)"
	fi
	[[ $REPS =~ ^[0-9]+$ ]] && ((REPS >= 1)) || die "BENCH_REPS must be a positive integer"
	W=$(mktemp -d /tmp/ofbench.XXXXXX) || die "mktemp"
	chmod 700 "$W"
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	rm -rf -- "$RAW"
	mkdir -p "$RAW"
	say "work directory $W; $REPS repetitions ($DL_REPS for downloads); parts: $PARTS"
	[[ " $PARTS " == *" A "* ]] && part_a
	[[ " $PARTS " == *" B "* ]] && part_b
	[[ " $PARTS " == *" C "* ]] && part_c
	[[ " $PARTS " == *" D "* ]] && part_d
	[[ " $PARTS " == *" E "* ]] && part_e
	{
		echo "## make bench — $(machine)"
		echo
		[[ " $PARTS " == *" A "* ]] && report_a
		[[ " $PARTS " == *" B "* ]] && report_b
		[[ " $PARTS " == *" C "* ]] && report_c
		[[ " $PARTS " == *" D "* ]] && report_d
		[[ " $PARTS " == *" E "* ]] && report_e
		echo "Whole run: $(awk -v a="${T_BEGIN/,/.}" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s. Raw samples: build/bench/raw/; plot: build/bench/bench.svg."
	} > "$OUT/results.md"
	for f in A B C D E; do
		[[ " $PARTS " == *" $f "* ]] && results_record "$f"
	done
	plot
	cat "$OUT/results.md"
}

main "$@"
