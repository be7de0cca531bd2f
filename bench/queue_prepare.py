#!/usr/bin/env python3
"""Prepares the queue-status benchmark: creates and opens an event, joins BUYERS buyers,
and prints the event id and the last buyer's queue ticket.
Usage: queue_prepare.py BASE OPERATOR_KEY BUYERS"""
import sys
from concurrent.futures import ThreadPoolExecutor

import benchlib

base, op, buyers = sys.argv[1], sys.argv[2], int(sys.argv[3])
call = benchlib.client(base)

sale = {"max_tickets_per_buyer": 4, "hold_ttl_s": 600, "payment_grace_s": 120, "admission_rate_per_s": 1}
event = benchlib.open_ga_event(call, op, "queue bench", 1000, sale)

def join(_):
    token = call("POST", "/v1/buyers")["token"]
    return call("POST", f"/v1/events/{event}/queue", token)["queue_ticket"]

with ThreadPoolExecutor(16) as pool:
    tickets = list(pool.map(join, range(buyers)))
print(event, tickets[-1])
