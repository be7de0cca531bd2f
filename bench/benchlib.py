"""What the bench preparations share: calls to a server's HTTP API, and the
general-admission event they sell from. The scripts import it from their own folder."""
import json, uuid, urllib.request


def client(base):
    """call(method, path, token=None, body=None, dpop=None) on the server at BASE: the
    JSON it answers. Every request carries a fresh Idempotency-Key."""

    def call(method, path, token=None, body=None, dpop=None):
        req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
        req.add_header("Content-Type", "application/json")
        req.add_header("Idempotency-Key", str(uuid.uuid4()))
        if token:
            req.add_header("Authorization", "Bearer " + token)
        if dpop:
            req.add_header("DPoP", dpop)
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    return call


def open_ga_event(call, op, name, units, sale):
    """Creates an event named NAME plus a fresh id, of one general-admission section GA
    of UNITS at one price, sold under SALE, and opens it: its id."""
    spec = {
        "name": name + " " + str(uuid.uuid4()), "currency": "EUR",
        "tiers": [{"key": "STD", "name": "Standard", "price": 5000}],
        "sections": [{"key": "GA", "name": "Floor", "tier": "STD", "ga_capacity": units}],
        "sale": sale,
    }
    event = call("POST", "/v1/events", op, spec)["event_id"]
    call("POST", f"/v1/events/{event}/open", op)
    return event
