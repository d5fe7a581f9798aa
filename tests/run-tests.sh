#!/bin/sh
# Runs onionfront's tests and prints one closing line "N passed, N failed".
#   run-tests.sh            unit, fuzz smoke, integration (one private Tor network for all of them)
#   run-tests.sh unit|fuzz|integration
# Every test binary or script is run with a time bound; a test that times out counts as failed.
set -u
cd "$(dirname "$0")/.."
what=${1:-all}
passed=0
failed=0
failures=""
log_dir=build/test-logs
mkdir -p "$log_dir"
# Every bounded wait of the integration scripts (tests/integration/lib.sh, of_margin) appends how long it
# took against its bound here; the end of the run prints the tightest ones.
OF_MARGINS_FILE=$(pwd)/$log_dir/margins.tsv
export OF_MARGINS_FILE
: >"$OF_MARGINS_FILE"
# A failed integration script leaves its logs (onionfront's, tor's) here (lib.sh, of_keep_failed_logs).
OF_KEEP_FAILED_DIR=$(pwd)/$log_dir/kept
export OF_KEEP_FAILED_DIR
rm -rf "$OF_KEEP_FAILED_DIR"

# The first base port B in 19000, 19100 ... 28900 such that no socket uses B..B+49 (the private
# network's ports; the tests' own ports are below 19000, the kernel's ephemeral range above 32767).
free_port_block() { # [FIRST]
  used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
  b=${1:-19000}
  while [ "$b" -le 28900 ]; do
    # 19500: test_testnet's own network (TESTNET_SELFTEST_BASE_PORT)
    if [ "$b" -ne 19500 ] && ! printf '%s\n' "$used" | awk -v lo="$b" -v hi=$((b + 49)) '$1 >= lo && $1 <= hi { f = 1 } END { exit !f }'; then
      echo "$b"; return 0
    fi
    b=$((b + 100))
  done
  return 1
}

run_one() { # name timeout_s cmd...
  name=$1; limit=$2; shift 2
  log="$log_dir/$name.log"
  start=$(date +%s)
  # On the limit the script gets SIGTERM; bash runs its cleanup trap only once the command in the
  # foreground ends (a curl or tor wait of up to ~30 s), so SIGKILL comes 60 s later, not 10: a script
  # killed at once leaves its own private network running (seen with test_onionbalance).
  if timeout --kill-after=60 "$limit" "$@" >"$log" 2>&1; then
    passed=$((passed + 1)); status=ok
  else
    rc=$?
    failed=$((failed + 1)); status="FAIL (exit $rc)"; failures="$failures $name"
  fi
  printf '%-40s %s  (%ss)\n' "$name" "$status" "$(( $(date +%s) - start ))"
  # cmocka's own summary lines, so the runner's result is visible in CI output
  grep -E '^\[  (PASSED|FAILED)  \]|^\[==========\] .* ran' "$log" | sed 's/^/    /'
  if [ "$status" != ok ]; then tail -n 40 "$log" | sed 's/^/    | /'; fi
}

