#!/bin/bash
# `make install` and the README's production path (issues: reliability/security/deployment; 27):
#  A. PREFIX=/usr DESTDIR=tmp puts the binary, both man pages, the templates, web-server snippets and alert
#     rules, the documentation (README.md, docs/ and the other pages it links, in share/doc/onionfront with
#     the source tree's layout, every relative link resolving there), the systemd units (in
#     /usr/lib/systemd/system, ExecStart=/usr/bin/onionfront) and the sysusers.d entry under tmp, with the
#     right modes; PREFIX=/usr/local moves all of it, the units' ExecStart= included; the installed binary
#     runs and accepts every installed example config; the man pages render with `groff -man -ww -z`
#     without a warning (the same check catches a broken page), `man -l` shows their sections, and
#     onionfront.json(5) names every config field docs/configuration.md documents.
#  B. The documentation: the README stays a front door (at most 13,000 bytes) and every relative link in
#     README.md, docs/*.md, systemd/ and tests/bench/ names a file that exists.
#  C. The README's production install, followed literally on the private network. The lines of its
#     marked "production install" block run as written (its apt-get line must name exactly the runtime
#     and build sets of tests/install-deps.sh, all installed): `make`, `make install PREFIX=/usr`,
#     `systemd-sysusers onionfront.conf`, which creates the user onionfront. The marked quick-start JSON
#     block becomes /etc/onionfront/onionfront.json with only its backend addresses (two test backends)
#     and the private network's torrc lines changed; then the marked quick-start commands run:
#     `onionfront check-config`, `systemctl enable --now onionfront` — done as systemd would from the
#     installed unit file: its StateDirectory=/RuntimeDirectory= with their modes and owner, UMask=, and
#     its ExecStartPre= and ExecStart= lines (parsed from the file) as its User=/Group= without
#     capabilities and in a private user namespace as PrivateUsers=yes makes one, READY=1 awaited on a
#     stand-in notify socket (Type=notify) — and `onionfront status`, which must come to exit 0. Then, as
#     `systemctl reload` would, its ExecReload= with a bad config exits non-zero naming the field and value
#     while the running config stays; and `onionfront check` as a monitoring user of its own works once
#     that user is in the unit's group and status.allowed_gids lists it (docs/operations.md), not before. onionfront and its tor run as onionfront, the keys are its own, the
#     address status prints is the key's, and pages come from both backends through the onion.
#  D. Every shipped example (templates/onionfront*.json, as installed) passes ExecStartPre= and starts as
#     the unit runs it (READY=1, still running), then stops with exit 0 at SIGTERM; only the private
#     network's torrc lines are added.
# C and D write to /usr, /etc, /var/lib and /run: the whole script runs in a private mount namespace with
# an overlay on each (upper layers in its temporary directory), so nothing reaches the real system — the
# test checks that the real /etc/passwd did not change — and all of it is gone when the script ends.
# Not covered here: the sandbox settings of the unit other than PrivateUsers= (systemd-analyze in
# test_systemd.sh checks them; there is no systemd as PID 1 to apply them) and `systemctl enable` itself.
set -u
source "$(dirname "$0")/lib.sh"
of_in_private_mounts "$0" "$@"
of_require_testnet
of_init
of_mounts_init

install_to() { # DESTDIR PREFIX
  make -C "$OF_ROOT" --no-print-directory install DESTDIR="$1" PREFIX="$2" >"$OF_TMP/install.log" 2>&1
}

mode_of() { stat -c '%a' "$1" 2>/dev/null; }

# ======================================== A. make install DESTDIR= ======================================
dest=$OF_TMP/dest
if ! install_to "$dest" /usr; then
  of_fail "make install DESTDIR=$dest PREFIX=/usr"
  tail -n 20 "$OF_TMP/install.log" >&2
  of_summary
  exit 1
