#!/bin/bash
# Backend pools behind one single onion service, on the private Tor network with real tor (issue:
# backends). One service "web": port 80 -> three http backends (round robin, http health checks),
# port 7 -> an echo backend. Checked:
#  - tor is given onionfront's own unix sockets (one HiddenServicePort per virtual port) and
#    HiddenServiceExportCircuitID haproxy; pages come through them;
#  - a steady series of requests while one backend is killed (by PID): zero failed requests started
#    after the kill, no stream tried on the dead backend while it is marked down (onionfront's debug
#    log), and traffic returns to it once it is back;
#  - a reload that changes only backends (weight, removal, re-adding) is applied without touching tor;
#  - a stalled backend (SIGSTOP) does not stall streams to the others;
#  - a client that stops reading a large download does not grow onionfront's memory (VmRSS);
#  - 40 concurrent streams of random bytes through client tor -> single onion -> onionfront -> echo
#    backend and back, each checked by SHA-256 (tests/tools/socks_echo);
#  - no new HS_DESC UPLOAD for the service during all of this. The test network's time period is ~4
#    minutes: a rotation makes tor create (HS_DESC CREATED) and upload a new descriptor for every
#    service at once, unrelated to backends; uploads of a descriptor CREATED inside the window are
#    excused (and reported), every other upload counts as a failure.
#  Port 81 has the same backends with TCP checks (the stall test); port 7 the echo backend.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
# ASan keeps freed memory in quarantine (256 MB by default), which would show as RSS growth that is
# not the data path's: keep it small so the memory check measures buffers.
case ${ASAN_OPTIONS:-} in
*quarantine_size_mb*) ;;
*) export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}:quarantine_size_mb=8" ;;
esac
of_init

declare -A port pid
for name in web1 web2 web3; do
  port[$name]=$(of_free_port)
  of_start_backend "$name" "${port[$name]}" http || exit 1
  pid[$name]=$OF_LAST_PID
