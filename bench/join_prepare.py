#!/usr/bin/env python3
"""Creates and opens a general-admission event for the join benchmark, admitting one
buyer a second (so the run measures joins, not admissions), and prints its id.
Usage: join_prepare.py BASE OPERATOR_KEY"""
import sys

from benchlib import client, open_ga_event

base, op = sys.argv[1], sys.argv[2]
sale = {"max_tickets_per_buyer": 4, "hold_ttl_s": 600, "payment_grace_s": 120, "admission_rate_per_s": 1}
print(open_ga_event(client(base), op, "join bench", 1000, sale))
