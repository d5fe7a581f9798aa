#!/bin/bash
# Moving an existing onion service in (issue 38), on the private network with real tor, following the
# recipe in docs/operations.md ("Moving an existing onion service in"):
#  A. Two tors run as an operator's would, each from its own torrc: a single onion (HiddenServiceNonAnonymousMode
#     1 + HiddenServiceSingleHopMode 1, HiddenServiceDir .../web) and an ordinary hidden service
#     (.../hidden). Their hostname files appear; the tors are stopped (the recipe's first step) and the
#     directories given to debian-tor, mode 0700/0600, as tor leaves them; their checksums and modes are
#     taken.
#  B. Key commands before the first start, on a fresh install: the user onionfront made by
#     systemd-sysusers from systemd/onionfront.sysusers.conf, an empty /var/lib (all in a private mount
#     namespace, overlays on /etc and /var/lib). As onionfront (runuser), new-key says the one command
#     that makes /var/lib/onionfront; that command makes it as systemd would, and new-key then works. As
#     root, import-key of tor's directory makes /var/lib/onionfront itself (owner onionfront, 0700) and
#     writes the copy as onionfront (0700/0600, the record too).
#  C. import-torrc on each real torrc prints the config (the single onion as "single" with its intro
#     points, the hidden service as "anonymous") and the import-key lines; what it does not carry over
#     (SocksPort, DataDirectory, the private network's lines) is listed on stderr. An anonymous
#     directory into a single-mode service is refused, saying why (running it single would show where
#     the hidden service is) and the two ways forward ("mode": "anonymous", new-key); so is a single
#     onion's directory into single mode without evidence, and an unrelated --torrc.
#  D. onionfront starts from import-torrc's output (only state_dir/run_dir and the private network's
#     torrc lines changed) after the printed import-key lines and check-config; `status` shows the OLD
#     addresses, and both are fetched through the private network's client tor.
#  E. The source directories are unchanged throughout (checksums, modes, owners): they stay the backup.
set -u
source "$(dirname "$0")/lib.sh"
of_in_private_mounts "$0" "$@"
of_require_testnet
of_init
of_mounts_init

# ============================ A. an operator's two tors, as tor leaves them ============================
port_web=$(of_free_port)
of_start_backend web "$port_web" http || exit 1
port_hid=$(of_free_port)
of_start_backend hidden "$port_hid" http || exit 1
old=$OF_TMP/old # what /var/lib/tor is to Debian's tor
mkdir -p "$old" && chmod 755 "$old"

# old_tor NAME SINGLE(0|1) PORT — write $old/NAME.torrc and start tor with it; sets OF_LAST_PID.
old_tor() {
  local name=$1 single=$2 port=$3 dir=$old/$1.data
  mkdir -p "$dir" && chmod 700 "$dir"
  {
    echo "## the operator's torrc for $name"
    cat "$TESTNET_TORRC_EXTRA"
    echo "DataDirectory $dir"
    echo "SocksPort 0"
    echo "Log notice file $old/$name.log"
    if ((single)); then echo "HiddenServiceNonAnonymousMode 1"; echo "HiddenServiceSingleHopMode 1"; fi
    echo "HiddenServiceDir $old/$name/"
    echo "HiddenServicePort 80 127.0.0.1:$port"
    echo "HiddenServiceNumIntroductionPoints 4"
  } >"$old/$name.torrc"
  /usr/bin/tor -f "$old/$name.torrc" >"$old/$name.stdout" 2>&1 &
  OF_LAST_PID=$!
  of_track_pid "$OF_LAST_PID"
}
old_tor web 1 "$port_web"
pid_web=$OF_LAST_PID
old_tor hidden 0 "$port_hid"
pid_hid=$OF_LAST_PID
of_check "the old tors wrote their hostname files" \
  of_wait_until 60 test -s "$old/web/hostname" -a -s "$old/hidden/hostname"
