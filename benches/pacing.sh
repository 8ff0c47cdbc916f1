#!/usr/bin/env bash
# An import against a target that answers a share of its requests with 429
# Too Many Requests, beside the same import with no fault (BENCHMARKS.md,
# "Sporadic 429s"). Single writes, so every row is one request.
#
#   benches/pacing.sh LISTPIPE ROWS SHARE [SEED]
#       LISTPIPE  the binary to measure
#       ROWS      receivers in the file
#       SHARE     the share of requests answered 429 (0 for none), e.g. 0.02
#   REPORT=FILE keeps the run's --report; EXTRA='--concurrency 96' adds
#   options to the run.
#
# Prints the import's wall seconds and the summary's `requests:` line. Each
# call starts a fresh server on a free loopback port in a temp dir and
# removes it after.
set -euo pipefail
bin=$(realpath "$1") rows=$2 share=$3 seed=${4:-7}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
faults=()
if [ "$share" != 0 ]; then faults=(--faults "429=$share" --fault-seed "$seed"); fi
"$bin" serve --listen "127.0.0.1:$port" --db "$dir/server.db" \
    --credentials "$dir/credentials.json" "${faults[@]}" >"$dir/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$dir/credentials.json" ] && break; sleep 0.1; done
awk -v n="$rows" 'BEGIN { print "email,firstname"; for (i = 0; i < n; i++) printf "r%d@example.com,Name%d\n", i, i }' >"$dir/rows.csv"
cat >"$dir/p.toml" <<EOF
[target]
url = "http://127.0.0.1:$port"
credentials = "credentials.json"
[[import]]
source = "rows.csv"
group = "Bench"
create_group = true
[import.receiver]
email = "email"
[import.global_attributes]
firstname = "firstname"
EOF
cd "$dir"
start=$(date +%s.%N)
"$bin" run p.toml --writes single ${REPORT:+--report "$REPORT"} ${EXTRA:-} >"$dir/run.out" 2>"$dir/run.err" || true
end=$(date +%s.%N)
echo "rows=$rows share=$share seconds=$(echo "$end - $start" | bc)"
grep -h 'requests:' "$dir/run.out" "$dir/run.err" || true
