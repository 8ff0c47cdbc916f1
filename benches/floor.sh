#!/usr/bin/env bash
# What the database alone does with the benchmark's rows (BENCHMARKS.md,
# "What the databases alone can do"): the first import's writes as plain
# set-based SQL on the server's own schema, with no HTTP, no JSON, no
# importer and no answers. A floor for the server's first import: the
# server does this work and more, on the same cores.
#
#   benches/floor.sh sqlite ROWS [ROWS_PER_TRANSACTION]   (default 1000)
#   benches/floor.sh pg ROWS [SESSIONS]                   (default 2)
#
# Each receiver is written as `listpipe bench` writes it: a contact (its
# address random in the index), a receiver in one group, five attribute
# values, and on three receivers in four two tags and two orders (the
# bench's 0 to 3 each, 1.5 on average). Contact ids are looked up once per
# transaction, as the server's batch does. SQLite runs with the server's
# settings (WAL, synchronous=NORMAL, 32 MiB of cache) through the `sqlite3`
# shell (Debian's `sqlite3` package); PostgreSQL is a throwaway cluster (Debian's packages) with the
# settings of benches/servers.sh, SESSIONS connections each writing its
# share in transactions of 1,000 receivers, as the server's processes do,
# run twice (a cold cluster, then warm). Prints the seconds and rows/s.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
migrations=$here/crates/server/src/store/migrations
engine=$1 rows=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The SQL of receivers [lo, hi) in transactions of `per` receivers, for
# `engine`; `k` is a scratch table of the transaction's addresses.
batches() {
    python3 - "$engine" "$1" "$2" "$3" <<'EOF'
import sys
engine, lo, hi, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lite = engine == "sqlite"
# SQLite needs a WHERE before an upsert's ON CONFLICT (a parsing ambiguity).
w = " WHERE true" if lite else ""
if lite:
    print("CREATE TEMP TABLE k (k INTEGER PRIMARY KEY, email TEXT, cid INTEGER);")
    clear = "DELETE FROM k;"
    gen = ("WITH RECURSIVE s(g) AS (SELECT {a} UNION ALL SELECT g + 1 FROM s WHERE g + 1 < {b}) "
           "SELECT g, printf('%08x.%d@Example.com', (g * 2654435761) % 4294967296, g) FROM s")
else:
    print("CREATE TEMP TABLE k (k BIGINT PRIMARY KEY, email TEXT, cid BIGINT) ON COMMIT DELETE ROWS;")
    clear = ""
    gen = ("SELECT g, format('%s.%s@Example.com', to_hex((g * 2654435761) % 4294967296), g) "
           "FROM generate_series({a}, {b} - 1) g")
two = "(SELECT 0 AS v UNION ALL SELECT 1)"
for a in range(lo, hi, per):
    b = min(a + per, hi)
    print(f"""BEGIN;
{clear}
INSERT INTO k (k, email) {gen.format(a=a, b=b)};
INSERT INTO contacts (account_id, email) SELECT 1, email FROM k{w} ON CONFLICT DO NOTHING;
UPDATE k SET cid = c.id FROM contacts c WHERE c.account_id = 1 AND c.email = k.email;
INSERT INTO receivers (account_id, group_id, contact_id, registered, activated, imported, source, created, changed)
  SELECT 1, 1, cid, 1700000000, 1700000000, 1700000000, 'import', 1700000000, 1700000000 FROM k{w}
  ON CONFLICT (group_id, contact_id) DO UPDATE SET changed = excluded.changed;
INSERT INTO attribute_values (contact_id, attribute_id, value)
  SELECT cid, a.id, CASE a.id WHEN 1 THEN 'Anna' WHEN 2 THEN 'Müller' WHEN 3 THEN 'Berlin' WHEN 4 THEN '1980-01-01' ELSE '42' END
  FROM k CROSS JOIN attributes a{w} ON CONFLICT (contact_id, attribute_id) DO UPDATE SET value = excluded.value;
INSERT INTO tags (contact_id, tag, origin) SELECT cid, 'tag' || t.v, 'import' FROM k JOIN {two} t ON (k.k + t.v) % 4 <> 0{w}
  ON CONFLICT DO NOTHING;
INSERT INTO orders (contact_id, order_id, product_id, product, price, currency, quantity, stamp)
  SELECT cid, 'o' || k.k || '-' || t.v, 'p' || t.v, 'Product', 9.5, 'EUR', 1, 1700000000 FROM k JOIN {two} t ON (k.k + t.v) % 4 <> 0{w}
  ON CONFLICT (contact_id, order_id, product_id) DO UPDATE SET price = excluded.price;
COMMIT;""")
EOF
}

