#!/usr/bin/env bash
# A run killed (kill -9) part way, then resumed: the resumed run's peak memory
# beside the killed run's (BENCHMARKS.md, "Resume"). The resume reads the
# killed run's journal; its index spills past the run's budget like the
# target's, so its peak should not grow with the journal.
#
#   benches/resume.sh LISTPIPE ROWS KILL_AFTER [WRITES]
#       LISTPIPE    the binary to measure
#       ROWS        receivers in the file
#       KILL_AFTER  seconds into the run at which it is killed
#       WRITES      auto (default: batch upserts) or single
#
# Prints the killed run's peak memory (its VmHWM just before the kill), the
# journal's size, and the resume's wall seconds and peak memory (GNU time's
# maximum resident set). A fresh server on a free loopback port in a temp dir,
# removed after.
set -euo pipefail
bin=$(realpath "$1") rows=$2 kill_after=$3 writes=${4:-auto}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --db "$dir/server.db" \
    --credentials "$dir/credentials.json" >"$dir/serve.log" 2>&1 &
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
"$bin" run p.toml --writes "$writes" >"$dir/killed.out" 2>"$dir/killed.err" &
run=$!
sleep "$kill_after"
if ! kill -0 "$run" 2>/dev/null; then
    echo "the run finished before ${kill_after} s: give a shorter KILL_AFTER" >&2
    exit 1
fi
peak=$(awk '/VmHWM/ { print int($2 / 1024) }' "/proc/$run/status")
kill -9 "$run"
wait "$run" 2>/dev/null || true
journal=$(find .listpipe/journal -name "*.jsonl" -exec cat {} + | wc -c)
lines=$(find .listpipe/journal -name "*.jsonl" -exec cat {} + | wc -l)
echo "killed after ${kill_after} s: peak_mib=$peak, journal $((journal / 1048576)) MiB, $lines lines"
/usr/bin/time -f "%e %M" -o "$dir/time" "$bin" run p.toml --writes "$writes" --resume >"$dir/resume.out" 2>"$dir/resume.err" || true
read -r secs kib <"$dir/time"
echo "resume: seconds=$secs peak_mib=$((kib / 1024))"
grep -h 'load:' "$dir/resume.out" "$dir/resume.err" | head -2 || true
