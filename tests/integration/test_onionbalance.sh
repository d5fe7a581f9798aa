#!/bin/bash
# Onionbalance (issue 12) on a private Tor network with real tor 0.4.9.11 and Debian's Onionbalance 0.2.2,
# two onionfront processes standing for two machines (separate state, run dirs and tors):
#   B: one instance service (its own key; HiddenServiceOnionBalanceInstance + ob_config) of master M;
#   A: the frontend of M (the master key; remote instance: B's) and a local instance service of M; A runs
#      as root with tor.user = debian-tor.
# Checks:
#   - least privilege on A: Onionbalance, its tor and the service tor run as debian-tor, no process below
#     onionfront runs as root (walked in /proc), Onionbalance's copy of the master key is debian-tor's
#     (0600) while the key itself stays root's;
#   - both instances publish (tor accepted the SETCONF with ob_config in place), status shows each
#     instance's master;
#   - A confirms uploads of M (HS_DESC UPLOADED on its Onionbalance tor); status "publishing"; and fetches
#     M back from an HSDir (HSFETCH on that tor: served, not only accepted);
#   - a request through M.onion via the network's client reaches a backend of an instance;
#   - M's descriptor, fetched from an HSDir and decrypted with stem (python3-stem, a test tool), has
#     2 intro points per instance, each one of an instance's own descriptor (printed: the flow-control,
#     pow-params and single-onion-service lines it lacks — the measured trade-off);
#   - Onionbalance SIGKILLed: restarted (new pid, restarts counted) and uploads of M confirmed again;
#   - Onionbalance's tor SIGKILLed: Onionbalance killed and restarted once the tor is back, publishing again;
#   - Onionbalance stopped (SIGSTOP: a hang): after publish_deadline (60 s) a stall is counted, it is
#     killed and restarted, publishing again;
#   - the master on the HSDirs names A's current intro points (bounded wait); a restart of Onionbalance
#     for a live instance left out (a repair), if one happened, is counted and its log line names it;
#   - B's tor SIGKILLed (onionfront B restarts it), then B stopped altogether: requests through M.onion
#     (new circuits each) keep succeeding — failures are counted and printed, at least one success is
#     required of each series.
# Onionbalance's --is-testnet hard-codes a 20 s voting interval: when the given network votes at another
# interval, this test starts its own (TESTNET_VOTING_INTERVAL=20) on a free block of ports, and stops it.
set -u
source "$(dirname "$0")/lib.sh"
# No of_require_testnet: a network that does not vote every 20 s (or none: make test runs this script in
# a lane without one) is replaced by this script's own, below.
of_init

PY=/usr/bin/python3
FETCH="$(dirname "$0")/hs_desc_fetch.py"
TN="$OF_ROOT/tests/testnet/testnet.sh"
OB_NET=""
ob_cleanup() {
  of_cleanup_net
  of_cleanup
}
of_cleanup_net() {
  [[ -n $OB_NET ]] && bash "$TN" stop "$OB_NET" >/dev/null 2>&1
  OB_NET=""
}
trap ob_cleanup EXIT
trap 'ob_cleanup; exit 130' INT TERM

for need in /usr/sbin/onionbalance; do
  [[ -x $need ]] || { of_fail "$need is missing (tests/install-deps.sh test installs onionbalance)"; of_summary; exit 1; }
done
"$PY" -c 'import stem' 2>/dev/null || { of_fail "python3-stem is missing"; of_summary; exit 1; }

# --- a network voting every 20 s ---------------------------------------------------------------------------
if [[ ${TESTNET_VOTING_INTERVAL:-10} != 20 ]]; then
  used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
  base=""
  for ((b = 19050; b <= 28950; b += 100)); do
    if ! printf '%s\n' "$used" | awk -v lo="$b" -v hi=$((b + 49)) '$1 >= lo && $1 <= hi { f = 1 } END { exit !f }'; then
      base=$b
      break
    fi
  done
  [[ -n $base ]] || { of_fail "no free block of 50 ports for a 20 s network"; of_summary; exit 1; }
  OB_NET=$OF_TMP/net
  mkdir -p "$OB_NET"
  t0=$(of_now)
  if ! TESTNET_BASE_PORT=$base TESTNET_VOTING_INTERVAL=20 bash "$TN" start "$OB_NET" >"$OF_TMP/net.log" 2>&1; then
    of_fail "could not start a private network voting every 20 s"
    tail -n 20 "$OF_TMP/net.log" >&2
    of_summary
    exit 1
  fi
  eval "$(bash "$TN" env "$OB_NET")"
  of_log "own network (20 s voting, base port $base) up in $(of_elapsed "$t0") s"
