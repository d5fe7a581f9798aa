# lib.sh — shared helpers for onionfront's integration tests and `make demo` (sourced, bash).
#
# Every process started through these helpers is tracked by PID and ended by of_cleanup (installed as
# an EXIT/INT/TERM trap by of_init): TERM, a bounded wait, then KILL — never pkill/killall.
# Tests count checks with of_check/of_fail and end with of_summary ("N passed, N failed").

OF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OF_BIN=${OF_BIN:-$OF_ROOT/build/onionfront-san}
OF_BACKEND_BIN=${OF_BACKEND_BIN:-$OF_ROOT/build/tools/backend}
OF_TORCTL_BIN=${OF_TORCTL_BIN:-$OF_ROOT/build/tools/torctl}
OF_SOCKS_ECHO_BIN=$OF_ROOT/build/tools/socks_echo # byte-exact echo streams through a SOCKS5 port
# tor's lines keep tor's level in onionfront's log, except the warnings onionfront expects of tor
# (sidecar/tor/torwarn.c, docs/troubleshooting.md), which it logs at notice: a test that asks for "no
# warning" counts every [warn] line, tor's included, and keeps no list of its own. One exception belongs to
# the tests, not the product: they run onionfront as root without tor.user, so tor stays root and warns.
OF_TOR_AS_ROOT_WARNING="You are running Tor as root"
OF_PIDS=()
OF_PASSED=0
OF_FAILED=0
OF_TMP=""

of_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

of_now() { date +%s.%N; }
of_elapsed() { awk -v a="$1" -v b="$(of_now)" 'BEGIN { printf "%.1f", b - a }'; }

# of_margin START BOUND_S KIND DETAIL — one bounded wait's use of its bound, appended to OF_MARGINS_FILE
# (set by run-tests.sh; nothing otherwise) as "script<TAB>used_s<TAB>bound_s<TAB>check", so a run can
# show which waits came close to their bounds before they fail. The check is of_check's description
# when the wait runs inside one, else the wait's kind and detail.
of_margin() {
  [[ -n ${OF_MARGINS_FILE:-} ]] || return 0
  local what=${OF_CHECK_WHAT:-"$3 $4"}
  printf '%s\t%s\t%s\t%s\n' "$(basename "$0" .sh)" \
    "$(awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" "$2" "${what//$'\t'/ }" \
    >>"$OF_MARGINS_FILE"
}

# Make a short temporary directory (unix socket paths must stay under 108 bytes) and install cleanup.
of_init() {
  OF_TMP=$(mktemp -d /tmp/of.XXXXXX)
  chmod 700 "$OF_TMP"
  trap of_cleanup EXIT
  trap 'of_cleanup; exit 130' INT TERM
  # ASan must not trip over tor's children or report leaks of the shell tools; the daemon is checked.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
}

of_track_pid() { OF_PIDS+=("$1"); }

# of_in_private_mounts SCRIPT ARGS... — run the calling script again in a private mount namespace (its
# overlays and bind mounts vanish with it), once; without one (not root) it fails with its closing line.
of_in_private_mounts() {
  [[ ${OF_PRIVATE_MOUNTS:-} == 1 ]] && return 0
  if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "FAIL: $(basename "$1" .sh) needs a private mount namespace (unshare --mount, as root)" >&2
    echo "0 passed, 1 failed"
    exit 1
  fi
  OF_PRIVATE_MOUNTS=1 exec unshare --mount --propagation private -- bash "$@"
}

