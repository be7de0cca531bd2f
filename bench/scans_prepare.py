#!/usr/bin/env python3
"""Prepares a scan benchmark: creates and opens a general-admission event, sells it out
to buyers of TICKETS_PER_BUYER tickets each (stand-in card, captured at checkout), makes
one gate device, and writes every ticket's barcode one per line.
Usage: scans_prepare.py BASE OPERATOR_KEY TICKETS BARCODES_FILE
  -> prints "EVENT_ID GATE_CREDENTIAL"."""
import sys, time
from concurrent.futures import ThreadPoolExecutor

import benchlib

base, op, tickets, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
per_buyer = 50
call = benchlib.client(base)

sale = {"max_tickets_per_buyer": per_buyer, "hold_ttl_s": 3600, "payment_grace_s": 120, "admission_rate_per_s": 1000000}
event = benchlib.open_ga_event(call, op, "scan bench", tickets, sale)

def bought(quantity):
    token = call("POST", "/v1/buyers")["token"]
    ticket = call("POST", f"/v1/events/{event}/queue", token)["queue_ticket"]
    deadline = time.time() + 60
    while True:
        s = call("GET", "/v1/queue/status", ticket)
        if s.get("admission_token"):
            break
        if time.time() > deadline:
            sys.exit("a buyer was not admitted within 60 s")
        time.sleep(0.05)
    hold = call("POST", f"/v1/events/{event}/holds", s["admission_token"],
                {"best_available": {"section": "GA", "quantity": quantity}})["hold_id"]
    call("POST", f"/v1/holds/{hold}/checkout", token, {"payment_method": "pm_card_visa"})
    return [t["barcode"] for t in call("GET", "/v1/me/tickets", token)["tickets"]]

lots = [per_buyer] * (tickets // per_buyer) + ([tickets % per_buyer] if tickets % per_buyer else [])
with ThreadPoolExecutor(16) as pool:
    barcodes = [b for lot in pool.map(bought, lots) for b in lot]
if len(barcodes) != tickets:
    sys.exit(f"expected {tickets} barcodes, got {len(barcodes)}")
gate = call("POST", f"/v1/events/{event}/gates", op, {"name": "bench gate"})["credential"]
with open(out, "w") as f:
    f.write("\n".join(barcodes) + "\n")
print(event, gate)
