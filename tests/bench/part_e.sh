# tests/bench/part_e.sh — `make bench` part E (issue 28): many services, tor alone against onionfront
# with one tor and with several (tor.instances). Sourced by run.sh, whose helpers it uses (net_start,
# net_stop, record, cell, ratio, median, mark, cpu_of, extra_torrc_json, track, say, now, since,
# of_stop_pid); nothing here asserts.
#
# A private network of its own (net_start: BENCH_DELAY_MS per link and direction; base port
# BENCH_E_BASE_PORT, 32000; backend at base+60; BENCH_E_RELAYS relays, default testnet.sh's 8, relays past
# the 8th on ports base+100 on). For each N in BENCH_E_NS ("10 50 200 500"), each
# repetition (BENCH_E_REPS, 1) and each set-up in BENCH_E_COLS ("alone of1 of2 of4 of4s2"), one after the
# other (the order rotated from one N or repetition to the next), each from scratch (fresh keys, fresh
# DataDirectories, so every service's first publication):
#   alone: tor alone, N single onion services in its torrc (HiddenServiceSingleHopMode), every service
#          one port to the one local backend;
#   ofK:   build/onionfront with default settings (probe on), the same N services, tor.instances K.
#          Without tors_per_service every tor hosts every service (for failover), so with K tors each
#          service is published K times.
#   ofKsM: the same with "tors_per_service": M (1 <= M <= K) in the tor section: each service on M of
#          the K tors (onionfront picks them by rendezvous hashing of the service name), e.g. of4s2. The
#          publication rule below is unchanged: a tor that does not host a service never uploads its
#          descriptors, so only the hosting tors' events count for it. An onionfront that does not know
#          the key refuses the config: the set-up ends at once and its cell says so.
# Measured, per set-up:
#  - publication: start (the tor / onionfront process launched) → every service on all responsible
#    HSDirs, s. Read from the HS_DESC events of every service tor (build/tools/torctl on its control
#    socket, each line stamped as it arrives; re-attached within 1 s if a tor is restarted): a
#    descriptor id counts once every HSDir it was sent to (UPLOAD, by any of the service's tors)
#    answered UPLOADED to one of them (matched by HSDir to that tor's latest pending UPLOAD, as
#    HS_DESC UPLOADED names no id; FAILED drops that one) — with several tors an HSDir refuses the copy
#    with the lower revision counter (UPLOAD_REJECTED), so each tor alone is never on all; a service
#    counts at its second such descriptor id (current and next). The same rule for every set-up. Bounded by BENCH_E_TIMEOUT (default 300 + 6 × N s); when it runs out the cell
#    says how many were published. For onionfront also its own view: the first time `status --json`
#    showed each service with hsdirs_confirmed ≥ hsdirs_total > 0 (polled every 5 s, as
#    tests/integration/test_many.sh does).
#  - tor restarts during the run (onionfront: status .status.tors[].restarts summed, at the end of the
#    set-up, after the reload; tor alone: 0 if its one process is still the same, else "died").
#  - idle, BENCH_E_IDLE_SECONDS (30) after publication + 10 s: onionfront's CPU (utime+stime) as
#    seconds per minute; RSS of onionfront, of its service tors (summed) and of its probe client tor;
#    tor alone's RSS and CPU likewise.
#  - `status --json` size in bytes and `status` text lines, after publication.
#  - rendering `metrics` (onionfront's /metrics text, every tor's figures for every service): BENCH_E_RENDERS
#    (20) requests one after the other on one connection to the status socket, mean ms from a request
#    to its whole reply (the daemon renders on its event loop: time the data path waits).
#  - a reload adding one service (tor alone: a HiddenService group appended to its torrc, SIGHUP;
#    onionfront: the config with the service added, `onionfront reload`): time from the reload to the
#    new service on all responsible HSDirs (same rule), and how many of the N others uploaded a
#    descriptor id they already had (not a new one: rotations create new ids) in the
#    BENCH_E_WINDOW (30) s after the reload — next to the same count in the 30 s before the reload
#    (tor's own schedule: new intro points re-upload a descriptor), which tells the two apart.
# Goals printed with ✓/✗ (issue 28): onionfront ≤ 1.1× tor alone's publication time at every N, 0 tor
# restarts, adding one service re-uploads no other (the count after the reload no higher than before).
#
# onionfront takes up to 512 services (CONFIG_MAX_SERVICES); a set-up it refuses ends at once and the
# cell says why.
# The network: 3 authorities + BENCH_E_RELAYS relays, all HSDirs, every descriptor goes to 8 of them over
# its own 4-hop circuit through those tors, all on this machine. At 500 services with 4 tors that is
# 500 × 2 × 8 × 4 = 32000 uploads (≈ 2900 per HSDir with 11 HSDirs) per first publication and again every
# ~4-minute time period of the test network; more relays spread them. The limit that comes first is on
# the service side (tests/testnet/README.md, "Many services on one tor"): every upload is a stream
# waiting for its own circuit, and each circuit that opens makes tor scan every waiting stream against
# every circuit, so one tor's first burst costs CPU that grows faster than the square of its service
# count (~100 ms per circuit at 800 waiting uploads, 50 services). The report says which N were not run
# or did not finish.

