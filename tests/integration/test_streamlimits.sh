#!/bin/bash
# onionfront's own per-port stream limits (issue 13), through real tor on the private network:
#  - circuit_stream_rate 1/s with a burst of 2: eight requests sent at once over one circuit (the same
#    SOCKS credentials: tor's IsolateSOCKSAuth keeps them on one circuit) get at least one refused
#    (closed before a backend is tried) and at least two served; each refusal is counted in
#    `status --json backends` (streams.rejected_circuit_rate) and /metrics (reason="circuit_rate");
#    other circuits are not affected, and once the bucket refills the same circuit is served again;
#  - idle_timeout 2 s: a stream opened through tor that sends nothing is closed by onionfront (the
#    client sees the stream end) and counted (streams.closed_idle, onionfront_proxy_idle_closed_total).
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

port=$(of_free_port)
of_start_backend web "$port" http || exit 1
config=$OF_TMP/sl.json
log=$OF_TMP/sl.log
of_write_config "$config" "[ { \"name\": \"web\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\",
  \"circuit_stream_rate\": 1, \"circuit_stream_burst\": 2, \"idle_timeout\": 2 } ] } ]"
of_start_onionfront "$config" "$log"
of_wait_log "$log" "service web: .* address [a-z2-7]{56}\.onion" 60
addr=$(of_address_from_log "$log" web)
if [[ -z $addr ]] || ! of_wait_log "$log" "service web: descriptor uploaded" 120; then
  of_fail "the service was not published"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
# fetch AUTH OUT — one request on the circuit of SOCKS user AUTH.
fetch() {
  curl -sS --fail --max-time 30 --socks5-hostname "$1:x@127.0.0.1:$TESTNET_SOCKS_PORT" -o "$2" "http://$addr/" 2>"$2.err"
}
stat_of() { # KEY — streams.KEY of the port in status --json backends
  "$OF_BIN" -c "$config" status --json backends 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["streams"][sys.argv[1]])' "$1"
}
warm() { fetch warm "$OF_TMP/warm.html"; }
of_check "the page loads (circuit 'warm')" of_wait_until 120 warm
sleep 3 # the burst is refilled (a new circuit starts full anyway)

# --- eight at once over one circuit ---------------------------------------------------------------------
fetch burst "$OF_TMP/first.html" || of_log "first request on the burst circuit failed: $(cat "$OF_TMP/first.html.err")"
sleep 3 # the circuit now exists and its bucket is full again: the eight below share it
pids=()
for i in 1 2 3 4 5 6 7 8; do
  fetch burst "$OF_TMP/b$i.html" &
  pids+=("$!")
done
ok=0
bad=0
for p in "${pids[@]}"; do
  if wait "$p"; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
done
of_log "eight requests on one circuit: $ok served, $bad refused"
rejected=$(stat_of rejected_circuit_rate)
of_check "at least one refused ($bad)" test "$bad" -ge 1
of_check "at least two served ($ok)" test "$ok" -ge 2
of_check "each refusal counted: rejected_circuit_rate ($rejected) = refused ($bad)" test "$rejected" = "$bad"
of_check "/metrics counts them with reason circuit_rate" \
  bash -c '"$1" -c "$2" status metrics | grep -qx "onionfront_proxy_rejected_streams_total{service=\"web\",port=\"80\",reason=\"circuit_rate\"} $3"' \
  _ "$OF_BIN" "$config" "$rejected"
of_check "another circuit is served meanwhile" fetch other "$OF_TMP/other.html"
sleep 3
of_check "after the bucket refills, the same circuit is served again" fetch burst "$OF_TMP/again.html"

# --- idle_timeout -----------------------------------------------------------------------------------------
# Other streams of this test may end idle too (a served request whose backend keeps its connection open
# after the answer, on a busy machine): the idle stream below is counted on top of those.
idle_before=$(stat_of closed_idle)
t0=$(of_now)
out=$(python3 - "$TESTNET_SOCKS_PORT" "$addr" <<'PY'
import socket, struct, sys, time
port, host = int(sys.argv[1]), sys.argv[2].encode()
s = socket.create_connection(("127.0.0.1", port), timeout=60)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host + struct.pack(">H", 80))
r = s.recv(10)
if len(r) < 2 or r[1] != 0:
    print("connect failed", r)
    sys.exit(1)
start = time.monotonic()
data = s.recv(100)  # nothing is sent: onionfront's idle_timeout ends the stream
print("closed after %.1f s, %d bytes" % (time.monotonic() - start, len(data)))
PY
)
rc=$?
of_log "idle stream: $out (total $(of_elapsed "$t0") s)"
of_check "an idle stream through tor is ended (the client sees it close)" test "$rc" -eq 0 -a -n "$out"
closed=$(stat_of closed_idle)
of_check "and counted: closed_idle ($closed) > $idle_before before it" test "$closed" -gt "$idle_before"
of_check "/metrics counts it as status does" \
  bash -c '"$1" -c "$2" status metrics | grep -qx "onionfront_proxy_idle_closed_total{service=\"web\",port=\"80\"} $3"' \
  _ "$OF_BIN" "$config" "$closed"
of_stop_onionfront
of_check "onionfront stopped cleanly" test $? -eq 0
of_summary
