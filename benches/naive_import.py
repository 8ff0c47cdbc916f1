#!/usr/bin/env python3
"""Naive subscriber import: the baseline listpipe is benchmarked against.

This is the importer a data team would write in an afternoon: Python, the csv
module, `requests` (or urllib.request from the standard library when
`requests` is not installed), a ThreadPoolExecutor, and one HTTP request per
receiver through the single-receiver endpoint of the v3 API:

    POST /v3/groups/{group_id}/receivers            create the receiver
    PUT  /v3/groups/{group_id}/receivers/{email}    on 409 (exists): update it

It is written to be honest, not slow: one requests.Session (keep-alive
connection) per worker thread, rows streamed from the CSV, work handed to the
pool in chunks so memory stays flat. It does no batching, no retries and no
change detection; that is the point of the comparison.

Before the receivers it makes sure the group exists (GET /v3/groups, else
POST /v3/groups) and that the attributes it writes exist: global ones through
POST /v3/attributes (no group_id, i.e. group_id 0) and group ones through
POST /v3/groups/{group_id}/attributes. 409 ("exists already") is fine.

Usage:

    python3 benches/naive_import.py --url http://127.0.0.1:PORT --token TOKEN \\
        --group NAME --receivers receivers.csv [--orders orders.csv] \\
        [--workers 16] [--limit N] [--map KEY=COLUMN,...]

Flags:

    --url URL          base address of the v3 API (without /v3)
    --token TOKEN      access token, sent as `Authorization: Bearer TOKEN`
    --group NAME       group (receiver list) to import into; created if missing
    --receivers FILE   receivers CSV (UTF-8, a BOM is tolerated)
    --orders FILE      optional orders CSV; loaded into a dict by email first,
                       each receiver is sent with its orders
    --workers N        threads, i.e. requests in flight (default 16)
    --limit N          read only the first N data rows of the receivers CSV
    --map SPEC         column mapping, comma-separated KEY=COLUMN pairs, e.g.
                         --map 'email=Email,firstname=First Name,lastname=Last Name'
                       KEY is one of: email (required), firstname, lastname
                       (global attributes), city, birthday, score (group
                       attributes), signup (registered and activated), tags.
                       With --map, only the mapped keys are imported (no
                       group attributes unless mapped). Without --map, the
                       layout written by `listpipe bench` is assumed:
                         email=email,firstname=first_name,lastname=last_name,
                         city=city,birthday=birthday,score=score,
                         signup=signup,tags=tags

Input layout (default mapping). Receivers CSV: email, first_name, last_name,
city, birthday (YYYY-MM-DD), score (integer), signup ("%Y-%m-%d %H:%M:%S",
UTC, sent as Unix seconds in registered and activated), tags (comma-separated).
Orders CSV: email, order_id, product_id, product, price, currency, quantity,
ordered_at ("%Y-%m-%d %H:%M:%S", UTC, sent as the order's stamp).

Cleaning: emails are stripped and lower-cased and checked against a simple
regex; rows with an invalid email are skipped, and so is every later row with
an email already seen (first one wins). An unparsable birthday, score or
signup value is left out of that receiver; a bad order line is skipped.

Output: one JSON line on stdout at the end,
    {"rows": N, "sent": N, "created": N, "updated": N, "failed": N,
     "seconds": S, "rows_per_sec": R}
rows = data rows read, sent = receivers sent (rows minus invalid and duplicate
ones), seconds = wall time of the whole run (setup included), rows_per_sec =
rows / seconds. Skipped rows and the first few failures go to stderr.

Example with a HubSpot contacts export (email and names only):

    python3 benches/naive_import.py --url "$URL" --token "$T" --group HubSpot \\
        --receivers hubspot_contacts.csv \\
        --map 'email=Email,firstname=First Name,lastname=Last Name'

Exit status: 0 when nothing failed, 1 when some receivers failed, 2 on a setup
error (bad arguments, missing columns, group or attribute creation refused).
"""

import argparse
import concurrent.futures
import csv
import json
import re
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone

try:
    import requests
except ImportError:  # bare python3: fall back to the standard library
    requests = None
    import urllib.error
    import urllib.request

EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
CHUNK = 5000  # receivers handed to the pool at a time

DEFAULT_MAP = {
    "email": "email",
    "firstname": "first_name",
    "lastname": "last_name",
    "city": "city",
    "birthday": "birthday",
    "score": "score",
    "signup": "signup",
    "tags": "tags",
}
GLOBAL_ATTRIBUTES = {"firstname": "text", "lastname": "text"}
GROUP_ATTRIBUTES = {"city": "text", "birthday": "date", "score": "number"}
KNOWN_KEYS = set(DEFAULT_MAP)


