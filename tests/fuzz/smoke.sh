#!/bin/sh
# smoke.sh TARGET — make test's fuzz stage for one libFuzzer target (see tests/fuzz/README.md). It does the
# same work on every run, so it fails only for a bug that is there every time:
#   1. replay each input in tests/fuzz/seeds/TARGET/ and tests/fuzz/regressions/TARGET/ once;
#   2. FUZZ_SMOKE_RUNS inputs (default 30000) mutated from FUZZ_SMOKE_SEED (default 1), starting from
#      those inputs only: a fresh scratch corpus (never build/fuzz/corpus or an earlier run's finds), no
#      corpus reload, and address-space randomisation off for the process (libFuzzer keys its tables of
#      recent comparisons by code address, so with ASLR the mutations drift apart after a few thousand runs).
# Random exploration is `make fuzz`. A failing input is written to build/fuzz/artifacts/TARGET/; once the
# bug is fixed it belongs in tests/fuzz/regressions/TARGET/.
set -eu
cd "$(dirname "$0")/../.."
n=$1
bin=build/fuzz/bin/$n
runs=${FUZZ_SMOKE_RUNS:-30000}
seed=${FUZZ_SMOKE_SEED:-1}
art=build/fuzz/artifacts/$n
scratch=build/fuzz/smoke/$n
[ -x "$bin" ] || { echo "smoke: $bin is not built"; exit 1; }

corpora=""
for d in tests/fuzz/seeds/$n tests/fuzz/regressions/$n; do
  [ -d "$d" ] && corpora="$corpora $d"
done
inputs=$(if [ -n "$corpora" ]; then find $corpora -type f | LC_ALL=C sort; fi)

if setarch "$(uname -m)" -R true 2>/dev/null; then
  fixed="setarch $(uname -m) -R"
else
  fixed=""
  echo "smoke: setarch -R is refused here: the mutation run may differ from one run to the next"
fi

mkdir -p "$art"
rm -rf "$scratch"
mkdir -p "$scratch"

if [ -n "$inputs" ]; then
  echo "== $n: replaying $(printf '%s\n' "$inputs" | wc -l) seed and regression inputs"
  # shellcheck disable=SC2086  # file names in the tree have no spaces (checked by the README's rule)
  $bin -artifact_prefix="$art/" $inputs
fi
echo "== $n: $runs runs from -seed=$seed"
# shellcheck disable=SC2086
$fixed $bin -seed="$seed" -runs="$runs" -reload=0 -print_final_stats=1 -artifact_prefix="$art/" "$scratch" $corpora
rm -rf "$scratch"