E_BASE=${BENCH_E_BASE_PORT:-32000}
E_RELAYS=${BENCH_E_RELAYS:-}
read -r -a E_NS <<< "${BENCH_E_NS:-10 50 200 500}"
read -r -a E_COLS <<< "${BENCH_E_COLS:-alone of1 of2 of4 of4s2}"
E_REPS=${BENCH_E_REPS:-1}
E_IDLE=${BENCH_E_IDLE_SECONDS:-30}
E_WINDOW=${BENCH_E_WINDOW:-30}
E_RENDERS=${BENCH_E_RENDERS:-20}
declare -A E_LABEL=([alone]="tor alone (torrc)" [of1]="onionfront, 1 tor" [of2]="onionfront, 2 tors" [of3]="onionfront, 3 tors"
	[of4]="onionfront, 4 tors" [of4s2]="onionfront, 4 tors, each service on 2")
declare -A E_WATCH=() # control socket → PID of the torctl watching it
E_DIR='' E_PID='' E_SOCKS=() E_T0=''

# e_col_ok COL: succeed if COL is a set-up this part knows: alone, ofK or ofKsM (K 1..4, M 1..K).
e_col_ok() { [[ $1 == alone ]] || { [[ $1 =~ ^of([1-4])(s([1-4]))?$ ]] && ((${BASH_REMATCH[3]:-1} <= BASH_REMATCH[1])); }; }
# e_col_tors COL: K of ofK / ofKsM. e_col_share COL: M of ofKsM, empty for ofK (every tor hosts every service).
e_col_tors() { local c=${1#of}; printf '%s' "${c%%s*}"; }
e_col_share() { [[ $1 == of*s* ]] && printf '%s' "${1##*s}"; return 0; }
# e_label COL: the column's heading; e_short COL: its name in the ratio columns.
e_label() {
	if [[ -n ${E_LABEL[$1]:-} ]]; then printf '%s' "${E_LABEL[$1]}"; else
		printf 'onionfront, %s tors, each service on %s' "$(e_col_tors "$1")" "$(e_col_share "$1")"
	fi
}
e_short() {
	if [[ -n $(e_col_share "$1") ]]; then printf '%s tors, %s per service' "$(e_col_tors "$1")" "$(e_col_share "$1")"; else
		printf '%s tor(s)' "$(e_col_tors "$1")"
	fi
}

# e_svc_json N: onionfront's services s000 … s(N-1), each one port to the backend.
e_svc_json() {
	local i first=1
	printf '['
	for ((i = 0; i < $1; i++)); do
		((first)) || printf ', '
		printf '{ "name": "s%03d", "ports": [ { "virtual": 80, "target": "127.0.0.1:%d" } ] }' "$i" "$E_WEB"
		first=0
	done
	printf ']'
}

# e_of_config N K [M]: onionfront's config with N services and K tors in $E_DIR; with M, each service on
# M of them (tor.tors_per_service).
e_of_config() {
	cat > "$E_DIR/onionfront.json" <<EOF
{
  "state_dir": "$E_DIR/state",
  "run_dir": "$E_DIR/run",
  "log_level": "info",
  "tor": { "mode": "spawn", "bootstrap_timeout": 300, "instances": $2,${3:+ \"tors_per_service\": $3,} "extra_torrc": $(extra_torrc_json) },
  "services": $(e_svc_json "$1")
}
EOF
}

# e_torrc_service I: tor alone's HiddenService group of service I.
e_torrc_service() { printf 'HiddenServiceDir %s/hs/s%03d\nHiddenServicePort 80 127.0.0.1:%d\n' "$E_DIR" "$1" "$E_WEB"; }

e_torrc() {
	local i
	{
		printf '%%include %s\n' "$TESTNET_TORRC_EXTRA"
		printf 'DataDirectory %s/data\nSocksPort 0\nRunAsDaemon 0\n' "$E_DIR"
		printf 'Log notice file %s/notice.log\nControlPort unix:%s/control\nCookieAuthentication 1\n' "$E_DIR" "$E_DIR"
		printf 'HiddenServiceSingleHopMode 1\nHiddenServiceNonAnonymousMode 1\n'
		for ((i = 0; i < $1; i++)); do e_torrc_service "$i"; done
	} > "$E_DIR/torrc"
}

e_of() { "$OF" -c "$E_DIR/onionfront.json" "$@"; }

# e_render_ms SOCKET R: R "metrics" requests one after the other on one connection to the status socket
# (each reply read whole before the next request); prints the mean ms per request, or nothing if a reply
# was not a good one.
e_render_ms() {
	python3 - "$1" "$2" <<'PY' 2> /dev/null
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(120)
s.connect(path)
f = s.makefile("rb")
t0 = time.monotonic()
for _ in range(n):
    s.sendall(b"metrics\n")
    if not f.readline().startswith(b'{"ok":true'):
        sys.exit(1)
print("%.2f" % ((time.monotonic() - t0) * 1000 / n))
PY
}
e_status() { e_of status --json 2> /dev/null; } # exits 1/2 while a service is degraded or down

# Start a watcher on each of E_SOCKS that exists and has none running; HS_DESC events, one file per
# socket, each line "epoch-seconds 650 HS_DESC ...".
e_watch() {
	local k s
	for k in "${!E_SOCKS[@]}"; do
		s=${E_SOCKS[$k]}
		[[ -S $s ]] || continue
		[[ -n ${E_WATCH[$s]:-} ]] && kill -0 "${E_WATCH[$s]}" 2> /dev/null && continue
		[[ -n ${E_WATCH[$s]:-} ]] && e_untrack "${E_WATCH[$s]}"
		"$TORCTL" "$s" -e HS_DESC -t 86400 \
			> >(while IFS= read -r l; do printf '%s %s\n' "${EPOCHREALTIME/,/.}" "$l"; done >> "$E_DIR/ev-$k.txt") 2> /dev/null &
		E_WATCH[$s]=$!
		track "$!"
	done
}

# Stop PID (tracked by us) and forget it, so that cleanup never signals a PID reused by someone else.
e_untrack() {
	local p keep=()
	of_stop_pid "$1" "${2:-15}"
	for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

# "address epoch" of each service's first time on all responsible HSDirs (rule in the header), from
# the event files of this set-up (the earliest over its tors).
e_complete() {
	local files=("$E_DIR"/ev-*.txt)
	[[ -e ${files[0]} ]] || return 0
	# Pass 1 counts each tor's FAILED results per (service, HSDir, id); pass 2 gives those failures to the
	# earliest UPLOADs of that id, so an UPLOADED (which names no id) is matched to the latest pending
	# UPLOAD to that HSDir that did not fail, whatever order the results came in. The latest, not the
	# earliest: at 50 services most of the first burst of uploads never gets an answer (neither UPLOADED
	# nor FAILED), and those stay pending for good.
	awk 'pass == 1 && $3 == "HS_DESC" && $4 == "FAILED" && $8 != "" { nf[FILENAME, $5, $7, $8]++ }
	pass == 1 || $3 != "HS_DESC" { next }
	$4 == "UPLOAD" { k = FILENAME SUBSEP $5 SUBSEP $7; d = $5 SUBSEP $8; h = $7
		if (!((d, h) in tgt)) { tgt[d, h] = 1; ntgt[d]++ }
		if (nf[k, $8] > 0) { nf[k, $8]--; next } # this one failed
		q[k] = q[k] " " $8; next }
	$4 == "UPLOADED" { k = FILENAME SUBSEP $5 SUBSEP $7; h = $7; s = q[k]; sub(/^ /, "", s)
		n = split(s, a, " "); if (n == 0) next
		d = $5 SUBSEP a[n]; q[k] = ""; for (i = 1; i < n; i++) q[k] = q[k] " " a[i]
		if (!((d, h) in ok)) { ok[d, h] = 1; nok[d]++ }
		if (nok[d] >= ntgt[d] && !(d in done)) {
			done[d] = 1
			if (++nd[$5] >= 2 && (!($5 in first) || $1 < first[$5])) first[$5] = $1
		} }
	END { for (s in first) print s, first[s] }' pass=1 "${files[@]}" pass=2 "${files[@]}"
}

# e_disturbed T_RELOAD NEW_ADDR: "after before rotations": services other than NEW_ADDR that uploaded a
# descriptor id created before the window, in [T, T+W] and in [T-W, T); rotations = new ids of others
# created in [T-W, T+W].
e_disturbed() {
	cat "$E_DIR"/ev-*.txt 2> /dev/null | sort -g | awk -v t="$1" -v w="$E_WINDOW" -v new="$2" '
	$3 != "HS_DESC" || $5 == new { next }
	$4 == "CREATED" { if (!(($5, $8) in born)) born[$5, $8] = $1; if ($1 >= t - w && $1 <= t + w) rot++; next }
	$4 == "UPLOAD" && !(($5, $8) in born) { born[$5, $8] = $1 }
	$4 == "UPLOAD" {
		if ($1 >= t && $1 <= t + w && born[$5, $8] < t) after[$5] = 1
		if ($1 >= t - w && $1 < t && born[$5, $8] < t - w) before[$5] = 1 }
	END { printf "%d %d %d\n", length(after), length(before), rot }'
}

# RSS in MB of the given PIDs together.
e_rss() {
	local p
	for p in "$@"; do awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2> /dev/null; done | awk '{ s += $1 } END { printf "%.1f", s / 1024 }'
}

# The PIDs of the set-up's service tors (tor alone: its tor), one line; and of onionfront's probe tor.
e_tor_pids() { if [[ $1 == alone ]]; then echo "$E_PID"; else e_status | jq -r '[.status.tors[].pid | select(. != null) | tostring] | join(" ")'; fi; }
e_probe_pid() {
	local t
	for t in $(tor_children "$E_PID"); do grep -qaF -- "probe-torrc" "/proc/$t/cmdline" 2> /dev/null && echo "$t"; done
}

# e_wait_pub N LIMIT COL: wait until all N are on their HSDirs (and, for onionfront, its status says so
# too); records the figures. Returns 1 if not all published.
e_wait_pub() {
	local n=$1 limit=$2 col=$3 tag=$3_$1 c=0 sc=0 last=0 st done_ev=0 done_st=0
	[[ $col == alone ]] && done_st=1
	: > "$E_DIR/ofpub.txt"
	while ((SECONDS < limit)); do
		e_watch
		if ! kill -0 "$E_PID" 2> /dev/null; then # e.g. onionfront refused the config
			record "e_ended_$tag" "$( { grep -hiE 'error|refus|must' "$E_DIR/onionfront.log" "$E_DIR/stderr.log" 2> /dev/null || echo 'exited'; } | tail -n 1 | cut -c1-160 | tr '|' '/')"
			say "part E: $col N=$n: the process ended: $(tail -n 1 "$RAW/e_ended_$tag.txt")"
			break
		fi
		if ((!done_ev)); then
			c=$(e_complete | wc -l)
			((c >= n)) && done_ev=1
		fi
		if ((!done_st && SECONDS - last >= 5)); then
			last=$SECONDS
			st=$(e_status)
			jq -r '.services[] | select(.descriptor.hsdirs_total > 0 and .descriptor.hsdirs_confirmed >= .descriptor.hsdirs_total) | .name' \
				<<< "$st" >> "$E_DIR/ofpub.txt" 2> /dev/null
			sc=$(sort -u "$E_DIR/ofpub.txt" | wc -l)
			if ((sc >= n)); then
				done_st=1
				record "e_pubof_$tag" "$(since "$E_T0")"
			fi
		fi
		((done_ev && done_st)) && break
		sleep 1
	done
	if ((done_ev)); then
		record "e_pub_$tag" "$(e_complete | sort -k2,2g | tail -n 1 | awk -v t="$E_T0" '{ printf "%.1f", $2 - t }')"
	else
		c=$(e_complete | wc -l)
		record "e_pubfail_$tag" "$c of $n after $(since "$E_T0" | cut -d. -f1) s"
	fi
	((done_st)) || [[ $col == alone ]] || record "e_pubofail_$tag" "status: $sc of $n"
	say "part E: $col N=$n: ${c} of $n on all their HSDirs (events)$( [[ $col == alone ]] || printf '; status: %s of %s' "$sc" "$n") after $(since "$E_T0") s"
	((done_ev))
}

# One set-up, one N, one repetition.
e_run() {
	local col=$1 n=$2 r=$3 tag=$1_$2 k=1 m='' i limit addr t_r new c0 tp pp d st newaddr a b rot
	limit=$((SECONDS + ${BENCH_E_TIMEOUT:-$((300 + 6 * n))}))
	E_DIR=$W/e/$col-$n-$r
	rm -rf -- "$E_DIR"
	mkdir -p "$E_DIR" && chmod 700 "$E_DIR"
	E_SOCKS=() E_WATCH=()
	E_T0=$(now)
	if [[ $col == alone ]]; then
		mkdir -p "$E_DIR/hs" && chmod 700 "$E_DIR/hs"
		e_torrc "$n"
		E_T0=$(now)
		tor -f "$E_DIR/torrc" --defaults-torrc /dev/null > /dev/null 2>> "$E_DIR/stderr.log" &
		E_PID=$!
		E_SOCKS=("$E_DIR/control")
	else
		k=$(e_col_tors "$col")
		m=$(e_col_share "$col")
		e_of_config "$n" "$k" "$m"
		E_T0=$(now)
		"$OF" -c "$E_DIR/onionfront.json" run >> "$E_DIR/onionfront.log" 2>&1 &
		E_PID=$!
		E_SOCKS=("$E_DIR/run/control/control.sock")
		for ((i = 2; i <= k; i++)); do E_SOCKS+=("$E_DIR/run/control-$i/control.sock"); done
	fi
	track "$E_PID"
	# Attach to each tor as soon as its control socket appears (tor bootstraps ~2 s before any upload).
	for ((i = 0; i < 1200; i++)); do
		e_watch
		((${#E_WATCH[@]} == ${#E_SOCKS[@]})) && break
		kill -0 "$E_PID" 2> /dev/null || break
		sleep 0.05
	done
	e_wait_pub "$n" "$limit" "$col"
	if ! kill -0 "$E_PID" 2> /dev/null; then
		e_untrack "$E_PID"
		for i in "${E_WATCH[@]}"; do e_untrack "$i" 5; done
		E_WATCH=()
		return 1
	fi

	# idle figures, status size
	sleep 10
	tp=$(e_tor_pids "$col")
	pp=
	[[ $col == alone ]] || pp=$(e_probe_pid)
	c0=$(cpu_of "$E_PID")
	# shellcheck disable=SC2086 # lists of PIDs
	d=$(cpu_of $tp)
	st=$(now)
	sleep "$E_IDLE"
	if [[ $col != alone ]]; then
		record "e_cpuof_$tag" "$(awk -v a="$c0" -v b="$(cpu_of "$E_PID")" -v t="$(since "$st")" 'BEGIN { printf "%.3f", (b - a) / t * 60 }')"
		record "e_rssof_$tag" "$(e_rss "$E_PID")"
		[[ -n $pp ]] && record "e_rssprobe_$tag" "$(e_rss "$pp")"
		record "e_json_$tag" "$(e_status | wc -c)"
		record "e_text_$tag" "$(e_of status 2> /dev/null | wc -l)"
		record "e_render_$tag" "$(e_render_ms "$E_DIR/run/status.sock" "$E_RENDERS")"
	fi
	# shellcheck disable=SC2086
	record "e_cputor_$tag" "$(awk -v a="$d" -v b="$(cpu_of $tp)" -v t="$(since "$st")" 'BEGIN { printf "%.3f", (b - a) / t * 60 }')"
	# shellcheck disable=SC2086
	record "e_rsstor_$tag" "$(e_rss $tp)"

	# a reload adding one service
	new=$(printf 's%03d' "$n")
	t_r=$(now)
	if [[ $col == alone ]]; then
		e_torrc_service "$n" >> "$E_DIR/torrc"
		kill -HUP "$E_PID"
		for ((i = 0; i < 600; i++)); do [[ -s $E_DIR/hs/$new/hostname ]] && break; sleep 0.05; done
		newaddr=$(tr -d ' \n' < "$E_DIR/hs/$new/hostname" 2> /dev/null)
	else
		e_of_config "$((n + 1))" "$k" "$m"
		kill -HUP "$E_PID" # onionfront reloads its config on SIGHUP
		for ((i = 0; i < 120; i++)); do
			newaddr=$(e_status | jq -r --arg s "$new" '.services[] | select(.name == $s) | .address // empty' 2> /dev/null)
			[[ -n $newaddr ]] && break
			sleep 0.5
		done
	fi
	newaddr=${newaddr%.onion}
	addr=
	if [[ -n $newaddr ]]; then
		for ((i = 0; i < 240; i++)); do
			e_watch
			addr=$(e_complete | awk -v a="$newaddr" '$1 == a { print $2 }')
			[[ -n $addr ]] && break
			sleep 0.5
		done
	fi
	if [[ -n $addr ]]; then
		record "e_add_$tag" "$(awk -v a="$t_r" -v b="$addr" 'BEGIN { printf "%.2f", b - a }')"
	else
		record "e_addnot_$tag" 1
	fi
	sleep "$(awk -v a="$t_r" -v w="$E_WINDOW" -v n="$(now)" 'BEGIN { s = a + w + 2 - n; printf "%.1f", (s > 0 ? s : 0) }')"
	read -r a b rot < <(e_disturbed "$t_r" "$newaddr")
	record "e_dist_$tag" "$a"
	record "e_distbase_$tag" "$b"
	record "e_rot_$tag" "$rot"

	# restarts
	if [[ $col == alone ]]; then
		if kill -0 "$E_PID" 2> /dev/null; then record "e_restarts_$tag" 0; else record "e_restarts_$tag" died; fi
	else
		record "e_restarts_$tag" "$(e_status | jq '[.status.tors[].restarts] | add // 0')"
		record "e_hung_$tag" "$(grep -c 'no reply to a command within' "$E_DIR/onionfront.log")"
	fi
	say "part E: $col N=$n: new service on all HSDirs after $(tail -qn1 "$RAW/e_add_$tag.txt" 2> /dev/null || echo '?') s; others re-uploading an existing descriptor: $a in the ${E_WINDOW} s after the reload, $b in the ${E_WINDOW} s before; restarts $(tail -n1 "$RAW/e_restarts_$tag.txt")"
	e_untrack "$E_PID" 60
	for i in "${E_WATCH[@]}"; do e_untrack "$i" 5; done
	E_WATCH=()
}

part_e() {
	local n r col web round=0 order
	net_start "$W/nete" "$E_BASE" "" "$E_RELAYS"
	record e_relays "$TESTNET_RELAY_COUNT"
	E_WEB=$((E_BASE + 60))
	"$BACKEND" http "127.0.0.1:$E_WEB" web > "$W/e_web.log" 2>&1 &
	web=$!
	track "$web"
	mkdir -p "$W/e"
	for n in "${E_NS[@]}"; do
		for ((r = 1; r <= E_REPS; r++)); do
			# the order rotates from one round to the next: no set-up always runs first on a fresh network
			order=("${E_COLS[@]:round % ${#E_COLS[@]}}" "${E_COLS[@]:0:round % ${#E_COLS[@]}}")
			round=$((round + 1))
			for col in "${order[@]}"; do
				e_col_ok "$col" || { say "part E: no set-up $col"; continue; }
				say "part E: N=$n, repetition $r/$E_REPS, $col"
				e_run "$col" "$n" "$r"
			done
		done
	done
	e_untrack "$web"
	net_stop
}

# Cell of figure $1 (format $2) of set-up $3 at N $4, with the failure note if there is one.
e_cell() {
	local f=$RAW/e_$1_$3_$4.txt x=$RAW/e_${1}fail_$3_$4.txt
	if [[ -s $f ]]; then cell "$f" "$2"; else printf '—'; fi
	[[ -s $x ]] && printf ' (not all: %s)' "$(paste -sd';' "$x")"
	x=$RAW/e_ended_$3_$4.txt
	[[ $1 == pub && -s $x ]] && printf ' (ended: %s)' "$(paste -sd';' "$x")"
	return 0
}

report_e() {
	local n col x ok g nrel cols=()
	for col in "${E_COLS[@]}"; do e_col_ok "$col" && cols+=("$col"); done
	nrel=$(tail -n 1 "$RAW/e_relays.txt" 2> /dev/null)
	echo "### Part E — many services: tor alone vs onionfront with one and several tors (issue 28; private network of 3 authorities + ${nrel:-?} relays, ${DELAY} ms per link and direction)"
	echo
	echo "Medians in bold, (min–max), $E_REPS repetition(s) each; ratios are of medians from this run. Each set-up from scratch (fresh keys and DataDirectories), one after the other, every service one port to one backend. Publication = from the process start until every service has had two descriptor ids (current and next, or a later one) accepted (UPLOADED) by every HSDir they were sent to, from any of its tors (HS_DESC events of every service tor; the same rule for all). onionfront runs with default settings (end-to-end probe on). Without \`tors_per_service\` every one of K tors hosts every service, so it is published K times; \"each service on M\" sets \`tor.tors_per_service\` M (the service on M of the K tors, by rendezvous hashing of its name; only those tors' events count for it). Reload: one service added (torrc + SIGHUP for tor alone, config + SIGHUP for onionfront); \"others re-uploaded\" = services uploading a descriptor id they already had, in the ${E_WINDOW} s after the reload / in the ${E_WINDOW} s before (tor's own schedule). Idle: ${E_IDLE} s after publication + 10 s."
	echo
	printf '| N | measure '
	for col in "${cols[@]}"; do printf '| %s ' "$(e_label "$col")"; done
	for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| %s / alone ' "$(e_short "$col")"; done
	echo "| goal |"
	printf '|---|---'
	for col in "${cols[@]}"; do printf '|---'; done
	for col in "${cols[@]}"; do [[ $col == alone ]] || printf '|---'; done
	echo "|---|"
	for n in "${E_NS[@]}"; do
		# publication
		printf '| %s | start → every service on all responsible HSDirs, s ' "$n"
		for col in "${cols[@]}"; do printf '| %s ' "$(e_cell pub %.1f "$col" "$n")"; done
		g=""
		for col in "${cols[@]}"; do
			[[ $col == alone ]] && continue
			x=$(ratio "$RAW/e_pub_${col}_$n.txt" "$RAW/e_pub_alone_$n.txt")
			printf '| %s ' "$x"
			g+="${g:+ }${col#of}: $(mark "$x" 'x <= 1.1')"
		done
		echo "| ≤ 1.1× alone: $g |"
		printf '| %s | the same by onionfront'"'"'s status (hsdirs_confirmed ≥ hsdirs_total, polled every 5 s), s ' "$n"
		for col in "${cols[@]}"; do
			if [[ $col == alone ]]; then printf '| — '; else
				printf '| %s' "$( [[ -s $RAW/e_pubof_${col}_$n.txt ]] && cell "$RAW/e_pubof_${col}_$n.txt" %.1f || echo —)"
				[[ -s $RAW/e_pubofail_${col}_$n.txt ]] && printf ' (%s)' "$(paste -sd';' "$RAW/e_pubofail_${col}_$n.txt")"
				printf ' '
			fi
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| — '; done
		echo "| — |"
		printf '| %s | tor restarts during the run ' "$n"
		g=""
		for col in "${cols[@]}"; do
			x=$RAW/e_restarts_${col}_$n.txt
			printf '| %s ' "$( [[ -s $x ]] && paste -sd' ' "$x" || echo —)"
			[[ $col == alone || ! -s $x ]] || g+="${g:+ }${col#of}: $(mark "$(sort -g "$x" | tail -n 1)" 'x == 0')"
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| — '; done
		echo "| 0: $g |"
		printf '| %s | RSS, MB: onionfront; its service tors (summed; tor alone: tor); its probe tor ' "$n"
		for col in "${cols[@]}"; do
			if [[ $col == alone ]]; then printf '| —; %s; — ' "$(e_cell rsstor %.1f alone "$n")"; else
				printf '| %s; %s; %s ' "$(e_cell rssof %.1f "$col" "$n")" "$(e_cell rsstor %.1f "$col" "$n")" "$(e_cell rssprobe %.1f "$col" "$n")"
			fi
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| tors %s ' "$(ratio "$RAW/e_rsstor_${col}_$n.txt" "$RAW/e_rsstor_alone_$n.txt")"; done
		echo "| report |"
		printf '| %s | CPU at idle, s per minute: onionfront; its service tors (tor alone: tor) ' "$n"
		for col in "${cols[@]}"; do
			if [[ $col == alone ]]; then printf '| —; %s ' "$(e_cell cputor %.3f alone "$n")"; else
				printf '| %s; %s ' "$(e_cell cpuof %.3f "$col" "$n")" "$(e_cell cputor %.3f "$col" "$n")"
			fi
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| — '; done
		echo "| report |"
		# shellcheck disable=SC2016 # markdown code, not an expansion
		printf '| %s | `status --json` bytes; `status` text lines ' "$n"
		for col in "${cols[@]}"; do
			if [[ $col == alone ]]; then printf '| — '; else printf '| %s; %s ' "$(e_cell json %.0f "$col" "$n")" "$(e_cell text %.0f "$col" "$n")"; fi
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| — '; done
		echo "| report |"
		# shellcheck disable=SC2016 # markdown code, not an expansion
		printf '| %s | `metrics` over the status socket, ms per request (mean of %s) ' "$n" "$E_RENDERS"
		for col in "${cols[@]}"; do
			if [[ $col == alone ]]; then printf '| — '; else printf '| %s ' "$(e_cell render %.2f "$col" "$n")"; fi
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| — '; done
		echo "| report |"
		printf '| %s | reload adding one service → it is on all responsible HSDirs, s ' "$n"
		for col in "${cols[@]}"; do
			printf '| %s' "$(e_cell add %.2f "$col" "$n")"
			[[ -s $RAW/e_addnot_${col}_$n.txt ]] && printf ' (not within 120 s: %s of %s)' "$(wc -l < "$RAW/e_addnot_${col}_$n.txt")" "$E_REPS"
			printf ' '
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| %s ' "$(ratio "$RAW/e_add_${col}_$n.txt" "$RAW/e_add_alone_$n.txt")"; done
		echo "| report |"
		printf '| %s | others re-uploaded in %s s after the reload (in %s s before: tor'"'"'s own schedule; new ids created by others around it) ' "$n" "$E_WINDOW" "$E_WINDOW"
		g=""
		for col in "${cols[@]}"; do
			printf '| %s (%s; %s) ' "$(e_cell dist %g "$col" "$n")" "$(e_cell distbase %g "$col" "$n")" "$(e_cell rot %g "$col" "$n")"
			if [[ $col != alone ]]; then
				x=$(median "$RAW/e_dist_${col}_$n.txt")
				ok=$(median "$RAW/e_distbase_${col}_$n.txt")
				g+="${g:+ }${col#of}: $( [[ -n $x && -n $ok ]] && mark "$(awk -v a="$x" -v b="$ok" 'BEGIN { d = a - b; print (d < 0 ? 0 : d) }')" 'x == 0' || printf '?')"
			fi
		done
		for col in "${cols[@]}"; do [[ $col == alone ]] || printf '| — '; done
		echo "| none disturbed (after ≤ before): $g |"
	done
	echo
	local hung=""
	for x in "$RAW"/e_hung_*.txt; do [[ -e $x ]] && (($(sort -g "$x" | tail -n 1) > 0)) && hung+=" $(basename "$x" .txt | sed 's/^e_hung_//')=$(paste -sd+ "$x")"; done
	[[ -n $hung ]] && echo "onionfront logged \"no reply to a command within\" (a tor taken for hung):$hung." && echo
	local all=" ${E_NS[*]} " missing=""
	for n in 10 50 200 500; do [[ $all == *" $n "* ]] || missing+="${missing:+, }$n"; done
	[[ -n $missing ]] && echo "Not run in this run: N = $missing (\`BENCH_E_NS\`)." && echo
	echo "Further up, each service tor is the limit before the network (tests/testnet/README.md, \"Many services on one tor\"): each of its uploads is a stream waiting for a circuit of its own, and each circuit that opens makes tor check every waiting stream against every circuit, so a tor's first burst (16 uploads per service) costs CPU that grows faster than the square of its service count; onionfront hands a starting tor its services in a window of 16 for that reason, tor alone gets them all at once. The network (3 authorities + ${nrel:-?} relays here, \`BENCH_E_RELAYS\`, all HSDirs on this machine) spreads 500 services on 4 tors, 32000 uploads per first publication and again every ~4-minute time period, over its HSDirs."
	echo
}