fi
of_check "nothing is installed outside DESTDIR" test -z "$(find "$dest" -mindepth 1 -maxdepth 1 ! -name usr)"
of_check "binary /usr/bin/onionfront, mode 755" test "$(mode_of "$dest/usr/bin/onionfront")" = 755
docs=$(cd "$OF_ROOT" && ls docs/*.md systemd/README.md docker/README.md tests/bench/RESULTS.md | sed 's|^|share/doc/onionfront/|')
for f in share/man/man1/onionfront.1 share/man/man5/onionfront.json.5 lib/systemd/system/onionfront.service \
  lib/systemd/system/onionfront-onion-location.path lib/systemd/system/onionfront-onion-location.service \
  lib/sysusers.d/onionfront.conf share/onionfront/onionfront.example.json \
  share/onionfront/onionfront.webfarm.json share/onionfront/onionfront.systemd.json \
  share/onionfront/nginx-onion-location.conf share/onionfront/apache-onion-location.conf \
  share/onionfront/prometheus-alerts.yml share/doc/onionfront/README.md $docs; do
  of_check "/usr/$f, mode 644" test "$(mode_of "$dest/usr/$f")" = 644
done
of_check "the configuration reference is installed as share/doc/onionfront/docs/configuration.md" \
  cmp -s "$OF_ROOT/docs/configuration.md" "$dest/usr/share/doc/onionfront/docs/configuration.md"
# The installed documentation keeps the source tree's layout: every relative link in every installed page
# (the README's to docs/, systemd/, docker/ and tests/bench/, the pages' to ../README.md) names an installed file.
inst_broken=""
while IFS= read -r md; do
  while IFS= read -r target; do
    target=${target%%#*}
    [[ -z $target || $target == *://* || $target == mailto:* ]] && continue
    [[ -e $(dirname "$md")/$target ]] || inst_broken="$inst_broken ${md#"$dest/usr/share/doc/onionfront/"}->$target"
  done < <(grep -o '](\([^)]*\))' "$md" | sed 's/^](\(.*\))$/\1/')
done < <(find "$dest/usr/share/doc/onionfront" -name '*.md')
of_check "every relative link of the installed documentation resolves${inst_broken:+ (broken:$inst_broken)}" \
  test -z "$inst_broken"
of_check "... the README's nine docs/ links among them" \
  test "$(grep -o '](docs/[^)]*)' "$dest/usr/share/doc/onionfront/README.md" | sort -u | wc -l)" -ge 9
of_check "the unit runs /usr/bin/onionfront" \
  grep -qx 'ExecStart=/usr/bin/onionfront -c /etc/onionfront/onionfront.json run' "$dest/usr/lib/systemd/system/onionfront.service"

of_check "the installed binary reports its version" \
  bash -c "'$dest/usr/bin/onionfront' --version | grep -Eq '^onionfront [0-9]+\.[0-9]+'"
for cfg in "$dest"/usr/share/onionfront/onionfront*.json; do
  of_check "installed $(basename "$cfg") passes check-config" "$dest/usr/bin/onionfront" check-config "$cfg"
done

# check-config like haproxy -c: three mistakes, three lines (field and value each), then the count.
printf '%s\n' '{"state_dir": "/var/lib/x", "run_dir": "/run/x", "log_level": "loud",' \
  ' "services": [{"name": "web", "colour": 1, "ports": [{"virtual": 70000, "target": "127.0.0.1:8080"}]}]}' \
  >"$OF_TMP/three.json"
"$dest/usr/bin/onionfront" check-config "$OF_TMP/three.json" 2>"$OF_TMP/three.err"
rc=$?
of_log "check-config with three mistakes: exit $rc: $(cat "$OF_TMP/three.err")"
of_check "check-config reports three mistakes in one run, each with field and value, and exits 1" \
  bash -c '[[ $1 -eq 1 ]] && grep -q "log_level: must be one of .*, not \"loud\"" "$2" &&
    grep -q "services\[0\]\.colour: unknown key; valid here: name, " "$2" &&
    grep -q "services\[0\]\.ports\[0\]\.virtual: invalid port \"70000\" (must be 1-65535)" "$2" &&
    grep -q ": 3 errors$" "$2"' _ "$rc" "$OF_TMP/three.err"
printf '# my onion\n{}\n' >"$OF_TMP/hash.json"
of_check "check-config names a '#' comment" \
  bash -c '"$1" check-config "$2" 2>&1 | grep -q "line 1: .#. comments are not JSON"' _ "$dest/usr/bin/onionfront" "$OF_TMP/hash.json"
of_check "the installed binary's version command names tor's version too" \
  bash -c '"$1" -c /nonexistent version 2>/dev/null | grep -Eq "^tor [0-9]+\.[0-9]+"' _ "$dest/usr/bin/onionfront"

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
  for word in check-config import-key status SIGHUP SIGTERM READY=1 WATCHDOG=1 tor.user docs/https.md \
    tor.drain_timeout; do
    of_check "onionfront(1) mentions $word" grep -qF -- "$word" "$OF_TMP/onionfront.txt"
  done
  MANWIDTH=100 man -l "$man5" 2>>"$OF_TMP/man.err" >"$OF_TMP/config.txt"
  of_check "man -l printed no errors" test ! -s "$OF_TMP/man.err"
  missing=""
  for field in $(grep -o '^| `[a-z_]*`' "$OF_ROOT/docs/configuration.md" | tr -d '|` ' | sort -u); do
    grep -qw -- "$field" "$OF_TMP/config.txt" || missing="$missing $field"
  done
  of_check "onionfront.json(5) names every field of docs/configuration.md${missing:+ (missing:$missing)}" test -z "$missing"
else
  of_fail "man is missing (tests/install-deps.sh test installs man-db)"
fi

dest2=$OF_TMP/dest2
if install_to "$dest2" /usr/local; then
  of_check "PREFIX=/usr/local: binary in /usr/local/bin" test -x "$dest2/usr/local/bin/onionfront"
  of_check "PREFIX=/usr/local: units in /usr/local/lib/systemd/system, running /usr/local/bin/onionfront" \
    grep -qx 'ExecStart=/usr/local/bin/onionfront -c /etc/onionfront/onionfront.json run' \
    "$dest2/usr/local/lib/systemd/system/onionfront.service"
  of_check "PREFIX=/usr/local: man page in /usr/local/share/man" test -f "$dest2/usr/local/share/man/man5/onionfront.json.5"
  of_check "PREFIX=/usr/local: documentation in /usr/local/share/doc/onionfront" \
    test -f "$dest2/usr/local/share/doc/onionfront/docs/configuration.md"
  of_check "PREFIX=/usr/local: nothing under /usr/bin" test ! -e "$dest2/usr/bin"
else
  of_fail "make install DESTDIR=$dest2 PREFIX=/usr/local"
fi

# ======================================== B. the documentation ==========================================
readme=$OF_ROOT/README.md
size=$(wc -c <"$readme")
of_check "README.md is the front door, not a notebook ($size bytes, at most 13000)" test "$size" -le 13000
broken=""
for md in "$readme" "$OF_ROOT"/docs/*.md "$OF_ROOT"/systemd/README.md "$OF_ROOT"/tests/bench/*.md; do
  while IFS= read -r target; do
    target=${target%%#*}
    [[ -z $target || $target == *://* || $target == mailto:* ]] && continue
    [[ -e $(dirname "$md")/$target ]] || broken="$broken ${md#"$OF_ROOT"/}->$target"
  done < <(grep -o '](\([^)]*\))' "$md" | sed 's/^](\(.*\))$/\1/')
done
of_check "every relative link of the documentation names a file${broken:+ (broken:$broken)}" test -z "$broken"
of_check "README links every page of docs/" \
  bash -c 'for f in "$1"/docs/*.md; do grep -q "](docs/${f##*/})" "$1/README.md" || exit 1; done' _ "$OF_ROOT"