# Side by side: up to TEST_JOBS (default 2, one per core) run_one's at once, each in a subshell whose
# output goes to a file; the outputs are printed, and the counts added, in the order the jobs were
# started, each as soon as it and all before it have ended. A job tells it has ended by writing its
# number to a FIFO; fd 3, the FIFO held open here, is closed for the jobs and so for the tests.
par_max=${TEST_JOBS:-2}
[ "$par_max" -ge 1 ] 2>/dev/null || par_max=1
par_begin() {
  par_dir=$(mktemp -d /tmp/onionfront-jobs.XXXXXX)
  mkfifo "$par_dir/done"
  exec 3<>"$par_dir/done"
  par_started=0 par_printed=0 par_running=0 par_pids=""
}
par_start() { # name timeout_s cmd...  (once fewer than $par_max jobs run)
  while [ "$par_running" -ge "$par_max" ]; do par_reap; done
  par_started=$((par_started + 1)); i=$par_started
  eval "par_name_$i=\$1"
  (
    trap 'echo "$i" >"$par_dir/done"' EXIT
    trap 'exit 1' HUP TERM
    passed=0; failed=0; failures=""
    run_one "$@" </dev/null
    echo "$passed $failed $failures" >"$par_dir/result.$i"
  ) 3>&- >"$par_dir/out.$i" 2>&1 &
  par_pids="$par_pids $!"
  par_running=$((par_running + 1))
}
par_reap() { # wait for one job to end; print every ended job not yet printed and in order
  read -r i <&3
  : >"$par_dir/ended.$i"
  par_running=$((par_running - 1))
  while [ -f "$par_dir/ended.$((par_printed + 1))" ]; do
    par_printed=$((par_printed + 1)); i=$par_printed
    cat "$par_dir/out.$i"
    if [ -f "$par_dir/result.$i" ]; then
      read -r jp jf jfail <"$par_dir/result.$i"
      passed=$((passed + jp)); failed=$((failed + jf)); failures="$failures${jfail:+ $jfail}"
    else
      eval "n=\$par_name_$i"
      failed=$((failed + 1)); failures="$failures $n"; printf '%-40s %s\n' "$n" "FAIL (ended without a result)"
    fi
  done
}
par_drain() { while [ "$par_running" -gt 0 ]; do par_reap; done; }
# Waits for its own jobs only: the lanes' networks may be starting in the background meanwhile.
par_end() { par_drain; wait $par_pids; exec 3>&-; rm -rf "$par_dir"; }

# Tests on private Tor networks run in lanes side by side: TEST_LANES (default 2) lanes, each with its own
# network, take the scripts from one queue, longest first, each lane the next one when its last has ended
# (a fixed split left one lane idle for minutes once the measured times drifted). The scripts wait on tor
# far more than they compute, and the suite passes with two busy processes beside it
# (tests/stress-make-test.sh), so two lanes roughly halve the wall time on 2 cores; three networks of 12
# tors on 2 cores starve the tors (HSDir uploads time out and probes fail for load alone).
# Scripts that start their own networks (test_onionbalance votes every 20 s, test_testnet tests
# testnet.sh itself) need no lane network: with two lanes or more, a lane of their own runs them, started
# with the lane networks, before the unit tests and the fuzz runs, which run while the networks bootstrap.
# Once its scripts have ended, that lane starts a network too and takes scripts from the queue: there are
# never more than three networks at a time.
# At most one "heavy" script (many services, Onionbalance with two onionfronts, three tors per onionfront)
# runs at a time: two of them side by side made probes time out for load alone.
lane_setup() {
  lanes=${TEST_LANES:-2}
  lane_dir=$(mktemp -d /tmp/onionfront-lanes.XXXXXX)
  : >"$lane_dir/queue"
  : >"$lane_dir/own"
  # Seconds measured on the 2-core machine, to start the longest first (unknown: 30).
  for s in $(ls tests/integration/test_*.sh 2>/dev/null); do
    n=$(basename "$s" .sh)
    case $n in
      test_onionbalance) w=310 ;; test_roll) w=180 ;; test_combinations) w=170 ;; test_many) w=165 ;;
      test_testnet) w=150 ;; test_probe) w=145 ;; test_tls) w=45 ;; test_instances) w=110 ;; test_sharding) w=200 ;; test_faults) w=105 ;;
      test_supervision) w=100 ;; test_clientauth) w=90 ;; test_reload) w=90 ;; test_modes) w=85 ;;
      test_limits) w=70 ;; test_metrics_exposure) w=65 ;; test_core) w=50 ;; test_install) w=45 ;; test_logs) w=40 ;;
      test_backends) w=40 ;; test_migrate) w=80 ;; test_tor_reload) w=35 ;; test_privilege) w=30 ;; test_dos) w=30 ;;
      *) w=20 ;;
    esac
    case $n in
      test_onionbalance | test_testnet) [ "$lanes" -ge 2 ] && echo "$w $s" >>"$lane_dir/own" ;;
    esac
    grep -q " $s\$" "$lane_dir/own" || echo "$w $s" >>"$lane_dir/queue"
  done
  sort -rn -o "$lane_dir/queue" "$lane_dir/queue"
  sort -rn -o "$lane_dir/own" "$lane_dir/own"
  [ -s "$lane_dir/queue" ] || lanes=0
  # Each lane's network on its own block of ports, chosen here one after another (the networks start
  # side by side, so a block taken by one is not yet in use when the next is chosen).
  base=${TESTNET_BASE_PORT:-}
  next=19000
  l=1
  while [ "$l" -le "$lanes" ]; do
    if [ -n "$base" ]; then lane_port=$((base + (l - 1) * 100)); else lane_port=$(free_port_block "$next") || lane_port=$next; fi
    next=$((lane_port + 100))
    net_dir=$(mktemp -d /tmp/onionfront-testnet.XXXXXX)
    echo "$net_dir" >"$lane_dir/net.$l"
    echo "$lane_port" >"$lane_dir/port.$l"
    (
      if TESTNET_BASE_PORT=$lane_port bash tests/testnet/testnet.sh start "$net_dir" >"$log_dir/testnet-$l.log" 2>&1; then
        : >"$lane_dir/net-up.$l"
      fi
    ) </dev/null &
    echo "$!" >"$lane_dir/net-pid.$l"
    l=$((l + 1))
  done
  if [ -s "$lane_dir/own" ]; then
    if [ -n "$base" ]; then own_port=$((base + lanes * 100)); else own_port=$(free_port_block "$next") || own_port=$next; fi
    (
      passed=0; failed=0; failures=""
      while read -r w s; do
        n=$(basename "$s" .sh)
        is_heavy "$n" && heavy_begin "$n"
        run_one "$n" "$(lane_limit "$n")" bash "$s" </dev/null
        is_heavy "$n" && heavy_end "$n"
      done <"$lane_dir/own"
      if [ -s "$lane_dir/queue" ]; then
        net_dir=$(mktemp -d /tmp/onionfront-testnet.XXXXXX)
        echo "$net_dir" >"$lane_dir/net.own"
        if TESTNET_BASE_PORT=$own_port bash tests/testnet/testnet.sh start "$net_dir" >"$log_dir/testnet-own.log" 2>&1 </dev/null; then
          echo "lane own: network on base port $own_port; $(grep -i bootstrapped "$log_dir/testnet-own.log")"
          lane_work "$net_dir"
        else
          echo "lane own: no network of its own, it takes no scripts from the queue"; tail -n 20 "$log_dir/testnet-own.log"
        fi
      fi
      echo "$passed $failed $failures" >"$lane_dir/result.own"
    ) >"$lane_dir/out.own" 2>&1 &
  fi
}

