#!/bin/bash
# Privileges (issue: reliability/security/deployment), on the private Tor network:
#  A. onionfront as an unprivileged user (nobody, through setpriv, no capabilities, no_new_privs) with
#     state and run directories owned by that user: it starts tor as the same user, creates 0700/0600 key
#     material owned by that user, publishes, and a client fetches the page; SIGTERM ends both.
#     As that user it refuses a state_dir owned by someone else, and refuses tor.user (only root can
#     make tor switch users), each with a message naming the problem.
#  B. onionfront as root with tor.user = debian-tor: tor and the probe's client tor run as debian-tor, and
#     no process below onionfront runs as root (walked in /proc); the tors' DataDirectories, control
#     and key directories and the keys belong to debian-tor, while state_dir, state_dir/keys, run_dir and
#     the proxy directory stay root's (0710, group debian-tor: passable, not writable), as does the torrc;
#     the page is fetched; a service added by SIGHUP gets a debian-tor key directory and is published.
#  C. attach mode with the attached tor running as debian-tor (started by root with User, control socket
#     and cookie open to the debian-tor group): onionfront as an unprivileged member of that group is
#     refused with a message naming both users (tor would refuse its key directories); onionfront as root
#     hands its key and proxy directories to debian-tor, and the page is fetched.
#  D. attacks by tor's user (a user created for the test with useradd, removed at the end; onionfront as
#     root with tor.user set to it), each doing what a security review did:
#     D1 a process of that user renames its own torrc over onionfront's in a loop during three starts:
#        tor never reads it (state_dir stays root's);
#     D2 it swaps the data-path and status sockets for symlinks to a root-only file right after bind()
#        (a preloaded shim, build/test/slowfs.so, widens the window of a chmod/chown by name): the file
#        keeps its owner, group and mode;
#     D3 it makes a service's hostname a symlink to a root-only file, then a FIFO: that (known) service is
#        refused, naming the file, without the file's content in the output, and no open blocks;
#     D4 it writes into tor.pid the pid of a root process whose command line names the torrc (tail -f
#        on it, as an editor would): onionfront leaves that process alone.
#  E. a run_dir with '#' or a space is refused by check-config in attach mode, naming run_dir.
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
of_check "A: ... saying that tor.user needs root" grep -q "tor.user: \"$TOR_USER\" needs onionfront to run as root" <<<"$out"
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
for p in "$b/state/keys/alpha" "$b/state/tor" "$b/run/control" "$b/state/probe-tor" "$b/run/probe"; do
  of_check "B: $p is $TOR_USER's, mode 700" test "$(owner_of "$p"):$(mode_of "$p")" = "$tor_uid:700"
done
# Least privilege: every process onionfront started (its tor, the probe's client tor) runs as tor's user.
probe_tor_b=$(cat "$b/state/probe-tor/tor.pid" 2>/dev/null)
of_check "B: the probe's client tor runs as $TOR_USER" \
  test -n "$probe_tor_b" -a "$(uid_of_pid "$probe_tor_b")" = "$tor_uid"
children_b=$(of_descendants "$OF_PID")
roots_b=$(of_root_descendants "$OF_PID")
of_check "B: onionfront has children (its tors): $(wc -l <<<"$children_b")" test -n "$children_b"
of_check "B: no child of onionfront runs as root${roots_b:+ (pid ruid euid name: $(tr '\n' ';' <<<"$roots_b"))}" \
  test -z "$roots_b"
for p in "$b/state" "$b/state/keys" "$b/run" "$b/run/proxy"; do
  of_check "B: $p stays root's, group $TOR_USER, mode 710" \
    test "$(stat -c '%u:%g:%a' "$p")" = "0:$(id -g "$TOR_USER"):710"
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
of_check "C2: $c/state/keys/alpha is $TOR_USER's, mode 700" \
  test "$(owner_of "$c/state/keys/alpha"):$(mode_of "$c/state/keys/alpha")" = "$tor_uid:700"
for p in "$c/state/keys" "$c/run/proxy"; do
  of_check "C2: $p stays root's, group $TOR_USER, mode 710" \
    test "$(stat -c '%u:%g:%a' "$p")" = "0:$(id -g "$TOR_USER"):710"
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