# troubleshooting.md names the probe's repair steps as the code logs them, in the code's order.
steps=$(grep -o 'repair step [0-9]: [a-z-]*' "$OF_ROOT/sidecar/probe/probe.c" | uniq)
doc_steps=$(grep -o 'repair step [0-9]: [a-z-]*' "$OF_ROOT/docs/troubleshooting.md" | uniq)
of_check "troubleshooting.md's repair steps are the code's, in its order ($(echo $steps | tr '\n' ' '))" \
  test -n "$steps" -a "$steps" = "$doc_steps"

# ======================================== C. the production path ========================================
# README blocks: the fenced block after the marker comment whose first line starts with $1.
readme_block() {
  awk -v m="<!-- $1" 'index($0, m) == 1 { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$readme"
}
install_lines=$(readme_block "production install:")
quick_json=$(readme_block "quick-start config:")
quick_cmds=$(readme_block "quick-start commands:")
of_check "README.md has the marked production install block" test -n "$install_lines"
of_check "README.md has the marked quick-start config block" test -n "$quick_json"
of_check "README.md has the marked quick-start commands block" test -n "$quick_cmds"

# Overlays on the directories the production path writes; the real /etc stays reachable through a
# descriptor opened before, to show afterwards that nothing reached it.
exec {host_etc}</etc
passwd_before=$(sha256sum <"/proc/self/fd/$host_etc/passwd")
overlay() { # DIR: writes go to $OF_TMP/ov/<name>/upper
  local d=$1 n
  n=$(basename "$d")
  mkdir -p "$OF_TMP/ov/$n/upper" "$OF_TMP/ov/$n/work"
  chmod --reference="$d" "$OF_TMP/ov/$n/upper" && chown --reference="$d" "$OF_TMP/ov/$n/upper" &&
    mount -t overlay "of-test-$n" -o "lowerdir=$d,upperdir=$OF_TMP/ov/$n/upper,workdir=$OF_TMP/ov/$n/work" "$d" &&
    OF_MOUNTS+=("$d")
}
for d in /usr /etc /var/lib /run; do
  if ! overlay "$d"; then
    of_fail "cannot mount an overlay on $d (needs overlayfs)"
    of_summary
    exit 1
  fi
