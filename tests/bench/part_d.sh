# tests/bench/part_d.sh — `make bench` part D (issue 12): Onionbalance on the latency network. Sourced by
# run.sh, whose helpers it uses (net_start, fetch, newuser, ctl, newnym, cpu_of, tor_children, record,
# round_ratio, cell, ratio, mark, extra_torrc_json, track); nothing here asserts.
#
# Layout as in tests/integration/test_onionbalance.sh, two onionfront processes standing for two machines
# (separate state, run dirs and tors): A runs the frontend of master M (Debian's Onionbalance, "testnet":
# true) and instance insta; B runs instance instb. Network: TESTNET_DELAY_MS like part A, voting every
# 20 s (Onionbalance's --is-testnet hard-codes it), ports base+300..base+399.
# Phase 1, "1 instance": A's frontend lists no remote instance, so M's descriptor carries only insta's 2
#   intro points (B runs, unlisted: the same processes on the machine in both phases).
#   (1) one download of BENCH_D_BYTES on an open circuit, through M vs through insta's own address,
#       back to back, order alternated: the same service tor and backend; only the descriptor differs
#       (Onionbalance 0.2.2's has no flow-control line, so the client runs no congestion control).
#   (2) aggregate: BENCH_D_CONC downloads at once, each on its own circuit (own SOCKS username, circuit
#       built with a small request first, one after the other), for BENCH_D_SECONDS (curl --max-time;
#       each asks for BENCH_D_CAP bytes, more than it gets in the window); MB/s = bytes / the window.
# Phase 2, "2 instances": A's config lists instb, reloaded (SIGHUP: onionfront restarts Onionbalance with
#   the new config.yaml); once status shows 4 intro points and an upload after that is confirmed, the
#   client drops its descriptors (NEWNYM) and the master descriptor it fetches has 4 intro points, and
#   once a request through M reaches instb (NEWNYM again after every 4 that do not); then (2) again.
#   Each circuit's first page names the instance it reached (the split is reported; one client tor
#   tended to reach the same instance with every circuit: see tests/bench/RESULTS.md).
# CPU during each aggregate run (utime+stime from /proc/PID/stat before/after, % of one core) and time
# runnable but waiting for a CPU (/proc/PID/schedstat): the client tor, the network's 11 tors, its
# delayfwd, machine A (onionfront + its tors), machine B; and the whole machine's busy share (/proc/stat,
# every user of the shared machine included).
# Environment: BENCH_D_BYTES (20000000), BENCH_D_REPS (3), BENCH_D_CONC (16), BENCH_D_SECONDS (20),
# BENCH_D_CAP (32000000; the backend holds each answer in memory).

D_BYTES=${BENCH_D_BYTES:-20000000}
D_REPS=${BENCH_D_REPS:-3}
D_CONC=${BENCH_D_CONC:-16}
D_SECONDS=${BENCH_D_SECONDS:-20}
D_CAP=${BENCH_D_CAP:-32000000}
D_BASE=$((BASE + 300))
D_FETCH=$ROOT/tests/integration/hs_desc_fetch.py
D_GROUPS=(client relays delayfwd machineA machineB)

# d_conf MACHINE SERVICES_JSON — onionfront config of machine A or B in $W/d$MACHINE.
d_conf() {
	mkdir -p "$W/d$1"
	cat > "$W/d$1/onionfront.json" <<EOF
{ "state_dir": "$W/d$1/state", "run_dir": "$W/d$1/run", "log_level": "info",
  "tor": { "mode": "spawn", "bootstrap_timeout": 300, "extra_torrc": $(extra_torrc_json) },
  "probe": { "client_tor": false },
  "services": $2 }
EOF
}

d_of() { "$OF" -c "$W/d$1/onionfront.json" "${@:2}"; } # MACHINE ARGS...

# d_start MACHINE — run machine A's or B's onionfront (tracked; its PID in D_PID_A or D_PID_B).
d_start() {
	"$OF" -c "$W/d$1/onionfront.json" run >> "$W/d$1/onionfront.log" 2>&1 &
	track $!
	printf -v "D_PID_$1" '%s' $!
}

