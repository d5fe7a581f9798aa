#!/usr/bin/python3
# hs_desc_check.py SPEC.json — check onion services' v3 descriptors as clients get them and as each
# service tor holds them, decrypted with stem (Debian's python3-stem, a test tool only), against what the
# spec says each service must be. Used by test_combinations.sh.
#
# SPEC: {"client": CONTROL_SOCKET of a client tor,
#        "services": [{"name", "addr", "own": {"tor 1": CONTROL_SOCKET, ...}, "open": bool, "pow": bool,
#                      "single": bool, "keys_in": {client: base32 x25519 private key},
#                      "keys_out": {client: key}}]}
# For each service, the copies:
#   - every HSDir's: HSFETCH <addr> SERVER=<fp> for every relay with the HSDir flag in the client's
#     consensus, at once (the responsible ones answer with a copy, the others 404);
#   - each tor's own current descriptor: GETINFO hs/service/desc/id/<addr> on its control socket.
# Each copy must: decrypt its outer layer; open WITHOUT a key exactly when "open"; open with every key in
# keys_in and list introduction points; open with no key in keys_out nor with a random key (private
# services); carry "pow-params" in the inner layer exactly when "pow", and "single-onion-service"
# exactly when "single".
# Prints one line per service and source ("on tor N", "as the HSDirs serve it"), "ok   ..." or
# "FAIL ...: what is wrong", each with what was seen; exits 0 if every line is ok, 1 if not, 2 on a bad
# spec. An HSDir copy with the revision counter of a tor's own descriptor is named after that tor (tor
# encrypts the layers afresh for each GETINFO, so the texts differ).
import base64
import json
import os
import sys
import threading
import time

from stem.control import Controller, EventType
from stem.descriptor.hidden_service import HiddenServiceDescriptorV3

from hs_desc_fetch import desc_body, inner_with_key

FETCH_TIMEOUT = 30  # seconds for every HSDir to answer every service's fetch


def bare(addr):
    return addr.removesuffix(".onion")


def evaluate(text, svc):
    """Return (problems, facts) for one copy of svc's descriptor."""
    addr = bare(svc["addr"])
    try:
        desc = HiddenServiceDescriptorV3.from_str(text)
    except Exception as e:
        return [f"unparsable ({e})"], ""
    problems, facts = [], [f"revision {desc.revision_counter}"]
    inner = None
    try:
        inner = desc.decrypt(addr)
        opened = True
    except Exception:
        opened = False
    if opened and not svc["open"]:
        problems.append("opens WITHOUT a client key (readable by every client)")
    elif not opened and svc["open"]:
        problems.append("does not open without a key (a public service)")
    facts.append("opens without a key" if opened else "needs a key")
    good, bad = [], []
    for client, key in sorted(svc.get("keys_in", {}).items()):
        try:
            got = inner_with_key(desc, addr, key)
            good.append(client)
            inner = inner or got
        except Exception as e:
            problems.append(f"{client}'s key does not open it ({e})")
    if good:
        facts.append("opens with " + ", ".join(good))
    if not svc["open"]:
        outs = dict(svc.get("keys_out", {}))
        outs["a random key"] = base64.b32encode(os.urandom(32)).decode().rstrip("=")
        for client, key in sorted(outs.items()):
            try:
                inner_with_key(desc, addr, key)
                problems.append(f"{client}'s key opens it (not a configured client)")
            except Exception:
                bad.append(client)
        facts.append("not with " + ", ".join(bad))
    if inner is None:
        problems.append("no key given opens the inner layer: its lines cannot be checked")
        return problems, "; ".join(facts)
    lines = str(inner).splitlines()
    pow_lines = [ln for ln in lines if ln.startswith("pow-params ")]
    single = any(ln == "single-onion-service" for ln in lines)
    intros = sum(1 for ln in lines if ln.startswith("introduction-point "))
    if svc["pow"] and not pow_lines:
        problems.append("no pow-params line (PoW is on)")
    if not svc["pow"] and pow_lines:
        problems.append("a pow-params line, but PoW is off")
    if svc["single"] and not single:
        problems.append("no single-onion-service line (a single onion)")
    if not svc["single"] and single:
        problems.append("a single-onion-service line in an anonymous service's descriptor")
    if intros == 0:
        problems.append("no introduction points")
    facts.append(pow_lines[0][:20] if pow_lines else "no pow-params")
    facts.append("single-onion-service" if single else "no single-onion-service")
    facts.append(f"{intros} intro points")
    return problems, "; ".join(facts)