done

# --- the install block, line by line ---
runtime_pkgs=$(sed -n 's/^runtime="\(.*\)"$/\1/p' "$OF_ROOT/tests/install-deps.sh")
build_pkgs=$(sed -n 's/^build="\(.*\)"$/\1/p' "$OF_ROOT/tests/install-deps.sh")
sorted_words() { tr ' ' '\n' | grep . | sort -u; }
while IFS= read -r line; do
  line=${line%%#*}
  line=$(sed 's/[[:space:]]*$//' <<<"$line")
  [[ -z $line ]] && continue
  case $line in
    "apt-get install "*)
      of_check "README's apt-get line installs exactly the runtime and build sets of tests/install-deps.sh" \
        test "$(sed 's/^apt-get install //; s/ -y//' <<<"$line" | sorted_words)" = \
        "$(echo "$runtime_pkgs $build_pkgs" | sorted_words)"
      notinst=""
      for p in ${line#apt-get install }; do
        [[ $p == -* ]] && continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || notinst="$notinst $p"
      done
      of_check "every package of that line is installed${notinst:+ (missing:$notinst)}" test -z "$notinst"
      ;;
    make | "make "* | "systemd-sysusers "*)
      if (cd "$OF_ROOT" && bash -c "$line") >"$OF_TMP/step.log" 2>&1; then
        of_pass "README install step: $line"
      else
        of_fail "README install step: $line"
        tail -n 20 "$OF_TMP/step.log" >&2
      fi
      ;;
    *) of_fail "README install step the test does not know how to follow: $line" ;;
  esac
done <<<"$install_lines"

of_check "/usr/bin/onionfront is installed" test -x /usr/bin/onionfront
of_check "the onionfront a root shell finds is /usr/bin/onionfront ($(command -v onionfront))" \
  test "$(command -v onionfront)" = /usr/bin/onionfront
