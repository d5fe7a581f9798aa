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
  if timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1; then
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

if [ "$what" = all ] || [ "$what" = unit ]; then
  echo "== unit tests"
  for t in build/test/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    [ -f "tests/unit/$n.c" ] || continue
    run_one "$n" 300 "$t"
  done
fi

if [ "$what" = all ] || [ "$what" = fuzz ]; then
  echo "== fuzz smoke runs (${FUZZ_SMOKE_SECONDS:-15} s each)"
  for f in build/fuzz/bin/fuzz_*; do
    [ -x "$f" ] || continue
    n=$(basename "$f")
    seeds=tests/fuzz/seeds/$n
    mkdir -p "build/fuzz/corpus/$n"
    if [ -d "$seeds" ]; then
      run_one "$n" 120 "$f" -max_total_time="${FUZZ_SMOKE_SECONDS:-15}" "build/fuzz/corpus/$n" "$seeds"
    else
      run_one "$n" 120 "$f" -max_total_time="${FUZZ_SMOKE_SECONDS:-15}" "build/fuzz/corpus/$n"
    fi
  done
fi

if [ "$what" = all ] || [ "$what" = integration ]; then
  echo "== integration tests"
  # Tests that need no private network (they start their own tor, e.g. with DisableNetwork).
  for t in build/test/test_*; do
    n=$(basename "$t")
    [ -f "tests/integration/$n.c" ] || continue
    run_one "$n" 300 "$t"
  done
  # Tests on the shared private Tor network: one network for the whole run.
  scripts=$(ls tests/integration/test_*.sh 2>/dev/null)
  if [ -n "$scripts" ]; then
    net_dir=$(mktemp -d /tmp/onionfront-testnet.XXXXXX)
    # Another private network on this machine (a developer's, make bench or soak) must not make the
    # suite fail: unless the caller chose a base port, take the first block of 50 ports no socket uses.
    if [ -z "${TESTNET_BASE_PORT:-}" ]; then
      TESTNET_BASE_PORT=$(free_port_block) || TESTNET_BASE_PORT=19000
      export TESTNET_BASE_PORT
    fi
    if bash tests/testnet/testnet.sh start "$net_dir" > "$log_dir/testnet.log" 2>&1; then
      cat "$log_dir/testnet.log" | grep -i bootstrapped
      eval "$(bash tests/testnet/testnet.sh env "$net_dir")"
      export TESTNET_DIR TESTNET_SOCKS_PORT TESTNET_CLIENT_CONTROL TESTNET_TORRC_EXTRA TESTNET_RELAY_COUNT
      for s in $scripts; do
        n=$(basename "$s" .sh)
        run_one "$n" 600 bash "$s"
      done
    else
      failed=$((failed + 1)); failures="$failures testnet"
      echo "testnet: could not start the private Tor network"; tail -n 40 "$log_dir/testnet.log"
    fi
    bash tests/testnet/testnet.sh stop "$net_dir" >/dev/null 2>&1
    rm -rf "$net_dir"
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
