#!/usr/bin/env python3
"""Prepares a hold benchmark: creates and opens a general-admission event, creates
buyers, queues and admits them, and writes one admission token per line.
Usage: prepare.py BASE OPERATOR_KEY UNITS BUYERS TOKENS_FILE [KEYS_FILE]  -> prints the event id.
With KEYS_FILE the event requires proofs of possession (docs/ARCHITECTURE.md §14): each
buyer makes an Ed25519 key and joins proving it, so its admission token is bound to it,
and KEYS_FILE gets "token<TAB>private key seed (hex)" per buyer.
       prepare.py proofs KEYS_FILE EVENT COUNT OUT_FILE
writes COUNT lines "token<TAB>DPoP proof" for holds of EVENT, round robin over the
buyers of KEYS_FILE, each proof fresh (its own jti, iat now): one line per request,
used once. Needs python's `cryptography` package."""
import base64, json, sys, time, uuid
from concurrent.futures import ThreadPoolExecutor

import benchlib


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def compact(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


class Prover:
    """One buyer's key and the proofs it signs (RFC 9449, EdDSA)."""

    def __init__(self, seed=None):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        self.key = Ed25519PrivateKey.from_private_bytes(seed) if seed else Ed25519PrivateKey.generate()
        x = b64(self.key.public_key().public_bytes_raw())
        self.header = b64(compact({"typ": "dpop+jwt", "alg": "EdDSA", "jwk": {"kty": "OKP", "crv": "Ed25519", "x": x}}))

    def seed(self):
        return self.key.private_bytes_raw().hex()

    def proof(self, method, path, iat=None):
        claims = b64(compact({"htm": method, "htu": path, "iat": int(iat or time.time()), "jti": uuid.uuid4().hex}))
        signing = f"{self.header}.{claims}"
        return f"{signing}.{b64(self.key.sign(signing.encode()))}"


def proofs(keys_file, event, count, out):
    buyers = []
    with open(keys_file) as f:
        for line in f:
            token, seed = line.rstrip("\n").split("\t")
            buyers.append((token, Prover(bytes.fromhex(seed))))
    path = f"/v1/events/{event}/holds"
    now = time.time()
    with open(out, "w") as f:
        for i in range(count):
            token, prover = buyers[i % len(buyers)]
            f.write(f"{token}\t{prover.proof('POST', path, now)}\n")


if len(sys.argv) > 1 and sys.argv[1] == "proofs":
    proofs(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    sys.exit(0)

base, op, units, buyers, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
keys_out = sys.argv[6] if len(sys.argv) > 6 else None
call = benchlib.client(base)

sale = {"max_tickets_per_buyer": 50, "hold_ttl_s": 3600, "payment_grace_s": 120, "admission_rate_per_s": 1000000}
if keys_out:
    sale["proof_of_possession"] = "required"
event = benchlib.open_ga_event(call, op, "bench", units, sale)

def admitted(_):
    token = call("POST", "/v1/buyers")["token"]
    prover = Prover() if keys_out else None
    path = f"/v1/events/{event}/queue"
    dpop = prover.proof("POST", path) if prover else None
    ticket = call("POST", path, token, dpop=dpop)["queue_ticket"]
    while True:
        s = call("GET", "/v1/queue/status", ticket)
        if s.get("admission_token"):
            return s["admission_token"], prover.seed() if prover else None
        time.sleep(0.05)

with ThreadPoolExecutor(32) as pool:
    admissions = list(pool.map(admitted, range(buyers)))
with open(out, "w") as f:
    f.write("\n".join(t for t, _ in admissions) + "\n")
if keys_out:
    with open(keys_out, "w") as f:
        f.write("".join(f"{t}\t{k}\n" for t, k in admissions))
print(event)