seed="INSERT INTO accounts (id, name, created) VALUES (1, 'floor', 0);
INSERT INTO groups (id, account_id, name, stamp, last_changed) VALUES (1, 1, 'Bench', 0, 0);
INSERT INTO attributes (id, account_id, group_id, name, type) VALUES
  (1, 1, 0, 'firstname', 'text'), (2, 1, 0, 'lastname', 'text'),
  (3, 1, 1, 'city', 'text'), (4, 1, 1, 'birthday', 'date'), (5, 1, 1, 'score', 'number');"

# What was written: receivers, attribute values, tags, orders.
count="SELECT (SELECT count(*) FROM receivers) || ' receivers, ' || (SELECT count(*) FROM attribute_values)
  || ' attribute values, ' || (SELECT count(*) FROM tags) || ' tags, ' || (SELECT count(*) FROM orders) || ' orders'"

report() {
    python3 -c 'import sys; s = float(sys.argv[2]) - float(sys.argv[1]); n = int(sys.argv[3])
print(f"{sys.argv[4]}: {n} receivers in {s:.2f} s, {n / s:,.0f} rows/s")' "$1" "$2" "$rows" "$3"
}

case $engine in
sqlite)
    per=${3:-1000}
    db=$tmp/floor.db
    { cat "$migrations"/0*.sql
      echo "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
      echo "$seed"; } | sqlite3 "$db" >/dev/null
    batches 0 "$rows" "$per" > "$tmp/rows.sql"
    start=$(date +%s.%N)
    { echo "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768; PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = ON;"
      cat "$tmp/rows.sql"; } | sqlite3 "$db" >/dev/null
    end=$(date +%s.%N)
    sqlite3 "$db" "$count"
    report "$start" "$end" "sqlite, $per receivers a transaction"
    ;;
pg)
    sessions=${3:-2}
    pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    chmod 755 "$tmp" # the cluster's owner, postgres, must reach DIR/pg
    bash "$here/benches/servers.sh" cluster "$tmp"
    trap 'bash "$here/benches/servers.sh" teardown "$tmp"; rm -rf "$tmp"' EXIT
    port=$(cat "$tmp/pg/port")
    sql() { "$pgbin/psql" -h 127.0.0.1 -p "$port" -U bench -v ON_ERROR_STOP=1 -q "$@" >/dev/null; }
    share=$(( (rows + sessions - 1) / sessions ))
    for s in $(seq 0 $((sessions - 1))); do
        lo=$((s * share)) hi=$(( (s + 1) * share < rows ? (s + 1) * share : rows ))
        batches "$lo" "$hi" 1000 > "$tmp/rows$s.sql"
    done
    # Twice, each in a new database: the first run on the new cluster
    # also creates its WAL files, which the second (like every run of
    # benches/servers.sh after the first) reuses.
    for run in cold warm; do
        sql -d postgres -c "CREATE DATABASE floor_$run"
        for m in "$migrations"/pg/0*.sql; do sql -d "floor_$run" -f "$m"; done
        sql -d "floor_$run" -c "$seed"
        start=$(date +%s.%N)
        pids=()
        for s in $(seq 0 $((sessions - 1))); do sql -d "floor_$run" -f "$tmp/rows$s.sql" & pids+=($!); done
        for p in "${pids[@]}"; do wait "$p"; done
        end=$(date +%s.%N)
        "$pgbin/psql" -h 127.0.0.1 -p "$port" -U bench -d "floor_$run" -tAc "$count"
        report "$start" "$end" "postgresql, $sessions sessions, $run cluster"
        sql -d postgres -c "DROP DATABASE floor_$run"
    done
    ;;
*)
    echo "usage: $0 sqlite ROWS [ROWS_PER_TRANSACTION] | pg ROWS [SESSIONS]" >&2
    exit 2
    ;;
esac
