#!/bin/bash
# `make install` with PREFIX and DESTDIR (issue: reliability/security/deployment):
#  - PREFIX=/usr DESTDIR=tmp puts the binary, both man pages, the templates and web-server snippets, the
#    systemd units (in /usr/lib/systemd/system, ExecStart=/usr/bin/onionfront) and the sysusers.d entry
#    under tmp, with the right modes; PREFIX=/usr/local moves all of it, the units' ExecStart= included;
#  - the installed binary runs and accepts every installed example config;
#  - the man pages render with `groff -man -ww -z` without a single warning (and the same check catches
#    a broken page), `man -l` shows their sections, and onionfront.json(5) names every config field that
#    templates/CONFIG.md documents, so the two cannot drift apart silently.
# Needs no network.
set -u
source "$(dirname "$0")/lib.sh"
of_init

install_to() { # DESTDIR PREFIX
  make -C "$OF_ROOT" --no-print-directory install DESTDIR="$1" PREFIX="$2" >"$OF_TMP/install.log" 2>&1
}

mode_of() { stat -c '%a' "$1" 2>/dev/null; }

# --- PREFIX=/usr ---------------------------------------------------------------------------------------
dest=$OF_TMP/dest
if ! install_to "$dest" /usr; then
  of_fail "make install DESTDIR=$dest PREFIX=/usr"
  tail -n 20 "$OF_TMP/install.log" >&2
  of_summary
  exit 1
fi
of_check "nothing is installed outside DESTDIR" test -z "$(find "$dest" -mindepth 1 -maxdepth 1 ! -name usr)"
of_check "binary /usr/bin/onionfront, mode 755" test "$(mode_of "$dest/usr/bin/onionfront")" = 755
for f in share/man/man1/onionfront.1 share/man/man5/onionfront.json.5 lib/systemd/system/onionfront.service \
  lib/systemd/system/onionfront-onion-location.path lib/systemd/system/onionfront-onion-location.service \
  lib/sysusers.d/onionfront.conf share/onionfront/CONFIG.md share/onionfront/onionfront.example.json \
  share/onionfront/onionfront.webfarm.json share/onionfront/onionfront.systemd.json \
  share/onionfront/nginx-onion-location.conf share/onionfront/apache-onion-location.conf; do
  of_check "/usr/$f, mode 644" test "$(mode_of "$dest/usr/$f")" = 644
done
of_check "the unit runs /usr/bin/onionfront" \
  grep -qx 'ExecStart=/usr/bin/onionfront -c /etc/onionfront/onionfront.json run' "$dest/usr/lib/systemd/system/onionfront.service"

# --- the installed binary ------------------------------------------------------------------------------
of_check "the installed binary reports its version" \
  bash -c "'$dest/usr/bin/onionfront' --version | grep -Eq '^onionfront [0-9]+\.[0-9]+'"
for cfg in "$dest"/usr/share/onionfront/onionfront*.json; do
  of_check "installed $(basename "$cfg") passes check-config" "$dest/usr/bin/onionfront" check-config "$cfg"
done

# --- man pages -----------------------------------------------------------------------------------------
man1=$dest/usr/share/man/man1/onionfront.1
man5=$dest/usr/share/man/man5/onionfront.json.5
if command -v groff >/dev/null; then
  for page in "$man1" "$man5"; do
    warnings=$(groff -man -ww -z "$page" 2>&1)
    of_check "$(basename "$page") renders without warnings" test -z "$warnings"
    [[ -z $warnings ]] || echo "$warnings" >&2
  done
  printf '.TH BROKEN 1\n.SH NAME\nbroken\n.XB oops\n' >"$OF_TMP/broken.1"
  of_check "the same check catches a broken page" test -n "$(groff -man -ww -z "$OF_TMP/broken.1" 2>&1)"
else
  of_fail "groff is missing (tests/install-deps.sh test installs groff-base)"
fi
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$man1" 2>"$OF_TMP/man.err" >"$OF_TMP/onionfront.txt"
  for section in NAME SYNOPSIS "WARNING: NOT LOCATION-HIDDEN" COMMANDS OPTIONS SIGNALS PRIVILEGES SYSTEMD FILES \
    "EXIT STATUS" "SEE ALSO"; do
    of_check "onionfront(1) has the section $section" grep -qx "$section" "$OF_TMP/onionfront.txt"
  done
  for word in check-config import-key status SIGHUP SIGTERM READY=1 WATCHDOG=1 tor.user; do
    of_check "onionfront(1) mentions $word" grep -qF -- "$word" "$OF_TMP/onionfront.txt"
  done
  MANWIDTH=100 man -l "$man5" 2>>"$OF_TMP/man.err" >"$OF_TMP/config.txt"
  of_check "man -l printed no errors" test ! -s "$OF_TMP/man.err"
  missing=""
  for field in $(grep -o '^| `[a-z_]*`' "$OF_ROOT/templates/CONFIG.md" | tr -d '|` ' | sort -u); do
    grep -qw -- "$field" "$OF_TMP/config.txt" || missing="$missing $field"
  done
  of_check "onionfront.json(5) names every field of CONFIG.md${missing:+ (missing:$missing)}" test -z "$missing"
else
  of_fail "man is missing (tests/install-deps.sh test installs man-db)"
fi

# --- PREFIX=/usr/local -----------------------------------------------------------------------------------
dest2=$OF_TMP/dest2
if install_to "$dest2" /usr/local; then
  of_check "PREFIX=/usr/local: binary in /usr/local/bin" test -x "$dest2/usr/local/bin/onionfront"
  of_check "PREFIX=/usr/local: units in /usr/local/lib/systemd/system, running /usr/local/bin/onionfront" \
    grep -qx 'ExecStart=/usr/local/bin/onionfront -c /etc/onionfront/onionfront.json run' \
    "$dest2/usr/local/lib/systemd/system/onionfront.service"
  of_check "PREFIX=/usr/local: man page in /usr/local/share/man" test -f "$dest2/usr/local/share/man/man5/onionfront.json.5"
  of_check "PREFIX=/usr/local: nothing under /usr/bin" test ! -e "$dest2/usr/bin"
else
  of_fail "make install DESTDIR=$dest2 PREFIX=/usr/local"
fi

of_summary
