#!/bin/bash
# Reload (issue: reload), on the private Tor network with real tor: SIGHUP and the status socket's
# "reload" apply only the difference. Three services: alpha (port 80 -> a pool of http backends h1, h2),
# beta (port 80 -> h3), and later gamma. Each kind of setting is changed on its own and checked for
# exactly its effect:
#  1. backends, weights, balance (SIGHUP) and health settings (status socket): applied in place ("no
#     change for tor"), visible in `status --json backends`, pages still load, tor's services unchanged
#     (GETCONF HiddenServiceOptions identical), and no HS_DESC CREATED/UPLOAD for alpha or beta in the
#     window after the reloads. The test network's time period is ~4 minutes: a rotation creates
#     descriptors for every service at once; a CREATED seen for both services is taken as a rotation and
#     the uploads of the descriptors it created are excused (reported), everything else counts.
#  2. a service added (SIGHUP): a descriptor is created and uploaded for it only; its page loads.
#  3. a service's ports changed (status socket): tor gets the new HiddenServicePort, the new virtual port
#     serves; the other services' lines are untouched.
#  4. a service removed (SIGHUP): gone from tor's GETCONF HiddenServiceOptions, the others' lines untouched.
#  5. a tor-level change (tor.extra_torrc by SIGHUP, state_dir by the status socket) is refused with
#     "needs a restart"; tor's services, tor's pid and the pools stay as they were.
#  6. an invalid config is refused with its field path (log and status reply); the running config stays
#     and the page still loads.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

declare -A port
for name in h1 h2 h3 h4; do
  port[$name]=$(of_free_port)
  of_start_backend "$name" "${port[$name]}" http || exit 1
done

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
ctl=$OF_TMP/run/control/control.sock

backend_json() { # name weight
  printf '{ "name": "%s", "address": "127.0.0.1:%s", "weight": %s }' "$1" "${port[$1]}" "$2"
}
# Service JSON pieces, changed one at a time below.
alpha_backends="$(backend_json h1 1), $(backend_json h2 1)"
alpha_balance=round_robin
alpha_health='{ "type": "tcp", "interval_ms": 500, "timeout_ms": 400, "rise": 1, "fall": 2 }'
beta_ports="{ \"virtual\": 80, \"target\": \"127.0.0.1:${port[h3]}\" }"
with_gamma=0
svc_alpha() {
  printf '{ "name": "alpha", "ports": [ { "virtual": 80, "balance": "%s", "backends": [ %s ], "health": %s } ] }' \
    "$alpha_balance" "$alpha_backends" "$alpha_health"
}
svc_beta() { printf '{ "name": "beta", "ports": [ %s ] }' "$beta_ports"; }
svc_gamma() { printf '{ "name": "gamma", "ports": [ { "virtual": 80, "target": "127.0.0.1:%s" } ] }' "${port[h4]}"; }
write_config() {
  local services
  services="[ $(svc_alpha), $(svc_beta)"
  ((with_gamma)) && services+=", $(svc_gamma)"
  services+=" ]"
  of_write_config "$config" "$services"
}