done
port[echo]=$(of_free_port)
of_start_backend echo "${port[echo]}" echo || exit 1

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
ctl=$OF_TMP/run/control/control.sock
health='"health": { "type": "http", "path": "/health", "interval_ms": 500, "timeout_ms": 400, "rise": 2, "fall": 2 }'
# write_config WEIGHT1 WEIGHT2 WEIGHT3 (a weight "-" leaves that backend out)
write_config() {
  local backends="" i w
  for i in 1 2 3; do
    w=${!i}
    [[ $w == - ]] && continue
    backends+="${backends:+, }{ \"name\": \"web$i\", \"address\": \"127.0.0.1:${port[web$i]}\", \"weight\": $w }"
  done
  of_write_config "$config" "[ { \"name\": \"web\", \"ports\": [
      { \"virtual\": 80, \"balance\": \"round_robin\", \"connect_timeout_ms\": 1000, \"backends\": [ $backends ], $health },
      { \"virtual\": 81, \"balance\": \"round_robin\", \"backends\": [ $backends ] },
      { \"virtual\": 7, \"target\": \"127.0.0.1:${port[echo]}\" } ] } ]"
}
OF_LOG_LEVEL=debug # every stream's backend attempts are logged: the "none sent while down" check reads them
write_config 1 1 1
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service web: .* address [a-z2-7]{56}\.onion" 30
addr=$(of_address_from_log "$log" web)
if [[ -z $addr ]]; then
  of_fail "no onion address for service web"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
of_check "onionfront listens on its proxy sockets in a 0700 directory" \
  bash -c "[[ -S '$OF_TMP/run/proxy/web-80.sock' && -S '$OF_TMP/run/proxy/web-7.sock' && \$(stat -c %a '$OF_TMP/run/proxy') == 700 ]]"
if of_fetch_until "http://$addr/" "$OF_TMP/first.html" 180; then
  of_pass "page fetched through onionfront's data path ($(of_elapsed "$OF_START") s after start)"
else
  of_fail "no page over the onion within 180 s"
  tail -n 40 "$log" >&2
  of_summary
  exit 1
fi
of_wait_log "$log" "service web: descriptor uploaded" 30

# What tor was given: one HiddenServicePort per virtual port, to our sockets, and the circuit id export.
of_torctl "$ctl" "GETCONF HiddenServiceOptions" >"$OF_TMP/getconf.txt" 2>&1
of_check "tor's HiddenServicePort for port 80 is onionfront's socket (one line, not one per backend)" \
  bash -c "[[ \$(grep -c 'HiddenServicePort=80 ' '$OF_TMP/getconf.txt') == 1 ]] &&
           grep -q 'HiddenServicePort=80 unix:$OF_TMP/run/proxy/web-80.sock' '$OF_TMP/getconf.txt'"
of_check "tor exports the circuit id (HiddenServiceExportCircuitID haproxy)" \
  grep -qi 'HiddenServiceExportCircuitID=haproxy' "$OF_TMP/getconf.txt"
of_check "no backend address was handed to tor" \
  bash -c "! grep -q '127.0.0.1:${port[web1]}' '$OF_TMP/getconf.txt'"

# From here on, every HS_DESC event is kept (line-buffered, so the line count marks time).
hsdesc=$OF_TMP/hsdesc.txt
stdbuf -oL "$OF_TORCTL_BIN" "$ctl" -e HS_DESC -t 170 >"$hsdesc" 2>&1 &
hsdesc_pid=$!
of_track_pid "$hsdesc_pid"
sleep 1

# --- a steady series of requests; kill web2; bring it back -------------------------------------------------
series=$OF_TMP/series.txt
stopfile=$OF_TMP/series.stop
: >"$series"
series_worker() { # one request after another; "index start_time curl_rc http_code backend end_time" per line
  local i=0 t0 out rc code backend
  while [[ ! -e $stopfile ]]; do
    t0=$(of_now)
    # A generous deadline: on a loaded machine the private network itself can take many seconds for
    # one stream, which is not what this measures.
    out=$(curl -sS --max-time 45 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -U "of$$:x" \
      -D - -o /dev/null -w 'HTTPCODE %{http_code}\n' "http://$addr/" 2>/dev/null)
    rc=$?
    code=$(awk '/^HTTPCODE/ { print $2 }' <<<"$out")
    backend=$(awk 'tolower($1) == "x-backend:" { sub(/\r$/, "", $2); print $2; exit }' <<<"$out")
    echo "$i $t0 $rc ${code:-000} ${backend:--} $(of_now)" >>"$series"
    i=$((i + 1))
    sleep 0.1
  done
}
series_worker &
series_pid=$!
of_track_pid "$series_pid"
wait_series_count() { # wait until the series has N more lines than now (bounded by S seconds)
  local want=$(($(wc -l <"$series") + $1)) limit=$2 i
  for ((i = 0; i < limit * 10; i++)); do
    (($(wc -l <"$series") >= want)) && return 0
    sleep 0.1
  done
  return 1
}
wait_series_count 12 60
before_kill=$(wc -l <"$series")
of_check "before the kill, all three backends answered ($(awk '{ print $5 }' "$series" | sort | uniq -c | tr '\n' ' '))" \
  bash -c "[[ \$(awk '\$5 ~ /^web[123]\$/ { print \$5 }' '$series' | sort -u | wc -l) == 3 ]]"

kill -KILL "${pid[web2]}"
wait "${pid[web2]}" 2>/dev/null
t_kill=$(of_now)
of_log "killed web2 (pid ${pid[web2]}) at $t_kill"
of_check "onionfront marks web2 down" of_wait_log "$log" "backend web2: up -> down .*pool web:80" 10
grep -E "backend web2: up -> down .*pool web:80" "$log" | head -n 1 >&2
wait_series_count 15 60
sleep 1
# Answers that came back before this instant cannot be web2's (it was dead); a request that started
# while web2 was dead may still legitimately reach it after the restart (tor's circuit takes seconds).
t_restart=$(of_now)
of_start_backend web2 "${port[web2]}" http || of_fail "web2 did not restart"
pid[web2]=$OF_LAST_PID
of_check "onionfront marks web2 up again (active health checks)" \
  of_wait_log "$log" "backend web2: down -> up .*pool web:80" 15
t_back=$(of_now)
wait_series_count 12 60
touch "$stopfile"
for ((i = 0; i < 300; i++)); do kill -0 "$series_pid" 2>/dev/null || break; sleep 0.1; done
wait "$series_pid" 2>/dev/null

total=$(wc -l <"$series")
failed_all=$(awk '$3 != 0 || $4 != 200' "$series" | wc -l)
failed_after=$(awk -v t="$t_kill" '$2 > t && ($3 != 0 || $4 != 200)' "$series" | wc -l)
after=$(awk -v t="$t_kill" '$2 > t' "$series" | wc -l)
inflight_failed=$(awk -v t="$t_kill" '$2 <= t && ($3 != 0 || $4 != 200)' "$series" | wc -l)
of_log "series: $total requests, $failed_all failed in all ($inflight_failed started before the kill), $after started after the kill"
of_check "zero failed requests among the $after started after the kill" test "$failed_after" -eq 0
dead_answers=$(awk -v a="$t_kill" -v b="$t_restart" '$2 > a && $6 < b && $5 == "web2"' "$series" | wc -l)
of_check "no answer from web2 while it was dead" test "$dead_answers" -eq 0
# onionfront's own record: streams tried on web2 between "up -> down" and "down -> up".
tried_while_down=$(awk '/backend web2: up -> down .*pool web:80$/ { down = 1; next }
  /backend web2: down -> up .*pool web:80$/ { down = 0 }
  down && /proxy web:80: .*trying backend web2$/ { n++ } END { print n + 0 }' "$log")
tried_total=$(grep -c "proxy web:80: .*trying backend web" "$log")
of_check "no stream was sent to web2 while it was marked down ($tried_while_down of $tried_total attempts logged)" \
  test "$tried_while_down" -eq 0 -a "$tried_total" -ge "$total"
returned=$(awk -v t="$t_back" '$2 > t && $5 == "web2"' "$series" | wc -l)
of_check "traffic returns to web2 once it is up again ($returned answers)" test "$returned" -ge 1
retries=$(grep -c "stream [0-9]*: backend web2: connect" "$log")
of_log "streams moved to another backend after a failed connect to web2: $retries"

# --- reload with backend changes only --------------------------------------------------------------------
reloads_before=$(grep -c "reload: applied" "$log")
write_config 2 1 -
kill -HUP "$OF_PID"
of_check "a reload that only changes backends is applied without touching tor" \
  of_wait_log "$log" "reload: applied .*\(no change for tor\)" 10
bad=0
web3_seen=0
for i in 1 2 3 4 5 6; do
  out=$(curl -sS --max-time 45 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -U "of$$:x" -D - -o /dev/null \
    "http://$addr/" 2>/dev/null) || bad=$((bad + 1))
  grep -qi '^x-backend: web3' <<<"$out" && web3_seen=$((web3_seen + 1))
done
of_check "requests work after the reload ($bad failed) and none goes to the removed web3 ($web3_seen)" \
  test "$bad" -eq 0 -a "$web3_seen" -eq 0
write_config 1 1 1
kill -HUP "$OF_PID"
for ((i = 0; i < 100; i++)); do
  (($(grep -c "reload: applied" "$log") >= reloads_before + 2)) && break
  sleep 0.1
done
of_check "the second reload (web3 back) is applied without touching tor" \
  bash -c "[[ \$(grep -c 'reload: applied .*(no change for tor)' '$log') -ge $((reloads_before + 2)) ]]"

# --- a stalled backend does not stall the others ------------------------------------------------------------
# Port 81 uses the same three backends with TCP checks, which a stopped process still passes (the kernel
# accepts for it): web1 keeps its round-robin share and its streams wait. The streams to web2 and web3
# must come back while web1 is still stopped.
# The reloads and restarts above leave a backend down in port 81's pool for a few health checks; the
# shares below assume all three up (with web2 down, web1 took five of the nine).
port81_all_up() {
  "$OF_BIN" -c "$config" status --json backends 2>/dev/null |
    jq -e '[.[] | select(.virtual_port == 81) | .backends[] | .state] | length == 3 and all(. == "up")' >/dev/null
}
of_check "port 81's three backends are up before web1 stalls" of_wait_until 30 port81_all_up
kill -STOP "${pid[web1]}"
slow_dir=$OF_TMP/slow
mkdir -p "$slow_dir"
slow_pids=()
for i in 1 2 3 4 5 6 7 8 9; do
  (
    out=$(curl -sS --max-time 120 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -U "of$$:x" -D - -o /dev/null \
      -w 'HTTPCODE %{http_code} %{time_total}\n' "http://$addr:81/" 2>/dev/null)
    rc=$?
    backend=$(awk 'tolower($1) == "x-backend:" { sub(/\r$/, "", $2); print $2; exit }' <<<"$out")
    echo "$rc $(awk '/^HTTPCODE/ { print $2 }' <<<"$out") ${backend:--} $(awk '/^HTTPCODE/ { print $3 }' <<<"$out")" \
      >"$slow_dir/$i.tmp"
    mv "$slow_dir/$i.tmp" "$slow_dir/$i"
  ) &
  slow_pids+=($!)
  of_track_pid "$!"
done
# Until six have come back (or 90 s): well inside curl's 120 s, so web1's streams can still be answered
# once it resumes on a slow machine.
for ((i = 0; i < 900; i++)); do
  (($(ls "$slow_dir" | grep -vc tmp) >= 6)) && break
  sleep 0.1
done
sleep 1 # anything else that was not held by web1 would be back by now too
cat "$slow_dir"/[0-9] 2>/dev/null >"$OF_TMP/slow-early.txt"
kill -CONT "${pid[web1]}"
for p in "${slow_pids[@]}"; do
  for ((i = 0; i < 1300; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  wait "$p" 2>/dev/null
done
cat "$slow_dir"/[0-9] >"$OF_TMP/slow.txt"
of_log "back while web1 was stopped: $(awk '{ printf "%s(%s %ss) ", $3, $2, $4 }' "$OF_TMP/slow-early.txt"); all (backend, HTTP code or curl exit code, seconds): $(awk '{ printf "%s(%s/%s %ss) ", $3, $2, $1, $4 }' "$OF_TMP/slow.txt")"
early_ok=$(awk '$1 == 0 && $2 == 200 && ($3 == "web2" || $3 == "web3")' "$OF_TMP/slow-early.txt" | wc -l)
early_web1=$(awk '$3 == "web1"' "$OF_TMP/slow-early.txt" | wc -l)
held=$(awk '$1 == 0 && $2 == 200 && $3 == "web1"' "$OF_TMP/slow.txt" | wc -l)
of_check "streams to web2/web3 were answered while web1 was stopped ($early_ok answered, none from web1: $early_web1)" \
  test "$early_ok" -eq 6 -a "$early_web1" -eq 0
of_check "the streams web1 held were answered once it resumed ($held)" test "$held" -eq 3
of_check "no request failed around the stalled backend" \
  bash -c "[[ \$(awk '\$1 != 0 || \$2 != 200' '$OF_TMP/slow.txt' | wc -l) == 0 ]]"

# --- a client that stops reading ---------------------------------------------------------------------------
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$OF_PID/status"; }
rss_before=$(rss)
size=$((64 * 1024 * 1024))
curl -sS --max-time 40 --limit-rate 2k --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -U "of$$:x" \
  -o /dev/null "http://$addr/bytes/$size" 2>/dev/null &
stall_pid=$!
of_track_pid "$stall_pid"
rss_max=$rss_before
for i in $(seq 1 10); do
  sleep 1
  r=$(rss)
  ((r > rss_max)) && rss_max=$r
done
status_json=$("$OF_BIN" -c "$config" status --json backends 2>/dev/null)
buffered=$(grep -o '"buffered_bytes": *[0-9]*' <<<"$status_json" | grep -o '[0-9]*$' | sort -n | tail -n 1)
growth=$((rss_max - rss_before))
of_log "onionfront VmRSS: ${rss_before} kB before, ${rss_max} kB at most during a ${size}-byte download read at 2 kB/s (+${growth} kB); data path buffers: ${buffered:-?} bytes"
of_check "onionfront's memory stays bounded while a client does not read (+${growth} kB for a 64 MB body)" \
  test "$growth" -lt 16384
of_check "the data path holds at most ~2 x 256 KiB for that stream (status: ${buffered:-none} bytes buffered)" \
  test -n "$buffered" -a "${buffered:-0}" -le 1048576
of_stop_pid "$stall_pid" 5

# --- byte-exact integrity: 40 concurrent echo streams ---------------------------------------------------------
if "$OF_SOCKS_ECHO_BIN" -n 40 -b 262144 -g 4 -t 120 "$TESTNET_SOCKS_PORT" "$addr" 7 >"$OF_TMP/echo.txt" 2>&1; then
  of_pass "40 concurrent streams of 256 KiB random bytes came back byte for byte ($(tail -n 1 "$OF_TMP/echo.txt"))"
else
  of_fail "echo integrity: $(grep -v ': ok ' "$OF_TMP/echo.txt" | head -n 5 | tr '\n' ';')"
fi

# --- the descriptor was left alone ---------------------------------------------------------------------------
of_stop_pid "$hsdesc_pid" 5
svc=${addr%.onion}
# Fields: HS_DESC CREATED <addr> UNKNOWN UNKNOWN <descid> / HS_DESC UPLOAD <addr> UNKNOWN <hsdir> <descid> ...
# Only uploads of a descriptor created inside the window (a rotation) are excused.
judge=$(sed 's/^650 //; s/^650-//' "$hsdesc" | awk -v a="$svc" '$1 != "HS_DESC" || $3 != a { next }
  $2 == "CREATED" { created[$6] = 1; rot++ }
  $2 == "UPLOAD" { if ($6 in created) excused++; else bad++ }
  END { printf "%d %d %d\n", bad + 0, excused + 0, rot + 0 }')
read -r uploads_bad uploads_excused rotations <<<"$judge"
of_log "HS_DESC for the service during the test: $uploads_bad uploads of existing descriptors, $rotations CREATED (time-period rotation), $uploads_excused uploads of the descriptors it created"
((rotations > 0)) && of_log "a time-period rotation fell into the window: the uploads of its new descriptors were not counted"
of_check "no new descriptor upload for the service while backends died, came back, stalled and were reloaded" \
  test "$uploads_bad" -eq 0
of_check "the HS_DESC capture was subscribed the whole time" grep -q '^250' "$hsdesc"

# --- shutdown ------------------------------------------------------------------------------------------------------
of_check "no warnings from the data path" bash -c "! grep -E '\[warn\].*proxy ' '$log'"
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "the proxy sockets are removed at shutdown" bash -c "! ls '$OF_TMP/run/proxy/'*.sock 2>/dev/null | grep -q ."
of_check "no sanitizer report in onionfront's log" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log'"
of_summary
