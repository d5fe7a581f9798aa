#!/bin/sh
# check-layering.sh — the include rules of the tree (make check-layering, part of make test).
#
# Each folder of the daemon (a wing: sidecar/<wing>/) and controlproto/ has a file .may_include naming
# the folders its files may include besides their own, one a line ('#' starts a comment); sidecar/.may_include
# is main.c's and reload.c's. The check fails
#   - on an include of a folder that the including folder's .may_include does not name: an upward
#     include (the message names the file, the line, the include and the rule's file);
#   - on a circle among the folders' allow-lists (so the wings stay a stack: docs/architecture.md);
#   - on a circle among files (a .c/.h pair counts as one unit), except the pairs listed in
#     KNOWN_CIRCLES below ("a:b" unit pairs; none today).
# Includes of system headers (<...>), tests/ and build/ are not judged. Run from the repository's root.
set -u
KNOWN_CIRCLES=""
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# folder of a path: controlproto, a wing name, or "sidecar" for the top (main.c, reload.c)
folder_of() {
    case "$1" in
    controlproto/*) echo controlproto ;;
    sidecar/*/*) d=${1#sidecar/}; echo "${d%%/*}" ;;
    sidecar/*) echo sidecar ;;
    *) echo "" ;;
    esac
}
rules_of() {
    case "$1" in
    controlproto) echo controlproto/.may_include ;;
    sidecar) echo sidecar/.may_include ;;
    *) echo "sidecar/$1/.may_include" ;;
    esac
}

for f in $(find controlproto sidecar -name '*.[ch]' | sort); do
    from=$(folder_of "$f")
    rules=$(rules_of "$from")
    if [ ! -f "$rules" ]; then
        echo "check-layering: $f: its folder has no $rules (list the folders it may include)"
        fail=1
        continue
    fi
    allowed=" $(sed -e 's/#.*//' "$rules" | tr '\n' ' ') "
    unit=${f%.*}
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
        n=${line%%:*}
        inc=$(echo "$line" | sed -e 's/^[^"]*"//' -e 's/".*//')
        to=$(folder_of "$inc")
        [ -n "$to" ] || continue
        echo "$unit ${inc%.*}" >> "$tmp/edges"
        [ "$to" = "$from" ] && continue
        case "$allowed" in
        *" $to "*) ;;
        *)
            echo "check-layering: $f:$n includes \"$inc\": folder $from may include only:$(echo "$allowed" | sed 's/  */ /g')(rule: $rules)"
            echo x >> "$tmp/violations"
            ;;
        esac
    done
done
[ -s "$tmp/violations" ] && fail=1

# the folders' allow-lists form no circle
for r in controlproto/.may_include sidecar/.may_include sidecar/*/.may_include; do
    [ -f "$r" ] || continue
    d=$(dirname "$r"); from=$(folder_of "$d/x")
    for to in $(sed -e 's/#.*//' "$r"); do echo "$from $to"; done
done > "$tmp/rules"
if ! tsort "$tmp/rules" > /dev/null 2> "$tmp/rloop"; then
    echo "check-layering: the folders' .may_include lists form a circle:$(sed -n 's/^tsort: \([a-z_]*\)$/ \1/p' "$tmp/rloop" | tr -d '\n')"
    fail=1
fi

# files form no circle (but the known ones)
touch "$tmp/edges"
awk '$1 != $2' "$tmp/edges" | sort -u > "$tmp/e"
for k in $KNOWN_CIRCLES; do
    echo "${k%%:*} ${k#*:}"; echo "${k#*:} ${k%%:*}"
done > "$tmp/known"
grep -v -x -F -f "$tmp/known" "$tmp/e" > "$tmp/e2" || true
if ! tsort "$tmp/e2" > /dev/null 2> "$tmp/floop"; then
    echo "check-layering: files include each other in a circle:$(grep -v 'input contains a loop' "$tmp/floop" | sed 's/^tsort: / /' | tr -d '\n')"
    fail=1
fi
[ "$fail" = 0 ] && echo "check-layering: ok ($(wc -l < "$tmp/e") include arrows between files, none upward, no circle)"
exit $fail