unit=/usr/lib/systemd/system/onionfront.service
of_check "the unit is installed as $unit" test -f "$unit"
user_line=$(getent passwd onionfront)
of_check "systemd-sysusers created the user onionfront, home /var/lib/onionfront" \
  grep -Eq '^onionfront:x:[0-9]+:[0-9]+:[^:]*:/var/lib/onionfront:' <<<"$user_line"
of_check "... in the namespace only: the real /etc/passwd is unchanged" \
  test "$(sha256sum <"/proc/self/fd/$host_etc/passwd")" = "$passwd_before"

# --- the unit, read as systemd reads it ---
unit_get() { sed -n "s/^$1=//p" "$unit" | tail -n 1; }
U_USER=$(unit_get User)
U_GROUP=$(unit_get Group)
U_UMASK=$(unit_get UMask)
U_STATE=$(unit_get StateDirectory)
U_STATE_MODE=$(unit_get StateDirectoryMode)
U_RUNTIME=$(unit_get RuntimeDirectory)
U_RUNTIME_MODE=$(unit_get RuntimeDirectoryMode)
U_CONFDIR=$(unit_get ConfigurationDirectory)
U_PRE=$(unit_get ExecStartPre)
U_START=$(unit_get ExecStart)
U_RELOAD=$(unit_get ExecReload)
U_PRIVATE_USERS=$(unit_get PrivateUsers)
of_check "the unit is Type=notify" test "$(unit_get Type)" = notify
of_check "the unit names User=, Group=, its directories and both Exec lines" \
  test -n "$U_USER" -a -n "$U_GROUP" -a -n "$U_STATE" -a -n "$U_RUNTIME" -a -n "$U_PRE" -a -n "$U_START"
# This emulation splits Exec lines on blanks: refuse what it would get wrong (quotes, specifiers,
# variables, escapes, systemd's command prefixes).
plain_words() { [[ $1 =~ ^[A-Za-z0-9/][A-Za-z0-9/._=\ -]*$ ]]; }
for l in "$U_PRE" "$U_START" "$U_RELOAD"; do
  of_check "Exec line '$l' is plain words" plain_words "$l"
done
u_uid=$(id -u "$U_USER" 2>/dev/null)
u_gid=$(getent group "$U_GROUP" | cut -d: -f3)
AS_UNIT=(setpriv --reuid="$U_USER" --regid="$U_GROUP" --init-groups --no-new-privs --inh-caps=-all --bounding-set=-all)
# PrivateUsers=yes as systemd sets it up: a user namespace where only root and the unit's user and group
# are mapped (every other uid and gid reads 65534 inside). The helper unshares itself, has a child write
# its maps from outside, then execs the rest (so the unit's process keeps the helper's pid).
if [[ $U_PRIVATE_USERS == yes ]]; then
  cat >"$OF_TMP/private_users.py" <<'EOF_PY'
import ctypes, os, sys
uid, gid, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
go_r, go_w = os.pipe()
child = os.fork()
if child == 0:
    os.read(go_r, 1)
    parent = os.getppid()
    with open("/proc/%d/uid_map" % parent, "w") as f:
        f.write("0 0 1\n%s %s 1\n" % (uid, uid))
    with open("/proc/%d/gid_map" % parent, "w") as f:
        f.write("0 0 1\n%s %s 1\n" % (gid, gid))
    os._exit(0)
if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
    sys.exit("unshare: %s" % os.strerror(ctypes.get_errno()))
os.write(go_w, b"x")
_, status = os.waitpid(child, 0)
if status != 0:
    sys.exit("private_users: writing the id maps failed")
os.execvp(cmd[0], cmd)
EOF_PY
  AS_UNIT=(/usr/bin/python3 "$OF_TMP/private_users.py" "$u_uid" "$u_gid" "${AS_UNIT[@]}")
fi
of_check "the unit has PrivateUsers=yes, emulated here (only root, $U_USER and $U_GROUP mapped)" \
  test "$U_PRIVATE_USERS" = yes