# d_new_key MACHINE SERVICE — create SERVICE's key; print its address.
d_new_key() { d_of "$1" new-key "$2" 2>&1 | grep -Eo '[a-z2-7]{56}\.onion' | head -n 1; }

d_inst_json() { # NAME PORT MASTER
	printf '{ "name": "%s", "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ], "onionbalance": { "master_address": "%s" } }' "$1" "$2" "$3"
}

# d_conf_a REMOTE_INSTANCES_JSON — machine A: the frontend of M (with those remote instances) and insta.
d_conf_a() {
	d_conf A "[ { \"name\": \"front\", \"onionbalance\": { \"frontend\": true, \"instances\": $1, \"testnet\": true } },
	  $(d_inst_json insta "$D_WEB_A" "$D_MASTER") ]"
}

# d_ob FIELD — a field of the frontend's "onionbalance" object in A's status ("" if none).
d_ob() {
	d_of A status --json 2> /dev/null |
		jq -r --arg f "$1" '.services[] | select(.onionbalance.role? == "frontend") | .onionbalance[$f] // ""' 2> /dev/null
}


d_publishing_with() { [[ $(d_ob state) == publishing && $(d_ob intro_points) == "$1" ]]; }
d_confirmed_after() { local n; n=$(d_ob uploads_confirmed); [[ -n $n && $n -gt $1 ]]; }

# Intro points of the master descriptor as an HSDir serves it to the network's client (stem decrypts it).
d_master_intros() {
	timeout 30 /usr/bin/python3 "$D_FETCH" "$TESTNET_CLIENT_CONTROL" "$D_MASTER" 2>> "$W/d_fetch.err" |
		grep -c '^introduction-point '
}

# d_wait_master N — until Onionbalance publishes a master descriptor with N intro points (confirmed
# after its status shows N), the client has dropped what it cached and an HSDir serves it that one.
d_wait_master() {
	local n t0 end
	t0=$(now)
	wait_until 300 d_publishing_with "$1" || die "part D: the frontend does not publish $1 intro points (state '$(d_ob state)', $(d_ob intro_points) intro points)"
	n=$(d_ob uploads_confirmed)
	wait_until 120 d_confirmed_after "$n" || die "part D: no upload of the master confirmed after it had $1 intro points"
	newnym
	end=$((SECONDS + 180))
	until [[ $(d_master_intros) == "$1" ]]; do
		((SECONDS < end)) || die "part D: the client's HSDirs do not serve a master descriptor with $1 intro points (see $W/d_fetch.err)"
		sleep 5
	done
	say "part D: master descriptor with $1 intro points confirmed and served ($(since "$t0") s)"
}

# d_page_from USER — the instance ("instA"/"instB") whose page a request through M with USER reached.
d_page_from() {
	curl -sS --max-time 60 -x "socks5h://$1:x@127.0.0.1:$TESTNET_SOCKS_PORT" "http://$D_MASTER/" 2> /dev/null |
		grep -Eo 'Hello from inst[AB]' | sed 's/Hello from //'
}

# Until a request through M (a new circuit each, one after the other) reaches instb: an HSDir serving 4
# intro points did not yet mean the client used them (a run had 48 of 48 circuits on insta right after
# the check). NEWNYM after every 4 that reach insta; gives up (with a warning) after 240 s.
d_wait_reach_b() {
	local n=0 end=$((SECONDS + 240)) got
	while ((SECONDS < end)); do
		got=$(d_page_from "$(newuser)")
		n=$((n + 1))
		[[ $got == instB ]] && { say "part D: a request through M reached instb after $n tries"; return 0; }
		((n % 4)) || newnym
	done
	say "warning: part D: $n requests through M, none reached instb: the 2-instance figures may be 1-instance ones (see the split)"
}

# The PIDs of CPU group $1 (see D_GROUPS), one per line.
d_group_pids() {
	case $1 in
	client) bash "$TESTNET" status "$NETDIR" 2> /dev/null | awk '$1 == "client" && $3 == "running" { print $5 }' ;;
	relays) bash "$TESTNET" status "$NETDIR" 2> /dev/null | awk '$1 ~ /^(auth|relay)[0-9]+$/ && $3 == "running" { print $5 }' ;;
	delayfwd) bash "$TESTNET" status "$NETDIR" 2> /dev/null | awk '$1 == "delayfwd" && $3 == "running" { print $5 }' ;;
	machineA) printf '%s\n' "$D_PID_A" && tor_children "$D_PID_A" ;;
	machineB) printf '%s\n' "$D_PID_B" && tor_children "$D_PID_B" ;;
	esac
}

