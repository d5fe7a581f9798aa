#!/bin/bash
# Privileges (issue: reliability/security/deployment), on the private Tor network:
#  A. onionfront as an unprivileged user (nobody, through setpriv, no capabilities, no_new_privs) with
#     state and run directories owned by that user: it starts tor as the same user, creates 0700/0600 key
#     material owned by that user, publishes, and a client fetches the page; SIGTERM ends both.
#     As that user it refuses a state_dir owned by someone else, and refuses tor.user (only root can
#     make tor switch users), each with a message naming the problem.
#  B. onionfront as root with tor.user = debian-tor: tor runs as debian-tor; the state, run, DataDirectory,
#     key, control and proxy directories and the keys belong to debian-tor (the torrc stays root's);
#     the page is fetched; a service added by SIGHUP gets a debian-tor key directory and is published.
#  C. attach mode with the attached tor running as debian-tor (started by root with User, control socket
#     and cookie open to the debian-tor group): onionfront as an unprivileged member of that group is
#     refused with a message naming both users (tor would refuse its key directories); onionfront as root
#     hands its key and proxy directories to debian-tor, and the page is fetched.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

TOR_USER=debian-tor
UNPRIV_UID=65534
UNPRIV_GID=65534
if ! getent passwd "$TOR_USER" >/dev/null; then
  of_fail "user $TOR_USER is missing (Debian's tor package creates it)"
  of_summary
  exit 1
fi
tor_uid=$(id -u "$TOR_USER")

# Other users must be able to pass through $OF_TMP (tor's User and the unprivileged onionfront).
chmod 711 "$OF_TMP"

