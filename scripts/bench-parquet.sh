#!/usr/bin/env bash
# Side by side: pyarrow (read_json + write_table, zstd, one thread) and
# internal/parquet (both passes, in memory, one goroutine) on the same
# generated JSON Lines file of log payloads. Reports MB/s of JSON input for
# both, their ratio, and file sizes: ours, pyarrow's, and the JSON Lines
# compressed with zstd (what the json_lines format would store); and the
# whole `poller render` command on the same input.
# Usage: scripts/bench-parquet.sh [ROWS]   (default 200000, about 160 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-200000}
PY=.bin/pyenv-parquet/bin/python
[ -x "$PY" ] || bash scripts/parquet-readers.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/jsonl2parquet" ./internal/parquet/jsonl2parquet
"$work/jsonl2parquet" -gen "$ROWS" > "$work/in.jsonl"
bytes=$(stat -c %s "$work/in.jsonl")

GOMAXPROCS=1 "$work/jsonl2parquet" -repeat 3 < "$work/in.jsonl" > "$work/ours.parquet" 2> "$work/ours.txt"
# The same file through the sink's own path: `poller render` (batch's
# validation and Parquet seam, as the drain runs it), one core, best of 3
# wall times including reading stdin.
go build -o "$work/poller" ./cmd/poller
render_best=
for _ in 1 2 3; do
	start=$(date +%s.%N)
	GOMAXPROCS=1 SINK_BUCKET=b SINK_REGION=r SINK_STREAM=bench SINK_TOPICS=logs SINK_OUTPUT_FORMAT=parquet \
		SINK_INCLUDE_METADATA=false SINK_MULTIPART_THRESHOLD=1GiB SINK_MAX_FILE_SIZE=1GiB \
		"$work/poller" render -time 2024-03-16T14:02:31Z < "$work/in.jsonl" > "$work/render.parquet" 2> "$work/render.txt"
	render_best=$(awk -v s="$start" -v e="$(date +%s.%N)" -v best="$render_best" 'BEGIN { t = e - s; print (best == "" || t < best) ? t : best }')
done
"$PY" internal/parquet/testdata/bench_pyarrow.py "$work/in.jsonl" "$work/pyarrow.parquet" --repeat 3 2> "$work/pa.txt"
# The JSON formats with zstd compression (same library and level as batch).
"$PY" - "$work/in.jsonl" "$work/in.jsonl.zst" <<'PYEOF'
import sys, pyarrow as pa
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(pa.Codec("zstd", compression_level=3).compress(data, asbytes=True))
PYEOF
# Both files must read back the same rows.
"$PY" - "$work/ours.parquet" "$work/pyarrow.parquet" <<'PYEOF'
import sys, pyarrow.parquet as pq
a, b = pq.read_table(sys.argv[1]), pq.read_table(sys.argv[2])
assert a.num_rows == b.num_rows, (a.num_rows, b.num_rows)
assert a.column_names == b.column_names, (a.column_names, b.column_names)
PYEOF

ours=$(sed -n 's/.*encode_seconds=\([0-9.]*\).*/\1/p' "$work/ours.txt")
pa=$(sed -n 's/.*encode_seconds=\([0-9.]*\).*/\1/p' "$work/pa.txt")
awk -v b="$bytes" -v o="$ours" -v p="$pa" -v r="$render_best" -v rows="$ROWS" \
    -v so="$(stat -c %s "$work/ours.parquet")" -v sp="$(stat -c %s "$work/pyarrow.parquet")" -v sz="$(stat -c %s "$work/in.jsonl.zst")" '
BEGIN {
	printf "input: %d JSON lines, %.1f MB\n", rows, b/1e6
	printf "internal/parquet: %7.1f MB/s  (%.3f s)\n", b/o/1e6, o
	printf "pyarrow:          %7.1f MB/s  (%.3f s)\n", b/p/1e6, p
	printf "poller render:    %7.1f MB/s  (%.3f s, the whole command: stdin, validation, both passes)\n", b/r/1e6, r
	printf "ratio ours/pyarrow: %.2fx\n", p/o
	printf "sizes: ours %.2f MB, pyarrow %.2f MB (ours/pyarrow %.2f), json_lines+zstd %.2f MB (ours/jsonl.zst %.2f)\n", so/1e6, sp/1e6, so/sp, sz/1e6, so/sz
}'