# A stand-in for systemd's notify socket, where the unit's user can reach it.
notify_dir=/run/of-test-notify
notify_sock=$notify_dir/notify.sock
notify_log=$OF_TMP/notify.log
install -d -m 0755 "$notify_dir"
perl -e 'use Socket; $| = 1;
  socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
  bind($s, pack_sockaddr_un($ARGV[0])) or die "bind: $!";
  chmod 0666, $ARGV[0];
  while (defined(recv($s, my $buf, 4096, 0))) { $buf =~ s/\n/|/g; print "$buf\n"; }' "$notify_sock" >"$notify_log" 2>&1 &
of_track_pid $!
of_wait_until 5 test -S "$notify_sock"

# unit_start LABEL LOG: what `systemctl start onionfront` does with the unit's settings: the directories,
# ExecStartPre= as the unit's user (must exit 0), ExecStart= as that user in the background (OF_PID), then
# READY=1 on the notify socket within the unit's own start limit. Returns 1 if any step failed.
unit_start() {
  local label=$1 log=$2 pre start n0
  install -d -m "${U_STATE_MODE:-0755}" -o "$U_USER" -g "$U_GROUP" "/var/lib/$U_STATE"
  install -d -m "${U_RUNTIME_MODE:-0755}" -o "$U_USER" -g "$U_GROUP" "/run/$U_RUNTIME"
  [[ -n $U_CONFDIR ]] && install -d -m 0755 "/etc/$U_CONFDIR"
  read -ra pre <<<"$U_PRE"
  read -ra start <<<"$U_START"
  if ! (umask "${U_UMASK:-0022}" && exec "${AS_UNIT[@]}" timeout 60 "${pre[@]}") >>"$log" 2>&1; then
    of_fail "$label: ExecStartPre= (${pre[*]}) as $U_USER"
    tail -n 5 "$log" >&2
    return 1
  fi
  of_pass "$label: ExecStartPre= passes as $U_USER"
  n0=$(grep -c '^READY=1' "$notify_log")
  OF_START=$(of_now)
  (umask "${U_UMASK:-0022}" && NOTIFY_SOCKET=$notify_sock exec "${AS_UNIT[@]}" "${start[@]}") >>"$log" 2>&1 &
  OF_PID=$!
  of_track_pid "$OF_PID"
  # A READY=1 more than before this start, as systemd waits for it (TimeoutStartSec= bounds it).
  ready() { (($(grep -c '^READY=1' "$notify_log") > n0)); }
  ready_or_gone() { ready || ! kill -0 "$OF_PID" 2>/dev/null; }
  if ! of_wait_until 330 ready_or_gone || ! ready; then
    of_fail "$label: no READY=1 from ExecStart= (${start[*]}): $(kill -0 "$OF_PID" 2>/dev/null &&
      echo "still none after 330 s" || echo "it exited first")"
    tail -n 15 "$log" >&2
    return 1
  fi
  of_pass "$label: started as the unit runs it (READY=1 after $(of_elapsed "$OF_START") s)"
  sleep 2
  of_check "$label: still running 2 s after READY=1" kill -0 "$OF_PID"
}

# unit_stop LABEL: systemctl stop (SIGTERM to the main process), which must exit 0.
unit_stop() {
  of_stop_onionfront
  of_check "$1: SIGTERM: exits 0" test $? -eq 0
}

# adapt_config IN OUT [ADDR...]: the private network's torrc lines added to tor.extra_torrc, and the
# backends of the first service's first port given the addresses ADDR... in order; nothing else changes.
adapt_config() {
  local in=$1 out=$2
  shift 2
  python3 - "$in" "$out" "$TESTNET_TORRC_EXTRA" "$@" <<'EOF'
import json, sys
src, dst, extra_file, addrs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with open(src) as f:
    cfg = json.load(f)
extra = [l.rstrip("\n") for l in open(extra_file) if l.strip() and not l.startswith("#")]
cfg.setdefault("tor", {})["extra_torrc"] = extra
if addrs:
    backends = cfg["services"][0]["ports"][0]["backends"]
    if len(backends) != len(addrs):
        sys.exit("expected %d backends, the config has %d" % (len(addrs), len(backends)))
    for b, a in zip(backends, addrs):
        b["address"] = a
with open(dst, "w") as f:
    json.dump(cfg, f, indent=2)
EOF
}