# Runs scripts from the queue on the network in NET_DIR until the queue is empty (in a lane's subshell).
lane_work() {
  eval "$(bash tests/testnet/testnet.sh env "$1")"
  export TESTNET_DIR TESTNET_BASE_PORT TESTNET_SOCKS_PORT TESTNET_CLIENT_CONTROL TESTNET_TORRC_EXTRA \
    TESTNET_RELAY_COUNT
  while s=$(lane_claim) && [ -n "$s" ]; do
    n=$(basename "$s" .sh)
    run_one "$n" "$(lane_limit "$n")" bash "$s" </dev/null
    is_heavy "$n" && heavy_end "$n"
  done
}

is_heavy() { case $1 in test_many | test_onionbalance | test_combinations) return 0 ;; esac; return 1; }
# A heavy script waits until no other heavy one runs (the lane of its own does the same).
heavy_begin() {
  until mkdir "$lane_dir/heavy" 2>/dev/null; do sleep 2; done
  echo "$1" >"$lane_dir/heavy/name"
}
heavy_end() { rm -rf "$lane_dir/heavy"; }
# test_onionbalance starts its own 20 s-voting network and runs two onionfronts: ~6 min alone, over 10 on a
# crowded machine; test_many publishes 30 services on one tor, whose HSDir uploads time out on a crowded
# machine and are re-posted with a backoff, 2-5 min in all; both get 900 s, the others 600 s.
lane_limit() { case $1 in test_onionbalance | test_many) echo 900 ;; *) echo 600 ;; esac; }

