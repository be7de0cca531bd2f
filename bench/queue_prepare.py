#!/usr/bin/env python3
"""Prepares the queue-status benchmark: creates and opens an event, joins BUYERS buyers,
and prints the event id and the last buyer's queue ticket.
Usage: queue_prepare.py BASE OPERATOR_KEY BUYERS"""
import json, sys, uuid, urllib.request
from concurrent.futures import ThreadPoolExecutor

base, op, buyers = sys.argv[1], sys.argv[2], int(sys.argv[3])

def call(method, path, token=None, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    req.add_header("Idempotency-Key", str(uuid.uuid4()))
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())

spec = {
    "name": "queue bench " + str(uuid.uuid4()), "currency": "EUR",
    "tiers": [{"key": "STD", "name": "Standard", "price": 5000}],
    "sections": [{"key": "GA", "name": "Floor", "tier": "STD", "ga_capacity": 1000}],
    "sale": {"max_tickets_per_buyer": 4, "hold_ttl_s": 600, "payment_grace_s": 120, "admission_rate_per_s": 1},
}
event = call("POST", "/v1/events", op, spec)["event_id"]
call("POST", f"/v1/events/{event}/open", op)

def join(_):
    token = call("POST", "/v1/buyers")["token"]
    return call("POST", f"/v1/events/{event}/queue", token)["queue_ticket"]

with ThreadPoolExecutor(16) as pool:
    tickets = list(pool.map(join, range(buyers)))
print(event, tickets[-1])
