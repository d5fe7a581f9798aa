#!/bin/bash
# The features against each other (issue 25 section 2), on the private network with real tor: ONE
# onionfront as root with tor.instances 2 and tor.user debian-tor (tor drops to it, as in production),
# hosting services that combine the features pairwise:
#   priv      client authorization (alice) + PoW
#   anonpriv  client authorization (alice) + anonymous mode (the anonymous services' tor)
#   pubpow    public + PoW + intro-point DoS defence
#   obinst    an Onionbalance instance (of a master address made here; no frontend) + PoW
#   duo       client authorization with two clients (alice, bob); carol added by a reload, then alice
#             removed by another
# At each step — after start, after `onionfront restart-tor` (the roll, waited for), after a SIGKILL of the
# tor whose descriptor of priv the HSDirs serve (status "served_by"), after a reload (SIGHUP) that adds
# carol to duo and one (`status reload`) that removes alice — the same invariants, each able to fail:
#  - descriptors (hs_desc_check.py, decrypted with stem as a client would, never onionfront's state):
#    every copy the HSDirs serve (HSFETCH from every HSDir) and each tor's own current descriptor
#    (GETINFO hs/service/desc/id on tor 1, tor 2, or the anonymous tor): a private service's does not
#    open without a key, opens with each configured client's key (and the end-to-end probe's own client
#    key, state_dir/probe-client-auth, when onionfront made one), and not with a removed or not yet added
#    client's key nor a random one (tor pads auth-client lines with fake clients, so their number says
#    nothing); a public one opens without a key; pow-params exactly where PoW is on; single-onion-service
#    exactly on single onions; introduction points listed;
#  - clients: a client tor without keys (its descriptor cache and HSDir history purged by NEWNYM first)
#    is refused every private service with tor's SOCKS extended error F4 (missing client authorization)
#    and fetches the public ones; client tors with keys (ClientOnionAuthDir) fetch what they are
#    authorized for, and a key not (or no longer) configured is refused (F5, bad client authorization);
#  - circuits (CIRC events during the step's checks, and GETINFO circuit-status, on each service tor):
#    every HS_SERVICE_INTRO/REND circuit of tors 1 and 2 is one hop with ONEHOP_TUNNEL, every one of the
#    anonymous tor has 3+ hops; each fetched service built a rendezvous circuit on a tor of its kind;
#  - each tor's configuration of the services (GETCONF HiddenServiceOptions): PoW and the intro DoS
#    defence where configured, HiddenServiceOnionBalanceInstance for obinst;
#  - the addresses never change (status --json and each tor's descriptor by address);
#  - onionfront's end-to-end probe has withdrawn no service and found no private one open without a key.
# ~200 s on an idle 2-core machine (COMBO_BUDGET bounds it, see step). OF_BIN=PATH runs it against
# another build of onionfront (lib.sh).
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init
of_require_stem || exit 1
CHECK="$OF_ROOT/tests/integration/hs_desc_check.py"

TOR_USER=debian-tor
if ! getent passwd "$TOR_USER" >/dev/null; then
  of_fail "user $TOR_USER is missing (Debian's tor package creates it)"
  of_summary
  exit 1
fi
chmod 711 "$OF_TMP" # tor, as debian-tor, passes through to its directories
t_begin=$(of_now)
port=$(of_free_port)
of_start_backend combo "$port" http || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
ctl1=$OF_TMP/run/control/control.sock
ctl2=$OF_TMP/run/control-2/control.sock
ctla=$OF_TMP/run/control-anonymous/control.sock
SERVICES="priv anonpriv pubpow obinst duo"
PRIVATE="priv anonpriv duo"
declare -A ADDR KEY CLIENTS

# The end-to-end probe's client tor runs (the default), so onionfront adds its client to the private
# services (state_dir/probe-client-auth; checked as one more key that must open them); its probes run once
# an hour, so that its repair ladder never restarts a tor in the middle of a step (while its client cannot
# yet open private services it restarted tor 1 and tor 2 within a second).

