#!/bin/sh
# Install what onionfront needs to build, test and run, on Debian, as root.
# Shared by the Makefile (make test / make demo / make bench) and docker/Dockerfile so the tested path and
# the image path cannot drift. Does nothing when everything is present.
# Usage: install-deps.sh [build|test|bench|runtime]
set -eu
what=${1:-test}

runtime="tor libevent-2.1-7 libevent-openssl-2.1-7 libjansson4 libcurl4 libsodium23 ca-certificates"
build="build-essential pkg-config libevent-dev libjansson-dev libcurl4-openssl-dev libssl-dev libsodium-dev"
# systemd: systemd-analyze/systemd-sysusers for test_systemd; groff-base, man-db: the man pages (test_install);
# nginx, apache2-bin: the Onion-Location snippets against real web servers (test_onion_location).
# python3: JSON checks and a signal-mask wrapper in the integration scripts; python3-stem: decrypting a
# fetched onion descriptor in test_dos (a test tool only); jq: test_probe.
# openssl: the test CA and the TLS backends (openssl s_server) of test_tls.
# prometheus: promtool checks and unit-tests templates/prometheus-alerts.yml (test_prometheus_rules).
# onionbalance: Debian's Onionbalance 0.2.2 (test_onionbalance). Not in the runtime set: a product
# dependency only of a machine whose config has an Onionbalance frontend (multi-machine set-ups, docs/high-availability.md);
# instances need nothing but tor.
test="$build libcmocka-dev clang curl iproute2 tor valgrind procps python3 python3-stem systemd groff-base man-db nginx apache2-bin jq prometheus onionbalance openssl"
bench="$test haproxy gnuplot-nox strace"

case "$what" in
  runtime) pkgs=$runtime ;;
  build) pkgs="$build tor" ;;
  test) pkgs=$test ;;
  bench) pkgs=$bench ;;
  *) echo "install-deps.sh: unknown set '$what' (build|test|bench|runtime)" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: missing packages:$missing — run as root or install them" >&2
  exit 1
fi
echo "install-deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# policy-rc.d keeps the package's own tor service from starting: onionfront and the tests run their own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends $missing >/dev/null
