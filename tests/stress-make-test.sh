#!/bin/bash
# stress-make-test.sh — is `make test` green on a fresh clone, every time, on a busy machine?
#
# RUNS times (default 3): clone this repository's HEAD commit into a new temporary directory (committed
# work only: uncommitted changes are not in the clone), start a CPU hog of HOG_PROCS (default 2) busy
# processes beside it, run `make MAKE_TARGET` (default test) in the clone, record pass/fail, the duration
# and run-tests.sh's closing "N passed, N failed" line, stop the hog, remove the clone. Then print a
# summary table; exit 1 if any run failed.
#
# Bounds: each make run ends after RUN_TIMEOUT seconds (default 7200; a run that hits it fails). The hog's
# processes are ended by PID after each run (and by the EXIT/INT/TERM trap), and each runs under
# `timeout RUN_TIMEOUT+60` so that it ends by itself even if this script is killed with SIGKILL.
# KEEP_LOGS=DIR keeps each run's full output there, with the clone's build/test-logs (each script's output,
# and under kept/ the logs of the scripts that failed); without it the last 40 lines are shown on failure.
#
#   tests/stress-make-test.sh                        three runs of make test (make stress-test)
#   RUNS=1 MAKE_TARGET=unit tests/stress-make-test.sh   a quick check of the script itself
set -u

RUNS=${RUNS:-3}
MAKE_TARGET=${MAKE_TARGET:-test}
HOG_PROCS=${HOG_PROCS:-2}
RUN_TIMEOUT=${RUN_TIMEOUT:-7200}
KEEP_LOGS=${KEEP_LOGS:-}

for v in RUNS HOG_PROCS RUN_TIMEOUT; do
  case ${!v} in '' | *[!0-9]*) echo "stress-make-test: $v must be a whole number, not '${!v}'" >&2; exit 2 ;; esac
done
case $MAKE_TARGET in '' | *[!A-Za-z0-9_-]*)
  echo "stress-make-test: MAKE_TARGET must be one make target name, not '$MAKE_TARGET'" >&2; exit 2 ;;
esac

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || exit 2
head=$(git -C "$repo" rev-parse HEAD) || exit 2
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "stress-make-test: note: uncommitted changes in $repo are not tested (the clones get $head)"
fi
[ -z "$KEEP_LOGS" ] || mkdir -p "$KEEP_LOGS" || exit 2

hog_pids=()
make_pid=""
work=""

hog_start() {
  local i
  hog_pids=()
  for ((i = 0; i < HOG_PROCS; i++)); do
    timeout $((RUN_TIMEOUT + 60)) sh -c 'while :; do :; done' &
    hog_pids+=("$!")
  done
}

hog_stop() {
  local p
  for p in "${hog_pids[@]}"; do
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  hog_pids=()
}

cleanup() {
  if [ -n "$make_pid" ]; then # interrupted during a run: timeout passes the signal on to make
    kill "$make_pid" 2>/dev/null
    wait "$make_pid" 2>/dev/null
    make_pid=""
  fi
  hog_stop
  [ -z "$work" ] || rm -rf "$work"
  work=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

results=()
any_failed=0
echo "stress-make-test: $RUNS run(s) of 'make $MAKE_TARGET' on fresh clones of $head, each beside $HOG_PROCS busy processes"
for ((run = 1; run <= RUNS; run++)); do
  work=$(mktemp -d /tmp/onionfront-stress.XXXXXX) || exit 2
  chmod 755 "$work" # tests run the daemon as other users too (test_privilege C1 as nobody), as in a clone CI makes
  clone=$work/onionfront
  log=$work/make.log
  # A clone of the repository's branches, then HEAD's commit checked out detached (a worktree's HEAD
  # need not be what a plain clone checks out).
  if ! git clone -q --no-checkout "$repo" "$clone" >"$log" 2>&1 || ! git -C "$clone" checkout -q --detach "$head" >>"$log" 2>&1; then
    echo "run $run: cannot clone $repo at $head:"; cat "$log"
    results+=("$(printf '%-4s %-6s %8s  %s' "$run" FAIL - "clone failed")")
    any_failed=1
    cleanup
    continue
  fi
  hog_start
  echo "== run $run/$RUNS: make $MAKE_TARGET in $clone (hog pids ${hog_pids[*]})"
  start=$(date +%s)
  # In the background and waited for, so that a signal to this script is handled at once.
  (cd "$clone" && exec timeout --kill-after=30 "$RUN_TIMEOUT" make "$MAKE_TARGET") >>"$log" 2>&1 &
  make_pid=$!
  wait "$make_pid"
  rc=$?
  make_pid=""
  took=$(($(date +%s) - start))
  hog_stop
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
  if [ "$rc" -eq 0 ]; then
    verdict=pass
  else
    verdict=FAIL
    any_failed=1
    [ "$rc" -ne 124 ] || summary="${summary:+$summary; }timed out after $RUN_TIMEOUT s"
    grep -E '^failed:|FAIL' "$log" | head -n 20 | sed 's/^/    | /'
    [ -n "$KEEP_LOGS" ] || tail -n 40 "$log" | sed 's/^/    | /'
  fi
  if [ -n "$KEEP_LOGS" ]; then
    cp "$log" "$KEEP_LOGS/run-$run.log"
    [ ! -d "$clone/build/test-logs" ] || cp -r "$clone/build/test-logs" "$KEEP_LOGS/run-$run-test-logs"
  fi
  echo "run $run: $verdict (exit $rc) in $took s: ${summary:-no summary line}"
  results+=("$(printf '%-4s %-6s %7ss  %s' "$run" "$verdict" "$took" "${summary:-no summary line (exit $rc)}")")
  cleanup
done

echo
echo "== summary: make $MAKE_TARGET, $RUNS fresh clone(s) of $head, $HOG_PROCS busy processes beside each"
printf '%-4s %-6s %8s  %s\n' run result time "closing line"
printf '%s\n' "${results[@]}"
[ "$any_failed" -eq 0 ]
