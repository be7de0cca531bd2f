#!/usr/bin/env python3
"""Creates and opens a general-admission event for the join benchmark, admitting one
buyer a second (so the run measures joins, not admissions), and prints its id.
Usage: join_prepare.py BASE OPERATOR_KEY"""
import json, sys, uuid, urllib.request

base, op = sys.argv[1], sys.argv[2]


def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    req.add_header("Idempotency-Key", str(uuid.uuid4()))
    req.add_header("Authorization", "Bearer " + op)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


spec = {
    "name": "join bench " + str(uuid.uuid4()), "currency": "EUR",
    "tiers": [{"key": "STD", "name": "Standard", "price": 5000}],
    "sections": [{"key": "GA", "name": "Floor", "tier": "STD", "ga_capacity": 1000}],
    "sale": {"max_tickets_per_buyer": 4, "hold_ttl_s": 600, "payment_grace_s": 120, "admission_rate_per_s": 1},
}
event = call("POST", "/v1/events", spec)["event_id"]
call("POST", f"/v1/events/{event}/open")
print(event)