uid_of_pid() { awk '/^Uid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# unit_reload LABEL: `systemctl reload onionfront` — the unit's ExecReload= as its user, in its user
# namespace. Sets reload_rc; its stderr in $OF_TMP/reload.err.
unit_reload() {
  local cmd
  read -ra cmd <<<"$U_RELOAD"
  (umask "${U_UMASK:-0022}" && exec "${AS_UNIT[@]}" timeout 60 "${cmd[@]}") >"$OF_TMP/reload.out" 2>"$OF_TMP/reload.err"
  reload_rc=$?
  of_log "$1: ExecReload= exit $reload_rc: $(cat "$OF_TMP/reload.out" "$OF_TMP/reload.err")"
}

# With the quick start running: a refused reload fails `systemctl reload` with the reason and the running
# config stays; a Nagios-style check as a user of its own works once it is in the unit's group and
# status.allowed_gids lists that group (docs/operations.md), and not before.
unit_reload_and_monitor() {
  local conf=/etc/onionfront/onionfront.json good=$OF_TMP/good.json out rc
  of_check "onionfront runs in the private user namespace (only root and $U_USER mapped)" \
    test "$(awk '{ print $1 }' "/proc/$OF_PID/uid_map" | sort -n | tr '\n' ' ')" = "0 $u_uid "
  cp "$conf" "$good"
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["services"][0]["ports"][0]["virtual"] = 70000
json.dump(c, open(sys.argv[1], "w"))' "$conf"
  unit_reload "a port of 70000"
  of_check "systemctl reload (ExecReload=) with a bad config: exit non-zero" test "$reload_rc" -ne 0
  of_check "... the reason on stderr: field and value" \
    grep -q 'services\[0\]\.ports\[0\]\.virtual: invalid port "70000"' "$OF_TMP/reload.err"
  cp "$good" "$conf"
  of_check "... the running config stays: onionfront status still exits 0" onionfront status
  unit_reload "the config back"
  of_check "systemctl reload with the good config: exit 0" test "$reload_rc" -eq 0

  useradd --system --no-create-home --shell /usr/sbin/nologin of-nagios
  useradd --system --no-create-home --shell /usr/sbin/nologin -G "$U_GROUP" of-nagios2
  out=$(runuser -u of-nagios2 -- onionfront check 2>&1)
  rc=$?
  of_log "check as of-nagios2 (in $U_GROUP), not yet listed: exit $rc: $out"
  of_check "a monitoring user not listed in status.allowed_gids is refused (UNKNOWN, exit 3)" test "$rc" -eq 3
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.setdefault("status", {})["allowed_gids"] = [int(sys.argv[2])]
json.dump(c, open(sys.argv[1], "w"), indent=2)' "$conf" "$u_gid"
  unit_reload "status.allowed_gids [$u_gid]"
  of_check "systemctl reload with status.allowed_gids: exit 0" test "$reload_rc" -eq 0
  out=$(runuser -u of-nagios2 -- onionfront check 2>&1)
  rc=$?
  of_log "check as of-nagios2 (in $U_GROUP, its gid listed): exit $rc: $out"
  of_check "the check as a monitoring user in group $U_GROUP: ONIONFRONT OK, exit 0" \
    bash -c '[[ $1 -eq 0 && $2 == "ONIONFRONT OK - "* ]]' _ "$rc" "$out"
  out=$(runuser -u of-nagios -- onionfront check 2>&1)
  rc=$?
  of_log "check as of-nagios (not in $U_GROUP): exit $rc: $out"
  of_check "... a user outside that group cannot (exit 3)" test "$rc" -eq 3
  of_check "... and the group may enter run_dir (0710) but reaches only the status socket there" \
    bash -c 'test "$(stat -c %a /run/'"$U_RUNTIME"')" = 710 && ! runuser -u of-nagios2 -- ls /run/'"$U_RUNTIME"' >/dev/null 2>&1'
  cp "$good" "$conf"
}

# --- the quick start ---
p1=$(of_free_port)
of_start_backend web1 "$p1" http || exit 1
p2=$(of_free_port)
of_start_backend web2 "$p2" http || exit 1
printf '%s\n' "$quick_json" >"$OF_TMP/quick.json"
install -d -m 0755 /etc/onionfront
if adapt_config "$OF_TMP/quick.json" /etc/onionfront/onionfront.json "127.0.0.1:$p1" "127.0.0.1:$p2"; then
  of_pass "the README's quick-start config, backends moved to 127.0.0.1:$p1 and :$p2"
else
  of_fail "the README's quick-start config is not JSON with two backends on its first port"
fi
chmod 0644 /etc/onionfront/onionfront.json
qlog=$OF_TMP/quick.log
status_out=$OF_TMP/status.txt
started=0
while IFS= read -r line; do
  line=${line%%#*}
  line=$(sed 's/[[:space:]]*$//' <<<"$line")
  [[ -z $line ]] && continue
  case $line in
    "onionfront check-config")
      of_check "README: '$line' passes" bash -c "$line >>'$qlog' 2>&1" ;;
    "systemctl enable --now onionfront")
      unit_start "quick start" "$qlog" && started=1 ;;
    "onionfront status")
      # The first start creates the key; tor then uploads the descriptor and the probe fetches the page.
      if of_wait_secs 240 bash -c "$line >'$status_out' 2>&1"; then
        of_pass "README: '$line' exits 0 (ok)"
      else
        of_fail "README: '$line' did not come to exit 0 within 240 s"
        cat "$status_out" >&2
        tail -n 20 "$qlog" >&2
      fi
      ;;
    *) of_fail "README quick-start command the test does not know how to follow: $line" ;;
  esac