addr_web=$(cat "$old/web/hostname")
addr_hid=$(cat "$old/hidden/hostname")
of_log "old single onion $addr_web, old hidden service $addr_hid"
# The recipe's first step: stop the old tor (two tors with one key take turns on the HSDirs).
of_stop_pid "$pid_web" 15
of_stop_pid "$pid_hid" 15
of_check "tor left no mode marker in the single onion's directory (so evidence must come from its torrc)" \
  test ! -e "$old/web/onion_service_non_anonymous"
chown -R debian-tor:debian-tor "$old/web" "$old/hidden"
# fingerprint DIR — every entry's name, mode, owner and size, and each file's checksum.
fingerprint() {
  (cd "$1" && find . -printf '%p %m %u %g %s\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}
fp_web=$(fingerprint "$old/web")
fp_hid=$(fingerprint "$old/hidden")
of_check "tor's directories as tor leaves them: owner debian-tor, 0700, secret key 0600" \
  test "$(stat -c '%U %a' "$old/web" "$old/web/hs_ed25519_secret_key" "$old/hidden")" = \
  "$(printf 'debian-tor 700\ndebian-tor 600\ndebian-tor 700')"

# ============================ B. key commands before the first start ============================
# A fresh install, in this namespace only: overlays on /etc (for the new user) and an empty /var/lib.
for d in etc var/lib; do
  up=$OF_TMP/ov-${d//\//-}
  mkdir -p "$up/upper" "$up/work"
  if [[ $d == etc ]]; then
    mount -t overlay overlay -o "lowerdir=/etc,upperdir=$up/upper,workdir=$up/work" /etc
  else
    mount -t tmpfs -o mode=0755 tmpfs /var/lib
  fi || { of_fail "cannot mount over /$d"; of_summary; exit 1; }
  OF_MOUNTS+=("/$d")
done
of_check "systemd-sysusers makes the unit's user" systemd-sysusers "$OF_ROOT/systemd/onionfront.sysusers.conf"
mkdir -p /etc/onionfront
fresh=/etc/onionfront/onionfront.json
cat >"$fresh" <<EOF
{ "state_dir": "/var/lib/onionfront", "run_dir": "/run/onionfront",
  "services": [ { "name": "web", "ports": [ { "virtual": 80, "target": "127.0.0.1:$port_web" } ] } ] }
EOF
chmod 644 "$fresh"
runuser -u onionfront -- "$OF_BIN" -c "$fresh" new-key web >"$OF_TMP/ru1.out" 2>"$OF_TMP/ru1.err"
rc=$?
of_check "as onionfront before the first start, new-key fails (exit 1)" test "$rc" = 1
fix=$(grep -E '^  install -d ' "$OF_TMP/ru1.err")
of_check "... and says the one command that makes the state directory" \
  test "$fix" = "  install -d -o onionfront -g onionfront -m 0700 /var/lib/onionfront"
[[ $rc == 1 && -n $fix ]] || cat "$OF_TMP/ru1.err" >&2
of_check "... having made nothing" test ! -e /var/lib/onionfront
of_check "that command, as root, makes it" bash -c '[[ -n $1 ]] && eval "$1"' _ "$fix"
of_check "then new-key as onionfront works" runuser -u onionfront -- "$OF_BIN" -c "$fresh" new-key web
of_check "... and the key is onionfront's, 0700/0600" \
  test "$(stat -c '%U %a' /var/lib/onionfront/keys/web /var/lib/onionfront/keys/web/hs_ed25519_secret_key)" = \
  "$(printf 'onionfront 700\nonionfront 600')"
rm -rf /var/lib/onionfront
"$OF_BIN" -c "$fresh" import-key web "$old/web" --torrc "$old/web.torrc" >"$OF_TMP/root.out" 2>"$OF_TMP/root.err"
rc=$?
of_check "as root before the first start, import-key of tor's directory works" test "$rc" = 0
((rc == 0)) || cat "$OF_TMP/root.out" "$OF_TMP/root.err" >&2
of_check "... making /var/lib/onionfront as systemd would (onionfront, 0700) and saying so" \
  bash -c "test \"\$(stat -c '%U %G %a' /var/lib/onionfront)\" = 'onionfront onionfront 700' &&
    grep -q 'made /var/lib/onionfront (owner onionfront, mode 0700' '$OF_TMP/root.out'"
owners=$(cd /var/lib/onionfront && stat -c '%n %U %a' keys keys/web keys/web/hs_ed25519_secret_key \
  keys/web/hs_ed25519_public_key keys/web/hostname addresses.json)
of_check "... the copy and the record are onionfront's, 0700 and 0600" test "$owners" = "$(printf '%s\n' \
  'keys onionfront 700' 'keys/web onionfront 700' 'keys/web/hs_ed25519_secret_key onionfront 600' \
  'keys/web/hs_ed25519_public_key onionfront 600' 'keys/web/hostname onionfront 600' \
  'addresses.json onionfront 600')"
of_check "... with the old address" test "$(cat /var/lib/onionfront/keys/web/hostname)" = "$addr_web"

# ============================ C. import-torrc and the refusals ============================
for n in web hidden; do
  "$OF_BIN" import-torrc "$old/$n.torrc" >"$OF_TMP/$n.json" 2>"$OF_TMP/$n.notes"
  rc=$?
  of_check "import-torrc $n.torrc: exit 0, a JSON config with services" \
    bash -c "test $rc = 0 && jq -e '.services | length == 1' '$OF_TMP/$n.json' >/dev/null"
done
of_check "the single onion's torrc gives a single service web with its intro points" \
  test "$(jq -c '.services' "$OF_TMP/web.json")" = \
  "[{\"name\":\"web\",\"mode\":\"single\",\"ports\":[{\"virtual\":80,\"target\":\"127.0.0.1:$port_web\"}],\"dos\":{\"num_intro_points\":4}}]"
of_check "the hidden service's torrc gives an anonymous service hidden" \
  test "$(jq -c '.services[0] | [.name, .mode]' "$OF_TMP/hidden.json")" = '["hidden","anonymous"]'
of_check "the lines not carried over are listed on stderr (SocksPort, DataDirectory, the network's lines)" \
  bash -c "grep -q '^# .*: SocksPort 0: not carried over' '$OF_TMP/web.notes' &&
    grep -q '^# .*: DataDirectory .*: not carried over' '$OF_TMP/web.notes' &&
    grep -q '^# .*: TestingTorNetwork 1: not an onion service option' '$OF_TMP/web.notes'"
of_check "... and the import-key line to run" \
  grep -qx "#   onionfront import-key web $old/web --torrc $old/web.torrc" "$OF_TMP/web.notes"

# The config onionfront runs: both outputs, with this test's directories and the private network's lines.
config=$OF_TMP/onionfront.json
jq -s --arg st "$OF_TMP/state" --arg run "$OF_TMP/run" --argjson extra "$(of_extra_torrc_json)" \
  '{state_dir: $st, run_dir: $run, log_level: "info",
    tor: {bootstrap_timeout: 120, command_timeout: 20, extra_torrc: $extra},
    probe: {client_tor: false}, services: (.[0].services + .[1].services)}' \
  "$OF_TMP/web.json" "$OF_TMP/hidden.json" >"$config"
# A copy where the hidden service is (wrongly) single, for the refusals.
wrong=$OF_TMP/wrong.json
jq '(.services[] | select(.name == "hidden") | .mode) = "single"' "$config" >"$wrong"
"$OF_BIN" -c "$wrong" import-key hidden "$old/hidden" --torrc "$old/hidden.torrc" >/dev/null 2>"$OF_TMP/refuse.err"
rc=$?
refusal=$(cat "$OF_TMP/refuse.err")
of_check "an anonymous directory into a single-mode service is refused (exit 1)" test "$rc" = 1
of_check "... saying why: running it single would show where the hidden service is" \
  grep -q "would show where that hidden service is" <<<"$refusal"
of_check "... and the two ways forward" \
  bash -c 'grep -q "\"mode\": \"anonymous\"" <<<"$1" && grep -q "onionfront new-key SERVICE" <<<"$1"' _ "$refusal"
"$OF_BIN" -c "$wrong" import-key hidden "$old/hidden" --torrc "$old/hidden.torrc" \
  --i-know-it-was-a-single-onion >/dev/null 2>&1
of_check "... also with --i-know-it-was-a-single-onion: the torrc it ran under wins" test "$?" = 1
"$OF_BIN" -c "$config" import-key web "$old/web" >/dev/null 2>"$OF_TMP/noev.err"
of_check "a single onion's directory without evidence is refused, naming --torrc" \
  bash -c "grep -q 'nothing shows that it ran as one' '$OF_TMP/noev.err' && grep -q -- '--torrc' '$OF_TMP/noev.err'"
"$OF_BIN" -c "$config" import-key web "$old/web" --torrc "$old/hidden.torrc" >/dev/null 2>"$OF_TMP/other.err"
of_check "a --torrc that does not list the directory is refused" \
  grep -q "has no HiddenServiceDir $old/web" "$OF_TMP/other.err"
of_check "nothing was imported by the refusals" test ! -e "$OF_TMP/state/keys/web/hs_ed25519_secret_key"

# ============================ D. the recipe: import-key, check-config, start, status, fetch ============================
for n in web hidden; do
  line=$(sed -n 's/^#   onionfront import-key /import-key /p' "$OF_TMP/$n.notes")
  # shellcheck disable=SC2086 # the printed words
  of_check "the printed line runs: onionfront $line" "$OF_BIN" -c "$config" $line
done
of_check "check-config passes" "$OF_BIN" check-config "$config"
log=$OF_TMP/onionfront.log
of_start_onionfront "$config" "$log"
of_check "onionfront logs both addresses" of_wait_secs 90 \
  bash -c "grep -Eq 'service web: .*address [a-z2-7]{56}\.onion' '$log' && grep -Eq 'service hidden: .*address [a-z2-7]{56}\.onion' '$log'"
of_check "web keeps its old address" test "$(of_address_from_log "$log" web)" = "$addr_web"
of_check "hidden keeps its old address" test "$(of_address_from_log "$log" hidden)" = "$addr_hid"
status_addr() {
  "$OF_BIN" -c "$config" status --json 2>/dev/null | jq -r --arg n "$1" '.services[] | select(.name == $n) | .address'
}
of_check "status shows the old addresses" \
  bash -c "test \"\$1\" = '${addr_web%.onion}' -o \"\$1\" = '$addr_web'" _ "$(status_addr web)"
of_check "... for the hidden service too" \
  bash -c "test \"\$1\" = '${addr_hid%.onion}' -o \"\$1\" = '$addr_hid'" _ "$(status_addr hidden)"
of_check "the old single onion address answers through the client tor" \
  of_fetch_until "http://$addr_web/" "$OF_TMP/web.page" 120
of_check "... from the web backend" grep -q web "$OF_TMP/web.page"
of_check "the old hidden service address answers through the client tor" \
  of_fetch_until "http://$addr_hid/" "$OF_TMP/hidden.page" 120
of_check "... from the hidden backend" grep -q hidden "$OF_TMP/hidden.page"
of_check "onionfront stops cleanly" of_stop_onionfront

# ============================ E. the sources are unchanged ============================
of_check "the single onion's old directory is unchanged (checksums, modes, owners)" \
  test "$(fingerprint "$old/web")" = "$fp_web"
of_check "the hidden service's old directory is unchanged" test "$(fingerprint "$old/hidden")" = "$fp_hid"
of_summary
