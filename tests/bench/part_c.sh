# tests/bench/part_c.sh — `make bench` part C (issue 11): what a visitor sees when the service's tor is
# restarted or killed, with tor alone (a torrc single onion service), onionfront with one tor and
# onionfront with two tors (tor.instances 2), and what the second tor costs at idle. Sourced by run.sh,
# whose helpers it uses (start_setup for set-up b (tor alone) and c (onionfront), fetch, poll_fetch,
# record, cell, cpu_of, the cleanup of its network and processes); nothing here asserts.
#
# A private network of its own like part A's (net_start: BENCH_DELAY_MS, 10 ms per link and direction;
# base port BENCH_C_BASE_PORT, 31000; BENCH_NET_DIR for development), the same backend for every
# set-up, the network's client tor as the visitor. The three set-ups run one after the other (each on its
# own, so they do not share the machine), each through:
#  - idle: BENCH_C_REPS windows of BENCH_C_IDLE_SECONDS (20) after the start: CPU (utime+stime, as
#    seconds per minute) and RSS of each tor; with two tors the second one's figures are the row asked.
#  - restart: a request every 100 ms, each on its own circuit (a SOCKS username per request; the client's
#    descriptor cache is shared), at most BENCH_C_INFLIGHT (15) open at a time, from 2 s before the
#    restart until the restart is over and the last 20 answers were good (at least BENCH_C_REQUESTS,
#    100, requests; at most 120 s after the restart). Tor alone: SIGTERM, then the same torrc started
#    again; onionfront: `onionfront restart-tor` (a plain restart with one tor, a rolling restart with
#    two). Counts the failed requests and the longest gap between two good answers.
#  - SIGKILL of the tor whose descriptor the HSDirs serve, so the one a client that just fetched holds
#    (onionfront's status names it: services[].served_by; tor 1 when it names none), twice per repetition:
#    (1) a cached client: a SOCKS username that fetched just before (open rendezvous circuit, cached
#        descriptor) asks again at once after the kill, and again until answered (bounded): did the first
#        request succeed, and when did it get an answer;
#    (2) a new client: a client tor of its own, started (and bootstrapped) before the kill and left
#        BENCH_C_SETTLE_S (10) s to build its first circuits, as a browser that has been open a moment, that
#        never asked for the service: no cached descriptor, no HSDir asked yet, as a visitor arriving
#        after the kill. (A tor asked in the second it bootstrapped builds every circuit from nothing:
#        about 1 s more.) It fetches (a new SOCKS username per try, each up to 10 s, its tor fetching the
#        descriptor itself) until a fetch works: time from the kill. Its tor is stopped afterwards.
#        Beside it, a second such client tor starts asking BENCH_C_LATE_S (0.5) s after the kill: a
#        visitor arriving once the survivor's upload is on the HSDirs. The first one asks in the instant
#        of the kill, before that upload lands, so it may fetch the killed tor's descriptor; tor's client
#        then spends ~3 s on its dead introduction points before it fetches again (measured with client
#        events by trace_failover.sh); the goal row is the late one's. A third such tor asks just before
#        the kill: what a new visitor's first request takes with no failover at all (the reference).
#    Tor alone has no supervisor: its tor is killed once at the end and both clients are given 20 s.
#  - the SIGKILLs once more with two tors and the survivor's older renewal (set-up "of2r": onionfront run
#    with "tor": {"renewal": "readd"}, which removes and re-adds the services: new introduction points) instead
#    of the PoW trigger (a PoW-parameter change: same introduction points), for the row "with and without
#    the trigger"; no idle or restart figures for it.
# BENCH_C_COLS picks set-ups (default "alone of1 of2 of2r"; e.g. "of2 of2r" for the failover rows only).

C_REPS=${BENCH_C_REPS:-3}
C_BASE=${BENCH_C_BASE_PORT:-31000}
C_MIN_REQUESTS=${BENCH_C_REQUESTS:-100}
C_IDLE=${BENCH_C_IDLE_SECONDS:-20}
C_INFLIGHT=${BENCH_C_INFLIGHT:-15}
C_ALONE_WAIT=20
C_LATE_S=${BENCH_C_LATE_S:-0.5}
C_SETTLE_S=${BENCH_C_SETTLE_S:-10}
C_COLS=(alone of1 of2)
read -r -a C_RUN <<< "${BENCH_C_COLS:-alone of1 of2 of2r}"
declare -A C_LABEL=([alone]="tor alone (torrc service)" [of1]="onionfront, 1 instance" [of2]="onionfront, 2 instances"
	[of2r]="onionfront, 2 instances, without the PoW trigger")