fi

# --- keys and configs ----------------------------------------------------------------------------------------
port_a=$(of_free_port)
of_start_backend instA "$port_a" http || exit 1
port_b=$(of_free_port)
of_start_backend instB "$port_b" http || exit 1

# Machine A runs as root with tor.user (least privilege: its tors and Onionbalance run as that user), so
# tor's user must be able to pass through $OF_TMP.
TOR_USER=debian-tor
tor_uid=$(id -u "$TOR_USER" 2>/dev/null)
[[ -n $tor_uid ]] || { of_fail "user $TOR_USER is missing (Debian's tor package creates it)"; of_summary; exit 1; }
chmod 711 "$OF_TMP"

# conf MACHINE SERVICES_JSON — a config for machine A or B with its own state and run dirs (A: tor.user).
conf() {
  local user=""
  [[ $1 == A ]] && user="\"user\": \"$TOR_USER\", "
  cat >"$OF_TMP/$1.json" <<EOF
{ "state_dir": "$OF_TMP/state$1", "run_dir": "$OF_TMP/run$1", "log_level": "info",
  "tor": { "mode": "spawn", ${user}"bootstrap_timeout": 120, "command_timeout": 20, "extra_torrc": $(of_extra_torrc_json) },
  "probe": { "client_tor": false }, "onion_location": { "dir": "$OF_TMP/onionloc$1" },
  "services": $2 }
EOF
}
new_key() { # MACHINE SERVICE — print the address new-key gave SERVICE
  "$OF_BIN" -c "$OF_TMP/$1.json" new-key "$2" 2>&1 | grep -Eo '[a-z2-7]{56}\.onion' | head -n 1
}
inst_json() { # NAME PORT MASTER
  printf '{ "name": "%s", "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ], "onionbalance": { "master_address": "%s" } }' "$1" "$2" "$3"
}
conf A '[ { "name": "front", "onionbalance": { "frontend": true } } ]'
master=$(new_key A front)
conf B "[ $(inst_json instb "$port_b" "$master") ]"
inst_b=$(new_key B instb)
if [[ -z $master || -z $inst_b ]]; then
  of_fail "new-key gave no address (master '$master', instance '$inst_b')"
  of_summary
  exit 1
fi
conf A "[ { \"name\": \"front\", \"onionbalance\": { \"frontend\": true, \"instances\": [ \"$inst_b\" ],
            \"testnet\": true, \"publish_deadline\": 60 } },
          $(inst_json insta "$port_a" "$master") ]"
of_log "master $master, remote instance $inst_b"

# --- start both machines -------------------------------------------------------------------------------------
"$OF_BIN" -c "$OF_TMP/B.json" run >>"$OF_TMP/B.log" 2>&1 &
pid_b=$!
of_track_pid "$pid_b"
"$OF_BIN" -c "$OF_TMP/A.json" run >>"$OF_TMP/A.log" 2>&1 &
pid_a=$!
of_track_pid "$pid_a"
t_start=$(of_now)

status_a() { "$OF_BIN" -c "$OF_TMP/A.json" status --json 2>/dev/null; }
# ob FIELD[.SUB] — a field of the frontend's "onionbalance" object in A's status.
ob() {
  status_a | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
o = [s["onionbalance"] for s in d["services"] if s.get("onionbalance", {}).get("role") == "frontend"][0]
for k in sys.argv[1].split("."):
    o = o.get(k) if isinstance(o, dict) else None
print("" if o is None else o)' "$1" 2>/dev/null
}
publishing() { [[ $(ob state) == publishing ]]; }

of_check "B: instance instb published (ob_config before the SETCONF; tor accepted it)" \
  of_wait_log "$OF_TMP/B.log" "service instb: descriptor uploaded" 120
of_check "A: local instance insta published" of_wait_log "$OF_TMP/A.log" "service insta: descriptor uploaded" 120
of_check "B's tor registered the master for its instance" \
  of_wait_log "$OF_TMP/B.log" "OnionBalance: MasterOnionAddress ${master%.onion}.onion registered" 10
of_check "status shows the instance's master" \
  bash -c "'$OF_BIN' -c '$OF_TMP/B.json' status | grep -q 'onionbalance instance of $master'"
if of_wait_until 240 publishing; then
  of_pass "A: an upload of the master confirmed; state publishing, $(of_elapsed "$t_start") s after start"
