"""Encodes a JSON Lines file with pyarrow the way the comparison asks:
pyarrow.json.read_json + pyarrow.parquet.write_table, zstd, one thread.
Prints "encode_seconds=<best of --repeat> rows=<n>" on stderr.

Usage: python bench_pyarrow.py IN.jsonl OUT.parquet [--repeat N] [--compression zstd]
"""
import argparse
import sys
import time

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compression", default="zstd")
    a = ap.parse_args()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    with open(a.src, "rb") as f:
        data = f.read()
    best = float("inf")
    rows = 0
    for _ in range(a.repeat):
        sink = pa.BufferOutputStream()
        start = time.perf_counter()
        table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(use_threads=False))
        pq.write_table(table, sink, compression=a.compression)  # one thread: set_cpu_count(1)
        best = min(best, time.perf_counter() - start)
        rows = table.num_rows
    with open(a.dst, "wb") as f:
        f.write(sink.getvalue().to_pybytes())
    print(f"encode_seconds={best:.6f} rows={rows}", file=sys.stderr)


if __name__ == "__main__":
    main()
