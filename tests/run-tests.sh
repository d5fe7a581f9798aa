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

# The first base port B in 19000, 19100 ... 28900 such that no socket uses B..B+49 (the private
# network's ports; the tests' own ports are below 19000, the kernel's ephemeral range above 32767).
free_port_block() {
  used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
  b=19000
  while [ "$b" -le 28900 ]; do
    if ! printf '%s\n' "$used" | awk -v lo="$b" -v hi=$((b + 49)) '$1 >= lo && $1 <= hi { f = 1 } END { exit !f }'; then
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
  par_started=0 par_printed=0 par_running=0
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
par_end() { par_drain; wait; exec 3>&-; rm -rf "$par_dir"; }

if [ "$what" = all ] || [ "$what" = unit ]; then
  echo "== unit tests"
  par_begin
  for t in build/test/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    [ -f "tests/unit/$n.c" ] || continue
    case $n in
      # Alone: each takes a loopback port nobody listens on (bind to port 0, close) and counts on it
      # staying unused (test_health even listens on it later); a test beside it could take that port.
      test_health|test_proxy) par_drain; par_start "$n" 300 "$t"; par_drain ;;
      *) par_start "$n" 300 "$t" ;;
    esac
  done
  par_end
fi

if [ "$what" = all ] || [ "$what" = fuzz ]; then
  echo "== fuzz smoke runs (${FUZZ_SMOKE_SECONDS:-15} s each)"
  par_begin
  for f in build/fuzz/bin/fuzz_*; do
    [ -x "$f" ] || continue
    n=$(basename "$f")
    seeds=tests/fuzz/seeds/$n
    mkdir -p "build/fuzz/corpus/$n"
    if [ -d "$seeds" ]; then
      par_start "$n" 120 "$f" -max_total_time="${FUZZ_SMOKE_SECONDS:-15}" "build/fuzz/corpus/$n" "$seeds"
    else
      par_start "$n" 120 "$f" -max_total_time="${FUZZ_SMOKE_SECONDS:-15}" "build/fuzz/corpus/$n"
    fi
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
  # Tests on private Tor networks: TEST_LANES (default 2) lanes, each with its own network, run their
  # scripts one after another, side by side. The scripts wait on tor far more than they compute, and the
  # suite passes with two busy processes beside it (tests/stress-make-test.sh), so two lanes roughly
  # halve the wall time on 2 cores. A lane's output is printed whole when it ends.
  scripts=$(ls tests/integration/test_*.sh 2>/dev/null)
  if [ -n "$scripts" ]; then
    lanes=${TEST_LANES:-2}
    lane_dir=$(mktemp -d /tmp/onionfront-lanes.XXXXXX)
    # Longest first onto the least loaded lane (seconds measured on the 2-core machine; unknown: 30).
    for s in $scripts; do
      n=$(basename "$s" .sh)
      case $n in
        test_onionbalance) w=350 ;; test_roll) w=200 ;; test_testnet) w=140 ;; test_faults) w=110 ;;
        test_probe) w=130 ;; test_clientauth) w=130 ;; test_reload) w=95 ;; test_limits) w=70 ;; test_modes) w=65 ;;
        test_supervision) w=56 ;; test_core) w=51 ;; test_instances) w=50 ;; test_tor_reload) w=48 ;;
        test_logs) w=42 ;; test_privilege) w=39 ;; test_backends) w=38 ;; *) w=30 ;;
      esac
      echo "$w $s"
    done | sort -rn | awk -v lanes="$lanes" -v dir="$lane_dir" '
      { best = 1; for (l = 2; l <= lanes; l++) if (load[l] < load[best]) best = l
        load[best] += $1; print $2 > (dir "/scripts." best) }'
    # The networks start one after another: each takes the first block of ports no socket uses yet.
    base=${TESTNET_BASE_PORT:-}
    l=1
    while [ "$l" -le "$lanes" ]; do
      if [ -s "$lane_dir/scripts.$l" ]; then
        net_dir=$(mktemp -d /tmp/onionfront-testnet.XXXXXX)
        echo "$net_dir" >"$lane_dir/net.$l"
        if [ -n "$base" ]; then lane_port=$((base + (l - 1) * 100)); else lane_port=$(free_port_block) || lane_port=19000; fi
        if TESTNET_BASE_PORT=$lane_port bash tests/testnet/testnet.sh start "$net_dir" > "$log_dir/testnet-$l.log" 2>&1; then
          echo "lane $l: network on base port $lane_port; $(grep -i bootstrapped "$log_dir/testnet-$l.log")"
        else
          failed=$((failed + 1)); failures="$failures testnet-$l"
          echo "testnet: could not start the private Tor network of lane $l"; tail -n 40 "$log_dir/testnet-$l.log"
          rm -f "$lane_dir/scripts.$l"
        fi
      fi
      l=$((l + 1))
    done
    l=1
    while [ "$l" -le "$lanes" ]; do
      if [ -s "$lane_dir/scripts.$l" ]; then
        (
          passed=0; failed=0; failures=""
          eval "$(bash tests/testnet/testnet.sh env "$(cat "$lane_dir/net.$l")")"
          export TESTNET_DIR TESTNET_BASE_PORT TESTNET_SOCKS_PORT TESTNET_CLIENT_CONTROL TESTNET_TORRC_EXTRA \
            TESTNET_RELAY_COUNT
          while read -r s; do
            # test_onionbalance starts its own 20 s-voting network and runs two onionfronts: ~6 min alone,
            # over 10 on a crowded machine; the others stay well inside 600 s.
            limit=600; [ "$(basename "$s")" = test_onionbalance.sh ] && limit=900
            run_one "$(basename "$s" .sh)" "$limit" bash "$s" </dev/null
          done <"$lane_dir/scripts.$l"
          echo "$passed $failed $failures" >"$lane_dir/result.$l"
        ) >"$lane_dir/out.$l" 2>&1 &
      fi
      l=$((l + 1))
    done
    wait
    l=1
    while [ "$l" -le "$lanes" ]; do
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
      elif [ -s "$lane_dir/scripts.$l" ]; then
        failed=$((failed + 1)); failures="$failures lane-$l"; echo "lane $l ended without a result"
      fi
      l=$((l + 1))
    done
    rm -rf "$lane_dir"
  fi
fi

# CI shows only the end of this output: repeat each failed test's last lines here.
for n in $failures; do
  [ -f "$log_dir/$n.log" ] || continue
  # Every failed check of a script first (they may be far from its end), then its last lines.
  if grep -qE '^not ok|\[ +(FAILED|ERROR) +\]' "$log_dir/$n.log"; then
    echo "== $n: failed checks"
    grep -E '^not ok|\[ +(FAILED|ERROR) +\]' "$log_dir/$n.log" | head -n 20 | sed 's/^/    | /'
  fi
  echo "== $n: last lines of $log_dir/$n.log"
  tail -n 25 "$log_dir/$n.log" | sed 's/^/    | /'
done
[ -n "$failures" ] && echo "failed:$failures (logs in $log_dir/)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
