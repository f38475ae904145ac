"""Reads Parquet files with two independent readers, pyarrow and DuckDB, and
prints, per file, one JSON line with what each reader saw: the columns with
their types (normalised to Arrow's spelling), the Parquet leaf columns
(physical, logical and converted types) and every row. Values that JSON
cannot tell apart are tagged: {"$f": repr} for floats, {"$b": base64} for
bytes, {"$ts": micros} for timestamps; maps become lists of [key, value].

Usage: python readback.py FILE...   (internal/parquet tests run it)
"""
import base64
import datetime
import json
import re
import sys

import duckdb
import pyarrow.parquet as pq

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def tag(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return {"$f": repr(v)}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, datetime.datetime):
        return {"$ts": (v - EPOCH) // datetime.timedelta(microseconds=1)}
    if isinstance(v, dict):
        if set(v.keys()) == {"key", "value"} and isinstance(v["key"], list):
            return [[tag(k), tag(x)] for k, x in zip(v["key"], v["value"])]
        return {k: tag(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [tag(x) for x in v]
    raise TypeError(f"untagged value {v!r}")


def duck_type(t):
    kind = t.id
    if kind == "struct":
        return "struct<" + ", ".join(f"{n}: {duck_type(c)}" for n, c in t.children) + ">"
    if kind == "list":
        return f"list<element: {duck_type(t.children[0][1])}>"
    if kind == "map":
        return f"map<{duck_type(t.children[0][1])}, {duck_type(t.children[1][1])}>"
    return {
        "bigint": "int64",
        "integer": "int32",
        "double": "double",
        "varchar": "string",
        "boolean": "bool",
        "blob": "binary",
        "timestamp with time zone": "timestamp[us, tz=UTC]",
    }.get(kind, kind)


def arrow_type(t):
    """pyarrow's spelling, less what DuckDB's types cannot show: the
    "not null" of required nested fields (the leaves list has them) and the
    entries name of a map read from Parquet ("map<k, v ('name')>")."""
    s = str(t).replace(" not null", "")
    return re.sub(r" \('[^']*'\)>", ">", s)


def arrow_side(path):
    f = pq.ParquetFile(path)
    table = f.read()
    s = f.schema
    leaves = []
    for i in range(len(s)):
        c = s.column(i)
        leaves.append([c.path, c.physical_type, str(c.logical_type), str(c.converted_type),
                       c.max_definition_level, c.max_repetition_level])
    return {
        "columns": [[fld.name, arrow_type(fld.type)] for fld in table.schema],
        "leaves": leaves,
        "rows": [tag(list(r.values())) for r in table.to_pylist()],
        "row_groups": f.metadata.num_row_groups,
        "created_by": f.metadata.created_by,
    }


def maps_to_pairs(v, t):
    """DuckDB hands MAP values over as dicts: make them [key, value] lists."""
    if v is None:
        return None
    if t.id == "map":
        return [[k, x] for k, x in v.items()]
    if t.id == "struct":
        return {n: maps_to_pairs(v[n], c) for n, c in t.children}
    if t.id == "list":
        return [maps_to_pairs(x, t.children[0][1]) for x in v]
    return v


def duck_side(path):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rel = con.sql("SELECT * FROM read_parquet(?)", params=[path])
    types = rel.types
    rows = []
    for r in rel.fetchall():
        rows.append(tag([maps_to_pairs(v, t) for v, t in zip(r, types)]))
    return {"columns": [[n, duck_type(t)] for n, t in zip(rel.columns, types)], "rows": rows}


def main():
    for path in sys.argv[1:]:
        out = {"file": path}
        for name, fn in (("pyarrow", arrow_side), ("duckdb", duck_side)):
            try:
                out[name] = fn(path)
            except Exception as e:  # report, let the Go test fail with it
                out[name] = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out))


if __name__ == "__main__":
    main()
