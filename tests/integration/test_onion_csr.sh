#!/bin/bash
# `onionfront onion-csr` and `onion-caa` (issue 30) checked with tools nobody here wrote:
#  - keys made by tor itself: Debian's tor, offline (DisableNetwork 1, no ports), creates two single-onion
#    HiddenServiceDirs; one is a service's key_dir in place, the other comes in with `onionfront
#    import-key`; a third service gets its key from `onionfront new-key` (onionfront's own path);
#  - for each, the CSR passes `openssl req -verify`, and Python's `cryptography` (Debian's
#    python3-cryptography) loads it, verifies its signature, finds caSigningNonce (2.23.140.41) holding
#    exactly the CA's nonce bytes (given as hex, as base64, and with a base64: prefix) and
#    applicantSigningNonce (2.23.140.42) with at least 8 bytes, a public key equal to the 32 bytes the
#    onion address encodes (its SHA3 checksum checked too), and the subjectAltName (plus *. with
#    --wildcard), which is tor's own hostname for tor's keys; two requests carry different applicant
#    nonces;
#  - the in-band CAA object's signature verifies with `openssl pkeyutl -verify -rawin` against a public
#    key PEM built from the onion address alone, over "onion-caa|<expiry>|<caa>"; a changed text does not
#    verify; the expiry is now + --expiry;
#  - bad input (a nonce that is neither hex nor base64, a short one, an unknown service, a service with no
#    key yet, an Onionbalance instance, a bad --caa or --expiry): each exits 1 with a message naming the
#    problem, and writes nothing (no output file, no key directory);
#  - a service with client_auth and an anonymous one: both commands refuse them, saying that CT logs
#    would publish the address and naming --publish-address-in-ct-logs; with that flag the CSR verifies.
# Needs no network: the tor here never connects anywhere.
set -u
source "$(dirname "$0")/lib.sh"
of_init

PY=/usr/bin/python3
TOR=${OF_TOR_BINARY:-tor}

# --- keys from tor ----------------------------------------------------------------------------------------
of_log "=== tor creates two onion keys, offline"
: >"$OF_TMP/torrc"
"$TOR" -f "$OF_TMP/torrc" --DisableNetwork 1 --SocksPort 0 --DataDirectory "$OF_TMP/tordata" \
  --HiddenServiceSingleHopMode 1 --HiddenServiceNonAnonymousMode 1 \
  --HiddenServiceDir "$OF_TMP/torhs1" --HiddenServicePort "80 127.0.0.1:9" \
  --HiddenServiceDir "$OF_TMP/torhs2" --HiddenServicePort "80 127.0.0.1:9" \
  --Log "notice file $OF_TMP/tor.log" >"$OF_TMP/tor.out" 2>&1 &
tor_pid=$!
of_track_pid "$tor_pid"
for ((i = 0; i < 300; i++)); do
  [[ -s $OF_TMP/torhs1/hostname && -s $OF_TMP/torhs2/hostname ]] && break
  kill -0 "$tor_pid" 2>/dev/null || break
  sleep 0.1
done
of_stop_pid "$tor_pid" 10
if [[ ! -s $OF_TMP/torhs1/hostname || ! -s $OF_TMP/torhs2/hostname ]]; then
  of_fail "tor did not create its keys"
  tail -n 20 "$OF_TMP/tor.log" "$OF_TMP/tor.out" >&2
  of_summary
  exit 1
fi
tor_addr1=$(cat "$OF_TMP/torhs1/hostname")
tor_addr2=$(cat "$OF_TMP/torhs2/hostname")
of_pass "tor made $tor_addr1 and $tor_addr2"
# These directories were only ever used by a single onion (tor 0.4.9 writes no marker): say so, as an
# operator does (keys.c, the anonymity rule).
touch "$OF_TMP/torhs1/onion_service_non_anonymous" "$OF_TMP/torhs2/onion_service_non_anonymous"

