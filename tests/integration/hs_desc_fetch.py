#!/usr/bin/python3
# hs_desc_fetch.py CONTROL_SOCKET ADDRESS — fetch ADDRESS's v3 descriptor from an HSDir through the tor at
# CONTROL_SOCKET (HSFETCH, answered by an HS_DESC_CONTENT event), decrypt both layers with stem (Debian's
# python3-stem, a test tool only) and print the inner layer's text. Exits 1 with a message if it cannot.
# stem 1.8.1's Controller.get_hidden_service_descriptor parses the answer as a v2 descriptor, so the
# event's raw text is taken and parsed as v3 here. Run with /usr/bin/python3: stem is Debian's package.
import queue
import sys

from stem.control import Controller, EventType
from stem.descriptor.hidden_service import HiddenServiceDescriptorV3

sock, addr = sys.argv[1], sys.argv[2].removesuffix(".onion")
got = queue.Queue()


def on_content(event):
    lines = event.raw_content().replace("\r\n", "\n").split("\n")
    # "650+HS_DESC_CONTENT <addr> <descid> <hsdir>", the descriptor, ".", "650 OK"
    if len(lines) > 2 and lines[0].startswith("650+HS_DESC_CONTENT %s " % addr):
        body = []
        for line in lines[1:]:
            if line == ".":
                break
            body.append(line[1:] if line.startswith("..") else line)
        if any(body):
            got.put("\n".join(body) + "\n")


try:
    with Controller.from_socket_file(sock) as c:
        c.authenticate()
        c.add_event_listener(on_content, EventType.HS_DESC_CONTENT)
        c.msg("HSFETCH %s" % addr)
        text = got.get(timeout=60)
        inner = HiddenServiceDescriptorV3.from_str(text).decrypt(addr)
        out = str(inner)
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
except Exception as e:  # stem and queue raise many kinds; any of them means no readable descriptor
    print(f"hs_desc_fetch: {type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(1)