# --- D. attacks by tor's user ---------------------------------------------------------------------------
ATK=ofatk$$
ATK_PY=/usr/bin/python3 # not root's pyenv shim: the attacker cannot enter /root
if ! useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$ATK"; then
  of_fail "D: cannot create the user $ATK"
  of_summary
  exit 1
fi
priv_cleanup() {
  of_cleanup # ends every tracked process, the attacker's included, before the user goes
  userdel "$ATK" 2>/dev/null || of_log "userdel $ATK failed"
}
trap priv_cleanup EXIT
trap 'priv_cleanup; exit 130' INT TERM
atk_uid=$(id -u "$ATK")
atk_gid=$(id -g "$ATK")
AS_ATK=(setpriv --reuid="$atk_uid" --regid="$atk_gid" --clear-groups --no-new-privs --inh-caps=-all)
d=$OF_TMP/d
install -d -m 0711 "$d"
install -d -o "$atk_uid" -g "$atk_gid" -m 0755 "$d/atk" # the attacker's own directory
# A root-only file the attacker must never get at: its owner, group, mode and content are checked.
install -d -m 0711 "$d/rootonly"
printf 'TOPSECRET-%s\n' "$$" >"$d/rootonly/secret"
chmod 600 "$d/rootonly/secret"
write_attack_config() { # FILE: tor.user is the attacker, the status socket is open to its group
  cat >"$1" <<EOF
{ "state_dir": "$d/state", "run_dir": "$d/run", "log_level": "info",
  "tor": { "mode": "spawn", "user": "$ATK", "bootstrap_timeout": 120, "command_timeout": 20,
           "extra_torrc": $(of_extra_torrc_json) },
  "status": { "allowed_gids": [ $atk_gid ] },
  "services": [ $svc_alpha ] }
EOF
  chmod 644 "$1"
}
write_attack_config "$d/onionfront.json"
log_d=$d/onionfront.log
: >"$log_d"
handed() { grep -c "services: 1 service handed to tor" "$log_d"; }
# wait_handed N: until the N-th "handed to tor" (tor took onionfront's torrc and its control port
# answers), the attacker's marker file exists, or onionfront ended; bounded.
wait_handed() {
  local i
  for ((i = 0; i < 900; i++)); do
    [[ -e $d/atk/won.log ]] && return
    [[ $(handed) -ge $1 ]] && return
    kill -0 "$OF_PID" 2>/dev/null || return
    sleep 0.1
  done
}

# D1. The torrc race, three starts. The attacker's torrc would run tor as root (it has no User line) and
# log to a file of the attacker's: that file appearing means tor read the attacker's torrc.
cat >"$d/atk/evil.torrc" <<EOF
DataDirectory $d/atk/data
Log notice file $d/atk/won.log
SocksPort 0
DisableNetwork 1
EOF
chmod 644 "$d/atk/evil.torrc"
"${AS_ATK[@]}" timeout 300 "$ATK_PY" -c '
import os, sys
text = open(sys.argv[1], "rb").read()
tmp, torrc = sys.argv[2] + "/.atk", sys.argv[2] + "/torrc"
while True:
    try:
        with open(tmp, "wb") as f:
            f.write(text)
        os.rename(tmp, torrc)
    except OSError:
        pass
' "$d/atk/evil.torrc" "$d/state" >/dev/null 2>&1 &
racer=$!
of_track_pid "$racer"
for start in 1 2 3; do
  rm -f "$d/atk/won.log"
  n0=$(handed)
  of_start_onionfront "$d/onionfront.json" "$log_d"
  wait_handed $((n0 + 1))
  of_check "D1: start $start: tor read onionfront's torrc, not the one tor's user renamed over it" \
    test ! -e "$d/atk/won.log" -a "$(handed)" -gt "$n0"
  of_stop_onionfront
done
of_stop_pid "$racer" 5
rm -f "$d/atk/won.log"
of_check "D1: state_dir is root's, group $ATK, mode 710" test "$(stat -c '%u:%g:%a' "$d/state")" = "0:$atk_gid:710"
of_check "D1: the torrc is root's, mode 600" test "$(stat -c '%u:%a' "$d/state/torrc")" = "0:600"