# A script's mounts (OF_MOUNTS, each appended once mounted): of_mounts_init makes its cleanup stop what
# the test started, then take the mounts down (last first), then of_cleanup.
OF_MOUNTS=()
of_mounts_cleanup() {
  local pid i
  for pid in "${OF_PIDS[@]}"; do of_stop_pid "$pid" 15; done
  OF_PIDS=()
  for ((i = ${#OF_MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${OF_MOUNTS[i]}" 2>/dev/null || umount -l "${OF_MOUNTS[i]}"
  done
  OF_MOUNTS=()
  of_cleanup
}
of_mounts_init() {
  trap of_mounts_cleanup EXIT
  trap 'of_mounts_cleanup; exit 130' INT TERM
}

# End one process by PID: TERM, wait up to $2 seconds (default 15), then KILL.
of_stop_pid() {
  local pid=$1 limit=${2:-15} i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    of_log "pid $pid did not stop within ${limit}s; killing"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

# The logs of a script that failed (onionfront's, tor's, the backends', clients' errors: *.log and *.err
# files only, never keys or state) are copied under OF_KEEP_FAILED_DIR/SCRIPT (run-tests.sh sets it to
# build/test-logs/kept), so a failure on a clean clone can be traced to its cause after the temporary
# directory is gone.
of_keep_failed_logs() {
  [[ ${OF_FAILED:-0} -gt 0 && -n ${OF_KEEP_FAILED_DIR:-} && -n $OF_TMP && -d $OF_TMP ]] || return 0
  local dest=$OF_KEEP_FAILED_DIR/$(basename "$0" .sh)
  mkdir -p "$dest" &&
    (cd "$OF_TMP" && find . \( -name '*.log' -o -name '*.err' \) -type f -size -50M -print0 | xargs -0r cp --parents -t "$dest") 2>/dev/null
  return 0
}

of_cleanup() {
  local pid
  for pid in "${OF_PIDS[@]}"; do
    of_stop_pid "$pid" 15
  done
  OF_PIDS=()
  of_keep_failed_logs
  if [[ -n $OF_TMP && -d $OF_TMP && -z ${OF_KEEP_TMP:-} ]]; then
    rm -rf "$OF_TMP"
  fi
}

# of_descendants PID — "pid ruid euid name" of every living process below PID (children, their children
# ...), from /proc/P/status (Name:, Pid:, PPid:, Uid: real and effective, in that order), read in one
# pass. One line each; nothing when there is none. A process that ends during the read is left out (cat,
# not awk, opens the files: mawk stops at the first file it cannot open).
of_descendants() {
  cat /proc/[0-9]*/status 2>/dev/null | awk -v root="$1" '
    /^Name:/ { n = $2 }
    /^Pid:/ { pid = $2; name[pid] = n }
    /^PPid:/ { ppid[pid] = $2 }
    /^Uid:/ { ruid[pid] = $2; euid[pid] = $3 }
    END {
      for (p in ppid) {
        q = ppid[p]
        for (d = 0; q != "" && q != 0 && q != root && d < 64; d++) q = ppid[q]
        if (q == root) print p, ruid[p], euid[p], name[p]
      }
    }'
}

# of_root_descendants PID — of_descendants whose real or effective uid is 0 (none: no output).
of_root_descendants() { of_descendants "$1" | awk '$2 == "0" || $3 == "0"'; }

of_check() { # description command...
  local what=$1
  shift
  if OF_CHECK_WHAT=$what "$@"; then
    OF_PASSED=$((OF_PASSED + 1))
    of_log "ok: $what"
  else
    OF_FAILED=$((OF_FAILED + 1))
    of_log "FAIL: $what"
  fi
}

of_fail() { OF_FAILED=$((OF_FAILED + 1)); of_log "FAIL: $*"; }
of_pass() { OF_PASSED=$((OF_PASSED + 1)); of_log "ok: $*"; }

of_summary() {
  echo "$OF_PASSED passed, $OF_FAILED failed"
  [[ $OF_FAILED -eq 0 ]]
}

# A TCP port on 127.0.0.1 that no socket uses. Picked below the kernel's ephemeral range (32768+),
# where outgoing connections could take it between the check and the bind, and below the private
# networks' ports (19000+).
of_free_port() {
  local p
  for ((i = 0; i < 200; i++)); do
    p=$((10000 + RANDOM % 9000))
    if ! ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# of_start_backend NAME PORT [http|echo] — sets OF_LAST_PID.
of_start_backend() {
  local name=$1 port=$2 mode=${3:-http} log="$OF_TMP/backend-$1.log" i
  "$OF_BACKEND_BIN" "$mode" "127.0.0.1:$port" "$name" >"$log" 2>&1 &
  OF_LAST_PID=$!
  of_track_pid "$OF_LAST_PID"
  for ((i = 0; i < 50; i++)); do
    grep -qs listening "$log" && return 0
    sleep 0.1
  done
  of_log "backend $name did not start: $(cat "$log")"
  return 1
}

# The private network's extra torrc lines as a JSON array.
of_extra_torrc_json() {
  local first=1 line
  printf '['
  while IFS= read -r line; do
    [[ -z $line || $line == \#* ]] && continue
    line=${line//\\/\\\\}
    line=${line//\"/\\\"}
    ((first)) || printf ','
    printf '"%s"' "$line"
    first=0
  done <"$TESTNET_TORRC_EXTRA"
  printf ']'
}

# of_write_config FILE SERVICES_JSON [EXTRA_TOP_LEVEL_JSON] — state and run dirs under $OF_TMP;
# tor.instances from $OF_TOR_INSTANCES, tor.tors_per_service from $OF_TOR_PER_SERVICE, tor.binary from
# $OF_TOR_BINARY and tor.drain_timeout from $OF_TOR_DRAIN when set.
of_write_config() {
  local file=$1 services=$2 extra=${3:-} instances=""
  [[ -n ${OF_TOR_INSTANCES:-} ]] && instances=" \"instances\": $OF_TOR_INSTANCES,"
  [[ -n ${OF_TOR_PER_SERVICE:-} ]] && instances+=" \"tors_per_service\": $OF_TOR_PER_SERVICE,"
  [[ -n ${OF_TOR_BINARY:-} ]] && instances+=" \"binary\": \"$OF_TOR_BINARY\","
  [[ -n ${OF_TOR_DRAIN:-} ]] && instances+=" \"drain_timeout\": $OF_TOR_DRAIN,"
  cat >"$file" <<EOF
{
  "state_dir": "$OF_TMP/state",
  "run_dir": "$OF_TMP/run",
  "log_level": "${OF_LOG_LEVEL:-info}",
  "tor": { "mode": "spawn", "bootstrap_timeout": 120, "command_timeout": 20,$instances
           "extra_torrc": $(of_extra_torrc_json) },
  "services": $services${extra:+,
  $extra}
}
EOF
}

# of_start_onionfront CONFIG LOG — sets OF_PID and OF_START (time of start).
of_start_onionfront() {
  local config=$1 log=$2
  OF_START=$(of_now)
  "$OF_BIN" -c "$config" run >>"$log" 2>&1 &
  OF_PID=$!
  of_track_pid "$OF_PID"
}

# of_start_onionfront_blocked CONFIG LOG "SIG..." — as of_start_onionfront, but started with those signals
# blocked, as a careless parent (a supervisor that blocks SIGCHLD, say) would leave them: the mask
# survives exec, so onionfront must unblock what it relies on itself.
of_start_onionfront_blocked() {
  local config=$1 log=$2 sigs=$3
  OF_START=$(of_now)
  python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [getattr(signal, "SIG" + s) for s in sys.argv[1].split()])
os.execv(sys.argv[2], sys.argv[2:])' "$sigs" "$OF_BIN" -c "$config" run >>"$log" 2>&1 &
  OF_PID=$!
  of_track_pid "$OF_PID"
}

# of_stop_onionfront — SIGTERM and wait (bounded); returns onionfront's exit status.
of_stop_onionfront() {
  local i rc
  kill -TERM "$OF_PID" 2>/dev/null
  for ((i = 0; i < 300; i++)); do
    kill -0 "$OF_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$OF_PID" 2>/dev/null; then
    of_log "onionfront (pid $OF_PID) did not stop within 30 s"
    kill -KILL "$OF_PID"
  fi
  wait "$OF_PID"
  rc=$?
  return $rc
}

# of_wait_log FILE REGEX TIMEOUT_S — wait until the file has a line matching REGEX.
of_wait_log() {
  local file=$1 re=$2 limit=$3 i t0=$EPOCHREALTIME
  for ((i = 0; i < limit * 10; i++)); do
    grep -Eq -- "$re" "$file" 2>/dev/null && { of_margin "$t0" "$limit" of_wait_log "$re"; return 0; }
    sleep 0.1
  done
  of_margin "$t0" "$limit" of_wait_log "$re"
  return 1
}

# of_wait_until TIMEOUT_S COMMAND... — run COMMAND every 0.1 s until it succeeds (return 0) or the time is up.
of_wait_until() {
  local limit=$1 i t0=$EPOCHREALTIME
  shift
  for ((i = 0; i < limit * 10; i++)); do
    "$@" && { of_margin "$t0" "$limit" of_wait_until "$*"; return 0; }
    sleep 0.1
  done
  of_margin "$t0" "$limit" of_wait_until "$*"
  return 1
}

# The onion address (with .onion) that onionfront logged for service NAME.
of_address_from_log() {
  grep -Eo "service $2: [a-z ]+ key, address [a-z2-7]{56}\.onion" "$1" | tail -n 1 | grep -Eo '[a-z2-7]{56}\.onion'
}

# of_fetch URL OUTFILE [MAX_TIME] — one request through the private network's client.
# OF_SOCKS_USER, when set, isolates the stream on circuits of its own (a SOCKS user name of its own).
of_fetch() {
  curl -sS --fail --max-time "${3:-30}" --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" \
    ${OF_SOCKS_USER:+-U "$OF_SOCKS_USER:x"} -o "$2" "$1"
}

# of_fetch_until URL OUTFILE TIMEOUT_S — retry until a fetch works (the descriptor may not be up yet).
# With OF_FETCH_NEW_CIRCUITS=1 each retry goes on new circuits, as a user's "new circuit for this site"
# would. For a fetch right after the service's tor was stopped and started again: the client tor may
# then send its introduction, from the descriptor it cached, to an intro point that still holds the
# old tor's circuit for a few seconds and acks it; tor then waits up to 3 circuit build timeouts
# (~3 min) for a rendezvous that never comes, stalling every stream of that isolation behind it (seen
# in test_modes with the client at info level: "pending-join circ ... already here, with intro ack.
# Stalling."). Not by default: later fetches of a test (its client loops) rely on the circuit that the
# first success leaves open for streams without a SOCKS user.
of_fetch_until() {
  local url=$1 out=$2 limit=$3 start try=0 user t0=$EPOCHREALTIME
  start=$(date +%s)
  while (($(date +%s) - start < limit)); do
    user=${OF_SOCKS_USER:-}
    ((try > 0)) && [[ -z $user && ${OF_FETCH_NEW_CIRCUITS:-} == 1 ]] && user="retry-$$-$try-$RANDOM"
    OF_SOCKS_USER=$user of_fetch "$url" "$out" 20 2>/dev/null && { of_margin "$t0" "$limit" of_fetch_until "$url"; return 0; }
    try=$((try + 1))
    if [[ -n ${OF_PID:-} ]] && ! kill -0 "$OF_PID" 2>/dev/null; then
      of_log "onionfront (pid $OF_PID) is not running any more"
      return 1
    fi
    sleep 0.5
  done
  of_margin "$t0" "$limit" of_fetch_until "$url"
  return 1
}

of_torctl() { "$OF_TORCTL_BIN" "$@"; }

# of_tor_field CONFIG FIELD INSTANCE — a field of one tor's row in `onionfront status --json` ("" if absent).
of_tor_field() {
  "$OF_BIN" -c "$1" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    t = next(t for t in d["status"]["tors"] if t["instance"] == int(sys.argv[2]))
    v = t[sys.argv[1]]
    print("" if v is None else v)
except Exception:
    print("")' "$2" "$3"
}

# of_wait_secs TIMEOUT_S COMMAND... — like of_wait_until, bounded by wall-clock time (for slow commands).
of_wait_secs() {
  local limit=$1 end=$((SECONDS + $1)) t0=$EPOCHREALTIME
  shift
  while ((SECONDS < end)); do
    "$@" && { of_margin "$t0" "$limit" of_wait_secs "$*"; return 0; }
    sleep 0.5
  done
  of_margin "$t0" "$limit" of_wait_secs "$*"
  return 1
}

# of_client_loop_start URL OUTFILE — in the background, one request every 0.2 s through the private
# network's client, each on a fresh circuit (a new SOCKS username: tor's stream isolation), until
# of_client_loop_stop OUTFILE; each line of OUTFILE: start end ok|fail. With OF_LOOP_USER set, every
# request uses that SOCKS username instead: one long-lived circuit (and the client's cached descriptor)
# for all of them, as a browser tab has. Sets OF_LOOP_PID (also kept in OUTFILE.pid, so loops can run
# side by side).
of_client_loop_start() {
  local url=$1 out=$2 user=${OF_LOOP_USER:-}
  : >"$out"
  rm -f "$out.stop"
  (
    i=0
    while [[ ! -e $out.stop ]]; do
      i=$((i + 1))
      t0=$(of_now)
      if curl -sS --fail --max-time "${OF_LOOP_MAX_TIME:-20}" --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" \
        --proxy-user "${user:-iso$$-$i}:x" -o /dev/null "$url" 2>>"$out.err"; then r=ok; else r=fail; fi
      echo "$t0 $(of_now) $r" >>"$out"
      sleep 0.2
    done
  ) &
  OF_LOOP_PID=$!
  echo "$OF_LOOP_PID" >"$out.pid"
  of_track_pid "$OF_LOOP_PID"
}

# of_client_loop_stop OUTFILE — end that loop after its current request (bounded).
of_client_loop_stop() {
  local pid
  pid=$(cat "$1.pid")
  touch "$1.stop"
  of_wait_until 40 bash -c "! kill -0 $pid 2>/dev/null"
  wait "$pid" 2>/dev/null
}

# Require the private network (started by tests/run-tests.sh or the caller).
of_require_testnet() {
  if [[ -z ${TESTNET_SOCKS_PORT:-} || -z ${TESTNET_TORRC_EXTRA:-} ]]; then
    echo "this test needs the private Tor network: run it through 'make test' or" \
      "'tests/testnet/testnet.sh run DIR -- bash $0'" >&2
    exit 2
  fi
}

# of_require_stem — python3-stem (a test tool) for tests/integration/hs_desc_fetch.py: sets PY (Debian's
# python3, which has it) and FETCH (the script); a missing stem is a failure.
of_require_stem() {
  PY=/usr/bin/python3
  FETCH="$OF_ROOT/tests/integration/hs_desc_fetch.py"
  "$PY" -c 'import stem' 2>/dev/null && return 0
  of_fail "python3-stem is not installed (tests/install-deps.sh test installs it)"
  of_summary
  return 1
}

# of_start_client_tor NAME [TORRC_LINE...] — a client tor of the test's own on the private network, in
# $OF_TMP/NAME, with a SocksPort on a free 127.0.0.1 port; the extra lines go into its torrc (say
# "ClientOnionAuthDir DIR"). Waits (bounded, 120 s) for bootstrap. Sets OF_LAST_PID and OF_CLIENT_SOCKS.
of_start_client_tor() {
  local name=$1 dir="$OF_TMP/$1" i
  shift
  mkdir -p "$dir/data" && chmod 700 "$dir" "$dir/data"
  OF_CLIENT_SOCKS=$(of_free_port) || return 1
  {
    cat "$TESTNET_TORRC_EXTRA"
    printf '%s\n' "DataDirectory $dir/data" "SocksPort 127.0.0.1:$OF_CLIENT_SOCKS" "Log notice file $dir/notice.log" \
      "SafeLogging 0" "GeoIPFile /dev/null" "GeoIPv6File /dev/null" "ShutdownWaitLength 0" "$@"
  } >"$dir/torrc"
  /usr/bin/tor -f "$dir/torrc" >"$dir/stdout.log" 2>&1 &
  OF_LAST_PID=$!
  of_track_pid "$OF_LAST_PID"
  for ((i = 0; i < 1200; i++)); do
    grep -q 'Bootstrapped 100' "$dir/notice.log" 2>/dev/null && return 0
    kill -0 "$OF_LAST_PID" 2>/dev/null || break
    sleep 0.1
  done
  of_log "client tor $name did not bootstrap: $(tail -n 5 "$dir/notice.log" "$dir/stdout.log" 2>&1)"
  return 1
}

# of_roll_field CONFIG KEY... — a field of the rolling restart in `onionfront status --json` ("roll", then
# KEY... as nested keys; booleans as true/false; "" if absent).
of_roll_field() {
  local config=$1
  shift
  "$OF_BIN" -c "$config" status --json 2>/dev/null | python3 -c '
import json, sys
try:
    v = json.load(sys.stdin)["status"]["roll"]
    for k in sys.argv[1:]:
        v = v[k]
    print("" if v is None else str(v).lower() if isinstance(v, bool) else v)
except Exception:
    print("")' "$@"
}
