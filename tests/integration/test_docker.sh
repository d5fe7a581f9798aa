#!/bin/bash
# docker/ checked statically (no Docker engine on these machines; issue: reliability/security/deployment):
#  - the image starts from debian:bookworm-slim and installs packages only through tests/install-deps.sh
#    (its "build" set, then "runtime"), sets the script accepts, so the image cannot drift from the
#    tested path; no apt-get of its own;
#  - it builds with the Makefile and installs with `make install`;
#  - it runs onionfront as a non-root user, with the state directory as a volume owned by that user;
#  - the config it copies and the compose file mounts exists, passes `onionfront check-config`, does not
#    set tor.user (the image is not root), and uses the directories the image creates;
#  - compose.yaml builds from docker/Dockerfile and has a backend the config points to.
# Needs no network.
set -u
source "$(dirname "$0")/lib.sh"
of_init

dockerfile=$OF_ROOT/docker/Dockerfile
compose=$OF_ROOT/docker/compose.yaml
deps=$OF_ROOT/tests/install-deps.sh
bin=${OF_REL_BIN:-$OF_ROOT/build/onionfront}

# Instructions with continuation lines joined, comments dropped.
instr=$(sed -e '/^[[:space:]]*#/d' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta')
runs=$(grep -E '^RUN ' <<<"$instr")

froms=$(grep -E '^FROM ' <<<"$instr")
of_check "every stage is based on debian:bookworm-slim" \
  test -n "$froms" -a -z "$(grep -vE '^FROM debian:bookworm-slim( AS [a-z]+)?$' <<<"$froms")"
of_check "the first stage installs the 'build' set with tests/install-deps.sh" \
  grep -Eq 'sh (tests/)?install-deps\.sh build|sh tests/install-deps\.sh build' <<<"$runs"
of_check "the final stage installs the 'runtime' set with the same script" \
  grep -Eq 'sh /tmp/install-deps\.sh runtime' <<<"$runs"
of_check "the script copied in is tests/install-deps.sh" \
  test "$(grep -Ec '^COPY tests/install-deps\.sh ' <<<"$instr")" -eq 2
of_check "no package manager call besides the script" test -z "$(grep -E 'apt-get|apt |dpkg -i' <<<"$runs")"
for set in build runtime; do
  of_check "tests/install-deps.sh knows the set '$set'" grep -Eq "^  $set\) pkgs=" "$deps"
done
of_check "tests/install-deps.sh refuses an unknown set (so a typo in the Dockerfile fails the build)" \
  bash -c "sh '$deps' no-such-set >/dev/null 2>&1; test \$? -eq 2"
of_check "the build uses the Makefile and make install" grep -Eq 'make all && make install PREFIX=/usr DESTDIR=/out' <<<"$runs"
of_check "the final stage copies the installed tree" grep -Eq '^COPY --from=build /out/ /$' <<<"$instr"

user=$(grep -E '^USER ' <<<"$instr" | tail -n 1 | awk '{print $2}')
of_check "it runs as a non-root user ($user)" bash -c "[[ -n '$user' && '$user' != root && '$user' != 0 ]]"
of_check "that user is created in the image" grep -Eq "useradd .* $user( |$)" <<<"$runs"
of_check "the entrypoint is the installed binary" grep -Eq '^ENTRYPOINT \["/usr/bin/onionfront"\]' <<<"$instr"

# --- the config ---------------------------------------------------------------------------------------
cfg_dst=$(grep -E '^COPY docker/[^ ]+\.json ' <<<"$instr" | awk '{print $3}')
cfg_src=$(grep -E '^COPY docker/[^ ]+\.json ' <<<"$instr" | awk '{print $2}')
of_check "the image copies a config to /etc/onionfront/onionfront.json" test "$cfg_dst" = /etc/onionfront/onionfront.json
of_check "the image's CMD runs that config" grep -Fq '"-c", "/etc/onionfront/onionfront.json", "run"' <<<"$instr"
cfg=$OF_ROOT/$cfg_src
if [[ -f $cfg ]]; then
  of_check "$cfg_src passes onionfront check-config" "$bin" check-config "$cfg"
  of_check "$cfg_src does not set tor.user (the image does not run as root)" bash -c "! grep -q '\"user\"' '$cfg'"
  state_dir=$(grep -Eo '"state_dir": *"[^"]+"' "$cfg" | sed 's/.*: *"//; s/"$//')
  run_dir=$(grep -Eo '"run_dir": *"[^"]+"' "$cfg" | sed 's/.*: *"//; s/"$//')
  of_check "state_dir ($state_dir) is the image's volume" grep -Eq "^VOLUME \[\"$state_dir\"\]" <<<"$instr"
  of_check "state_dir and run_dir are created 0700 for $user" \
    grep -Eq "install -d -o $user -g $user -m 0700 $state_dir $run_dir" <<<"$runs"
else
  of_fail "the config the Dockerfile copies ($cfg_src) does not exist"
fi

# --- compose --------------------------------------------------------------------------------------------
of_check "compose.yaml builds docker/Dockerfile from the repository root" \
  bash -c "grep -Eq '^ +context: \.\.$' '$compose' && grep -Eq '^ +dockerfile: docker/Dockerfile$' '$compose'"
mount=$(grep -Eo '\./[^:]+\.json:/etc/onionfront/onionfront\.json:ro' "$compose" | cut -d: -f1)
of_check "compose.yaml mounts a config read-only" test -n "$mount"
of_check "the mounted config is the one checked above" test "$OF_ROOT/docker/${mount#./}" -ef "$cfg"
of_check "compose.yaml keeps the state in a named volume" grep -Eq '^ +- onionfront-state:/var/lib/onionfront$' "$compose"
backend_host=$(grep -Eo '"address": *"[a-z0-9_-]+:[0-9]+"' "$cfg" | head -n 1 | sed 's/.*"\([a-z0-9_-]*\):.*/\1/')
of_check "the config's backend host ($backend_host) is a compose service" grep -Eq "^  $backend_host:$" "$compose"

of_summary