config=$OF_TMP/onionfront.json
svc() { echo "{ \"name\": \"$1\", \"ports\": [ { \"virtual\": 443, \"target\": \"127.0.0.1:8443\" } ]$2 }"; }
# No tor is started from this config (the commands work offline), so it needs no network settings.
cat >"$config" <<EOF
{ "state_dir": "$OF_TMP/state", "run_dir": "$OF_TMP/run",
  "services": [ $(svc torkey ", \"key_dir\": \"$OF_TMP/torhs1\""), $(svc imported ""), $(svc fresh ""),
    $(svc nokey ""), $(svc inst ", \"onionbalance\": { \"master_address\": \"$tor_addr1\" }"),
    $(svc private ", \"client_auth\": [ { \"name\": \"alice\", \"public_key\": \"N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ\" } ]"),
    $(svc hidden ", \"mode\": \"anonymous\"") ] }
EOF
OF="$OF_BIN -c $config"

$OF import-key imported "$OF_TMP/torhs2" >"$OF_TMP/import.out" 2>&1
of_check "import-key of tor's second directory exits 0" test $? -eq 0
of_check "import-key names tor's address" grep -q "${tor_addr2%.onion}" "$OF_TMP/import.out"
$OF new-key fresh >"$OF_TMP/newkey.out" 2>&1
of_check "new-key fresh exits 0" test $? -eq 0
fresh_addr=$(grep -Eo '[a-z2-7]{56}\.onion' "$OF_TMP/newkey.out" | tail -n 1)
of_check "new-key printed an address" test -n "$fresh_addr"

# check_csr FILE ADDRESS CA_NONCE_HEX WILDCARD(0|1): Python's cryptography on the request.
check_csr() {
  "$PY" - "$@" <<'EOF'
import base64, hashlib, sys
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

path, address, ca_hex, wildcard = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
csr = x509.load_pem_x509_csr(open(path, "rb").read())
assert csr.is_signature_valid, "signature does not verify"
assert isinstance(csr.public_key(), ed25519.Ed25519PublicKey), "not an Ed25519 key"

# The onion address (address-spec): base32(PUBKEY | CHECKSUM | VERSION), CHECKSUM from SHA3-256.
label = address[: -len(".onion")]
raw = base64.b32decode(label.upper())
pub, checksum, version = raw[:32], raw[32:34], raw[34]
assert version == 3, "not a v3 address"
assert hashlib.sha3_256(b".onion checksum" + pub + bytes([version])).digest()[:2] == checksum, "bad checksum"
got = csr.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
assert got == pub, "the request's key is not the address's key"

def attr(oid):
    found = [a for a in csr.attributes if a.oid.dotted_string == oid]
    assert len(found) == 1, f"{oid}: {len(found)} attributes"
    return found[0].value

assert attr("2.23.140.41") == bytes.fromhex(ca_hex), "caSigningNonce differs from the CA's nonce"
app = attr("2.23.140.42")
assert len(app) >= 8, "applicantSigningNonce has fewer than 64 bits"
san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
names = san.get_values_for_type(x509.DNSName)
want = [address] + (["*." + address] if wildcard else [])
assert names == want, f"subjectAltName {names}, want {want}"
print(app.hex())
EOF
}

# --- CSRs ---------------------------------------------------------------------------------------------------
of_log "=== onion-csr for tor's key in place, the imported one and onionfront's own"
ca_hex=4841524943413c336f6e696f6e73   # HARICA's example nonce, "HARICA<3onions"
declare -A addr=([torkey]=$tor_addr1 [imported]=$tor_addr2 [fresh]=$fresh_addr)
for s in torkey imported fresh; do
  out=$OF_TMP/$s.csr
  $OF onion-csr "$s" --ca-nonce "$ca_hex" --out "$out" >"$OF_TMP/$s.out" 2>&1
  of_check "$s: onion-csr --out exits 0" test $? -eq 0
  of_check "$s: the message names the address and the file" \
    bash -c "grep -q '${addr[$s]}' '$OF_TMP/$s.out' && grep -q '$out' '$OF_TMP/$s.out'"
  of_check "$s: openssl req -verify accepts it" \
    bash -c "openssl req -verify -in '$out' -noout 2>&1 | grep -q 'verify OK'"
  of_check "$s: cryptography finds the key of ${addr[$s]}, both nonces and the name" \
    check_csr "$out" "${addr[$s]}" "$ca_hex" 0
