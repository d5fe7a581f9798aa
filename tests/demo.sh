#!/bin/bash
# make demo: a private Tor network on this machine, a small web backend, onionfront publishing one single
# onion service in front of it, and a page fetched through the network's client tor — then everything
# is torn down (by PID). The network's state is kept in build/demo-net so a second run starts faster.
set -u
cd "$(dirname "$0")/.."
source tests/integration/lib.sh
OF_BIN=$OF_ROOT/build/onionfront

net_dir=$OF_ROOT/build/demo-net
mkdir -p "$OF_ROOT/build"
of_init
stop_net() { bash tests/testnet/testnet.sh stop "$net_dir" >/dev/null 2>&1; of_cleanup; }
trap stop_net EXIT
trap 'stop_net; exit 130' INT TERM

echo "== 1/4 private Tor network (3 authorities, 8 relays, 1 client) on 127.0.0.1"
if ! bash tests/testnet/testnet.sh start "$net_dir"; then
  echo "demo: the private Tor network did not come up" >&2
  exit 1
fi
eval "$(bash tests/testnet/testnet.sh env "$net_dir")"

echo "== 2/4 demo web backend"
port=$(of_free_port)
of_start_backend demo-web "$port" http || exit 1
echo "backend: http://127.0.0.1:$port/"

echo "== 3/4 onionfront with one service (its own tor in single onion mode)"
config=$OF_TMP/onionfront.json
of_write_config "$config" "[ { \"name\": \"demo\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] } ]"
log=$OF_TMP/onionfront.log
of_start_onionfront "$config" "$log"
tail -n +1 -f "$log" --pid="$OF_PID" 2>/dev/null | sed -u 's/^/  | /' &
tail_pid=$!
of_track_pid "$tail_pid"
if ! of_wait_log "$log" "address [a-z2-7]{56}\.onion" 30; then
  echo "demo: onionfront did not load its key" >&2
  exit 1
fi
addr=$(of_address_from_log "$log" demo)

echo "== 4/4 fetching http://$addr/ through the client tor's SOCKS port"
page=$OF_TMP/page.html
if ! of_fetch_until "http://$addr/" "$page" 180; then
  echo "demo: could not fetch the page within 180 s" >&2
  exit 1
fi
took=$(of_elapsed "$OF_START")
kill "$tail_pid" 2>/dev/null
sleep 0.2
echo
echo "onion address:                              $addr"
echo "onionfront start -> first successful fetch: ${took} s"
echo "page:"
sed 's/^/    /' "$page"
echo
echo "== onionfront status (descriptors, single-onion verdict, backends)"
# Give the fetch probe and the circuit verifier a moment to have something to say.
for i in $(seq 1 30); do
  "$OF_BIN" -c "$config" status --json 2>/dev/null | grep -q '"verdict": *"single_onion"' && break
  sleep 1
done
"$OF_BIN" -c "$config" status | sed 's/^/    /'
echo
echo "== stopping onionfront (SIGTERM), the backend and the network"
of_stop_onionfront
echo "demo: done"