# --- keys, clients and the master address, offline --------------------------------------------------------
svc() { # NAME EXTRA_FIELDS
  printf '{ "name": "%s", %s "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ] }' "$1" "$2" "$port"
}
clients_json() { # SERVICE — its client_auth field from CLIENTS[SERVICE] ("" if none)
  local c out=""
  for c in ${CLIENTS[$1]:-}; do out+="${out:+, }{ \"name\": \"$c\", \"public_key\": \"${KEY[$1/$c.pub]}\" }"; done
  [[ -n $out ]] && printf '"client_auth": [ %s ],' "$out"
}
pow='"pow": { "enabled": true }'
write_config() { # FILE STATE SERVICES_JSON
  cat >"$1" <<EOF
{
  "state_dir": "$2",
  "run_dir": "$OF_TMP/run",
  "log_level": "info",
  "tor": { "mode": "spawn", "bootstrap_timeout": 120, "command_timeout": 20, "instances": 2,
           "user": "$TOR_USER", "drain_timeout": 20, "extra_torrc": $(of_extra_torrc_json) },
  "probe": { "hsfetch_interval": 10, "republish_deadline": 15, "interval": 3600 },
  "services": $3
}
EOF
  chmod 644 "$1"
}
services_json() {
  printf '[ %s, %s, %s, %s, %s ]' \
    "$(svc priv "$(clients_json priv) \"dos\": { $pow },")" \
    "$(svc anonpriv "\"mode\": \"anonymous\", $(clients_json anonpriv)")" \
    "$(svc pubpow "\"dos\": { $pow, \"intro\": { \"enabled\": true, \"rate_per_sec\": 30, \"burst_per_sec\": 300 } },")" \
    "$(svc obinst "\"onionbalance\": { \"master_address\": \"$MASTER\" }, \"dos\": { $pow },")" \
    "$(svc duo "$(clients_json duo)")"
}
new_key() { "$OF_BIN" -c "$1" new-key "$2" 2>&1 | grep -Eo '[a-z2-7]{56}\.onion' | head -n 1; }
# The master: a key of its own state directory (only its address is needed: no frontend runs here).
write_config "$OF_TMP/master.json" "$OF_TMP/mstate" "[ $(svc master "") ]"
MASTER=$(new_key "$OF_TMP/master.json" master)
write_config "$config" "$OF_TMP/state" "$(services_json)"
for s in $SERVICES; do ADDR[$s]=$(new_key "$config" "$s"); done
client_add() { # SERVICE CLIENT — its key pair into KEY[s/c] (private, base32) and KEY[s/c.pub]
  local out line
  out=$("$OF_BIN" -c "$config" client-auth add "$1" "$2" 2>&1)
  line=$(grep -E '^[a-z2-7]{56}:descriptor:x25519:[A-Z2-7]{52}$' <<<"$out")
  KEY[$1/$2]=${line##*:}
  KEY[$1/$2.pub]=$(grep -Eo '"public_key": "[A-Z2-7]{52}"' <<<"$out" | grep -Eo '[A-Z2-7]{52}')
  [[ ${line%%:*}.onion == "${ADDR[$1]}" && -n ${KEY[$1/$2.pub]} ]]
}
ok=1
for sc in priv/alice anonpriv/alice duo/alice duo/bob duo/carol; do client_add "${sc%/*}" "${sc#*/}" || ok=0; done
for s in $SERVICES; do [[ -n ${ADDR[$s]} ]] || ok=0; done
if ((ok == 0)) || [[ -z $MASTER ]]; then
  of_fail "new-key / client-auth add gave no address or key (master '$MASTER')"
  of_summary
  exit 1
fi
CLIENTS[priv]=alice
CLIENTS[anonpriv]=alice
CLIENTS[duo]="alice bob" # carol's key pair exists, not yet configured
write_config "$config" "$OF_TMP/state" "$(services_json)"
of_log "addresses: $(for s in $SERVICES; do printf '%s=%s ' "$s" "${ADDR[$s]}"; done)master=$MASTER"

of_start_onionfront "$config" "$log"

# --- client tors: one without keys, one per client with its keys ---------------------------------------
declare -A SOCKS CTL
client_tor() { # NAME SERVICE/CLIENT... — a client tor with those keys, a control socket, extended SOCKS errors
  local name=$1 dir="$OF_TMP/auth-$1" sc xport
  shift
  mkdir -p "$dir" && chmod 700 "$dir"
  for sc in "$@"; do
    printf '%s:descriptor:x25519:%s\n' "${ADDR[${sc%/*}]%.onion}" "${KEY[$sc]}" >"$dir/${sc%/*}.auth_private"
    chmod 600 "$dir/${sc%/*}.auth_private"
  done
  xport=$(of_free_port) || return 1
  of_start_client_tor "$name" "ControlSocket $OF_TMP/$name/control" "CookieAuthentication 1" \
    "SocksPort 127.0.0.1:$xport ExtendedErrors" ${1:+"ClientOnionAuthDir $dir"} || return 1
  SOCKS[$name]=$xport
  CTL[$name]=$OF_TMP/$name/control
}
for c in "nokey" "alice priv/alice anonpriv/alice duo/alice" "bob duo/bob" "carol duo/carol"; do
  # shellcheck disable=SC2086 # a name and its keys
  client_tor $c || { of_fail "client tor ${c%% *} did not start"; of_summary; exit 1; }
done

# --- status helpers -----------------------------------------------------------------------------------------
# snap — one `status --json` into $OF_TMP/status.json; st EXPR... — each PYTHON-EXPRESSION on it as d, one
# line each ("" on any error).
snap() { "$OF_BIN" -c "$config" status --json >"$OF_TMP/status.json" 2>/dev/null; }
st() {
  "$PY" -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    d = None
for e in sys.argv[2:]:
    try:
        v = eval(e)
    except Exception:
        v = None
    print("" if v is None else v)' "$OF_TMP/status.json" "$@"
}
status_py() { snap; st "$1"; }
TOR_ROW="[t for t in d['status']['tors'] if t.get('kind') == 'single' and t['instance'] == %s][0]['%s']"
ANON_ROW="[t for t in d['status']['tors'] if t.get('kind') == 'anonymous'][0]['%s']"
# shellcheck disable=SC2059 # the formats above
tor_field() { status_py "$(printf "$TOR_ROW" "$1" "$2")"; }
# shellcheck disable=SC2059
anon_field() { status_py "$(printf "$ANON_ROW" "$1")"; }
# shellcheck disable=SC2059
all_running() {
  snap
  [[ $(st "$(printf "$TOR_ROW" 1 state)" "$(printf "$TOR_ROW" 2 state)" "$(printf "$ANON_ROW" state)" | sort -u) == running ]]
}
all_uploaded() { local s; for s in $SERVICES; do grep -q "service $s: descriptor uploaded" "$log" || return 1; done; }
served_by() { status_py "[s for s in d['services'] if s['name'] == '$1'][0]['served_by']"; }
roll_field() { status_py "d['status']['roll']['$1']"; }

of_check "every tor runs (tor 1, tor 2, the anonymous tor)" of_wait_secs 180 all_running
of_check "every service's descriptor is uploaded" of_wait_secs 120 all_uploaded
tor_uid=$(id -u "$TOR_USER")
uid_of() { awk '/^Uid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
of_check "tor 1, tor 2 and the anonymous tor run as $TOR_USER" \
  test "$(uid_of "$(tor_field 1 pid)")/$(uid_of "$(tor_field 2 pid)")/$(uid_of "$(anon_field pid)")" = "$tor_uid/$tor_uid/$tor_uid"

# --- the checks of one step -----------------------------------------------------------------------------------
# desc_spec FILE — what hs_desc_check.py checks now: per service its own-descriptor tors, openness, PoW,
# mode, and the keys that must (configured clients + the probe's) and must not open it.
desc_spec() {
  local s c first=1 in out probe_key=""
  [[ -r $OF_TMP/state/probe-client-auth ]] && probe_key=$(head -n 1 "$OF_TMP/state/probe-client-auth")
  {
    printf '{ "client": "%s", "services": [' "${CTL[nokey]}"
    for s in $SERVICES; do
      in="" out=""
      for c in alice bob carol; do
        [[ -n ${KEY[$s/$c]:-} ]] || continue
        if [[ " ${CLIENTS[$s]:-} " == *" $c "* ]]; then in+="${in:+, }\"$c\": \"${KEY[$s/$c]}\""
        else out+="${out:+, }\"$c\": \"${KEY[$s/$c]}\""; fi
      done
      [[ -n ${CLIENTS[$s]:-} && -n $probe_key ]] && in+="${in:+, }\"onionfront-probe\": \"$probe_key\""
      ((first)) || printf ','
      first=0
      printf '\n  { "name": "%s", "addr": "%s", ' "$s" "${ADDR[$s]}"
      if [[ $s == anonpriv ]]; then printf '"own": { "the anonymous tor": "%s" }, "single": false, ' "$ctla"
      else printf '"own": { "tor 1": "%s", "tor 2": "%s" }, "single": true, ' "$ctl1" "$ctl2"; fi
      printf '"open": %s, "pow": %s, "keys_in": { %s }, "keys_out": { %s } }' \
        "$([[ -n ${CLIENTS[$s]:-} ]] && echo false || echo true)" \
        "$([[ $s == priv || $s == pubpow || $s == obinst ]] && echo true || echo false)" "$in" "$out"
    done
    printf '\n] }\n'
  } >"$1"
}
desc_ok() { "$PY" "$CHECK" "$1" >"$1.out" 2>&1; }
# fetch CLIENT SERVICE OUT — one request through that client tor, on a fresh circuit; curl's error in OUT.err
fetch() {
  curl -sS --fail --max-time 45 --socks5-hostname "127.0.0.1:${SOCKS[$1]}" --proxy-user "s$RANDOM$RANDOM:x" \
    -o "$3" "http://${ADDR[$2]}/" 2>"$3.err"
}
# refused CLIENT SERVICE CODE OUT — the request fails with tor's SOCKS extended error CODE (curl: "(NNN)").
refused() {
  if fetch "$1" "$2" "$4"; then return 1; fi
  grep -q "($3)" "$4.err"
}
newnym() { # purge a client tor's descriptor cache and HSDir request history
  of_torctl "${CTL[$1]}" "SIGNAL NEWNYM" >/dev/null 2>&1
}
# count_circs FILE "ADDRS" SINCE — "built onehop multihop rend retries unexplained" over the
# HS_SERVICE_INTRO/REND circuits of one tor (its CIRC events, then its circuit-status lines; each circuit
# counted once), rend counting REND circuits whose REND_QUERY is one of ADDRS (bare). Tor itself uses one
# hop only on the first attempt (hs_circuit.c): an introduction point whose circuit closed for any reason,
# built or not, is relaunched with 3 hops (hs_circ_launch_intro_point: ONEHOP_TUNNEL only while
# circuit_retries == 1), and a failed rendezvous circuit is retried with 3 hops
# (retry_service_rendezvous_point). So a multi-hop circuit of a single onion is a retry when a circuit of
# the same purpose and service closed (intro) or failed (rend) before it in the events; or, when it was
# created before SINCE (the watch's start plus the one-second tick at which tor relaunches introduction
# circuits, TIME_CREATED in tor's UTC), so that its cause may predate the watch, when that tor's other
# circuits of the same purpose and service are one hop. The rest are "unexplained", their lines in FILE.bad.
count_circs() {
  awk -v addrs=" $2 " -v since="$3" -v bad="$1.bad" '
    function key(  p, q) {
      p = match($0, / PURPOSE=[A-Z_]+/) ? substr($0, RSTART + 9, RLENGTH - 9) : ""
      q = match($0, /REND_QUERY=[a-z2-7]+/) ? substr($0, RSTART + 11, RLENGTH - 11) : ""
      return p "|" q
    }
    function created() { return match($0, /TIME_CREATED=[0-9T:.-]+/) ? substr($0, RSTART + 13, RLENGTH - 13) : "" }
    { ev = sub(/^650 CIRC /, ""); sub(/^250[-+ ]circuit-status=/, ""); sub(/^ /, "") }
    ev && !($1 in ended) && (($2 == "FAILED" && / PURPOSE=HS_SERVICE_REND( |$)/) ||
      (($2 == "FAILED" || $2 == "CLOSED") && / PURPOSE=HS_SERVICE_INTRO( |$)/)) { ended[$1] = 1; failed[key()]++ }
    $2 == "BUILT" && / PURPOSE=HS_SERVICE_(INTRO|REND)( |$)/ && !($1 in seen) {
      seen[$1] = 1
      built++
      if ($3 !~ /,/ && $0 ~ /BUILD_FLAGS=[A-Z_,]*ONEHOP_TUNNEL/) { one++; onehop[key()]++ }
      else if ($3 ~ /,.*,/ && $0 !~ /ONEHOP_TUNNEL/) {
        multi++
        k = key()
        if (ev && failed[k] > 0) { failed[k]--; retry++ }
        else if (ev && !(created() != "" && created() < since)) {
          print "unexplained (no closed or failed attempt before it): " $0 > bad; unexp++
        } else early[++n_early] = k SUBSEP $0
      } else { print "neither one hop with ONEHOP_TUNNEL nor 3+ hops: " $0 > bad; unexp++ }
      if (/ PURPOSE=HS_SERVICE_REND( |$)/ && match($0, /REND_QUERY=[a-z2-7]+/) &&
          index(addrs, " " substr($0, RSTART + 11, RLENGTH - 11) " ")) rend++
    }
    END {
      for (i = 1; i <= n_early; i++) {
        split(early[i], e, SUBSEP)
        if (onehop[e[1]] > 0) retry++
        else { print "unexplained (created before the watch; no one-hop circuit of that service): " e[2] > bad; unexp++ }
      }
      printf "%d %d %d %d %d %d\n", built, one, multi, rend, retry, unexp
    }' "$1"
}
bare() { local a; for a in "$@"; do printf '%s ' "${a%.onion}"; done; }
getconf_has() { # FILE SERVICE REGEX — the HiddenServiceOptions group of SERVICE in FILE (GETCONF's answer)
  tr -d '\r' <"$1" |
    awk -v dir="/keys/$2" '/HiddenServiceDir=/ { on = substr($0, length($0) - length(dir) + 1) == dir } on' |
    grep -Eq "$3"
}
has_pubpow() { # CTL FILE — GETCONF HiddenServiceOptions on that tor into FILE, with pubpow's features
  of_torctl "$1" "GETCONF HiddenServiceOptions" >"$2" 2>&1 &&
    getconf_has "$2" pubpow 'PoWDefensesEnabled=1' && getconf_has "$2" pubpow 'EnableIntroDoSDefense=1'
}
has_obinst() { getconf_has "$1" obinst 'OnionBalanceInstance=1' && getconf_has "$1" obinst 'PoWDefensesEnabled=1'; }

STEP_NO=0
# Every wait above and below is bounded; on a machine too slow for them all, the steps left once
# COMBO_BUDGET seconds are spent fail at once (named), so that the script still ends with its summary
# inside run-tests.sh's 600 s limit for a network test.
COMBO_BUDGET=${COMBO_BUDGET:-480}
# step LABEL — every check of the section above, at this moment.
step() {
  local label=$1 d=$OF_TMP/step$((STEP_NO += 1)) since t0 s c line w p b1 o1 m1 r1 ba oa ma ra n_ok n_fail n_want rc
  if ((SECONDS > COMBO_BUDGET)); then
    of_fail "$label: not checked, the time budget (COMBO_BUDGET=$COMBO_BUDGET s) is spent after $SECONDS s"
    return 1
  fi
  mkdir -p "$d"
  of_log "=== step $STEP_NO: $label"
  t0=$(of_now)
  # Circuits, on every service tor, from here (before the descriptors settle) to the fetches' end: the
  # closes that make tor relaunch a circuit with 3 hops are then in the events (count_circs).
  for w in 1 2 a; do
    p=ctl$w
    "$OF_TORCTL_BIN" "${!p}" -e CIRC -t 300 >"$d/circ$w.txt" 2>&1 &
    eval "ev$w=\$!"
    of_track_pid "$!"
  done
  sleep 0.5
  since=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%S)
  # Descriptors: bounded wait until every copy is as configured (after a reload or a roll the HSDirs
  # may still hold the previous upload for a few seconds); the lines of the last attempt are the checks.
  # One line per copy: each service on each tor that hosts it (two, or the anonymous tor) and as served.
  desc_spec "$d/spec.json"
  rc=0
  of_wait_secs 90 desc_ok "$d/spec.json" || rc=1
  of_log "  descriptors checked ($(of_elapsed "$t0") s):"
  n_ok=0 n_fail=0 n_want=0
  for s in $SERVICES; do n_want=$((n_want + $([[ $s == anonpriv ]] && echo 2 || echo 3))); done
  while IFS= read -r line; do
    case $line in
      "ok   "*) of_pass "$label: descriptor ${line#ok   }"; n_ok=$((n_ok + 1)) ;;
      "FAIL "*) of_fail "$label: descriptor ${line#FAIL }"; n_fail=$((n_fail + 1)) ;;
      *) of_log "  $line" ;;
    esac
  done <"$d/spec.json.out"
  # hs_desc_check.py ending early (an exception, a bad spec) prints fewer lines, not FAIL lines.
  if ((n_fail == 0 && (rc != 0 || n_ok != n_want))); then
    of_fail "$label: hs_desc_check.py gave $n_ok of $n_want lines, exit $rc: $(tail -n 3 "$d/spec.json.out" | tr '\n' ' ')"
  fi
  # Clients. The keyless one first forgets every descriptor and HSDir it asked.
  newnym nokey
  for s in $PRIVATE; do
    of_check "$label: a client tor without a key is refused $s (SOCKS F4, missing client authorization)" \
      refused nokey "$s" 244 "$d/nokey-$s"
    of_log "  nokey -> $s: $(head -c 160 "$d/nokey-$s.err")"
  done
  for s in pubpow obinst; do
    of_check "$label: a client tor without a key fetches public $s" of_wait_secs 90 fetch nokey "$s" "$d/nokey-$s"
  done
  for s in priv anonpriv; do
    of_check "$label: alice's client tor fetches $s" of_wait_secs 90 fetch alice "$s" "$d/alice-$s"
  done
  for c in alice bob carol; do
    if [[ " ${CLIENTS[duo]} " == *" $c "* ]]; then
      of_check "$label: $c's client tor fetches duo ($c is configured)" of_wait_secs 90 fetch "$c" duo "$d/$c-duo"
    else
      newnym "$c"
      of_check "$label: $c's client tor is refused duo (SOCKS F5: $c is not a configured client)" \
        refused "$c" duo 245 "$d/$c-duo"
      of_log "  $c -> duo: $(head -c 160 "$d/$c-duo.err")"
    fi
  done
  for w in 1 2 a; do
    p=ev$w
    of_stop_pid "${!p}" 5
    p=ctl$w
    of_torctl "${!p}" "GETINFO circuit-status" >>"$d/circ$w.txt" 2>&1
  done
  b1=0 o1=0 m1=0 r1=0 y1=0 u1=0
  for w in 1 2; do
    read -r b o m r y u < <(count_circs "$d/circ$w.txt" "$(bare "${ADDR[priv]}" "${ADDR[pubpow]}" "${ADDR[obinst]}" "${ADDR[duo]}")" "$since")
    b1=$((b1 + b)) o1=$((o1 + o)) m1=$((m1 + m)) r1=$((r1 + r)) y1=$((y1 + y)) u1=$((u1 + u))
    [[ -s $d/circ$w.txt.bad ]] && sed "s/^/  tor $w: /" "$d/circ$w.txt.bad" | cut -c1-400 >&2
  done
  read -r ba oa ma ra _ _ < <(count_circs "$d/circa.txt" "$(bare "${ADDR[anonpriv]}")" "$since")
  of_log "  tors 1+2: $b1 intro/rend circuits built, $o1 one hop, $m1 of 3+ hops ($y1 of them tor's 3-hop relaunches after a" \
    "closed or failed circuit), $r1 rendezvous for the fetches; anonymous tor: $ba built, $oa one hop, $ma of 3+ hops," \
    "$ra rendezvous for anonpriv"
  of_check "$label: tors 1 and 2: every intro/rend circuit is one hop with ONEHOP_TUNNEL, or tor's 3-hop retry of a failed one ($o1 + $y1 of $b1)" \
    test "$o1" -gt 0 -a "$u1" -eq 0 -a "$b1" -eq $((o1 + y1))
  of_check "$label: the single onions' fetches built rendezvous circuits on tors 1/2 ($r1)" test "$r1" -ge 4
  of_check "$label: the anonymous tor: every intro/rend circuit has 3+ hops ($ma of $ba)" \
    test "$ba" -gt 0 -a "$ba" -eq "$ma"
  of_check "$label: anonpriv's fetch built a rendezvous circuit on the anonymous tor ($ra)" test "$ra" -ge 1
  # Each tor's configuration of the features tor does not show in a descriptor.
  for w in 1 2; do
    p=ctl$w
    of_check "$label: tor $w has pubpow with PoW and the intro DoS defence" of_wait_secs 30 has_pubpow "${!p}" "$d/getconf$w.txt"
    of_check "$label: tor $w has obinst as an Onionbalance instance with PoW" has_obinst "$d/getconf$w.txt"
  done
  snap
  for s in $SERVICES; do
    line=$(st "[s for s in d['services'] if s['name'] == '$s'][0]['address']")
    of_check "$label: $s's address is unchanged (status: $line)" test "$line" = "${ADDR[$s]}"
  done
  # The end-to-end probe's view (it probes once an hour here, so it may not have judged yet): no service
  # withdrawn, and no private one found open without a key.
  of_log "  probe: $(st "' '.join('%s=%s' % (s['name'], (s.get('probe') or {}).get('state')) for s in d['services'])")"
  for s in $SERVICES; do
    w=$(st "[s for s in d['services'] if s['name'] == '$s'][0]['probe']['withdrawn']")
    p=$(st "[s for s in d['services'] if s['name'] == '$s'][0]['probe']['client_auth']['keyless']")
    of_check "$label: the probe has not withdrawn $s ('$w') nor opened it without a key ('$p')" \
      test -z "$w" -a "$p" != open
  done
  of_log "=== step $STEP_NO done in $(of_elapsed "$t0") s"
}