done

# ACME hands out base64 (RFC 9799 3.2); to standard output; a wildcard; fresh applicant nonces.
b64_hex=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
b64=$("$PY" -c 'import base64, sys; print(base64.b64encode(bytes.fromhex(sys.argv[1])).decode())' "$b64_hex")
$OF onion-csr torkey --wildcard --ca-nonce "base64:$b64" >"$OF_TMP/w.csr" 2>"$OF_TMP/w.err"
of_check "onion-csr --wildcard with a base64: nonce to standard output exits 0" test $? -eq 0
of_check "standard output holds only the PEM request" \
  bash -c "head -n 1 '$OF_TMP/w.csr' | grep -qx -- '-----BEGIN CERTIFICATE REQUEST-----'"
of_check "openssl req -verify accepts the wildcard request" \
  bash -c "openssl req -verify -in '$OF_TMP/w.csr' -noout 2>&1 | grep -q 'verify OK'"
app1=$(check_csr "$OF_TMP/w.csr" "$tor_addr1" "$b64_hex" 1)
of_check "cryptography: the base64 nonce's bytes, NAME.onion and *.NAME.onion" test -n "$app1"
$OF onion-csr torkey --ca-nonce "$b64" >"$OF_TMP/w2.csr" 2>/dev/null
app2=$(check_csr "$OF_TMP/w2.csr" "$tor_addr1" "$b64_hex" 0)
of_check "an unprefixed base64 nonce is read as base64" test -n "$app2"
of_check "each request has its own applicant nonce" test "$app1" != "$app2"

# --- in-band CAA --------------------------------------------------------------------------------------------
of_log "=== onion-caa"
# The public key as PEM from the onion address alone: SubjectPublicKeyInfo = 302a300506032b6570032100 || key.
"$PY" - "$tor_addr1" "$OF_TMP/pub.pem" <<'EOF'
import base64, sys
raw = base64.b32decode(sys.argv[1][: -len(".onion")].upper())[:32]
der = bytes.fromhex("302a300506032b6570032100") + raw
b64 = base64.b64encode(der).decode()
open(sys.argv[2], "w").write("-----BEGIN PUBLIC KEY-----\n" + b64 + "\n-----END PUBLIC KEY-----\n")
EOF
before=$(date +%s)
$OF onion-caa torkey --caa 'issue "harica.gr"' --caa '128 iodef "mailto:security@example.com"' --expiry 3600 \
  >"$OF_TMP/caa.json" 2>"$OF_TMP/caa.err"
of_check "onion-caa exits 0" test $? -eq 0
after=$(date +%s)
# Split the object into the signed text and the raw signature (base64url, RFC 9799 6.4).
"$PY" - "$OF_TMP/caa.json" "$OF_TMP" <<'EOF' >"$OF_TMP/caa.fields"
import base64, json, sys
o = json.load(open(sys.argv[1]))
assert sorted(o) == ["caa", "expiry", "signature"], sorted(o)
assert isinstance(o["expiry"], int)
assert "+" not in o["signature"] and "/" not in o["signature"], "not base64url"
open(sys.argv[2] + "/caa.msg", "wb").write(f"onion-caa|{o['expiry']}|{o['caa']}".encode())
open(sys.argv[2] + "/caa.bad", "wb").write(f"onion-caa|{o['expiry']}|{o['caa']}x".encode())
open(sys.argv[2] + "/caa.sig", "wb").write(base64.urlsafe_b64decode(o["signature"]))
print(o["expiry"])
print(json.dumps(o["caa"]))
EOF
expiry=$(sed -n 1p "$OF_TMP/caa.fields")
of_check "the CAA records, in descriptor form, one per line" \
  test "$(sed -n 2p "$OF_TMP/caa.fields")" = \
  '"caa 0 issue \"harica.gr\"\ncaa 128 iodef \"mailto:security@example.com\""'