# onionfront's status (JSON) of set-up c.
c_status() { "$OF" -c "$W/c/onionfront.json" status --json 2> /dev/null; }
# c_tor INSTANCE FIELD: a field of that tor's row in status ("" if none).
c_tor() { c_status | jq -r --argjson i "$1" '.status.tors[] | select(.instance == $i) | .'"$2"' // empty' 2> /dev/null; }
# The pids of onionfront's tors, in instance order, one line.
c_pids() { c_status | jq -r '[.status.tors[].pid] | map(tostring) | join(" ")' 2> /dev/null; }
# Every tor of set-up c runs and has bootstrapped, its pid not among $1 (the pids before a restart), and
# no roll runs. Not the tor's verdict: after an outage it waits for the next good probe (minutes).
c_settled() {
	local st
	st=$(c_status) || return 1
	jq -e --arg old " ${1:-} " '(.status.tors | length > 0) and ([.status.tors[] | .pid as $p
		| .state == "running" and .bootstrap_progress == 100 and $p != null
		and ($old | contains(" " + ($p | tostring) + " ") | not)] | all)
		and ((.status.roll // {}).state // "idle") == "idle"' <<< "$st" > /dev/null 2>&1
}

# The instance whose descriptor of the service the HSDirs serve, as onionfront's status names it
# (services[0].served_by: each HSDir's copy compared with each tor's own descriptor, or the acceptance
# record while clients fetch the descriptor tor does not show as its own; "source" says which), waiting
# up to 20 s for it to be known; "1 (...)" if it stays unknown. The client fetched just before, so the
# descriptor it holds is the one the HSDirs serve. (The certificate comparison used before never matched:
# GETINFO hs/service/desc/id shows only tor's "current" descriptor, not always the one clients fetch.)
c_served() {
	local k i
	for ((i = 0; i < 40; i++)); do
		k=$(c_status | jq -r '.services[0] | select(.served_by != null) | "\(.served_by) \(.served.source)"' 2> /dev/null)
		[[ -n $k ]] && { echo "${k% *} (by ${k#* })"; return; }
		sleep 0.5
	done
	echo "1 (status named no served tor)"
}

# The pid of set-up $1's tor number $2 (tor alone: its only tor).
c_tor_pid() { if [[ $1 == alone ]]; then printf '%s' "${SPID[b]}"; else c_tor "$2" pid; fi; }

# Microseconds since the epoch.
c_us() { local t=${EPOCHREALTIME/[.,]/}; printf '%s' "$t"; }

# c_loop_start OUT ADDR: in the background, a request every 100 ms, each on its own circuit (a SOCKS
# username each) and in its own process, at most C_INFLIGHT at a time (a tick waits while that many are
# open: during an outage the rate drops instead of piling up requests in the client tor), until OUT.stop
# exists and at least C_MIN_REQUESTS were started; each line of OUT: start end ok|fail. Sets C_LOOP.
c_loop_start() {
	local out=$1 addr=$2
	: > "$out"
	rm -f "$out.stop"
	(
		i=0 t0=$(c_us)
		while ((i < C_MIN_REQUESTS)) || [[ ! -e $out.stop ]]; do
			while (($(jobs -rp | wc -l) >= C_INFLIGHT)); do wait -n; done
			(
				s=$(now)
				if fetch "$addr" "c$$-$BASHPID-$i" / 10 > /dev/null; then r=ok; else r=fail; fi
				printf '%s %s %s\n' "$s" "$(now)" "$r" >> "$out"
			) &
			i=$((i + 1))
			w=$((t0 + i * 100000 - $(c_us)))
			((w > 0)) && sleep "$((w / 1000000)).$(printf '%06d' $((w % 1000000)))"
		done
		wait
	) &
	C_LOOP=$!
	track "$C_LOOP"
}

# The last 20 answers of loop file $1 (by end time) were all good and started after time $2.
c_loop_healthy() {
	sort -k2,2g "$1" | tail -n 20 | awk -v t="$2" '$1 >= t && $3 == "ok" { n++ } END { exit !(n == 20) }'
}

# "failed total gap rate" of loop file $1: gap = the longest time between two good answers (or from the
# last good answer to the end of the loop, when it ended failing; from the first start, when it began
# failing); rate = requests per second over the whole loop.
c_loop_figures() {
	sort -k2,2g "$1" | awk 'NR == 1 { last = $1; t0 = $1 } { n++; end = $2 }
		$3 == "ok" { if ($2 - last > gap) gap = $2 - last; last = $2 }
		$3 == "fail" { f++; lastfail = 1 } $3 == "ok" { lastfail = 0 }
		END { if (lastfail && end - last > gap) gap = end - last
			printf "%d %d %.2f %.2f\n", f, n, gap, (end > t0 ? n / (end - t0) : 0) }'
}

# onionfront takes at most one restart-tor a minute (ROLL_COMMAND_INTERVAL_S, 60 s, in
# sidecar/fleet/roll.h); the time of the last one per set-up, so the next waits out the rest before its
# request loop starts (the wait is not part of the measured window).
C_RESTART_INTERVAL=61
declare -A C_LAST_RESTART=()
# Restart set-up $1's tor(s) under the request loop; one repetition.
c_restart() {
	local col=$1 addr=$2 r=$3 out=$W/c_loop_${1}_$3.txt t0 done_at old f n gap rate left
	if [[ $col != alone && -n ${C_LAST_RESTART[$col]:-} ]]; then
		left=$(awk -v a="${C_LAST_RESTART[$col]}" -v b="$(now)" -v i="$C_RESTART_INTERVAL" 'BEGIN { l = i - (b - a); printf "%d", (l > 0 ? l + 1 : 0) }')
		((left > 0)) && sleep "$left"
	fi
	c_loop_start "$out" "$addr"
	sleep 2
	t0=$(now)
	if [[ $col == alone ]]; then
		stop_setup b
		start_setup b "$col" || say "part C: tor alone did not start again"
	else
		old=$(c_pids)
		C_LAST_RESTART[$col]=$(now)
		"$OF" -c "$W/c/onionfront.json" restart-tor >> "$W/c/restart-tor.out" 2>&1 || say "part C: restart-tor failed: $(tail -n 1 "$W/c/restart-tor.out")"
		wait_until 400 c_settled "$old" || say "part C: $col: the restart did not end within 400 s"
	fi
	done_at=$(now)
	wait_until 120 c_loop_healthy "$out" "$done_at" || say "part C: $col: no 20 good answers in a row within 120 s of the restart"
	touch "$out.stop" # the loop ends once it made C_MIN_REQUESTS
	wait_until 300 eval '! kill -0 "$C_LOOP" 2> /dev/null' || say "part C: the request loop did not end"
	wait "$C_LOOP" 2> /dev/null
	read -r f n gap rate < <(c_loop_figures "$out")
	record "crestart_rate_$col" "$rate"
	record "crestart_fail_$col" "$f"
	record "crestart_n_$col" "$n"
	record "crestart_gap_$col" "$gap"
	record "crestart_secs_$col" "$(awk -v a="$t0" -v b="$done_at" 'BEGIN { printf "%.2f", b - a }')"
	say "part C restart $r/$C_REPS, $col: $f of $n requests failed, longest gap $gap s (restart over after $(awk -v a="$t0" -v b="$done_at" 'BEGIN { printf "%.1f", b - a }') s)"
}

# Fetch until answered on SOCKS username $2 (the cached client), from kill time $3, for at most $4 s;
# records whether the first request succeeded and when the client got an answer.
c_cached_client() {
	local col=$1 u=$2 t0=$3 limit=$4 first=1
	while awk -v e="$(since "$t0")" -v l="$limit" 'BEGIN { exit !(e < l) }'; do
		if fetch "${ADDR[$5]}" "$u" / 30 > /dev/null; then
			record "ccached_first_$col" "$first"
			record "ccached_t_$col" "$(since "$t0")"
			return 0
		fi
		first=0
		sleep 0.1
	done
	record "ccached_first_$col" 0
	record "fail_ccached_$col" 1
	return 1
}

# Two client tors of their own on the network (set-up $1, repetition $2), bootstrapped: the integration
# tests' of_start_client_tor (run.sh sources their lib.sh) in $W; sets FRESH_PID/FRESH_SOCKS (the new
# client asking at the kill) and LATE_PID/LATE_SOCKS (the one asking C_LATE_S after it).
c_fresh_client_start() {
	OF_TMP=$W of_start_client_tor "cfresh-$1-$2" || { say "part C: the new client's tor did not bootstrap"; return 1; }
	FRESH_PID=$OF_LAST_PID
	FRESH_SOCKS=$OF_CLIENT_SOCKS
	track "$FRESH_PID"
	OF_TMP=$W of_start_client_tor "clate-$1-$2" || { say "part C: the late client's tor did not bootstrap"; return 1; }
	LATE_PID=$OF_LAST_PID
	LATE_SOCKS=$OF_CLIENT_SOCKS
	track "$LATE_PID"
	OF_TMP=$W of_start_client_tor "cbase-$1-$2" || { say "part C: the no-kill client's tor did not bootstrap"; return 1; }
	BASE_PID=$OF_LAST_PID
	BASE_SOCKS=$OF_CLIENT_SOCKS
	track "$BASE_PID"
	sleep "$C_SETTLE_S"
}

# The no-kill reference (set-up $1): a third such client tor, as settled, asks for $2 before the kill;
# records how long its first answer took (what any new visitor's tor needs, failover or not).
c_base_client() {
	local t0
	t0=$(now)
	if c_fresh_client_fetch "$2" "$t0" 60 "$BASE_SOCKS"; then
		record "cbase_$1" "$(since "$t0")"
	else
		record "fail_cbase_$1" 1
	fi
}

# A new client on SOCKS port $4 fetches $1 until answered, from kill time $2, for at most $3 s.
c_fresh_client_fetch() {
	local t0=$2 limit=$3 socks=$4
	while awk -v e="$(since "$t0")" -v l="$limit" 'BEGIN { exit !(e < l) }'; do
		curl -sS -o /dev/null --fail --max-time 10 -x "socks5h://$(newuser):x@127.0.0.1:$socks" \
			"http://$1/" 2> /dev/null && return 0
		sleep 0.1
	done
	return 1
}

# The late client (set-up $1): from C_LATE_S after kill time $3, fetches $2 until answered (at most $4 s);
# records the time from the kill. Run in the background beside the new client's own loop.
c_late_client() {
	local col=$1 t0=$3
	sleep "$C_LATE_S"
	if c_fresh_client_fetch "$2" "$t0" "$4" "$LATE_SOCKS"; then
		record "clate_$col" "$(since "$t0")"
	else
		record "fail_clate_$col" 1
	fi
}

# One SIGKILL of set-up $1's tor (the one whose descriptor the client holds) with client kind $2
# (cached|new); then, for onionfront, wait until it has recovered.
c_kill() {
	local col=$1 kind=$2 r=$3 s=c k pid u t0
	[[ $col == alone ]] && s=b
	u=$(newuser)
	fetch "${ADDR[$s]}" "$u" / 30 > /dev/null || say "part C kill $r, $col: not reachable before the kill"
	fetch "${ADDR[$s]}" "$u" / 30 > /dev/null
	k=1
	[[ $col == alone ]] || k=$(c_served)
	pid=$(c_tor_pid "$col" "${k%% *}")
	[[ -n $pid ]] || { say "part C kill $r, $col: no tor pid"; return 1; }
	if [[ $kind == new ]] && ! c_fresh_client_start "$col" "$r"; then
		record "fail_cnew_$col" 1
		return 1
	fi
	local limit late=""
	limit=$( [[ $col == alone ]] && echo "$C_ALONE_WAIT" || echo 120)
	[[ $kind == new ]] && c_base_client "$col" "${ADDR[$s]}"
	t0=$(now)
	kill -KILL "$pid"
	if [[ $kind == cached ]]; then
		c_cached_client "$col" "$u" "$t0" "$limit" "$s"
	else
		c_late_client "$col" "${ADDR[$s]}" "$t0" "$limit" &
		late=$!
		if c_fresh_client_fetch "${ADDR[$s]}" "$t0" "$limit" "$FRESH_SOCKS"; then
			record "cnew_$col" "$(since "$t0")"
		else
			record "fail_cnew_$col" 1
		fi
		wait "$late"
	fi
	if [[ $kind == new ]]; then # end the new clients' tors (reaped) and forget their PIDs
		of_stop_pid "$FRESH_PID" 15
		of_stop_pid "$LATE_PID" 15
		of_stop_pid "$BASE_PID" 15
		local p keep=()
		for p in "${PIDS[@]}"; do [[ $p == "$FRESH_PID" || $p == "$LATE_PID" || $p == "$BASE_PID" ]] || keep+=("$p"); done
		PIDS=("${keep[@]}")
	fi
	say "part C kill $r/$C_REPS, $col, tor $k, $kind client: $( [[ $kind == cached ]] && tail -qn1 "$RAW/ccached_first_$col.txt" "$RAW/ccached_t_$col.txt" 2> /dev/null | paste -sd' ' - || echo "at the kill $(tail -qn1 "$RAW/cnew_$col.txt" 2> /dev/null), ${C_LATE_S} s after it $(tail -qn1 "$RAW/clate_$col.txt" 2> /dev/null)")"
	[[ $col == alone ]] && return 0
	# Recovered: onionfront restarted the killed tor (a new pid, up) and a fetch works.
	wait_until 180 c_settled "$pid" || say "part C kill $r, $col: tor $k not back within 180 s"
	poll_fetch "${ADDR[$s]}" 120 || say "part C kill $r, $col: not reachable after the kill"
	sleep 5 # the restarted tor uploads its descriptors
}

# Idle figures of set-up $1 over C_REPS windows of C_IDLE seconds: CPU s per minute and RSS MB of tor 1
# and (with two) tor 2, and of the whole service side (onionfront and every child tor).
c_idle() {
	local col=$1 r k t0 pids all c0 c1
	local -A P C0
	sleep 10
	for ((r = 1; r <= C_REPS; r++)); do
		P=() C0=()
		for k in 1 2; do
			[[ $col != of2 && $k == 2 ]] && continue
			P[$k]=$(c_tor_pid "$col" "$k")
			C0[$k]=$(cpu_of "${P[$k]}")
		done
		mapfile -t all < <(if [[ $col == alone ]]; then service_pids b; else service_pids c; fi)
		c0=$(cpu_of "${all[@]}")
		t0=$(now)
		sleep "$C_IDLE"
		for k in "${!P[@]}"; do
			record "cidlecpu${k}_$col" "$(awk -v a="${C0[$k]}" -v b="$(cpu_of "${P[$k]}")" -v t="$(since "$t0")" 'BEGIN { printf "%.3f", (b - a) / t * 60 }')"
			record "crss${k}_$col" "$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/${P[$k]}/status" 2> /dev/null)"
		done
		c1=$(cpu_of "${all[@]}")
		record "cidlecpuall_$col" "$(awk -v a="$c0" -v b="$c1" -v t="$(since "$t0")" 'BEGIN { printf "%.3f", (b - a) / t * 60 }')"
		record "crssall_$col" "$(for pids in "${all[@]}"; do awk '/^VmRSS:/ { print $2 }' "/proc/$pids/status" 2> /dev/null; done | awk '{ s += $1 } END { printf "%.1f", s / 1024 }')"
	done
	say "part C idle, $col: tor 1 $(median "$RAW/cidlecpu1_$col.txt") CPU s/min, $(median "$RAW/crss1_$col.txt") MB$( [[ $col == of2 ]] && printf '; tor 2 %s CPU s/min, %s MB' "$(median "$RAW/cidlecpu2_$col.txt")" "$(median "$RAW/crss2_$col.txt")")"
}

