#!/bin/bash
# Onion-Location include files against real web servers (issue: reliability/security/deployment):
#  - a real nginx includes the service's file the way templates/nginx-onion-location.conf does; onionfront
#    reloads it through onion_location.on_change;
#  - before the service is verified reachable the file is empty and nginx sends no Onion-Location;
#  - once it is, nginx sends "Onion-Location: http://<address>.onion<path and query>" and that onion
#    really serves the backend's page;
#  - the Apache file works in a real Apache (mod_headers, HTTPS vhost): same header for the same request;
#  - tor killed: the header goes at once, and comes back when tor is up again;
#  - SIGTERM: onionfront empties the files and nginx drops the header before onionfront exits.
set -u
source "$(dirname "$0")/lib.sh"
of_require_testnet
of_init

NGINX=/usr/sbin/nginx
APACHE=/usr/sbin/apache2
APACHE_MODS=/usr/lib/apache2/modules
for b in "$NGINX" "$APACHE"; do
  [[ -x $b ]] || { of_fail "$b is missing (tests/install-deps.sh test installs nginx and apache2-bin)"; of_summary; exit 1; }
done

backend_port=$(of_free_port)
nginx_port=$(of_free_port)
of_start_backend alpha "$backend_port" http || exit 1

ol_dir=$OF_TMP/onion-location
ngx=$OF_TMP/nginx
mkdir -p "$ngx"
cat >"$ngx/nginx.conf" <<EOF
pid $ngx/nginx.pid;
error_log $ngx/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $ngx/tmp;
    server {
        listen 127.0.0.1:$nginx_port;
        include $ol_dir/alpha.con[f];
        location / { return 200 "clearnet\n"; }
    }
}
EOF
"$NGINX" -c "$ngx/nginx.conf" -e "$ngx/error.log" -g 'daemon off;' >"$ngx/stdout.log" 2>&1 &
nginx_pid=$!
of_track_pid "$nginx_pid"
for ((i = 0; i < 50; i++)); do
  curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" && break
  sleep 0.1
done
of_check "nginx serves the clearnet site" curl -sf -o /dev/null "http://127.0.0.1:$nginx_port/"

# The header nginx sends for PATH ("" if none).
onion_header() {
  curl -s --max-time 5 -D - -o /dev/null "http://127.0.0.1:$nginx_port$1" | tr -d '\r' | sed -n 's/^[Oo]nion-[Ll]ocation: //p'
}
# wait_header PATH REGEX TIMEOUT_S — until the header matches (use '^$' for "no header").
wait_header() {
  local i
  for ((i = 0; i < $3 * 5; i++)); do
    [[ $(onion_header "$1") =~ $2 ]] && return 0
    sleep 0.2
  done
  return 1
}

config=$OF_TMP/onionfront.json
log=$OF_TMP/onionfront.log
svc="{ \"name\": \"alpha\", \"ports\": [ { \"virtual\": 80, \"target\": \"127.0.0.1:$backend_port\" } ] }"
of_write_config "$config" "[ $svc ]" "\"onion_location\": { \"dir\": \"$ol_dir\",
    \"on_change\": [\"$NGINX\", \"-c\", \"$ngx/nginx.conf\", \"-e\", \"$ngx/error.log\", \"-s\", \"reload\"] }"
of_start_onionfront "$config" "$log"

# --- not yet reachable --------------------------------------------------------------------------------
for ((i = 0; i < 50; i++)); do
  [[ -f $ol_dir/alpha.conf && -f $ol_dir/alpha.apache.conf ]] && break
  sleep 0.1
done
of_check "the nginx file exists and is empty before the service is reachable" \
  test -f "$ol_dir/alpha.conf" -a ! -s "$ol_dir/alpha.conf"
of_check "the Apache file exists and is empty too" test -f "$ol_dir/alpha.apache.conf" -a ! -s "$ol_dir/alpha.apache.conf"
of_check "the directory was created 0755" test "$(stat -c %a "$ol_dir")" = 755
of_check "nginx sends no Onion-Location yet" test -z "$(onion_header /)"

# --- reachable ------------------------------------------------------------------------------------------
if ! of_wait_log "$log" "onion-location: service alpha: reachable" 180; then
  of_fail "onionfront never found service alpha reachable"
  tail -n 30 "$log" >&2
  of_summary
  exit 1
fi
addr=$(of_address_from_log "$log" alpha)
of_log "service alpha reachable as $addr ($(of_elapsed "$OF_START") s after start)"
of_check "the file is mode 0644" test "$(stat -c %a "$ol_dir/alpha.conf")" = 644
of_check "the file carries the header for the service's address" \
  grep -qx "add_header Onion-Location http://$addr\$request_uri always;" "$ol_dir/alpha.conf"
of_check "nginx now sends Onion-Location (on_change reloaded it)" \
  wait_header "/news/item?id=7&x=y" "^http://$addr/news/item\?id=7&x=y$" 15
of_check "onionfront ran on_change successfully" of_wait_log "$log" "onion-location: on_change command done" 5
if of_fetch_until "http://$addr/" "$OF_TMP/onion.html" 120; then
  of_check "the advertised onion serves the backend's page" grep -q alpha "$OF_TMP/onion.html"
else
  of_fail "the advertised onion does not answer"
fi