# D2. Sockets swapped for symlinks right after bind(): the attacker watches the socket names and, when a
# socket appears, moves it away and puts a symlink to the root-only file in its place.
"${AS_ATK[@]}" timeout 300 "$ATK_PY" -c '
import os, stat, sys
while True:
    for p in sys.argv[2:]:
        try:
            if stat.S_ISSOCK(os.lstat(p).st_mode):
                os.rename(p, p + ".moved")
                os.symlink(sys.argv[1], p)
        except OSError:
            pass
' "$d/rootonly/secret" "$d/run/status.sock" "$d/run/proxy/alpha-80.sock" >/dev/null 2>&1 &
swapper=$!
of_track_pid "$swapper"
for start in 1 2; do
  n0=$(handed)
  OF_SLOWFS_MATCH=.sock LD_PRELOAD=$OF_ROOT/build/test/slowfs.so \
    ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0 of_start_onionfront "$d/onionfront.json" "$log_d"
  wait_handed $((n0 + 1))
  of_check "D2: start $start: the root-only file keeps owner, group and mode (0:0:600)" \
    test "$(stat -c '%u:%g:%a' "$d/rootonly/secret")" = "0:0:600"
  of_stop_onionfront
done
of_stop_pid "$swapper" 5
chown 0:0 "$d/rootonly/secret"
chmod 600 "$d/rootonly/secret"

# D3. hostname made a symlink to the root-only file, then a FIFO, by tor's user (it owns the key
# directory). alpha is a known service (the address record has it), so its unusable key directory makes
# onionfront refuse that service, naming the file (section "never a new address": the others would keep
# running); the secret never reaches the log; no open blocks, so the daemon still answers SIGTERM.
keydir=$d/state/keys/alpha
for plant in symlink fifo; do
  "${AS_ATK[@]}" bash -c 'rm -f "$1/hostname"; if [[ $2 == symlink ]]; then ln -s "$3" "$1/hostname"; else mkfifo "$1/hostname"; fi' \
    _ "$keydir" "$plant" "$d/rootonly/secret"
  log3=$d/onionfront-d3-$plant.log
  : >"$log3"
  of_start_onionfront "$d/onionfront.json" "$log3"
  of_check "D3: hostname as a $plant: alpha is refused, naming $keydir/hostname" \
    of_wait_until 60 grep -q "service alpha: REFUSED: .*$keydir/hostname" "$log3"
  of_check "D3: ... onionfront is not stuck in an open (it stops on SIGTERM with status 0)" of_stop_onionfront
  of_check "D3: ... without the content of the file the $plant leads to" bash -c '! grep -q TOPSECRET "$1"' _ "$log3"
  of_check "D3: ... alpha's key was not replaced" test -f "$keydir/hs_ed25519_secret_key"
done
"${AS_ATK[@]}" rm -f "$keydir/hostname"

# D4. tor.pid names a root process whose command line holds the torrc path (an editor on it).
tail -f "$d/state/torrc" >/dev/null 2>&1 &
editor=$!
of_track_pid "$editor"
"${AS_ATK[@]}" bash -c 'echo "$1" >"$2/tor.pid.new" && mv -f "$2/tor.pid.new" "$2/tor.pid"' _ "$editor" "$d/state/tor"
n0=$(handed)
of_start_onionfront "$d/onionfront.json" "$log_d"
wait_handed $((n0 + 1))
of_check "D4: onionfront started its tor" test "$(handed)" -gt "$n0"
of_check "D4: the root process named in tor.pid is left alone" kill -0 "$editor"
of_stop_onionfront
of_stop_pid "$editor" 5

# --- E. attach mode: a run_dir tor could not use is refused when the config is loaded ------------------
for rd in "/run/of#x" "/run/of x"; do
  cat >"$d/attach-rd.json" <<EOF
{ "state_dir": "$d/state2", "run_dir": "$rd",
  "tor": { "mode": "attach", "control_socket": "/run/tor/control" }, "services": [ $svc_alpha ] }
EOF
  out=$("$OF_BIN" check-config "$d/attach-rd.json" 2>&1)
  rc=$?
  of_check "E: check-config refuses run_dir \"$rd\" in attach mode (exit 1)" test "$rc" -eq 1
  of_check "E: ... naming run_dir" grep -q "run_dir: may only contain" <<<"$out"
done

of_summary