# --- HTTP -------------------------------------------------------------------

class Api:
    """Tiny client: one requests.Session per thread, or urllib when needed."""

    def __init__(self, base_url, token):
        self.base = base_url.rstrip("/")
        self.headers = {
            "Authorization": "Bearer " + token,
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self.local = threading.local()

    def session(self):
        s = getattr(self.local, "session", None)
        if s is None:
            s = requests.Session()
            s.headers.update(self.headers)
            self.local.session = s
        return s

    def call(self, method, path, body=None):
        """Return (status, parsed JSON or None)."""
        url = self.base + path
        data = json.dumps(body).encode("utf-8") if body is not None else None
        if requests is not None:
            r = self.session().request(method, url, data=data, timeout=60)
            status, text = r.status_code, r.text
        else:
            req = urllib.request.Request(url, data=data, method=method, headers=self.headers)
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    status, text = r.status, r.read().decode("utf-8")
            except urllib.error.HTTPError as e:
                status, text = e.code, e.read().decode("utf-8", "replace")
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return status, parsed


# --- setup: group and attributes --------------------------------------------

def die(msg):
    print("naive_import: " + msg, file=sys.stderr)
    sys.exit(2)


def ensure_group(api, name):
    status, groups = api.call("GET", "/v3/groups")
    if status != 200:
        die("listing groups failed: %s %s" % (status, groups))
    for g in groups:
        if g.get("name") == name:
            return str(g["id"])
    status, group = api.call("POST", "/v3/groups", {"name": name})
    if status != 200:
        die("creating group %r failed: %s %s" % (name, status, group))
    return str(group["id"])


def ensure_attributes(api, group_id, global_attrs, group_attrs):
    if global_attrs:
        status, existing = api.call("GET", "/v3/attributes")
        names = {a["name"] for a in existing} if status == 200 else set()
        for name, typ in global_attrs.items():
            if name in names:
                continue
            status, resp = api.call("POST", "/v3/attributes", {"name": name, "type": typ})
            if status not in (200, 409):
                die("creating global attribute %r failed: %s %s" % (name, status, resp))
    if group_attrs:
        path = "/v3/groups/%s/attributes" % group_id
        status, existing = api.call("GET", path)
        names = {a["name"] for a in existing} if status == 200 else set()
        for name, typ in group_attrs.items():
            if name in names:
                continue
            status, resp = api.call("POST", path, {"name": name, "type": typ})
            if status not in (200, 409):
                die("creating group attribute %r failed: %s %s" % (name, status, resp))


# --- reading the CSVs ---------------------------------------------------------

def to_unix(text):
    dt = datetime.strptime(text.strip(), TIME_FORMAT)
    return int(dt.replace(tzinfo=timezone.utc).timestamp())


def clean_email(text):
    email = (text or "").strip().lower()
    return email if EMAIL_RE.match(email) else None


def load_orders(path):
    orders = {}
    bad = 0
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            email = clean_email(row.get("email"))
            try:
                order = {
                    "order_id": row["order_id"],
                    "product_id": row["product_id"],
                    "product": row["product"],
                    "price": float(row["price"]),
                    "currency": row["currency"],
                    "quantity": int(row["quantity"]),
                    "stamp": to_unix(row["ordered_at"]),
                }
            except (KeyError, ValueError, TypeError):
                bad += 1
                continue
            if email is None:
                bad += 1
                continue
            orders.setdefault(email, []).append(order)
    if bad:
        print("naive_import: skipped %d bad order lines" % bad, file=sys.stderr)
    return orders


def build_receiver(row, email, mapping, orders):
    def col(key):
        column = mapping.get(key)
        if column is None:
            return ""
        return (row.get(column) or "").strip()

    body = {"email": email}
    signup = col("signup")
    if signup:
        try:
            body["registered"] = body["activated"] = to_unix(signup)
        except ValueError:
            pass

    global_attributes = {}
    for key in GLOBAL_ATTRIBUTES:
        value = col(key)
        if value:
            global_attributes[key] = value
    body["global_attributes"] = global_attributes

    attributes = {}
    city = col("city")
    if city:
        attributes["city"] = city
    birthday = col("birthday")
    if birthday:
        try:
            attributes["birthday"] = datetime.strptime(birthday, "%Y-%m-%d").strftime("%Y-%m-%d")
        except ValueError:
            pass
    score = col("score")
    if score:
        try:
            attributes["score"] = str(int(score))
        except ValueError:
            pass
    body["attributes"] = attributes

    body["tags"] = [t.strip() for t in col("tags").split(",") if t.strip()]
    body["orders"] = orders.get(email, [])
    return body


def check_columns(path, mapping):
    with open(path, newline="", encoding="utf-8-sig") as f:
        header = next(csv.reader(f), [])
    missing = [c for c in mapping.values() if c not in header]
    if missing:
        die("%s has no column(s) %s" % (path, ", ".join(repr(c) for c in missing)))


def read_receivers(path, mapping, orders, limit, stats):
    """Yield one request body per valid, first-seen email."""
    seen = set()
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            if limit is not None and stats["rows"] >= limit:
                break
            stats["rows"] += 1
            email = clean_email(row.get(mapping["email"]))
            if email is None:
                stats["invalid"] += 1
                continue
            if email in seen:
                stats["duplicates"] += 1
                continue
            seen.add(email)
            yield build_receiver(row, email, mapping, orders)


# --- sending ----------------------------------------------------------------

def send_one(api, group_id, body):
    """Create, or update on 409. Returns 'created', 'updated' or 'failed: ...'."""
    try:
        status, resp = api.call("POST", "/v3/groups/%s/receivers" % group_id, body)
        if status == 200:
            return "created"
        if status == 409:
            path = "/v3/groups/%s/receivers/%s" % (group_id, urllib.parse.quote(body["email"], safe=""))
            status, resp = api.call("PUT", path, body)
            if status == 200:
                return "updated"
        return "failed: %s %s %s" % (body["email"], status, resp)
    except Exception as e:  # network error, timeout, ...
        return "failed: %s %r" % (body["email"], e)


def chunks(iterable, size):
    chunk = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def parse_map(spec):
    mapping = {}
    for pair in spec.split(","):
        if not pair.strip():
            continue
        key, sep, column = pair.partition("=")
        key = key.strip().lower()
        if not sep or key not in KNOWN_KEYS:
            die("--map: %r is not KEY=COLUMN with KEY in %s" % (pair, ", ".join(sorted(KNOWN_KEYS))))
        mapping[key] = column.strip()
    if "email" not in mapping:
        die("--map needs email=COLUMN")
    return mapping


def main():
    p = argparse.ArgumentParser(description="Naive one-request-per-receiver import (benchmark baseline).")
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--receivers", required=True)
    p.add_argument("--orders")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--limit", type=int)
    p.add_argument("--map", dest="mapping")
    args = p.parse_args()

    started = time.perf_counter()
    mapping = parse_map(args.mapping) if args.mapping else dict(DEFAULT_MAP)
    check_columns(args.receivers, mapping)
    api = Api(args.url, args.token)

    orders = load_orders(args.orders) if args.orders else {}
    group_id = ensure_group(api, args.group)
    ensure_attributes(
        api,
        group_id,
        {k: t for k, t in GLOBAL_ATTRIBUTES.items() if k in mapping},
        {k: t for k, t in GROUP_ATTRIBUTES.items() if k in mapping},
    )

    stats = {"rows": 0, "invalid": 0, "duplicates": 0}
    counts = {"sent": 0, "created": 0, "updated": 0, "failed": 0}
    shown = 0
    receivers = read_receivers(args.receivers, mapping, orders, args.limit, stats)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
        for chunk in chunks(receivers, CHUNK):
            for result in pool.map(lambda body: send_one(api, group_id, body), chunk):
                counts["sent"] += 1
                if result in ("created", "updated"):
                    counts[result] += 1
                else:
                    counts["failed"] += 1
                    if shown < 5:
                        print("naive_import: " + result, file=sys.stderr)
                        shown += 1

    seconds = time.perf_counter() - started
    if stats["invalid"] or stats["duplicates"]:
        print("naive_import: skipped %d rows with an invalid email, %d duplicates"
              % (stats["invalid"], stats["duplicates"]), file=sys.stderr)
    print(json.dumps({
        "rows": stats["rows"],
        "sent": counts["sent"],
        "created": counts["created"],
        "updated": counts["updated"],
        "failed": counts["failed"],
        "seconds": round(seconds, 3),
        "rows_per_sec": round(stats["rows"] / seconds, 1) if seconds > 0 else 0.0,
    }))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