# reload_count: lines "reload: applied"; wait_reloads N: until there are N.
reload_count() { grep -c "reload: applied" "$log"; }
wait_applied() { # N — wait until N "reload: applied" lines; then print the last one's text
  local i
  for ((i = 0; i < 100; i++)); do
    (($(reload_count) >= $1)) && break
    sleep 0.1
  done
  grep "reload: applied" "$log" | tail -n 1
}
# The status socket is asked with -s: an invalid config file must not keep the client from reaching it.
status_sock=$OF_TMP/run/status.sock
# status_reload — the reply on one line, then " rc=N" (the client's exit status).
status_reload() {
  local out rc
  out=$("$OF_BIN" status --json -s "$status_sock" reload 2>&1)
  rc=$?
  printf '%s rc=%d\n' "$(tr -s '\n ' '  ' <<<"$out")" "$rc"
}
# A one-line summary of the pools: "service:port balance health [name=weight@port ...]"
pools() {
  "$OF_BIN" status --json -s "$status_sock" backends 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
d = d.get("result", d) if isinstance(d, dict) else d
for p in sorted(d, key=lambda p: (p["service"], p["virtual_port"])):
    bs = " ".join("%s=%d@%s" % (b["name"], b["weight"], b["address"].rsplit(":", 1)[-1]) for b in p["backends"])
    print("%s:%d %s %s [%s]" % (p["service"], p["virtual_port"], p["balance"], p["health"], bs))
'
}
hs_options() { of_torctl "$ctl" "GETCONF HiddenServiceOptions" 2>&1 | sed -E 's/^250[ -]//' | grep -v '^OK$'; }
# The lines of one service in GETCONF HiddenServiceOptions (its HiddenServiceDir and the lines up to the next).
hs_lines_of() { # NAME FILE
  awk -v n="$1" '/HiddenServiceDir=/ { keep = ($0 ~ ("/" n "\"?$")) } keep' "$2"
}
hs_has() { hs_lines_of "$1" "$2" | grep -qF -- "$3"; } # NAME FILE TEXT: does that service have the line?

write_config
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service beta: .* address [a-z2-7]{56}\.onion" 30
addr_a=$(of_address_from_log "$log" alpha)
addr_b=$(of_address_from_log "$log" beta)
if [[ -z $addr_a || -z $addr_b ]]; then
  of_fail "no onion addresses for alpha and beta"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
if of_fetch_until "http://$addr_a/" "$OF_TMP/a0.html" 180; then
  of_pass "alpha's page loads ($(of_elapsed "$OF_START") s after start)"
else
  of_fail "no page from alpha within 180 s"
  tail -n 40 "$log" >&2
  of_summary
  exit 1
fi
of_wait_log "$log" "service alpha: descriptor uploaded" 30
of_wait_log "$log" "service beta: descriptor uploaded" 30
of_fetch_until "http://$addr_b/" "$OF_TMP/b0.html" 60 || of_fail "no page from beta"
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid")
sleep 2 # let the first uploads settle

# judge_hsdesc FILE SERVICE_ADDR OTHER_ADDR — "bad excused created": uploads of descriptors not created in
# the window, uploads excused (created in the window by a rotation), CREATED events. A CREATED counts as
# a rotation only when the other service got one in the window too; otherwise it is bad. An upload after
# one of the service's introduction circuits closed or failed (CIRC events) is excused too: tor replaces
# the introduction point and re-uploads the same descriptor on its own (seen under a CPU hog), which no
# reload caused.
judge_hsdesc() {
  sed 's/^650[ -]//' "$1" | awk -v a="${2%.onion}" -v o="${3%.onion}" '
    $1 == "CIRC" && ($3 == "CLOSED" || $3 == "FAILED") && /PURPOSE=HS_SERVICE_INTRO/ && index($0, "REND_QUERY=" a) \
      { intro_gone = 1; next }
    $1 != "HS_DESC" { next }
    $2 == "CREATED" && $3 == o { other++ }
    $3 != a { next }
    $2 == "CREATED" { created[$6] = 1; cr++ }
    $2 == "UPLOAD" { if (($6 in created) || intro_gone) excused++; else bad++ }
    END { if (cr > 0 && other == 0) bad += cr; printf "%d %d %d\n", bad + 0, excused + 0, cr + 0 }'
}
hsdesc_start() { # FILE SECONDS
  stdbuf -oL "$OF_TORCTL_BIN" "$ctl" -e HS_DESC,CIRC -t "$2" >"$1" 2>&1 &
  HSDESC_PID=$!
  of_track_pid "$HSDESC_PID"
  sleep 1
}

# --- 1. backends, weights, balance, health: in place ------------------------------------------------------
hs_options >"$OF_TMP/hs0.txt"
of_log "pools at start: $(pools | tr '\n' ';')"
beta_pool0=$(pools | grep '^beta:80 ')
hsdesc_start "$OF_TMP/hsdesc1.txt" 25
n=$(reload_count)
alpha_backends="$(backend_json h1 3), $(backend_json h4 2)" # h2 out, h4 in, h1 weighted
alpha_balance=least_conn
write_config
kill -HUP "$OF_PID"
applied=$(wait_applied $((n + 1)))
of_check "SIGHUP with backends/weights/balance changed: applied without touching tor ($applied)" \
  grep -q "no change for tor" <<<"$applied"