# --- the Apache file in a real Apache -------------------------------------------------------------------
ap=$OF_TMP/apache
apache_port=$(of_free_port)
mkdir -p "$ap/docs"
chmod 755 "$OF_TMP" "$ap" "$ap/docs"
echo clearnet >"$ap/docs/index.html"
cp "$ol_dir/alpha.apache.conf" "$ap/alpha.apache.conf" # the reachable version, kept for Apache
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$ap/key.pem" -out "$ap/cert.pem" \
  -days 1 -subj /CN=localhost >/dev/null 2>&1
cat >"$ap/httpd.conf" <<EOF
ServerRoot $ap
ServerName localhost
PidFile $ap/httpd.pid
ErrorLog $ap/error.log
DefaultRuntimeDir $ap
Mutex file:$ap default
LoadModule mpm_event_module $APACHE_MODS/mod_mpm_event.so
LoadModule authz_core_module $APACHE_MODS/mod_authz_core.so
LoadModule headers_module $APACHE_MODS/mod_headers.so
LoadModule ssl_module $APACHE_MODS/mod_ssl.so
LoadModule socache_shmcb_module $APACHE_MODS/mod_socache_shmcb.so
User nobody
Group nogroup
Listen 127.0.0.1:$apache_port https
<VirtualHost 127.0.0.1:$apache_port>
    SSLEngine on
    SSLCertificateFile $ap/cert.pem
    SSLCertificateKeyFile $ap/key.pem
    DocumentRoot $ap/docs
    <Directory $ap/docs>
        Require all granted
    </Directory>
    IncludeOptional $ap/alpha.apache.conf
</VirtualHost>
EOF
if "$APACHE" -t -f "$ap/httpd.conf" >"$ap/syntax.log" 2>&1; then
  of_pass "Apache accepts the generated file (apache2 -t)"
  "$APACHE" -f "$ap/httpd.conf" -DFOREGROUND >"$ap/stdout.log" 2>&1 &
  apache_pid=$!
  of_track_pid "$apache_pid"
  for ((i = 0; i < 100; i++)); do # up when it answers anything over TLS
    [[ $(curl -sk --max-time 5 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$apache_port/index.html") != 000 ]] && break
    sleep 0.1
  done
  ap_header=$(curl -sk --max-time 5 -D - -o /dev/null "https://127.0.0.1:$apache_port/news/item?id=7&x=y" | tr -d '\r' |
    sed -n 's/^[Oo]nion-[Ll]ocation: //p')
  of_check "Apache sends the same Onion-Location as nginx ($ap_header)" test "$ap_header" = "http://$addr/news/item?id=7&x=y"
  [[ $ap_header == "http://$addr/news/item?id=7&x=y" ]] || tail -n 5 "$ap/error.log" "$ap/stdout.log" >&2
  : >"$ap/alpha.apache.conf" # the emptied version
  kill -USR1 "$apache_pid"   # graceful restart
  # An answer (any status line) without the header; an Apache restarting in between answers nothing.
  ap_answer_without_header() {
    local h
    h=$(curl -sk --max-time 5 -D - -o /dev/null "https://127.0.0.1:$apache_port/news/item?id=7" | tr -d '\r')
    grep -q '^HTTP/' <<<"$h" && ! grep -qi '^onion-location' <<<"$h"
  }
  for ((i = 0; i < 50; i++)); do
    ap_answer_without_header && break
    sleep 0.2
  done
  of_check "Apache with the emptied file sends no Onion-Location" ap_answer_without_header
  of_stop_pid "$apache_pid" 10
else
  of_fail "apache2 -t refuses the generated file: $(cat "$ap/syntax.log")"
fi

# --- tor lost and back ----------------------------------------------------------------------------------
tor_pid=$(cat "$OF_TMP/state/tor/tor.pid" 2>/dev/null)
if [[ -n $tor_pid ]] && kill -KILL "$tor_pid" 2>/dev/null; then
  of_check "tor killed: the header goes within 5 s" wait_header / '^$' 5
  of_check "tor back: the header returns" wait_header / "^http://$addr/$" 120
else
  of_fail "no tor pid to kill (state/tor/tor.pid)"
fi

# --- shutdown ---------------------------------------------------------------------------------------------
of_stop_onionfront
of_check "onionfront exits 0 on SIGTERM" test $? -eq 0
of_check "SIGTERM: the nginx file is emptied" test -f "$ol_dir/alpha.conf" -a ! -s "$ol_dir/alpha.conf"
of_check "SIGTERM: the Apache file is emptied" test -f "$ol_dir/alpha.apache.conf" -a ! -s "$ol_dir/alpha.apache.conf"
of_check "SIGTERM: on_change ran to its end for the emptied files before onionfront exited" \
  awk '/SIGTERM received/ { t = 1 } t && /header off/ { off = 1 } off && /on_change command done/ { ok = 1 }
       END { exit !ok }' "$log"
# nginx -s reload only signals the master, which then reloads on its own.
of_check "SIGTERM: nginx no longer sends the header" wait_header / '^$' 5
# Warnings: only the non-anonymity one, tor's loss, and tor's own deliberate ones (lib.sh).
own_warnings=$(grep -E '^[0-9-]+ [0-9:.]+ \[(warn|error)\]' "$log" | grep -v -e 'NOT location-hidden' \
  -e 'killed by signal 9; restarting tor' -e 'control connection lost' |
  grep -Ev "\] (probe-)?tor: .* \[warn\] ($OF_TOR_EXPECTED_WARNINGS)")
of_check "no other warnings from onionfront" test -z "$own_warnings"
[[ -z $own_warnings ]] || echo "$own_warnings" >&2

of_summary
