#!/bin/sh
# check-layering-selftest.sh — shows that tests/check-layering.sh can fail (make check-layering runs it
# after the real check). On a copy of controlproto/ and sidecar/ in a temporary directory it checks that
#   1. the copy as it is passes;
#   2. an upward include (core/, the lowest wing, including ops/status.h) fails, and the message names
#      the file and line, the include and the rule's file;
#   3. a folder allow-list that closes a circle (core/ may include fleet/, which may include core/) fails;
#   4. two files that include each other (core/clock.h <-> core/log.h, same folder) fail as a circle;
#   5. controlproto/ including anything of the sidecar fails (the library knows nothing of onionfront).
# Run from the repository's root.
set -u
root=$(pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# fresh copy; then "$@" edits it; then the check must give exit status $want and print $pattern
case_run() {
    name=$1 want=$2 pattern=$3
    shift 3
    rm -rf "$tmp/t" && mkdir -p "$tmp/t/tests" &&
        cp -R "$root/controlproto" "$root/sidecar" "$tmp/t/" &&
        cp "$root/tests/check-layering.sh" "$tmp/t/tests/" || { echo "selftest: cannot copy the tree"; exit 1; }
    (cd "$tmp/t" && "$@") || { echo "check-layering selftest: $name: the edit failed"; fail=1; return; }
    out=$(cd "$tmp/t" && sh tests/check-layering.sh 2>&1)
    rc=$?
    if [ "$want" = 0 ] && [ "$rc" != 0 ]; then
        echo "check-layering selftest: $name: expected ok, got exit $rc: $out"
        fail=1
    elif [ "$want" != 0 ] && [ "$rc" = 0 ]; then
        echo "check-layering selftest: $name: the check passed; it must fail"
        fail=1
    elif ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
        echo "check-layering selftest: $name: the message does not say '$pattern': $out"
        fail=1
    fi
}
no_edit() { :; }
add_line() { # FILE LINE — append LINE to FILE
    printf '%s\n' "$2" >> "$1"
}

case_run "the tree as it is" 0 "check-layering: ok" no_edit
case_run "an upward include" 1 \
    'sidecar/core/clock.c:[0-9]* includes "sidecar/ops/status.h": folder core may include only.*(rule: sidecar/core/.may_include)' \
    add_line sidecar/core/clock.c '#include "sidecar/ops/status.h"'
case_run "a circle of allow-lists" 1 "the folders' .may_include lists form a circle" \
    add_line sidecar/core/.may_include fleet
case_run "a circle of files" 1 "files include each other in a circle" \
    add_line sidecar/core/clock.h '#include "sidecar/core/log.h"'
case_run "controlproto including the sidecar" 1 \
    'controlproto/cp_conn.c:[0-9]* includes "sidecar/core/log.h"' \
    add_line controlproto/cp_conn.c '#include "sidecar/core/log.h"'
[ "$fail" = 0 ] && echo "check-layering selftest: ok (an upward include, a circle of folders, a circle of files and controlproto including the sidecar each fail, named)"
exit $fail