part_c() {
	local col s r
	# Set-ups b and c of part A are reused by name: keep part A's directories (its network is gone).
	for s in b c; do [[ -d $W/$s ]] && mv "$W/$s" "$W/partA-$s"; done
	net_start "$W/netc" "$C_BASE"
	WEB1=$((C_BASE + 60))
	"$BACKEND" http "127.0.0.1:$WEB1" web1 > "$W/c_web1.log" 2>&1 &
	track "$!"

	for col in "${C_RUN[@]}"; do
		s=c
		unset OF_TOR_RENEWAL
		case $col in
		alone) s=b ;;
		of1) OF_TOR_INSTANCES=1 ;;
		of2) OF_TOR_INSTANCES=2 ;;
		of2r) OF_TOR_INSTANCES=2; OF_TOR_RENEWAL=readd ;; # tor.renewal: onionfront's older renewal (service.h)
		*) say "part C: no set-up $col"; continue ;;
		esac
		start_setup "$s" "$col" || { say "part C: $col did not start"; unset OF_TOR_RENEWAL; continue; }
		unset OF_TOR_RENEWAL
		if ! poll_fetch "${ADDR[$s]}" 180 || { [[ $s == c ]] && ! wait_until 180 c_settled; }; then
			say "part C: $col (${ADDR[$s]}) not reachable or not up within 180 s"
			stop_setup "$s"
			continue
		fi
		say "part C: $col up at ${ADDR[$s]}"
		if [[ $col != of2r ]]; then
			c_idle "$col"
			for ((r = 1; r <= C_REPS; r++)); do c_restart "$col" "${ADDR[$s]}" "$r"; done
		fi
		if [[ $col == alone ]]; then
			c_kill alone cached 1 # kills tor alone for good
			start_setup b "$col" && poll_fetch "${ADDR[b]}" 180
			c_kill alone new 1
		else
			for ((r = 1; r <= C_REPS; r++)); do
				c_kill "$col" cached "$r"
				c_kill "$col" new "$r"
			done
		fi
		stop_setup "$s"
	done
	unset OF_TOR_INSTANCES OF_TOR_RENEWAL
	net_stop
}