p=$(pools | grep '^alpha:80 ')
of_check "status --json backends shows the new pool in place ($p)" \
  test "$p" = "alpha:80 least_conn tcp [h1=3@${port[h1]} h4=2@${port[h4]}]"
of_check "beta's pool is unchanged ($(pools | grep '^beta:80 '))" test "$(pools | grep '^beta:80 ')" = "$beta_pool0"
seen=""
for i in 1 2 3 4; do
  curl -sS --max-time 30 --socks5-hostname "127.0.0.1:$TESTNET_SOCKS_PORT" -U "rl$$:$i" -D - -o /dev/null \
    "http://$addr_a/" 2>/dev/null | awk 'tolower($1) == "x-backend:" { sub(/\r$/, "", $2); print $2 }' >>"$OF_TMP/seen1.txt"
done
seen=$(sort "$OF_TMP/seen1.txt" | uniq -c | tr -s ' \n' ' ')
of_check "alpha's page still loads, only from the new pool's backends ($seen)" \
  bash -c "[[ \$(wc -l <'$OF_TMP/seen1.txt') -ge 3 ]] && ! grep -qv -E '^(h1|h4)\$' '$OF_TMP/seen1.txt'"

n=$(reload_count)
alpha_health='{ "type": "http", "path": "/health", "interval_ms": 700, "timeout_ms": 500, "rise": 1, "fall": 3 }'
write_config
reply=$(status_reload)
of_check "status socket reload with health settings changed: applied without touching tor ($reply)" \
  grep -q '"reloaded": *true.*no change for tor.* rc=0$' <<<"$reply"
of_check "the log records the status-socket reload" test "$(reload_count)" -gt "$n"
for ((i = 0; i < 50; i++)); do # the first http check result shows up within an interval or two
  pools | grep -q '^alpha:80 least_conn http ' && break
  sleep 0.1
done
p=$(pools | grep '^alpha:80 ')
of_check "status --json backends shows the http health checks in place ($p)" \
  test "$p" = "alpha:80 least_conn http [h1=3@${port[h1]} h4=2@${port[h4]}]"
sleep 2
last_detail=$("$OF_BIN" status --json -s "$status_sock" backends 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); d = d.get("result", d) if isinstance(d, dict) else d
print(" ".join("%s:%s" % (b["name"], b["last_result"]) for p in d if p["service"] == "alpha" for b in p["backends"]))')
of_log "alpha backends after the health change: $last_detail"
of_check "alpha's page loads after the health change" of_fetch "http://$addr_a/" "$OF_TMP/a1.html" 30
hs_options >"$OF_TMP/hs1.txt"
of_check "tor's services are identical after the in-place reloads" cmp -s "$OF_TMP/hs0.txt" "$OF_TMP/hs1.txt"
of_check "tor was not restarted" test "$(cat "$OF_TMP/state/tor/tor.pid")" = "$tor_pid"
wait "$HSDESC_PID" 2>/dev/null
for pair in "alpha $addr_a $addr_b" "beta $addr_b $addr_a"; do
  read -r svc a o <<<"$pair"
  read -r bad excused cr <<<"$(judge_hsdesc "$OF_TMP/hsdesc1.txt" "$a" "$o")"
  ((cr > 0)) && of_log "$svc: a time-period rotation fell into the window ($cr CREATED, $excused uploads excused)"
  of_check "no new descriptor for $svc in the 25 s window around the in-place reloads ($bad counted)" test "$bad" -eq 0
done
of_check "the HS_DESC capture was subscribed" grep -q '^250' "$OF_TMP/hsdesc1.txt"

