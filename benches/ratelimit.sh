#!/usr/bin/env bash
# Imports against `serve --rate-limit RATE` (BENCHMARKS.md, "A real rate
# limit"): a first batch run of ROWS receivers, a second batch run of other
# ROWS receivers on the same target and account (it starts from the rate the
# first remembered), then SINGLE receivers with single writes.
#
#   benches/ratelimit.sh LISTPIPE [ROWS] [SINGLE] [RATE]
#
# Prints, per run: wall seconds, requests sent, 429s (of all requests, and
# of the writes alone: the report's `write_requests_refused`), the ideal time
# (requests / RATE) and the summary's `requests:` line. Each call starts a
# fresh server on a free loopback port in a temp dir and removes it after.
set -euo pipefail
bin=$(realpath "$1") rows=${2:-20000} single=${3:-1000} rate=${4:-5}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --db "$dir/server.db" \
    --credentials "$dir/credentials.json" --rate-limit "$rate" >"$dir/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$dir/credentials.json" ] && break; sleep 0.1; done
gen() { awk -v n="$2" -v p="$1" 'BEGIN { print "email,firstname"; for (i = 0; i < n; i++) printf "%s%d@example.com,Name%d\n", p, i, i }'; }
gen a "$rows" >"$dir/a.csv"; gen b "$rows" >"$dir/b.csv"; gen s "$single" >"$dir/s.csv"
for f in a b s; do cat >"$dir/$f.toml" <<TOML
[target]
url = "http://127.0.0.1:$port"
credentials = "credentials.json"
[[import]]
source = "$f.csv"
group = "Bench"
create_group = true
[import.receiver]
email = "email"
[import.global_attributes]
firstname = "firstname"
TOML
done
cd "$dir"
export TMPDIR=$dir
one() {
    local name=$1; shift
    local start end
    start=$(date +%s.%N)
    "$bin" run "$@" --report "$dir/$name.json" >"$dir/$name.out" 2>"$dir/$name.err" || true
    end=$(date +%s.%N)
    python3 - "$dir/$name.json" "$name" "$(echo "$end - $start" | bc)" "$rate" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); name, secs, rate = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
q = r.get("requests", {})
sent = q.get("sent", 0); refused = q.get("retries", {}).get("rate_limited", 0)
imp = (r.get("steps") or [{}])[0].get("import", {}) if r.get("steps") else r.get("import", {})
writes = imp.get("write_requests", 0); writes_refused = imp.get("write_requests_refused", 0)
start = q.get("start") or {}
print(f"{name}: seconds={secs:.1f} sent={sent} refused={refused} ({100*refused/max(sent,1):.1f}% of all, "
      f"writes {writes_refused} of {writes}: {100*writes_refused/max(writes,1):.1f}%) ideal={sent/rate:.1f}s "
      f"ratio={secs/max(sent/rate,0.001):.2f} failed={imp.get('failed')} start={start.get('from', 'nothing')}")
PY
    grep -h 'requests:' "$dir/$name.out" "$dir/$name.err" | head -2 || true
}
one first a.toml
one second b.toml
one single s.toml --writes single