# The next script from the queue for a lane: the longest that may run now (a heavy one only while no
# other heavy one runs; it is then marked running before the queue's lock is let go). Prints nothing when
# the queue is empty; waits while only heavy scripts are left and one runs.
lane_claim() {
  while :; do
    until mkdir "$lane_dir/lock" 2>/dev/null; do sleep 0.2; done
    pick=""
    while read -r w s; do
      n=$(basename "$s" .sh)
      if [ -z "$pick" ] && { ! is_heavy "$n" || mkdir "$lane_dir/heavy" 2>/dev/null; }; then
        pick=$s
        is_heavy "$n" && echo "$n" >"$lane_dir/heavy/name"
      else
        echo "$w $s"
      fi
    done <"$lane_dir/queue" >"$lane_dir/queue.new"
    mv "$lane_dir/queue.new" "$lane_dir/queue"
    left=$(wc -l <"$lane_dir/queue")
    rmdir "$lane_dir/lock"
    if [ -n "$pick" ] || [ "$left" -eq 0 ]; then
      echo "$pick"
      return 0
    fi
    sleep 2
  done
}

lane_run() {
  l=1
  while [ "$l" -le "$lanes" ]; do
    wait "$(cat "$lane_dir/net-pid.$l")" 2>/dev/null
    if [ -f "$lane_dir/net-up.$l" ]; then
      echo "lane $l: network on base port $(cat "$lane_dir/port.$l"); $(grep -i bootstrapped "$log_dir/testnet-$l.log")"
      (
        passed=0; failed=0; failures=""
        lane_work "$(cat "$lane_dir/net.$l")"
        echo "$passed $failed $failures" >"$lane_dir/result.$l"
      ) >"$lane_dir/out.$l" 2>&1 &
    else
      failed=$((failed + 1)); failures="$failures testnet-$l"
      echo "testnet: could not start the private Tor network of lane $l"; tail -n 40 "$log_dir/testnet-$l.log"
    fi
    l=$((l + 1))
  done
  wait
  if [ -s "$lane_dir/queue" ]; then
    failed=$((failed + 1)); failures="$failures lanes"
    echo "no lane ran these scripts (no network came up):"; sed 's/^[0-9]* /    /' "$lane_dir/queue"
  fi
  for l in own $(seq 1 "$lanes"); do
    if [ -f "$lane_dir/net.$l" ]; then
      bash tests/testnet/testnet.sh stop "$(cat "$lane_dir/net.$l")" >/dev/null 2>&1
      rm -rf "$(cat "$lane_dir/net.$l")"
    fi
    if [ -f "$lane_dir/out.$l" ]; then
      echo "-- lane $l"; cat "$lane_dir/out.$l"
    fi
    if [ -f "$lane_dir/result.$l" ]; then
      read -r lp lf lfail <"$lane_dir/result.$l"
      passed=$((passed + lp)); failed=$((failed + lf)); failures="$failures${lfail:+ $lfail}"
    elif [ -f "$lane_dir/out.$l" ]; then
      failed=$((failed + 1)); failures="$failures lane-$l"; echo "lane $l ended without a result"
    fi
  done
  rm -rf "$lane_dir"
}

# How many tors run at once, and the load, sampled every 5 s for the whole run (printed at the end): what
# the suite asks of a 2-core machine.
# The sampler is no child of this shell (started from a subshell that exits at once), so that the lanes'
# `wait` never waits for it; it ends by itself when this script is gone.
runner_pid=$$
load_sampler() {
  while kill -0 "$runner_pid" 2>/dev/null; do
    printf '%s %s\n' "$(ps -e -o comm= | grep -c '^tor$')" "$(cut -d ' ' -f 1 /proc/loadavg)"
    sleep 5
  done
}
(load_sampler >"$log_dir/load.txt" 2>/dev/null </dev/null & echo "$!" >"$log_dir/load.pid")
sampler_stop() { kill "$(cat "$log_dir/load.pid" 2>/dev/null)" 2>/dev/null; }
trap sampler_stop EXIT