# --- 2. a service added --------------------------------------------------------------------------------------
hsdesc_start "$OF_TMP/hsdesc2.txt" 40
n=$(reload_count)
with_gamma=1
write_config
kill -HUP "$OF_PID"
applied=$(wait_applied $((n + 1)))
of_check "SIGHUP adding gamma: services changed in tor ($applied)" grep -q "services changed in tor" <<<"$applied"
of_wait_log "$log" "service gamma: .* address [a-z2-7]{56}\.onion" 10
addr_g=$(of_address_from_log "$log" gamma)
of_check "gamma's descriptor is uploaded" of_wait_log "$log" "service gamma: descriptor uploaded" 60
if of_fetch_until "http://$addr_g/" "$OF_TMP/g.html" 90; then
  of_check "gamma serves its own backend" grep -q "Hello from h4" "$OF_TMP/g.html"
else
  of_fail "no page from gamma"
fi
of_check "tor was not restarted for the new service" test "$(cat "$OF_TMP/state/tor/tor.pid")" = "$tor_pid"
hs_options >"$OF_TMP/hs2.txt"
for svc in alpha beta; do
  of_check "$svc's lines in tor are untouched by the addition" \
    cmp -s <(hs_lines_of $svc "$OF_TMP/hs1.txt") <(hs_lines_of $svc "$OF_TMP/hs2.txt")
done

# --- 3. a service's ports changed (status socket) -------------------------------------------------------------
n=$(reload_count)
beta_ports="{ \"virtual\": 80, \"target\": \"127.0.0.1:${port[h3]}\" }, { \"virtual\": 8080, \"target\": \"127.0.0.1:${port[h3]}\" }"
write_config
reply=$(status_reload)
of_check "status socket reload adding beta's port 8080: services changed in tor ($reply)" \
  grep -q '"reloaded": *true.*services changed in tor.* rc=0$' <<<"$reply"
hs_options >"$OF_TMP/hs3.txt"
of_check "tor has beta's HiddenServicePort 8080 (to its own proxy socket)" \
  hs_has beta "$OF_TMP/hs3.txt" "HiddenServicePort=8080 unix:$OF_TMP/run/proxy/beta-8080.sock"
if of_fetch_until "http://$addr_b:8080/" "$OF_TMP/b8080.html" 60; then
  of_check "beta's new virtual port 8080 serves its backend" grep -q "Hello from h3" "$OF_TMP/b8080.html"
else
  of_fail "no page from beta's new port 8080"
fi
for svc in alpha gamma; do
  of_check "$svc's lines in tor are untouched by beta's port change" \
    cmp -s <(hs_lines_of $svc "$OF_TMP/hs2.txt") <(hs_lines_of $svc "$OF_TMP/hs3.txt")
done
wait "$HSDESC_PID" 2>/dev/null
read -r bad excused cr <<<"$(judge_hsdesc "$OF_TMP/hsdesc2.txt" "$addr_a" "$addr_g")"
((cr > 0)) && of_log "alpha: a time-period rotation fell into the window ($cr CREATED, $excused uploads excused)"
of_check "adding gamma and changing beta's ports made no new descriptor for alpha ($bad counted)" test "$bad" -eq 0
of_check "a descriptor was created and uploaded for gamma" \
  bash -c "grep -q 'HS_DESC CREATED ${addr_g%.onion}' '$OF_TMP/hsdesc2.txt' && grep -q 'HS_DESC UPLOAD ${addr_g%.onion}' '$OF_TMP/hsdesc2.txt'"

# --- 4. a service removed ---------------------------------------------------------------------------------------
n=$(reload_count)
with_gamma=0
write_config
kill -HUP "$OF_PID"
applied=$(wait_applied $((n + 1)))
of_check "SIGHUP removing gamma: services changed in tor ($applied)" grep -q "services changed in tor" <<<"$applied"
of_check "onionfront logs gamma's removal" grep -q "service gamma: removed" "$log"
hs_options >"$OF_TMP/hs4.txt"
of_check "gamma is gone from tor's HiddenServiceOptions" bash -c "! grep -q '/gamma' '$OF_TMP/hs4.txt'"
for svc in alpha beta; do
  of_check "$svc's lines in tor are untouched by the removal" \
    cmp -s <(hs_lines_of $svc "$OF_TMP/hs3.txt") <(hs_lines_of $svc "$OF_TMP/hs4.txt")