else
  of_fail "A: no upload of the master confirmed (state '$(ob state)')"
  grep -E "onionbalance" "$OF_TMP/A.log" | tail -n 20 >&2
fi
# Least privilege on A (root, tor.user): Onionbalance, its tor and the service tor run as tor's user, no
# process below onionfront runs as root, and Onionbalance reads a copy of the master key that only tor's
# user can read, while the master key's own directory stays root's.
uid_of_pid() { awk '/^Uid:/ { print $2; exit }' "/proc/$1/status" 2>/dev/null; }
ob_pid=$(ob pid)
of_check "A: Onionbalance (pid ${ob_pid:-?}) runs as $TOR_USER" test -n "$ob_pid" -a "$(uid_of_pid "$ob_pid")" = "$tor_uid"
ob_tor=$(cat "$OF_TMP/stateA/ob-tor/tor.pid" 2>/dev/null)
of_check "A: Onionbalance's tor runs as $TOR_USER" test -n "$ob_tor" -a "$(uid_of_pid "$ob_tor")" = "$tor_uid"
children_a=$(of_descendants "$pid_a")
roots_a=$(of_root_descendants "$pid_a")
of_check "A: onionfront has children (tors, Onionbalance): $(wc -l <<<"$children_a")" test -n "$children_a"
of_check "A: no child of onionfront runs as root${roots_a:+ (pid ruid euid name: $(tr '\n' ';' <<<"$roots_a"))}" \
  test -z "$roots_a"
of_check "A: Onionbalance's copy of the master key is $TOR_USER's, mode 600" \
  test "$(stat -c '%u:%a' "$OF_TMP/stateA/ob/master_ed25519_secret_key" 2>/dev/null)" = "$tor_uid:600"
of_check "A: the master key itself stays root's" \
  test "$(stat -c '%u:%a' "$OF_TMP/stateA/keys/front/hs_ed25519_secret_key" 2>/dev/null)" = "0:600"
fetched_back() { local n; n=$(ob fetches.ok); [[ -n $n && $n -ge 1 ]]; }
of_check "A: the master descriptor fetched back from an HSDir by Onionbalance's tor (HSFETCH)" of_wait_until 60 fetched_back
two_instances() { [[ $(ob intro_points) == 4 ]]; }
of_check "A: Onionbalance has both instances' descriptors (4 intro points in status)" of_wait_until 120 two_instances
"$OF_BIN" -c "$OF_TMP/A.json" status | grep -E "^service|onionbalance" >&2

# Onion-Location sends visitors to the master, never to an instance: B's and A's instance include files
# and A's frontend file name the master address.
names_master() { # MACHINE SERVICE
  grep -qF "Onion-Location http://$master\$request_uri" "$OF_TMP/onionloc$1/$2.conf" 2>/dev/null
}
of_check "Onion-Location: B's instance file names the master" of_wait_until 30 names_master B instb
a_names_master() { names_master A insta && names_master A front; }
of_check "Onion-Location: A's instance and frontend files name the master" of_wait_until 30 a_names_master
of_check "Onion-Location: no include file names an instance's own address" \
  bash -c "! grep -rqF '$inst_b' '$OF_TMP/onionlocA' '$OF_TMP/onionlocB'"

of_check "a request through the master address reaches an instance's backend" \
  of_fetch_until "http://$master/" "$OF_TMP/page1.html" 180
grep -Eo 'Hello from inst[AB]' "$OF_TMP/page1.html" >&2

# --- the merged descriptor ------------------------------------------------------------------------------------
intro_lines() { grep -E '^introduction-point ' "$1" | sort; }
desc_ok=0
for ((try = 0; try < 6; try++)); do
  "$PY" "$FETCH" "$TESTNET_CLIENT_CONTROL" "$master" >"$OF_TMP/master.txt" 2>"$OF_TMP/master.err" &&
    "$PY" "$FETCH" "$TESTNET_CLIENT_CONTROL" "$(of_address_from_log "$OF_TMP/A.log" insta)" >"$OF_TMP/instA.txt" 2>>"$OF_TMP/master.err" &&
    "$PY" "$FETCH" "$TESTNET_CLIENT_CONTROL" "$inst_b" >"$OF_TMP/instB.txt" 2>>"$OF_TMP/master.err" || { sleep 5; continue; }
  n=$(intro_lines "$OF_TMP/master.txt" | wc -l)
  missing=$(comm -23 <(intro_lines "$OF_TMP/master.txt") <(cat "$OF_TMP/instA.txt" "$OF_TMP/instB.txt" | intro_lines /dev/stdin))
  from_a=$(comm -12 <(intro_lines "$OF_TMP/master.txt") <(intro_lines "$OF_TMP/instA.txt") | wc -l)
  from_b=$(comm -12 <(intro_lines "$OF_TMP/master.txt") <(intro_lines "$OF_TMP/instB.txt") | wc -l)
  # two instances may use the same relay as an intro point: its line then counts for both
  if [[ $n == 4 && -z $missing && $from_a -ge 2 && $from_b -ge 2 ]]; then
    desc_ok=1
    break
  fi
  of_log "master descriptor: $n intro points, $from_a from instA, $from_b from instB (an instance may have rotated); again"
  sleep 10
