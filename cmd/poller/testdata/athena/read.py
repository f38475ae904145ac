"""Reads objects the way an Athena table declares them, with DuckDB.

Input (stdin): {"format": "json" | "parquet", "files": [...],
"columns": [[name, DuckDB type], ...]}. JSON Lines objects are read with
read_json and exactly those columns (as the JSON SerDe reads only the
declared fields, gzip and zstd by extension); Parquet objects with
read_parquet, each declared column cast to its type. Neither reads the
Hive-style folder names as columns: partition columns are the table's.

Output (stdout), one JSON object: "declared", the columns with DuckDB's
spelling of each type; "file", a Parquet file's own columns and types; and
"rows", each row as DuckDB's to_json renders it.
"""

import json
import sys

import duckdb


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def lit(text):
    return "'" + text.replace("'", "''") + "'"


def main():
    spec = json.load(sys.stdin)
    con = duckdb.connect()
    # Timestamps are UTC in the objects; DuckDB would show them in the
    # machine's zone otherwise.
    con.execute("SET TimeZone = 'UTC'")
    cols = spec["columns"]
    files = "[" + ", ".join(lit(f) for f in spec["files"]) + "]"
    out = {"declared": [[n, con.execute("SELECT typeof(CAST(NULL AS %s))" % t).fetchone()[0]] for n, t in cols]}
    if spec["format"] == "json":
        src = "read_json(%s, format = 'newline_delimited', hive_partitioning = false, columns = {%s})" % (
            files, ", ".join("%s: %s" % (lit(n), lit(t)) for n, t in cols))
        select = ", ".join(ident(n) for n, _ in cols)
    else:
        src = "read_parquet(%s, hive_partitioning = false)" % files
        out["file"] = [[r[0], r[1]] for r in con.execute("DESCRIBE SELECT * FROM " + src).fetchall()]
        select = ", ".join("CAST(%s AS %s) AS %s" % (ident(n), t, ident(n)) for n, t in cols)
    rows = con.execute("SELECT CAST(to_json(t) AS VARCHAR) FROM (SELECT %s FROM %s) t" % (select, src)).fetchall()
    out["rows"] = [json.loads(r[0]) for r in rows]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