# Seconds the given PIDs together spent runnable but waiting for a CPU (/proc/PID/schedstat, field 2).
d_runq_of() {
	local pid ns=0 b
	for pid in "$@"; do
		read -r _ b _ < "/proc/$pid/schedstat" 2> /dev/null && ns=$((ns + b))
	done
	awk -v n="$ns" 'BEGIN { printf "%.3f", n / 1e9 }'
}

# Busy and total jiffies of the whole machine (all CPUs), "busy total".
d_machine_jiffies() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat; }

# d_aggregate PHASE — BENCH_D_REPS aggregate runs through the master; records agg_PHASE, the split over
# the instances, early finishes and each CPU group's share.
d_aggregate() {
	local phase=$1 r k g t0 wall sum n_a n_b early
	local -A C0=() R0=()
	local users=() pids=() P=() j0 j1
	for ((r = 1; r <= D_REPS; r++)); do
		# One after the other: requests made at once all reached one instance (16 of 16). One after the
		# other they did too in both full runs so far (tests/bench/RESULTS.md): the split is reported.
		users=()
		for ((k = 0; k < D_CONC; k++)); do
			users[k]=$(newuser)
			d_page_from "${users[k]}" > "$W/d_warm_$k"
		done
		n_a=$(cat "$W"/d_warm_* | grep -c instA) n_b=$(cat "$W"/d_warm_* | grep -c instB)
		((n_a + n_b == D_CONC)) || record "fail_d_warm_$phase" $((D_CONC - n_a - n_b))
		record "split_$phase" "$n_a/$n_b"
		for g in "${D_GROUPS[@]}"; do
			mapfile -t P < <(d_group_pids "$g")
			C0[$g]=$(cpu_of "${P[@]}") R0[$g]=$(d_runq_of "${P[@]}")
		done
		j0=$(d_machine_jiffies)
		pids=()
		t0=$(now)
		for ((k = 0; k < D_CONC; k++)); do
			curl -s -o /dev/null --max-time "$D_SECONDS" -w '%{http_code} %{size_download}\n' \
				-x "socks5h://${users[k]}:x@127.0.0.1:$TESTNET_SOCKS_PORT" "http://$D_MASTER/bytes/$D_CAP" > "$W/d_agg_$k" 2> /dev/null &
			pids+=($!)
		done
		wait "${pids[@]}"
		wall=$(since "$t0")
		j1=$(d_machine_jiffies)
		for g in "${D_GROUPS[@]}"; do
			mapfile -t P < <(d_group_pids "$g")
			record "cpu_${g}_$phase" "$(awk -v a="${C0[$g]}" -v b="$(cpu_of "${P[@]}")" -v t="$wall" 'BEGIN { printf "%.1f", (b - a) / t * 100 }')"
			record "runq_${g}_$phase" "$(awk -v a="${R0[$g]}" -v b="$(d_runq_of "${P[@]}")" -v t="$wall" 'BEGIN { printf "%.1f", (b - a) / t * 100 }')"
		done
		record "cpu_machine_$phase" "$(awk -v a="$j0" -v b="$j1" 'BEGIN { split(a, x, " "); split(b, y, " ");
			printf "%.1f", (y[2] > x[2]) ? (y[1] - x[1]) / (y[2] - x[2]) * 100 : 0 }')"
		sum=$(cat "$W"/d_agg_* | awk '{ s += $2 } END { print s + 0 }')
		# a download that ended with its whole answer (200) before the window's end: the window was not filled
		early=$(cat "$W"/d_agg_* | awk -v c="$D_CAP" '$1 == 200 && $2 == c { n++ } END { print n + 0 }')
		record "early_$phase" "$early"
		record "agg_$phase" "$(awk -v s="$sum" -v t="$D_SECONDS" 'BEGIN { printf "%.3f", s / t / 1e6 }')"
		say "part D aggregate $phase $r/$D_REPS: $(tail -n1 "$RAW/agg_$phase.txt") MB/s over ${wall} s, circuits on instA/instB $n_a/$n_b," \
			"finished early $early; CPU % of a core $(for g in "${D_GROUPS[@]}" machine; do printf '%s=%s ' "$g" "$(tail -n1 "$RAW/cpu_${g}_$phase.txt")"; done)" \
			"waiting for a CPU % $(for g in "${D_GROUPS[@]}"; do printf '%s=%s ' "$g" "$(tail -n1 "$RAW/runq_${g}_$phase.txt")"; done)"
	done
}