if [ "$what" = all ] || [ "$what" = unit ]; then
  echo "== unit tests"
  # First and alone: test_health and test_proxy each take a loopback port nobody listens on (bind to port
  # 0, close) and count on it staying unused (test_health even listens on it later); a test beside them,
  # or a private network's tors connecting out, could take that port.
  for n in test_health test_proxy; do
    [ -x "build/test/$n" ] && [ -f "tests/unit/$n.c" ] && run_one "$n" 300 "build/test/$n"
  done
  # The lanes' networks bootstrap, and the scripts with networks of their own run, beside the rest.
  [ "$what" = all ] && lane_setup
  par_begin
  for t in build/test/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    [ -f "tests/unit/$n.c" ] || continue
    case $n in test_health | test_proxy) continue ;; esac
    par_start "$n" 300 "$t"
  done
  par_end
fi

if [ "$what" = all ] || [ "$what" = fuzz ]; then
  # The same work every time (tests/fuzz/smoke.sh): seeds and regressions replayed, then a fixed number
  # of inputs from a fixed seed, from those inputs only. Random exploration is make fuzz.
  echo "== fuzz smoke runs (seeds and regressions, then ${FUZZ_SMOKE_RUNS:-30000} runs from -seed=${FUZZ_SMOKE_SEED:-1})"
  par_begin
  for f in build/fuzz/bin/fuzz_*; do
    [ -x "$f" ] || continue
    n=$(basename "$f")
    par_start "$n" 240 sh tests/fuzz/smoke.sh "$n"
  done
  par_end
fi

if [ "$what" = all ] || [ "$what" = integration ]; then
  echo "== integration tests"
  # Tests that need no private network (they start their own tor, e.g. with DisableNetwork).
  for t in build/test/test_*; do
    n=$(basename "$t")
    [ -f "tests/integration/$n.c" ] || continue
    run_one "$n" 300 "$t"
  done
  [ -n "${lane_dir:-}" ] || lane_setup
  lane_run
fi

# CI shows only the end of this output: each failed test's last lines, then every failed check of
# every failed test together (they may be far from a script's end), last, so that they are what CI shows.
fail_re='^not ok|\[ +(FAILED|ERROR) +\]|^[0-9:]{8} FAIL: '
for n in $failures; do
  [ -f "$log_dir/$n.log" ] || continue
  echo "== $n: last lines of $log_dir/$n.log"
  tail -n 12 "$log_dir/$n.log" | sed 's/^/    | /'
done
for n in $failures; do
  [ -f "$log_dir/$n.log" ] || continue
  echo "== $n: failed checks"
  # Each with the two lines before it: what a test logs just before a check is often its measurement.
  grep -E -B2 "$fail_re" "$log_dir/$n.log" | head -n 30 | cut -c1-300 | sed 's/^/    | /'
done
sampler_stop
if [ -s "$log_dir/load.txt" ]; then
  awk '{ t += $1; if ($1 > m) m = $1; l += $2; if ($2 > ml) ml = $2; n++ }
       END { if (n) printf "== tors running at once: %.0f on average, %d at most; load average %.1f on average, %.1f at most (%d samples, %s)\n", t / n, m, l / n, ml, n, "'"$log_dir/load.txt"'" }' "$log_dir/load.txt"
fi
# Drift shows before it fails: the ten waits that used the largest share of their bounds (80 % or more is
# a finding, tests/README.md "Margins").
if [ -s "$OF_MARGINS_FILE" ]; then
  echo "== the ten tightest margins (script, used s / bound s, share, check; all in $log_dir/margins.tsv)"
  awk -F '\t' '$3 > 0 { printf "%.3f\t%s\t%s\t%s\t%s\n", $2 / $3, $1, $2, $3, $4 }' "$OF_MARGINS_FILE" |
    sort -t "$(printf '\t')" -k1,1 -rn | head -n 10 |
    awk -F '\t' '{ printf "    %-22s %7s / %-4s %4.0f %%%s  %s\n", $2, $3, $4, $1 * 100, ($1 >= 0.8 ? " !" : "  "), substr($5, 1, 90) }'
fi
[ -n "$failures" ] && echo "failed:$failures (logs in $log_dir/)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