owner_of() { stat -c '%u' "$1" 2>/dev/null; }
mode_of() { stat -c '%a' "$1" 2>/dev/null; }
uid_of_pid() { awk '/^Uid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
tor_pid_in() { cat "$1/tor/tor.pid" 2>/dev/null; }

# write_config FILE STATE RUN SERVICES_JSON [TOR_EXTRA_JSON]
write_config() {
  cat >"$1" <<EOF
{
  "state_dir": "$2",
  "run_dir": "$3",
  "log_level": "info",
  "tor": { "mode": "spawn", "bootstrap_timeout": 120, "command_timeout": 20${5:+, $5},
           "extra_torrc": $(of_extra_torrc_json) },
  "services": $4
}
EOF
  chmod 644 "$1"
}

# fetch_alpha LABEL ADDR FILE LOG HOW: service alpha's page over the onion, and that it is alpha's.
fetch_alpha() {
  local label=$1 addr=$2 file=$3 log=$4 how=$5
  if [[ -n $addr ]] && of_fetch_until "http://$addr/" "$file" 120; then
    of_pass "$label: page fetched $how ($(of_elapsed "$OF_START") s)"
    of_check "$label: it is the backend's page" grep -q alpha "$file"
  else
    of_fail "$label: no page over the onion"
    tail -n 30 "$log" >&2
  fi
}

# setpriv execs the command, so $! of a background run is onionfront's own pid.
UNPRIV=(setpriv --reuid="$UNPRIV_UID" --regid="$UNPRIV_GID" --clear-groups --no-new-privs --inh-caps=-all)

port_a=$(of_free_port)
port_b=$(of_free_port)
of_start_backend alpha "$port_a" http || exit 1
of_start_backend beta "$port_b" http || exit 1
svc_alpha="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_a\" } ] }"
svc_beta="{ \"name\": \"beta\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port_b\" } ] }"

# --- A. unprivileged -------------------------------------------------------------------------------------
a=$OF_TMP/a
install -d -m 0711 "$a"
install -d -o "$UNPRIV_UID" -g "$UNPRIV_GID" -m 0700 "$a/state" "$a/run"
write_config "$a/onionfront.json" "$a/state" "$a/run" "[ $svc_alpha ]"
log_a=$a/onionfront.log
"${UNPRIV[@]}" "$OF_BIN" -c "$a/onionfront.json" run >>"$log_a" 2>&1 &
pid_a=$!
start_a=$(of_now)
of_track_pid "$pid_a"

# B starts at once too (checked below), so that both tors bootstrap and publish at the same time.
b=$OF_TMP/b
install -d -m 0711 "$b"
write_config "$b/onionfront.json" "$b/state" "$b/run" "[ $svc_alpha ]" "\"user\": \"$TOR_USER\""
log_b=$b/onionfront.log
of_start_onionfront "$b/onionfront.json" "$log_b"
pid_b=$OF_PID
start_b=$OF_START

OF_PID=$pid_a
OF_START=$start_a
of_wait_log "$log_a" "service alpha: .* address [a-z2-7]{56}\.onion" 30
addr_a=$(of_address_from_log "$log_a" alpha)
of_check "A: onionfront runs as uid $UNPRIV_UID" test "$(uid_of_pid "$OF_PID")" = "$UNPRIV_UID"
fetch_alpha A "$addr_a" "$a/page.html" "$log_a" "through the unprivileged onionfront"
tor_a=$(tor_pid_in "$a/state")
of_check "A: its tor runs as the same user" test -n "$tor_a" -a "$(uid_of_pid "$tor_a")" = "$UNPRIV_UID"
for p in "$a/state/keys" "$a/state/keys/alpha" "$a/state/tor" "$a/run/control"; do
  of_check "A: $p is $UNPRIV_UID's, mode 700" test "$(owner_of "$p"):$(mode_of "$p")" = "$UNPRIV_UID:700"
done
of_check "A: the secret key is $UNPRIV_UID's, mode 600" \
  test "$(owner_of "$a/state/keys/alpha/hs_ed25519_secret_key"):$(mode_of "$a/state/keys/alpha/hs_ed25519_secret_key")" = "$UNPRIV_UID:600"
open_keys=$(find "$a/state/keys" -type f -perm /077)
of_check "A: no key file gives group or others any access${open_keys:+ ($open_keys)}" test -z "$open_keys"
open_dirs=$(find "$a/state" "$a/run" -type d ! -perm 700)
of_check "A: every directory under state_dir and run_dir is 0700${open_dirs:+ ($open_dirs)}" test -z "$open_dirs"
kill -TERM "$OF_PID"
for ((i = 0; i < 300; i++)); do kill -0 "$OF_PID" 2>/dev/null || break; sleep 0.1; done
wait "$OF_PID"
of_check "A: SIGTERM: onionfront exits 0" test $? -eq 0
of_check "A: and its tor is gone" bash -c "! kill -0 '$tor_a' 2>/dev/null"

# Refusals, as the unprivileged user (nothing starts).
install -d -m 0700 "$a/rootdir" # owned by root
write_config "$a/foreign.json" "$a/rootdir" "$a/run" "[ $svc_alpha ]"
out=$("${UNPRIV[@]}" timeout 20 "$OF_BIN" -c "$a/foreign.json" run 2>&1)
rc=$?
of_check "A: a state_dir owned by another user is refused (exit 1)" test "$rc" -eq 1
of_check "A: ... naming the directory" grep -q "$a/rootdir" <<<"$out"
write_config "$a/toruser.json" "$a/state" "$a/run" "[ $svc_alpha ]" "\"user\": \"$TOR_USER\""
out=$("${UNPRIV[@]}" timeout 20 "$OF_BIN" -c "$a/toruser.json" run 2>&1)
rc=$?
of_check "A: tor.user without root is refused (exit 1)" test "$rc" -eq 1
of_check "A: ... saying that tor.user needs root" grep -q "tor.user is \"$TOR_USER\", but onionfront runs as uid" <<<"$out"
of_check "A: ... before starting any tor" bash -c "! grep -q 'tor: started' <<<\"\$1\"" _ "$out"

# --- B. root with tor.user ------------------------------------------------------------------------------
OF_PID=$pid_b
OF_START=$start_b
of_wait_log "$log_b" "service alpha: .* address [a-z2-7]{56}\.onion" 30
addr_b=$(of_address_from_log "$log_b" alpha)
if [[ -n $addr_b ]] && of_fetch_until "http://$addr_b/" "$b/page.html" 120; then
  of_pass "B: page fetched with tor running as $TOR_USER ($(of_elapsed "$OF_START") s)"
else
  of_fail "B: no page over the onion"
  tail -n 30 "$log_b" >&2
fi
tor_b=$(tor_pid_in "$b/state")
of_check "B: onionfront runs as root" test "$(uid_of_pid "$OF_PID")" = 0
of_check "B: tor runs as $TOR_USER" test -n "$tor_b" -a "$(uid_of_pid "$tor_b")" = "$tor_uid"
for p in "$b/state" "$b/state/keys" "$b/state/keys/alpha" "$b/state/tor" "$b/run" "$b/run/control" "$b/run/proxy"; do
  of_check "B: $p is $TOR_USER's, mode 700" test "$(owner_of "$p"):$(mode_of "$p")" = "$tor_uid:700"
done
of_check "B: the secret key is $TOR_USER's, mode 600" \
  test "$(owner_of "$b/state/keys/alpha/hs_ed25519_secret_key"):$(mode_of "$b/state/keys/alpha/hs_ed25519_secret_key")" = "$tor_uid:600"
of_check "B: the torrc stays root's, mode 600" test "$(owner_of "$b/state/torrc"):$(mode_of "$b/state/torrc")" = "0:600"

# A service added by reload: its key is created and handed over before tor hears of it.
write_config "$b/onionfront.json" "$b/state" "$b/run" "[ $svc_alpha, $svc_beta ]" "\"user\": \"$TOR_USER\""
kill -HUP "$OF_PID"
of_check "B: reload adds service beta" of_wait_log "$log_b" "reload: applied" 10
of_check "B: beta's key directory is $TOR_USER's" \
  test "$(owner_of "$b/state/keys/beta"):$(owner_of "$b/state/keys/beta/hs_ed25519_secret_key")" = "$tor_uid:$tor_uid"
of_check "B: tor publishes beta" of_wait_log "$log_b" "service beta: descriptor uploaded" 60
addr_beta=$(of_address_from_log "$log_b" beta)
if [[ -n $addr_beta ]] && of_fetch_until "http://$addr_beta/" "$b/beta.html" 90; then
  of_check "B: beta's page is beta's" grep -q beta "$b/beta.html"
else
  of_fail "B: no page from beta"
fi
of_stop_onionfront
of_check "B: SIGTERM: onionfront exits 0" test $? -eq 0
of_check "B: and tor is gone" bash -c "! kill -0 '$tor_b' 2>/dev/null"

# --- C. attach mode, the attached tor running as another user -------------------------------------------
# A tor started by root that switches to debian-tor (as Debian's own tor@default does), its control
# socket and cookie open to the debian-tor group.
c=$OF_TMP/c
install -d -m 0711 "$c"
install -d -o "$TOR_USER" -g "$TOR_USER" -m 0700 "$c/tordata"
install -d -o "$TOR_USER" -g "$TOR_USER" -m 0750 "$c/torctl"
c_ctl=$c/torctl/control.sock
{
  grep -v '^#' "$TESTNET_TORRC_EXTRA"
  cat <<EOF
User $TOR_USER
DataDirectory $c/tordata
PidFile $c/tordata/tor.pid
ControlPort unix:$c_ctl GroupWritable RelaxDirModeCheck
CookieAuthentication 1
CookieAuthFile $c/torctl/control.authcookie
CookieAuthFileGroupReadable 1
SocksPort 0
HiddenServiceSingleHopMode 1
HiddenServiceNonAnonymousMode 1
Log notice stdout
EOF
} >"$c/torrc"
tor -f "$c/torrc" --defaults-torrc /dev/null >>"$c/tor.log" 2>&1 &
c_tor=$!
of_track_pid "$c_tor"
for ((i = 0; i < 300; i++)); do
  [[ -S $c_ctl ]] && break
  sleep 0.1
done
of_check "C: the separately started tor opened its control socket" test -S "$c_ctl"
of_check "C: that tor runs as $TOR_USER" test "$(uid_of_pid "$c_tor")" = "$tor_uid"
[[ -S $c_ctl ]] || tail -n 20 "$c/tor.log" >&2
write_attach_config() { # FILE STATE RUN
  cat >"$1" <<EOF
{ "state_dir": "$2", "run_dir": "$3", "log_level": "info",
  "tor": { "mode": "attach", "control_socket": "$c_ctl", "bootstrap_timeout": 120, "command_timeout": 20 },
  "services": [ $svc_alpha ] }
EOF
  chmod 644 "$1"
}

# C1. onionfront as an unprivileged member of the debian-tor group: it can talk to tor, but tor could not
# use its key directories: refused at once, naming the users, before any service reaches tor.
install -d -o "$UNPRIV_UID" -g "$UNPRIV_GID" -m 0700 "$c/ustate" "$c/urun"
write_attach_config "$c/unpriv.json" "$c/ustate" "$c/urun"
out=$(setpriv --reuid="$UNPRIV_UID" --regid="$UNPRIV_GID" --groups="$(id -g "$TOR_USER")" --no-new-privs \
  --inh-caps=-all timeout 60 "$OF_BIN" -c "$c/unpriv.json" run 2>&1)
rc=$?
of_check "C1: attaching as uid $UNPRIV_UID to a tor of uid $tor_uid is refused (exit 1)" test "$rc" -eq 1
of_check "C1: ... naming both users and the remedy" \
  grep -q "the attached tor runs as uid $tor_uid ($TOR_USER), onionfront as uid $UNPRIV_UID: .*run onionfront as that user" <<<"$out"
of_check "C1: ... after authenticating (not a connection error)" bash -c "! grep -qi 'cannot connect to tor' <<<\"\$1\"" _ "$out"
of_check "C1: ... and no service was handed to tor" bash -c "! grep -q 'services: .* handed to tor' <<<\"\$1\"" _ "$out"
[[ $rc -eq 1 ]] || printf '%s\n' "$out" | tail -n 20 >&2

# C2. onionfront as root: it hands its key and proxy directories to tor's user, and the page loads.
write_attach_config "$c/root.json" "$c/state" "$c/run"
log_c=$c/onionfront.log
of_start_onionfront "$c/root.json" "$log_c"
of_check "C2: onionfront sees that the attached tor runs as uid $tor_uid" \
  of_wait_log "$log_c" "tor: the attached tor runs as uid $tor_uid; its key and proxy directories are handed" 60
of_wait_log "$log_c" "service alpha: .* address [a-z2-7]{56}\.onion" 30
addr_c=$(of_address_from_log "$log_c" alpha)
for p in "$c/state/keys" "$c/state/keys/alpha" "$c/run/proxy"; do
  of_check "C2: $p is $TOR_USER's, mode 700" test "$(owner_of "$p"):$(mode_of "$p")" = "$tor_uid:700"
done
of_check "C2: the secret key is $TOR_USER's, mode 600" \
  test "$(owner_of "$c/state/keys/alpha/hs_ed25519_secret_key"):$(mode_of "$c/state/keys/alpha/hs_ed25519_secret_key")" = "$tor_uid:600"
of_check "C2: tor accepted the service and uploaded its descriptor" \
  of_wait_log "$log_c" "service alpha: descriptor uploaded" 90
fetch_alpha C2 "$addr_c" "$c/page.html" "$log_c" "through an attached tor running as $TOR_USER"
of_stop_onionfront
of_check "C2: SIGTERM: onionfront exits 0" test $? -eq 0
of_check "C2: the attached tor is left running (it is not onionfront's)" kill -0 "$c_tor"
of_stop_pid "$c_tor" 15

of_summary