# "yes/no count" cell of a 0/1 file: how many of the samples were 1.
c_yes() { [[ -s $1 ]] && awk '{ y += $1 } END { printf "%d of %d", y, NR }' "$1" || printf '—'; }

report_c() {
	local col x
	echo "### Part C — tor restarts and crashes: tor alone vs onionfront with one and two tors (issue 11; private network, ${DELAY} ms per link and direction)"
	echo
	echo "Medians in bold, (min–max), $C_REPS repetitions each. Visitor = the network's client tor. Restart: a request every 100 ms (each up to 10 s, at most $C_INFLIGHT open at a time: a tick waits while that many are), on a new circuit each (SOCKS username), from 2 s before the restart until it is over and 20 answers in a row were good (≥ $C_MIN_REQUESTS requests); tor alone: SIGTERM and start again, onionfront: \`onionfront restart-tor\` (a rolling restart with two tors). SIGKILL: of the tor whose descriptor the HSDirs serve (onionfront status \`served_by\`; tor 1 when it named none); cached client = the SOCKS username that fetched just before (open rendezvous circuit, cached descriptor), asking again at once and until answered; new client = a client tor of its own, bootstrapped ${C_SETTLE_S} s before the kill, that never asked for the service (no cached descriptor), fetching with a new SOCKS username per try until answered: one asking in the instant of the kill, another (a second such tor) from ${C_LATE_S} s after it; a third such tor asks just before the kill (the no-kill reference). Tor alone was killed once and given ${C_ALONE_WAIT} s. Idle: $C_REPS windows of ${C_IDLE} s."
	echo
	echo "| measure | ${C_LABEL[alone]} | ${C_LABEL[of1]} | ${C_LABEL[of2]} | goal |"
	echo "|---|---|---|---|---|"
	printf '| failed requests of N during a tor restart, a request every 100 ms '
	for col in "${C_COLS[@]}"; do
		printf '| %s of %s ' "$(cell "$RAW/crestart_fail_$col.txt" %g)" "$(cell "$RAW/crestart_n_$col.txt" %g)"
	done
	x=$(median "$RAW/crestart_fail_of2.txt")
	echo "| 2 instances 0: $(mark "${x:-}" 'x == 0') |"
	printf '| requests per second the loop made '
	for col in "${C_COLS[@]}"; do printf '| %s ' "$(cell "$RAW/crestart_rate_$col.txt" %.1f)"; done
	echo "| — |"
	printf '| longest gap between two good answers during the restart, s '
	for col in "${C_COLS[@]}"; do printf '| %s ' "$(cell "$RAW/crestart_gap_$col.txt" %.2f)"; done
	echo "| — |"
	printf '| restart over (tor alone: started again; onionfront: every tor up, roll ended), s after the command '
	for col in "${C_COLS[@]}"; do printf '| %s ' "$(cell "$RAW/crestart_secs_$col.txt" %.1f)"; done
	echo "| — |"
	x=$(sort -g "$RAW/clate_of2.txt" 2> /dev/null | tail -n1)
	printf '| tor SIGKILL → a new client arriving %s s after the kill is answered, s after the kill ' "$C_LATE_S"
	printf '| %s ' "$( [[ -s $RAW/clate_alone.txt ]] && cell "$RAW/clate_alone.txt" %.2f || echo "never (no supervisor; nothing within ${C_ALONE_WAIT} s)")"
	printf '| %s ' "$(cell "$RAW/clate_of1.txt" %.2f)" "$(cell "$RAW/clate_of2.txt" %.2f)"
	echo "| 2 instances ≤ 1 s (every repetition): $(mark "${x:-}" 'x <= 1') |"
	printf '| for reference, no kill: such a new client'"'"'s first request (its tor as settled, never asked for the service), s '
	printf '| %s ' "$(cell "$RAW/cbase_alone.txt" %.2f)" "$(cell "$RAW/cbase_of1.txt" %.2f)" "$(cell "$RAW/cbase_of2.txt" %.2f)"
	echo "| — |"
	printf '| tor SIGKILL → a new client asking in the instant of the kill is answered, s (it may fetch the killed tor'"'"'s descriptor before the survivor'"'"'s upload lands) '
	printf '| %s ' "$( [[ -s $RAW/cnew_alone.txt ]] && cell "$RAW/cnew_alone.txt" %.2f || echo "never (no supervisor; nothing within ${C_ALONE_WAIT} s)")"
	printf '| %s ' "$(cell "$RAW/cnew_of1.txt" %.2f)" "$(cell "$RAW/cnew_of2.txt" %.2f)"
	echo "| report |"
	# The same kills with the survivor's older renewal (set-up of2r): the trigger's worth, in one row.
	printf '| 2 instances, tor SIGKILL → a new client (at the kill; %s s after) is answered, s: with the PoW trigger / without (services removed and re-added) ' "$C_LATE_S"
	printf '| — | — | %s; %s / %s; %s ' "$(cell "$RAW/cnew_of2.txt" %.2f)" "$(cell "$RAW/clate_of2.txt" %.2f)" \
		"$(cell "$RAW/cnew_of2r.txt" %.2f)" "$(cell "$RAW/clate_of2r.txt" %.2f)"
	echo "| report |"
	printf '| 2 instances, a cached client across the SIGKILL: with the PoW trigger / without '
	printf '| — | — | %s yes, answered after %s / %s yes, answered after %s ' "$(c_yes "$RAW/ccached_first_of2.txt")" \
		"$(cell "$RAW/ccached_t_of2.txt" %.2f)" "$(c_yes "$RAW/ccached_first_of2r.txt")" "$(cell "$RAW/ccached_t_of2r.txt" %.2f)"
	echo "| report |"
	printf '| a cached client'"'"'s request across the SIGKILL: first request succeeds? answered after, s '
	for col in "${C_COLS[@]}"; do
		if [[ $col == alone && ! -s $RAW/ccached_t_alone.txt ]]; then
			printf '| no: never answered within %s s ' "$C_ALONE_WAIT"
		else
			printf '| %s yes; answered after %s ' "$(c_yes "$RAW/ccached_first_$col.txt")" "$(cell "$RAW/ccached_t_$col.txt" %.2f)"
		fi
	done
	echo "| — |"
	echo "| service-host CPU and memory of the second tor at idle: CPU s per minute; RSS MB | no second tor | no second tor | $(cell "$RAW/cidlecpu2_of2.txt" %.3f); $(cell "$RAW/crss2_of2.txt" %.1f) MB | report |"
	printf '| for comparison, the (first) tor at idle: CPU s per minute; RSS MB '
	for col in "${C_COLS[@]}"; do printf '| %s; %s MB ' "$(cell "$RAW/cidlecpu1_$col.txt" %.3f)" "$(cell "$RAW/crss1_$col.txt" %.1f)"; done
	echo "| — |"
	printf '| whole service side at idle (tor; onionfront + its tors incl. the probe'"'"'s client tor): CPU s per minute; RSS MB '
	for col in "${C_COLS[@]}"; do printf '| %s; %s MB ' "$(cell "$RAW/cidlecpuall_$col.txt" %.3f)" "$(cell "$RAW/crssall_$col.txt" %.1f)"; done
	echo "| — |"
	echo
	local fails=""
	for x in "$RAW"/fail_c*.txt; do
		[[ -e $x ]] && fails+=" $(basename "$x" .txt)=$(wc -l < "$x")"
	done
	[[ -n $fails ]] && echo "Part C measurements that did not succeed (left out of the times):$fails" && echo
}
