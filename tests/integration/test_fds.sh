#!/bin/bash
# test_fds.sh — a tor that onionfront starts while it holds backend connections holds none of them
# (issue 37, finding 2: children inherited onionfront's sockets):
#  - a stream on the service's data-path socket, as tor opens one (the PROXY line of
#    HiddenServiceExportCircuitID first), makes onionfront open a backend connection; the echo backend's
#    answer shows it is up, and it stays open;
#  - the service tor is killed (SIGKILL, by its PidFile) and onionfront starts a new one, as in a repair;
#  - the new tor's /proc/PID/fd holds no socket of onionfront's (no inode both hold), the backend
#    connection in particular, and every tor below onionfront likewise.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

port=$(of_free_port)
of_start_backend alpha "$port" echo || exit 1
config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
of_write_config "$config" "[ { \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$port\" } ] } ]"
of_start_onionfront "$config" "$log"
of_check "onionfront publishes alpha" of_wait_log "$log" "service alpha: .* address [a-z2-7]{56}\.onion" 60
pidfile=$OF_TMP/state/tor/tor.pid
of_check "tor's PidFile is there" of_wait_until 30 test -s "$pidfile"
old_tor=$(cat "$pidfile" 2>/dev/null)

# A stream that keeps its backend connection open until told to stop (bounded).
python3 - "$OF_TMP/run/proxy/alpha-80.sock" "$OF_TMP/stream" <<'EOF' &
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"PROXY TCP6 fc00:dead:beef:4dad::0:3b ::1 59 80\r\nhello\n")
got = b""
while b"hello\n" not in got:
    chunk = s.recv(100)
    if not chunk:
        sys.exit("closed before the echo")
    got += chunk
open(sys.argv[2] + ".up", "w").close()
end = time.monotonic() + 300
while not os.path.exists(sys.argv[2] + ".stop") and time.monotonic() < end:
    time.sleep(0.1)
EOF
stream_pid=$!
of_track_pid "$stream_pid"
of_check "the stream reached the backend and back" of_wait_until 30 test -e "$OF_TMP/stream.up"

# socket inodes a process holds, one per line
sockets_of() { ls -l "/proc/$1/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p' | sort -u; }
backend_inode=$(ss -tnpeH state established "( dport = :$port )" 2>/dev/null | grep "pid=$OF_PID," |
  sed -n 's/.* ino:\([0-9]*\).*/\1/p' | head -n 1)
of_check "onionfront holds the backend connection (socket $backend_inode)" \
  bash -c "test -n '$backend_inode' && ls -l /proc/$OF_PID/fd | grep -q 'socket:\[$backend_inode\]'"

# A repair: tor dies, onionfront starts a new one while the backend connection is open.
kill -KILL "$old_tor" 2>/dev/null
new_tor_started() {
  local p
  p=$(cat "$pidfile" 2>/dev/null)
  [[ -n $p && $p != "$old_tor" ]] && of_descendants "$OF_PID" | grep -q "^$p .* tor$"
}
of_check "onionfront started a new tor" of_wait_until 60 new_tor_started
new_tor=$(cat "$pidfile" 2>/dev/null)
of_log "tor $old_tor -> $new_tor; its descriptors:"
ls -l "/proc/$new_tor/fd" >&2
shared=$(comm -12 <(sockets_of "$OF_PID") <(sockets_of "$new_tor") | tr '\n' ' ')
of_check "the new tor holds no socket of onionfront's (shared: ${shared:-none})" test -z "$shared"
of_check "... nor the backend connection" bash -c "! ls -l /proc/$new_tor/fd | grep -q 'socket:\[$backend_inode\]'"
for p in $(of_descendants "$OF_PID" | awk '$4 == "tor" { print $1 }'); do
  shared=$(comm -12 <(sockets_of "$OF_PID") <(sockets_of "$p") | tr '\n' ' ')
  of_check "tor $p holds no socket of onionfront's (shared: ${shared:-none})" test -z "$shared"
done
of_check "the stream is still open" kill -0 "$stream_pid"

touch "$OF_TMP/stream.stop"
of_stop_pid "$stream_pid" 10
of_stop_onionfront
of_summary