done
if ((desc_ok)); then
  of_pass "the master descriptor has 4 intro points: 2 of instA's and 2 of instB's own"
else
  of_fail "the master descriptor does not merge the instances' intro points ($(cat "$OF_TMP/master.err" 2>/dev/null | tail -n 1))"
fi
for line in flow-control pow-params single-onion-service; do
  in_master=$(grep -c "^$line" "$OF_TMP/master.txt")
  in_inst=$(grep -c "^$line" "$OF_TMP/instA.txt")
  of_log "trade-off: '$line' lines: master $in_master, instance instA $in_inst"
done
of_check "the merged inner layer lacks single-onion-service and flow-control (Onionbalance 0.2.2)" \
  bash -c "! grep -Eq '^(single-onion-service|flow-control)' '$OF_TMP/master.txt' && grep -q '^flow-control' '$OF_TMP/instA.txt'"

# --- Onionbalance killed ----------------------------------------------------------------------------------------
# confirmed_after COUNT — uploads of the master confirmed beyond COUNT, with Onionbalance running.
confirmed_after() { local n; n=$(ob uploads_confirmed); [[ -n $n && $n -gt $1 ]] && publishing; }
new_pid() { local p; p=$(ob pid); [[ -n $p && $p != "$1" ]]; }
ob_pid=$(ob pid)
uploads=$(ob uploads_confirmed)
restarts=$(ob restarts)
if [[ -n $ob_pid ]] && kill -KILL "$ob_pid"; then
  t0=$(of_now)
  of_check "Onionbalance SIGKILLed: restarted (new pid)" of_wait_until 60 new_pid "$ob_pid"
  of_check "... counted as a restart" test "$(ob restarts)" -gt "$restarts"
  uploads=$(ob uploads_confirmed)
  if of_wait_until 120 confirmed_after "$uploads"; then
    of_pass "... and uploads of the master confirmed again ($(of_elapsed "$t0") s after the kill)"
  else
    of_fail "... no upload of the master confirmed after the restart (state $(ob state))"
  fi
else
  of_fail "no Onionbalance pid in A's status"
fi

# --- its tor killed -----------------------------------------------------------------------------------------------
ob_pid=$(ob pid)
stalls=$(ob stalls)
tor_pid=$(cat "$OF_TMP/stateA/ob-tor/tor.pid" 2>/dev/null)
if [[ -n $tor_pid ]] && kill -KILL "$tor_pid"; then
  t0=$(of_now)
  # Onionbalance would hang with the old connection (TOR-FACTS); its stall detection would end it only
  # after publish_deadline: the restart must come from the lost tor, before any stall.
  of_check "Onionbalance's tor SIGKILLed: Onionbalance killed and started again with the new tor" \
    of_wait_until 120 new_pid "$ob_pid"
  of_check "... because its tor was lost, not as a stall" test "$(ob stalls)" == "$stalls"
  uploads=$(ob uploads_confirmed)
  if of_wait_until 120 confirmed_after "$uploads"; then
    of_pass "... publishing again ($(of_elapsed "$t0") s after the kill)"
  else
    of_fail "... not publishing after its tor came back (state $(ob state))"
  fi
else
  of_fail "no pid file of Onionbalance's tor"
fi

# --- a hang: a stall past publish_deadline ---------------------------------------------------------------------------
ob_pid=$(ob pid)
stalls=$(ob stalls)
stalled() { local n; n=$(ob stalls); [[ -n $n && $n -gt $stalls ]]; }
if [[ -n $ob_pid ]] && kill -STOP "$ob_pid"; then
  t0=$(of_now)
  of_check "Onionbalance stopped (SIGSTOP): a stall counted after publish_deadline" of_wait_until 150 stalled
  of_check "... killed and restarted (new pid)" of_wait_until 60 new_pid "$ob_pid"
  uploads=$(ob uploads_confirmed)
  if of_wait_until 120 confirmed_after "$uploads"; then
    of_pass "... publishing again ($(of_elapsed "$t0") s after the stop)"
  else
    of_fail "... not publishing after the stall (state $(ob state))"
  fi