done
of_check "alpha's page loads after the removal" of_fetch "http://$addr_a/" "$OF_TMP/a4.html" 30
pools_before=$(pools)

# --- 5. tor-level changes are refused ------------------------------------------------------------------------------
cp "$config" "$OF_TMP/good.json"
python3 - "$config" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["tor"]["extra_torrc"].append("ConnLimit 2000")
c["services"][0]["ports"][0]["backends"][0]["weight"] = 7  # would be applied if the reload went through
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF
n=$(grep -c "needs a restart" "$log")
kill -HUP "$OF_PID"
of_check "SIGHUP with tor.extra_torrc changed is refused: needs a restart" \
  bash -c "for i in \$(seq 100); do [[ \$(grep -c 'tor.extra_torrc changed, which needs a restart' '$log') -gt 0 ]] && exit 0; sleep 0.1; done; exit 1"
python3 - "$OF_TMP/good.json" "$config" "$OF_TMP/state2" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["state_dir"] = sys.argv[3]
c["services"][0]["ports"][0]["backends"][0]["weight"] = 7
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
reply=$(status_reload)
of_check "status socket reload with state_dir changed is refused: needs a restart ($reply)" \
  grep -qE 'state_dir changed, which needs a restart.* rc=[1-9][0-9]*$' <<<"$reply"
of_check "nothing of the refused configs was applied (pools: $(pools | grep '^alpha' | tr '\n' ' '))" \
  test "$(pools)" = "$pools_before"
hs_options >"$OF_TMP/hs5.txt"
of_check "tor's services are unchanged after the refused reloads" cmp -s "$OF_TMP/hs4.txt" "$OF_TMP/hs5.txt"
of_check "tor is the same process (pid $tor_pid) and ConnLimit was not set" \
  bash -c "[[ \$(cat '$OF_TMP/state/tor/tor.pid') == $tor_pid ]] && ! '$OF_TORCTL_BIN' '$ctl' 'GETCONF ConnLimit' | grep -q 'ConnLimit=2000'"
of_check "no state_dir was created for the refused config" test ! -e "$OF_TMP/state2"

# --- 6. an invalid config is refused with its field path -------------------------------------------------------------
python3 - "$OF_TMP/good.json" "$config" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["services"][0]["ports"][0]["balance"] = "bogus"
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
reply=$(status_reload)
of_check "status socket reload of an invalid balance is refused naming services[0].ports[0].balance ($reply)" \
  grep -qE 'reload: .*services\[0\]\.ports\[0\]\.balance: .*keeping the running config.* rc=[1-9][0-9]*$' <<<"$reply"
python3 - "$OF_TMP/good.json" "$config" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["services"][1]["ports"][0]["virtual"] = 70000
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
n=$(grep -c "keeping the running config" "$log")
kill -HUP "$OF_PID"
of_check "SIGHUP with an invalid virtual port is refused naming services[1].ports[0].virtual" \
  bash -c "for i in \$(seq 100); do grep -q 'reload: .*services\[1\]\.ports\[0\]\.virtual.*keeping the running config' '$log' && exit 0; sleep 0.1; done; exit 1"
grep "reload: .*keeping the running config" "$log" | tail -n 1 >&2
of_check "the running pools stay after the invalid configs" test "$(pools)" = "$pools_before"
hs_options >"$OF_TMP/hs6.txt"
of_check "tor's services stay after the invalid configs" cmp -s "$OF_TMP/hs4.txt" "$OF_TMP/hs6.txt"
of_check "alpha's page still loads" of_fetch "http://$addr_a/" "$OF_TMP/a6.html" 30
of_check "beta's port 8080 still serves" of_fetch "http://$addr_b:8080/" "$OF_TMP/b6.html" 30

# --- shutdown ----------------------------------------------------------------------------------------------------------
cp "$OF_TMP/good.json" "$config"
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "no sanitizer report in onionfront's log" bash -c "! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error' '$log'"
of_summary