done <<<"$quick_cmds"

if ((started)); then
  of_check "onionfront runs as $U_USER" test "$(uid_of_pid "$OF_PID")" = "$u_uid"
  tor_pid=$(cat "/var/lib/$U_STATE/tor/tor.pid" 2>/dev/null)
  of_check "its tor runs as $U_USER" test -n "$tor_pid" -a "$(uid_of_pid "$tor_pid")" = "$u_uid"
  key=/var/lib/onionfront/keys/web/hs_ed25519_secret_key
  of_check "the key $key is $U_USER's, mode 600" test "$(stat -c '%u:%a' "$key" 2>/dev/null)" = "$u_uid:600"
  addr=$(grep -Eo '^service web: [a-z2-7]{56}\.onion' "$status_out" | grep -Eo '[a-z2-7]{56}\.onion')
  of_check "status names the address, the one in keys/web/hostname" \
    test -n "$addr" -a "$addr" = "$(cat /var/lib/onionfront/keys/web/hostname 2>/dev/null)"
  seen=""
  for i in 1 2 3 4; do
    if of_fetch_until "http://$addr/" "$OF_TMP/page.html" 60; then
      grep -q web1 "$OF_TMP/page.html" && seen="$seen web1"
      grep -q web2 "$OF_TMP/page.html" && seen="$seen web2"
    fi
  done
  of_check "pages through the onion came from both backends (seen:${seen:- none})" \
    bash -c '[[ $1 == *web1* && $1 == *web2* ]]' _ "$seen"
  unit_reload_and_monitor
  unit_stop "quick start"
fi

# ======================================== D. every shipped example ======================================
for cfg in /usr/share/onionfront/onionfront*.json; do
  name=$(basename "$cfg")
  rm -rf "/var/lib/$U_STATE" "/run/$U_RUNTIME" # a fresh machine for each
  adapt_config "$cfg" /etc/onionfront/onionfront.json && chmod 0644 /etc/onionfront/onionfront.json
  log=$OF_TMP/$name.log
  if unit_start "$name" "$log"; then
    unit_stop "$name"
  else
    of_stop_onionfront >/dev/null 2>&1
  fi
done

of_summary
