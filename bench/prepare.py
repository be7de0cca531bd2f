#!/usr/bin/env python3
"""Prepares a hold benchmark: creates and opens a general-admission event, creates
buyers, queues and admits them, and writes one admission token per line.
Usage: prepare.py BASE OPERATOR_KEY UNITS BUYERS TOKENS_FILE  -> prints the event id."""
import json, sys, time, uuid, urllib.request
from concurrent.futures import ThreadPoolExecutor

base, op, units, buyers, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def call(method, path, token=None, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    req.add_header("Idempotency-Key", str(uuid.uuid4()))
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())

spec = {
    "name": "bench " + str(uuid.uuid4()), "currency": "EUR",
    "tiers": [{"key": "STD", "name": "Standard", "price": 5000}],
    "sections": [{"key": "GA", "name": "Floor", "tier": "STD", "ga_capacity": units}],
    "sale": {"max_tickets_per_buyer": 50, "hold_ttl_s": 3600, "payment_grace_s": 120, "admission_rate_per_s": 1000000},
}
event = call("POST", "/v1/events", op, spec)["event_id"]
call("POST", f"/v1/events/{event}/open", op)

def admitted(_):
    token = call("POST", "/v1/buyers")["token"]
    ticket = call("POST", f"/v1/events/{event}/queue", token)["queue_ticket"]
    while True:
        s = call("GET", "/v1/queue/status", ticket)
        if s.get("admission_token"):
            return s["admission_token"]
        time.sleep(0.05)

with ThreadPoolExecutor(32) as pool:
    tokens = list(pool.map(admitted, range(buyers)))
with open(out, "w") as f:
    f.write("\n".join(tokens) + "\n")
print(event)