step "after start"

# --- restart-tor: the roll ----------------------------------------------------------------------------------
pid1=$(tor_field 1 pid)
pid2=$(tor_field 2 pid)
rolls0=$(roll_field rolls)
out=$("$OF_BIN" -c "$config" restart-tor 2>&1)
of_check "restart-tor starts a rolling restart ($out)" grep -q "rolling restart of 2 tors started" <<<"$out"
roll_done() { [[ $(roll_field state) == idle && $(roll_field rolls) == $((rolls0 + 1)) ]]; }
of_check "the roll ends" of_wait_secs 300 roll_done
snap
of_log "roll: $(st "d['status']['roll']['last_result']"); tor pids $pid1 $pid2 -> $(tor_field 1 pid) $(tor_field 2 pid)"
of_check "the roll succeeded (status roll.last_result.ok)" test "$(st "d['status']['roll']['last_result']['ok']")" = True
new_pids() { [[ -n $(tor_field 1 pid) && $(tor_field 1 pid) != "$pid1" && $(tor_field 2 pid) != "$pid2" ]]; }
of_check "both single-onion tors have new pids" new_pids
of_check "every tor runs after the roll" of_wait_secs 120 all_running
step "after restart-tor"

# --- SIGKILL of the tor whose descriptor of priv the HSDirs serve ---------------------------------------------
served_known() { [[ $(served_by priv) == [12] ]]; }
of_wait_secs 60 served_known
k=$(served_by priv)
[[ $k == [12] ]] || { of_log "status names no served tor for priv; killing tor 2"; k=2; }
victim=$(tor_field "$k" pid)
of_log "SIGKILL tor $k (pid $victim): the HSDirs serve its descriptor of priv"
kill -KILL "$victim"
of_check "onionfront logs the failover" of_wait_log "$log" "failover: tor $k lost" 30
back() { local p; p=$(tor_field "$k" pid); [[ -n $p && $p != "$victim" ]] && all_running; }
of_check "the killed tor is back (new pid) and every tor runs" of_wait_secs 120 back
step "after SIGKILL of tor $k"

# --- reloads: a client added, then one removed ------------------------------------------------------------
CLIENTS[duo]="alice bob carol"
write_config "$config" "$OF_TMP/state" "$(services_json)"
n0=$(grep -c "reload: applied" "$log")
kill -HUP "$OF_PID"
reloaded() { [[ $(grep -c "reload: applied" "$log") -gt $n0 ]]; }
of_check "the reload (SIGHUP) adding carol to duo is applied" of_wait_secs 30 reloaded
step "after a reload adding carol"

CLIENTS[duo]="bob carol"
write_config "$config" "$OF_TMP/state" "$(services_json)"
n0=$(grep -c "reload: applied" "$log")
out=$("$OF_BIN" -c "$config" status reload 2>&1)
of_check "the reload (status reload) removing alice from duo is applied" of_wait_secs 30 reloaded
step "after a reload removing alice"

not_logged() { ! grep -q "$1" "$log"; }
of_check "no service was refused" not_logged REFUSED
of_log "tors restarted by the probe's repairs: $(grep -c "repair step 2: restarting its tor" "$log")"
of_check "onionfront stops cleanly" of_stop_onionfront
of_log "run time $(of_elapsed "$t_begin") s"
of_summary