# One download each through the master and through insta's own address per round, back to back.
d_single() {
	local r t u out size total
	local -A RND=() TGT=([master]=$D_MASTER [instance]=$D_INSTA)
	for ((r = 1; r <= D_REPS; r++)); do
		RND=()
		for t in $( ((r % 2)) && echo master instance || echo instance master); do
			u=$(newuser)
			if ! fetch "${TGT[$t]}" "$u" / 60 > /dev/null; then
				record "fail_d_dl_$t" 1
				continue
			fi
			if out=$(fetch "${TGT[$t]}" "$u" "/bytes/$D_BYTES" 900) && read -r _ size total <<< "$out"; then
				RND[$t]=$(awk -v b="$size" -v t="$total" 'BEGIN { printf "%.3f", b / t / 1e6 }')
				record "dl_$t" "${RND[$t]}"
			else
				record "fail_d_dl_$t" 1
			fi
		done
		round_ratio d_dl "${RND[master]:-}" "${RND[instance]:-}"
		say "part D download $r/$D_REPS: MB/s master ${RND[master]:-failed}, instance ${RND[instance]:-failed}"
	done
}

part_d() {
	local inst_b t0
	[[ -x /usr/sbin/onionbalance ]] || die "part D needs Debian's onionbalance (tests/install-deps.sh bench)"
	/usr/bin/python3 -c 'import stem' 2> /dev/null || die "part D needs python3-stem (tests/install-deps.sh bench)"
	command -v jq > /dev/null || die "part D needs jq (tests/install-deps.sh bench)"
	net_start "$W/netd" "$D_BASE" 20
	D_WEB_A=$((D_BASE + 60)) D_WEB_B=$((D_BASE + 61))
	"$BACKEND" http "127.0.0.1:$D_WEB_A" instA > "$W/d_webA.log" 2>&1 &
	track $!
	"$BACKEND" http "127.0.0.1:$D_WEB_B" instB > "$W/d_webB.log" 2>&1 &
	track $!

	d_conf A '[ { "name": "front", "onionbalance": { "frontend": true } } ]'
	D_MASTER=$(d_new_key A front)
	d_conf B "[ $(d_inst_json instb "$D_WEB_B" "$D_MASTER") ]"
	inst_b=$(d_new_key B instb)
	d_conf_a '[]'
	D_INSTA=$(d_new_key A insta)
	[[ -n $D_MASTER && -n $inst_b && -n $D_INSTA ]] || die "part D: new-key gave no address (master '$D_MASTER', insta '$D_INSTA', instb '$inst_b')"
	say "part D: master $D_MASTER, instances insta $D_INSTA (A), instb $inst_b (B)"

	t0=$(now)
	d_start B
	d_start A
	# newnym (run.sh) waits until the client has dropped the descriptors of "${SETUPS[@]}" by ADDR:
	# these, for part D (dynamic scope).
	# shellcheck disable=SC2034
	local SETUPS=(master insta instb)
	# shellcheck disable=SC2034
	local -A ADDR=([master]=$D_MASTER [insta]=$D_INSTA [instb]=$inst_b)

	d_wait_master 2
	say "part D: phase 1 (1 instance) ready $(since "$t0") s after start"
	poll_fetch "$D_INSTA" 120 || die "part D: insta not reachable directly"
	d_single
	d_aggregate one

	d_conf_a "[ \"$inst_b\" ]"
	kill -HUP "$D_PID_A"
	t0=$(now)
	d_wait_master 4
	d_wait_reach_b
	say "part D: phase 2 (2 instances) ready $(since "$t0") s after the reload"
	d_aggregate two

	of_stop_pid "$D_PID_A" 30
	of_stop_pid "$D_PID_B" 30
	net_stop
}

