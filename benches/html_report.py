#!/usr/bin/env python3
"""The file and pipeline of BENCHMARKS.md, "The HTML report's memory" (issue 60).

    python3 benches/html_report.py ROWS DIR
    /usr/bin/time -v listpipe check DIR/p.toml --preview 0
    /usr/bin/time -v listpipe check DIR/p.toml --preview 0 --html DIR/page.html

ROWS rows of 11 columns: consent from a status column, two tags, points, an
order on the row in one of three currencies, a typo domain, role addresses.
"""
import os
import sys

PIPELINE = """[target]
url = "builtin"

[[import]]
name = "people"
source = "people.csv"
group = "People"
create_group = true

[import.receiver]
email = "email"
activated = { column = "joined", only_if = { column = "status", equals = "subscribed" } }
deactivated = { column = "joined", only_if = { column = "status", equals = "unsubscribed" } }
registered = "joined"

[import.global_attributes]
firstname = "first"
city = "city"
birthday = { column = "birthday", type = "date" }
points = { column = "points", type = "number" }

[import.tags]
columns = ["tags"]
separator = "|"

[import.orders]
order_id = "order"
price = "price"
currency = "currency"
"""


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "p.toml"), "w") as f:
        f.write(PIPELINE)
    write_rows(n, os.path.join(out, "people.csv"))


def write_rows(n, path):
    firsts = ["Ann", "Bob", "Cid", "Dana", "Eve", "Finn", "Gül", "Hana", "Ivo", "Jörg"]
    cities = ["Berlin", "Hamburg", "München", "Köln", "Leipzig", "Wien", "Zürich"]
    domains = ["gmail.com", "yahoo.com", "web.de", "gmx.de", "outlook.com", "example.com",
               "shop.de", "gmial.com", "bücher.de"]
    status = ["subscribed", "subscribed", "subscribed", "unsubscribed", "pending"]
    tags = ["vip", "news", "b2b", "sale", ""]
    currencies = ["EUR", "EUR", "USD", "CHF"]
    with open(path, "w") as f:
        f.write("email,first,city,birthday,status,joined,tags,points,order,price,currency\n")
        for i in range(n):
            local = "info" if i % 97 == 0 else f"user{i}"
            domain = domains[(i * 7) % 9]
            y, m, d = 2015 + i % 10, 1 + i % 12, 1 + i % 28
            t = "|".join(x for x in (tags[i % 5], tags[(i // 5) % 5]) if x)
            f.write(
                f"{local}@{domain},{firsts[i % 10]},{cities[i % 7]},"
                f"{1950 + i % 50}-{1 + i % 12:02d}-{1 + i % 28:02d},{status[i % 5]},"
                f"{y}-{m:02d}-{d:02d},{t},{i % 1000},O{i},{(i % 5000) / 100:.2f},{currencies[i % 4]}\n"
            )


if __name__ == "__main__":
    main()