def own_descriptor(sock, addr):
    """(text, error) of the tor's own current descriptor for addr."""
    try:
        with Controller.from_socket_file(sock) as c:
            c.authenticate()
            return c.get_info("hs/service/desc/id/" + bare(addr)) + "\n", None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"


def fetch_from_hsdirs(sock, services):
    """{addr: {hsdir: text}} and {addr: set of HSDirs that answered without a copy}, from every HSDir."""
    copies = {bare(s["addr"]): {} for s in services}
    empty = {bare(s["addr"]): set() for s in services}
    lock = threading.Lock()
    done = threading.Event()
    hsdirs = []

    def first_words(event):
        return event.raw_content().split("\r\n", 1)[0].split()

    def check_done():
        if all(len(copies[a]) + len(empty[a]) >= len(hsdirs) for a in copies):
            done.set()

    def on_content(event):
        w = first_words(event)  # 650+HS_DESC_CONTENT <addr> <descid> <hsdir>
        if len(w) < 4 or w[1] not in copies:
            return
        hsdir = w[3].lstrip("$").split("~")[0]
        body = desc_body(event, w[1])
        with lock:
            if body is not None:
                copies[w[1]][hsdir] = body
            else:
                empty[w[1]].add(hsdir)
            check_done()

    def on_desc(event):
        w = first_words(event)  # 650 HS_DESC FAILED <addr> <auth> <hsdir> ...
        if len(w) >= 5 and w[2] == "FAILED" and w[3] in copies:
            with lock:
                hsdir = w[5].lstrip("$").split("~")[0] if len(w) > 5 else ""
                if hsdir and hsdir not in copies[w[3]]:
                    empty[w[3]].add(hsdir)
                check_done()

    with Controller.from_socket_file(sock) as c:
        c.authenticate()
        hsdirs = [r.fingerprint for r in c.get_network_statuses() if "HSDir" in r.flags]
        c.add_event_listener(on_content, EventType.HS_DESC_CONTENT)
        c.add_event_listener(on_desc, EventType.HS_DESC)
        for a in copies:
            c.msg("HSFETCH %s %s" % (a, " ".join("SERVER=" + fp for fp in hsdirs)))
        done.wait(FETCH_TIMEOUT)
        time.sleep(0.2)  # a content event that follows its HS_DESC FAILED
    return copies, empty, len(hsdirs)


def main():
    try:
        spec = json.load(open(sys.argv[1]))
        services = spec["services"]
    except Exception as e:
        print(f"hs_desc_check: bad spec: {e}", file=sys.stderr)
        sys.exit(2)
    ok = True

    def report(good, line):
        nonlocal ok
        ok = ok and good
        print(("ok   " if good else "FAIL ") + line, flush=True)

    own = {}  # (addr, tor) -> revision counter of its own descriptor
    for s in services:
        for tor, sock in sorted(s["own"].items()):
            text, err = own_descriptor(sock, s["addr"])
            if text is not None:
                try:
                    own[(bare(s["addr"]), tor)] = HiddenServiceDescriptorV3.from_str(text).revision_counter
                except Exception:
                    pass
            if text is None:
                report(False, f"{s['name']} on {tor}: no descriptor of its own ({err})")
                continue
            problems, facts = evaluate(text, s)
            report(not problems, f"{s['name']} on {tor}: " + ("; ".join(problems) + " -- " if problems else "") + facts)
    try:
        copies, empty, n_hsdirs = fetch_from_hsdirs(spec["client"], services)
    except Exception as e:
        for s in services:
            report(False, f"{s['name']} as the HSDirs serve it: cannot fetch ({type(e).__name__}: {e})")
        sys.exit(1)
    for s in services:
        a = bare(s["addr"])
        got = copies[a]
        if not got:
            report(False, f"{s['name']} as the HSDirs serve it: no HSDir of {n_hsdirs} served a copy")
            continue
        problems, seen = [], {}
        for hsdir, text in sorted(got.items()):
            p, facts = evaluate(text, s)
            rev = facts.split(";")[0].removeprefix("revision ")
            whose = next((t + "'s" for (oa, t), r in own.items() if oa == a and str(r) == rev), "no tor's current one")
            key = (whose, facts, "; ".join(p))
            seen.setdefault(key, []).append(hsdir[:6])
            problems += [f"{hsdir[:6]} ({whose}): {x}" for x in p]
        summary = " | ".join(f"{len(h)} x {w}: {f}" for (w, f, _), h in sorted(seen.items()))
        report(not problems, f"{s['name']} as the HSDirs serve it ({len(got)} copies of {n_hsdirs} HSDirs): "
               + ("; ".join(problems[:4]) + " -- " if problems else "") + summary)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
