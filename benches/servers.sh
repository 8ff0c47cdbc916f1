#!/usr/bin/env bash
# The first import of the benchmark's rows through the built-in server on
# SQLite and on PostgreSQL, with one server process or two (BENCHMARKS.md,
# "PostgreSQL store"). The rows are the ones `listpipe bench` writes into its
# --dir (receivers.csv, orders.csv, import.toml).
#
#   benches/servers.sh setup DIR        split the rows in halves; start a throwaway
#                                       PostgreSQL cluster in DIR/pg (port in DIR/pg/port)
#   benches/servers.sh cluster DIR      only start that cluster (benches/floor.sh uses it)
#   benches/servers.sh MODE DIR LISTPIPE
#       sqlite   one serve process on a SQLite file, one run of every row
#       pg1      one serve process on PostgreSQL, one run of every row
#       pg2      two serve processes on one PostgreSQL database, two runs at
#                once, each of half the rows through its own server
#   benches/servers.sh teardown DIR     stop the cluster
#
# Each MODE starts from an empty database and prints the import's seconds.
# PostgreSQL runs with synchronous_commit=off: like SQLite's WAL with
# synchronous=NORMAL, a crash of the process loses nothing committed, a
# power loss may lose the last moments.
set -euo pipefail
cmd=$1 dir=$(realpath "$2")
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case $cmd in
setup)
    # Halves by address: each half's orders are its receivers' orders.
    for h in 0 1; do
        mkdir -p "$dir/half$h"
        awk -F, -v h=$h 'NR == 1 || (NR % 2 == h)' "$dir/receivers.csv" > "$dir/half$h/receivers.csv"
        awk -F, 'NR == FNR { if (FNR > 1) keep[$1] = 1; next } FNR == 1 || ($1 in keep)' \
            "$dir/half$h/receivers.csv" "$dir/orders.csv" > "$dir/half$h/orders.csv"
        sed -e "s#$dir/receivers.csv#$dir/half$h/receivers.csv#" \
            -e "s#$dir/orders.csv#$dir/half$h/orders.csv#" "$dir/import.toml" > "$dir/half$h/import.toml"
    done
    bash "$0" cluster "$dir"
    ;;
cluster)
    rm -rf "$dir/pg" && mkdir -p "$dir/pg" && chown postgres "$dir/pg" 2>/dev/null || true
    as_pg "$pgbin/initdb" -D "$dir/pg/data" -U bench --auth=trust -E UTF8 --locale=C >/dev/null
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_pg "$pgbin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/log" -w start \
        -o "-p $port -k $dir/pg -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c shared_buffers=256MB" >/dev/null
    echo "$port" > "$dir/pg/port"
    ;;
teardown)
    as_pg "$pgbin/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null
    ;;
sqlite | pg1 | pg2)
    bin=$(realpath "$3")
    servers=1; [ "$cmd" = pg2 ] && servers=2
    run=$dir/run-$cmd && rm -rf "$run" && mkdir -p "$run"
    if [ "$cmd" = sqlite ]; then
        db=$run/server.db
    else
        port=$(cat "$dir/pg/port")
        psql() { "$pgbin/psql" -h 127.0.0.1 -p "$port" -U bench -d postgres -qc "$1" >/dev/null; }
        psql "DROP DATABASE IF EXISTS bench WITH (FORCE)"
        psql "CREATE DATABASE bench"
        db="postgres://bench@127.0.0.1:$port/bench"
        "$bin" serve migrate --db "$db" 2>/dev/null
    fi
    pids=()
    for i in $(seq 1 $servers); do
        "$bin" serve --db "$db" --listen 127.0.0.1:0 --credentials "$run/credentials$i.json" \
            2> "$run/serve$i.log" &
        pids+=($!)
        # The first start writes the credentials; the second server starts after it.
        until grep -q "serving the v3 API at" "$run/serve$i.log" 2>/dev/null; do sleep 0.1; done
    done
    trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
    token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_token"])' "$run/credentials1.json")
    url() { sed -n 's/.*serving the v3 API at \(http[^ ]*\).*/\1/p' "$run/serve$1.log"; }
    start=$(date +%s.%N)
    if [ "$cmd" = pg2 ]; then
        # The group first, so the two runs do not race to create it.
        curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            -d '{"name": "Bench"}' "$(url 1)/v3/groups.json" >/dev/null
        for h in 0 1; do
            (cd "$run" && "$bin" run "$dir/half$h/import.toml" --quiet \
                --target-url "$(url $((h + 1)))" --token "$token" >/dev/null 2>&1) &
            runs+=($!)
        done
        status=0
        for r in "${runs[@]}"; do wait "$r" || status=$?; done
    else
        status=0
        (cd "$run" && "$bin" run "$dir/import.toml" --quiet --target-url "$(url 1)" --token "$token" \
            >/dev/null 2>&1) || status=$?
    fi
    end=$(date +%s.%N)
    # Exit 1 is "rows were rejected" (the generated data has some on purpose).
    [ "$status" -le 1 ] || { echo "$cmd: an import failed ($status)" >&2; exit 1; }
    echo "$cmd: $(echo "$end - $start" | bc) s"
    ;;
*)
    echo "usage: $0 setup|cluster|sqlite|pg1|pg2|teardown DIR [LISTPIPE]" >&2
    exit 2
    ;;
esac
