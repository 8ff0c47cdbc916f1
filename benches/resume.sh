#!/usr/bin/env bash
# A run killed (kill -9) part way, then resumed: the resumed run's peak memory
# beside the whole run's (BENCHMARKS.md, "Resume"). The resume reads the
# killed run's journal; its index spills past the run's budget like the
# target's, so the peak should not grow with the journal.
#
#   benches/resume.sh LISTPIPE ROWS SHARE [WRITES]
#       LISTPIPE  the binary to measure
#       ROWS      receivers in the file
#       SHARE     when to kill it, as a share of the whole run's time, e.g. 0.6
#       WRITES    batch (default) or single
#
# Prints the journal's size at the kill and, for the uninterrupted run and
# the resume, the wall seconds and peak memory (GNU time's maximum resident
# set). Each call starts a fresh server on a free loopback port in a temp dir
# and removes it after.
set -euo pipefail
bin=$(realpath "$1") rows=$2 share=$3 writes=${4:-batch}
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
serve() {
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    rm -f "$dir/credentials.json"
    "$bin" serve --listen "127.0.0.1:$port" --db "$dir/$1.db" \
        --credentials "$dir/credentials.json" >"$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do [ -s "$dir/credentials.json" ] && break; sleep 0.1; done
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
}
measure() { # label, then the run's arguments
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o "$dir/time" "$bin" run p.toml --writes "$writes" "$@" >"$dir/run.out" 2>"$dir/run.err" || true
    read -r secs kib <"$dir/time"
    whole_secs=$secs
    echo "$label: seconds=$secs peak_mib=$((kib / 1024))"
}
awk -v n="$rows" 'BEGIN { print "email,firstname"; for (i = 0; i < n; i++) printf "r%d@example.com,Name%d\n", i, i }' >"$dir/rows.csv"
cd "$dir"

# The whole run, uninterrupted, on its own server.
serve whole
measure "whole run ($rows rows, $writes)"
kill "$server"; wait "$server" 2>/dev/null || true
rm -rf .listpipe

# The same run killed `share` of the whole run's time in.
serve killed
"$bin" run p.toml --writes "$writes" >"$dir/killed.out" 2>"$dir/killed.err" &
run=$!
sleep "$(echo "$whole_secs * $share" | bc)"
kill -9 "$run" 2>/dev/null || true
wait "$run" 2>/dev/null || true
journal=$(find .listpipe/journal -name "*.jsonl" -exec cat {} + | wc -c)
lines=$(find .listpipe/journal -name "*.jsonl" -exec cat {} + | wc -l)
echo "killed: journal $((journal / 1048576)) MiB, $lines lines"
measure "resume" --resume
grep -h 'imported\|created\|updated\|unchanged' "$dir/run.out" | head -3 || true