# Part D's CPU row for group $1 (label $2): CPU and run-queue wait, 1 and 2 instances.
d_cpu_row() {
	printf '| %s | %s | %s | %s | %s |\n' "$2" "$(cell "$RAW/cpu_$1_one.txt" %.0f)" "$(cell "$RAW/cpu_$1_two.txt" %.0f)" \
		"$(cell "$RAW/runq_$1_one.txt" %.0f)" "$(cell "$RAW/runq_$1_two.txt" %.0f)"
}

report_d() {
	local x f fails=""
	echo "### Part D — Onionbalance (private network, ${DELAY} ms per link and direction, voting every 20 s)"
	echo
	echo "Two onionfront processes as two machines (A: Onionbalance frontend of master M + instance insta; B: instance instb), Debian's Onionbalance 0.2.2 with --is-testnet. \"1 instance\": A's frontend lists no remote instance, so M's descriptor has only insta's 2 intro points (B runs, unlisted); \"2 instances\": instb added by a reload, measured once the client is served M's descriptor with 4 intro points. Medians in bold, (min–max), $D_REPS repetitions; ratios of medians from this run."
	echo
	echo "| measure | value | ratio | goal |"
	echo "|---|---|---|---|"
	x=$(ratio "$RAW/dl_master.txt" "$RAW/dl_instance.txt")
	echo "| one download of $((D_BYTES / 1000000)) MB on an open circuit through M (1 instance; M's descriptor has no flow-control line: no congestion control), MB/s | $(cell "$RAW/dl_master.txt" %.2f) | master/instance $x; per round $(cell "$RAW/ratio_d_dl.txt" %.2f) | — |"
	echo "| the same through insta's own address (same tor, congestion control), MB/s | $(cell "$RAW/dl_instance.txt" %.2f) | | |"
	echo "| $D_CONC downloads at once, own circuits, ${D_SECONDS} s window, through M with 1 instance: aggregate MB/s | $(cell "$RAW/agg_one.txt" %.2f) | | |"
	x=$(ratio "$RAW/agg_two.txt" "$RAW/agg_one.txt")
	echo "| the same with 2 instances: aggregate MB/s (circuits on insta/instb: $(paste -sd' ' "$RAW/split_two.txt" 2> /dev/null)) | $(cell "$RAW/agg_two.txt" %.2f) | 2/1 instances $x | ≥ 1.7× where the CPUs allow: $(mark "$x" 'x >= 1.7') |"
	echo
	echo "During the aggregate runs, % of the window: CPU used (utime+stime, /proc/PID/stat) and time spent runnable but waiting for a CPU (/proc/PID/schedstat; summed over a group's processes, so it can pass 100). Whole machine: busy share of all $(nproc) CPUs, every process on it."
	echo
	echo "| process | CPU, 1 instance | CPU, 2 instances | waiting for a CPU, 1 instance | waiting, 2 instances |"
	echo "|---|---|---|---|---|"
	d_cpu_row client "the network's client tor (all $D_CONC circuits)"
	d_cpu_row relays "the network's 11 tors (3 authorities, 8 relays)"
	d_cpu_row delayfwd "its delayfwd (every delayed link)"
	d_cpu_row machineA "machine A: onionfront + its tors (insta's, Onionbalance's)"
	d_cpu_row machineB "machine B: onionfront + its tor (instb)"
	printf '| whole machine busy, %% of all CPUs | %s | %s | — | — |\n' "$(cell "$RAW/cpu_machine_one.txt" %.0f)" "$(cell "$RAW/cpu_machine_two.txt" %.0f)"
	echo
	for f in "$RAW"/fail_d_*.txt; do
		[[ -e $f ]] && fails+=" $(basename "$f" .txt)=$(sum "$(basename "$f" .txt)")"
	done
	[[ -n $fails ]] && echo "Failed measurements (left out of the figures):$fails" && echo
	x=$(( $(sum early_one) + $(sum early_two) ))
	((x > 0)) && echo "$x aggregate downloads received all $((D_CAP / 1000000)) MB before the window ended: those runs understate the aggregate (raise BENCH_D_CAP)." && echo
}