of_check "expiry is now + 3600" test "$expiry" -ge $((before + 3600)) -a "$expiry" -le $((after + 3600))
pkeyutl_verify() { # the signed text's file
  openssl pkeyutl -verify -pubin -inkey "$OF_TMP/pub.pem" -rawin -in "$1" -sigfile "$OF_TMP/caa.sig" 2>&1 |
    grep -q 'Signature Verified Successfully'
}
of_check "openssl pkeyutl verifies the signature with the address's key" pkeyutl_verify "$OF_TMP/caa.msg"
pkeyutl_refuses() { ! pkeyutl_verify "$1"; }
of_check "... and not for a changed text" pkeyutl_refuses "$OF_TMP/caa.bad"
of_check "stderr names the address" grep -q "onionCAA\[\"$tor_addr1\"\]" "$OF_TMP/caa.err"

# --- bad input: exit 1, a clear message, nothing written ------------------------------------------------------
of_log "=== refusals"
refused() { # description expected-message args...
  local what=$1 want=$2
  shift 2
  rm -f "$OF_TMP/r.out"
  $OF "$@" >"$OF_TMP/r.stdout" 2>"$OF_TMP/r.err"
  local rc=$?
  if [[ $rc -eq 1 ]] && grep -q -- "$want" "$OF_TMP/r.err" && [[ ! -e $OF_TMP/r.out && ! -s $OF_TMP/r.stdout ]]; then
    of_pass "$what"
  else
    of_fail "$what (exit $rc): $(cat "$OF_TMP/r.err")"
  fi
}
refused "a nonce that is neither hex nor base64" "--ca-nonce: neither hex" \
  onion-csr torkey --ca-nonce 'not a nonce!' --out "$OF_TMP/r.out"
refused "a nonce of fewer than 8 bytes" "--ca-nonce: 4 bytes once decoded as hex" \
  onion-csr torkey --ca-nonce 00112233 --out "$OF_TMP/r.out"
refused "an unknown service" 'no service named "nosuch"' \
  onion-csr nosuch --ca-nonce "$ca_hex" --out "$OF_TMP/r.out"
refused "a service with no key yet" "service nokey has no key yet" \
  onion-csr nokey --ca-nonce "$ca_hex" --out "$OF_TMP/r.out"
of_check "... and its key directory was not created" test ! -e "$OF_TMP/state/keys/nokey"
refused "an Onionbalance instance" "service inst is an Onionbalance instance of ${tor_addr1}" \
  onion-csr inst --ca-nonce "$ca_hex" --out "$OF_TMP/r.out"
refused "onion-caa for an instance" "Onionbalance instance" onion-caa inst --caa 'issue "harica.gr"'
refused "onion-caa with a bad record" "--caa issue harica.gr\"x: value" onion-caa torkey --caa 'issue harica.gr"x'
refused "onion-caa with an expiry over 8 hours" "--expiry 28801: must be a number of seconds, 1-28800" \
  onion-caa torkey --caa 'issue "harica.gr"' --expiry 28801

# --- a private or anonymous service's address would be published in CT logs: only on the operator's word ---
of_log "=== client-auth and anonymous services"
for s in private hidden; do
  $OF new-key "$s" >"$OF_TMP/$s.newkey" 2>&1
  of_check "new-key $s exits 0" test $? -eq 0
  s_addr=$(grep -Eo '[a-z2-7]{56}\.onion' "$OF_TMP/$s.newkey" | tail -n 1)
  refused "onion-csr for $s without the flag" "Certificate Transparency logs, which publish its .onion address" \
    onion-csr "$s" --ca-nonce "$ca_hex" --out "$OF_TMP/r.out"
  of_check "... and the message names the flag" grep -q -- "--publish-address-in-ct-logs" "$OF_TMP/r.err"
  refused "onion-caa for $s without the flag" "--publish-address-in-ct-logs" onion-caa "$s" --caa 'issue "harica.gr"'
  $OF onion-csr "$s" --ca-nonce "$ca_hex" --publish-address-in-ct-logs --out "$OF_TMP/$s.csr" >"$OF_TMP/$s.out" 2>&1
  of_check "onion-csr $s --publish-address-in-ct-logs exits 0" test $? -eq 0
  of_check "$s: cryptography finds the key of $s_addr, both nonces and the name" \
    check_csr "$OF_TMP/$s.csr" "$s_addr" "$ca_hex" 0
done

of_summary