else
  of_fail "no Onionbalance pid to stop"
fi

# --- machine B's tor killed, then B gone ---------------------------------------------------------------------------
# requests N LABEL — N requests through the master address, each on a new circuit (its own SOCKS user);
# prints and sets ok/bad. If none of the N succeeded, it goes on asking for up to 150 s more until one
# does: the client tor may hold a master descriptor whose introduction points all failed (B's are gone),
# and tor keeps such failures for 2 minutes before it uses those points or fetches again; a clean-clone
# run once saw 0 of 18 in the first 14 s. The check is the outcome (A still answers for the master).
requests() {
  ok=0 bad=0
  local t0=$SECONDS i=0
  while ((i < $1 || (ok == 0 && SECONDS - t0 < $1 + 150))); do
    if curl -sS --fail --max-time 20 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" \
      --proxy-user "ob$i$RANDOM:x" -o "$OF_TMP/page-$2-$i.html" "http://$master/" 2>/dev/null; then
      ok=$((ok + 1))
      ((ok == 1 && i >= $1)) && of_log "$2: the first request through the master address succeeded after $((SECONDS - t0)) s"
    else
      bad=$((bad + 1))
    fi
    i=$((i + 1))
    sleep 1
  done
  of_log "$2: $ok of $i requests through the master address succeeded, $bad failed (new circuits each)"
}
# The claim below (B's tor gone, the master still answers through A) needs a master descriptor on the
# HSDirs that names A's current introduction points. Right after Onionbalance's restarts above it may
# have published one merged from B's alone (two clean-clone runs: 0 of 18 requests for minutes, then
# answers once Onionbalance published again), so wait for that first (bounded), as its own check.
master_names_a() {
  "$PY" "$FETCH" "$TESTNET_CLIENT_CONTROL" "$master" >"$OF_TMP/master2.txt" 2>>"$OF_TMP/master.err" &&
    "$PY" "$FETCH" "$TESTNET_CLIENT_CONTROL" "$(of_address_from_log "$OF_TMP/A.log" insta)" \
      >"$OF_TMP/instA2.txt" 2>>"$OF_TMP/master.err" || return 1
  [[ $(comm -12 <(intro_lines "$OF_TMP/master2.txt") <(intro_lines "$OF_TMP/instA2.txt") | wc -l) -ge 1 ]]
}
of_check "before B's tor is killed, the master on the HSDirs names A's current introduction points" \
  of_wait_secs 240 master_names_a
# onionfront restarts Onionbalance when its status shows the live local instance left out of the master
# for a few fetch rounds (ob_watch.h). Whether that happened in this run is not the test's to force; when
# it did, the restart is counted and its log line says why.
repairs=$(ob repairs)
of_log "Onionbalance repairs (restarts for a live instance left out of the master): ${repairs:-?}"
of_check "status counts Onionbalance's repairs" test -n "$repairs"
if [[ ${repairs:-0} -gt 0 ]]; then
  of_check "... and each repair's log line names the instance left out" \
    test "$(grep -c "onionbalance: killing pid [0-9]*: the live instance .*\.onion has been left out of the master" \
      "$OF_TMP/A.log")" -ge "$repairs"
fi
tor_b=$(cat "$OF_TMP/stateB/tor/tor.pid" 2>/dev/null)
if [[ -n $tor_b ]] && kill -KILL "$tor_b"; then
  requests 8 "B's tor SIGKILLed"
  of_check "B's tor SIGKILLed: requests through the master address still succeed" test "$ok" -gt 0
else
  of_fail "no pid file of B's tor"
fi
of_stop_pid "$pid_b" 30
requests 10 "B stopped"
of_check "B stopped: requests through the master address still succeed" test "$ok" -gt 0

of_check "A logged no error" bash -c "! grep -E '\[error\]' '$OF_TMP/A.log'"
of_check "no sanitizer report from A or B" bash -c "! grep -l Sanitizer '$OF_TMP/A.log' '$OF_TMP/B.log'"
OF_PID=$pid_a
of_check "A stops cleanly (SIGTERM, exit 0)" of_stop_onionfront
of_cleanup_net
of_summary
