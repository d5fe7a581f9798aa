#!/usr/bin/python3
# hs_desc_fetch.py CONTROL_SOCKET ADDRESS [--outer | --key BASE32_PRIVATE_KEY] — fetch ADDRESS's v3
# descriptor from an HSDir through the tor at CONTROL_SOCKET (HSFETCH, answered by an HS_DESC_CONTENT
# event), decrypt it with stem (Debian's python3-stem, a test tool only) and print:
#   default   the inner layer (fails when the descriptor needs client authorization: the inner layer's
#             key then includes a descriptor cookie only authorized clients can recover)
#   --outer   the outer ("superencrypted") layer: desc-auth-type, desc-auth-ephemeral-key, auth-client
#   --key K   the inner layer, decrypted as the client with x25519 private key K would (rend-spec-v3
#             2.5.1.2: SECRET_SEED = x25519(K, ephemeral key), KEYS = SHAKE256(subcredential |
#             SECRET_SEED), CLIENT-ID = KEYS[:8], COOKIE-KEY = KEYS[8:40]; the auth-client line with that
#             id holds the cookie encrypted with AES-256-CTR; the inner layer's secret is
#             blinded key | cookie). stem 1.8.1 cannot do this itself.
# Exits 1 with a message if it cannot. stem 1.8.1's Controller.get_hidden_service_descriptor parses the
# answer as a v2 descriptor, so the event's raw text is taken and parsed as v3 here. Run with
# /usr/bin/python3: stem is Debian's package. hs_desc_check.py imports desc_body, layers and inner_with_key.
import base64
import hashlib
import queue
import sys

from stem.control import Controller, EventType
from stem.descriptor.hidden_service import HiddenServiceDescriptorV3, InnerLayer, OuterLayer


def desc_body(event, addr):
    """The descriptor an HS_DESC_CONTENT event carries for `addr` (without .onion), or None (a failed
    fetch's event is empty)."""
    lines = event.raw_content().replace("\r\n", "\n").split("\n")
    # "650+HS_DESC_CONTENT <addr> <descid> <hsdir>", the descriptor, ".", "650 OK"
    if len(lines) > 2 and lines[0].startswith("650+HS_DESC_CONTENT %s " % addr):
        body = []
        for line in lines[1:]:
            if line == ".":
                break
            body.append(line[1:] if line.startswith("..") else line)
        if any(body):
            return "\n".join(body) + "\n"
    return None


def b64(s):
    return base64.b64decode(s + "=" * (-len(s) % 4))


def layers(desc, addr):
    """The outer layer and what decrypting the inner one takes (subcredential, blinded key)."""
    blinded = desc.signing_cert.signing_key()
    ident = HiddenServiceDescriptorV3.identity_key_from_address(addr.removesuffix(".onion"))
    subcred = HiddenServiceDescriptorV3._subcredential(ident, blinded)
    return OuterLayer._decrypt(desc.superencrypted, desc.revision_counter, subcred, blinded), subcred, blinded


def inner_with_key(desc, addr, key_b32):
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    outer, subcred, blinded = layers(desc, addr)
    sk = X25519PrivateKey.from_private_bytes(base64.b32decode(key_b32.upper() + "===="))
    seed = sk.exchange(X25519PublicKey.from_public_bytes(b64(outer.ephemeral_key)))
    keys = hashlib.shake_256(subcred + seed).digest(40)
    for cid, client in outer.clients.items():
        if b64(cid) == keys[:8]:
            dec = Cipher(algorithms.AES(keys[8:40]), modes.CTR(b64(client.iv))).decryptor()
            cookie = dec.update(b64(client.cookie)) + dec.finalize()
            return InnerLayer._decrypt(outer, desc.revision_counter, subcred, blinded + cookie)
    raise ValueError("no auth-client line for this key (%d lines)" % len(outer.clients))


def main():
    sock, addr = sys.argv[1], sys.argv[2].removesuffix(".onion")
    mode = sys.argv[3] if len(sys.argv) > 3 else "inner"
    got = queue.Queue()

    def on_content(event):
        body = desc_body(event, addr)
        if body is not None:
            got.put(body)

    try:
        with Controller.from_socket_file(sock) as c:
            c.authenticate()
            c.add_event_listener(on_content, EventType.HS_DESC_CONTENT)
            c.msg("HSFETCH %s" % addr)
            text = got.get(timeout=60)
            desc = HiddenServiceDescriptorV3.from_str(text)
            if mode == "--outer":
                out = str(layers(desc, addr)[0])
            elif mode == "--key":
                out = str(inner_with_key(desc, addr, sys.argv[4]))
            else:
                out = str(desc.decrypt(addr))
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
    except Exception as e:  # stem and queue raise many kinds; any of them means no readable descriptor
        print(f"hs_desc_fetch: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
