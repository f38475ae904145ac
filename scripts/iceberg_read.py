#!/usr/bin/env python3
"""Reads an Iceberg table the sink registered, through pyiceberg, as an
independent reader for the tests. Prints one JSON document on stdout:

  {"rows": [[col1, col2, ...], ...], "columns": [...],
   "snapshots": [{"id": ..., "parent": ..., "operation": ..., "summary": {...}}, ...],
   "properties": {...}, "data_files": ["s3://...", ...],
   "planned_files": [the data files a scan with --filter reads],
   "file_partitions": [{"path": ..., "spec_id": ..., "partition": [...]}, ...],
   "spec": [{"name": ..., "transform": ..., "source": ...}, ...]}

--filter is a row filter in pyiceberg's expression syntax; rows and
planned_files are those of the filtered scan.

Exit 3 when the table does not exist, 1 on any other error (as JSON
{"error": ...}). Every option is also read from ICEBERG_READ_<NAME>.
"""
import argparse
import json
import os
import sys


def env(name, default=None):
    v = os.environ.get("ICEBERG_READ_" + name.upper().replace("-", "_"))
    return v if v else default


def main():
    p = argparse.ArgumentParser()
    for name in ("catalog", "uri", "warehouse", "glue-endpoint", "s3-endpoint", "s3-access-key",
                 "s3-secret-key", "region", "namespace", "table", "columns", "filter"):
        p.add_argument("--" + name, default=env(name))
    a = p.parse_args()
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NoSuchTableError, NoSuchNamespaceError

    region = a.region or "us-east-1"
    props = {"s3.region": region}
    if a.s3_endpoint:
        props["s3.endpoint"] = a.s3_endpoint
    if a.s3_access_key:
        props["s3.access-key-id"] = a.s3_access_key
        props["s3.secret-access-key"] = a.s3_secret_key
    if a.catalog == "glue":
        props.update({"type": "glue", "glue.region": region, "glue.max-retries": 2})
        if a.glue_endpoint:  # a local stand-in takes any credentials
            props.update({"glue.endpoint": a.glue_endpoint,
                          "glue.access-key-id": os.environ.get("AWS_ACCESS_KEY_ID", "test"),
                          "glue.secret-access-key": os.environ.get("AWS_SECRET_ACCESS_KEY", "test")})
    else:
        props.update({"type": "rest", "uri": a.uri})
        if a.warehouse:
            props["warehouse"] = a.warehouse
    try:
        cat = load_catalog("reader", **props)
        tbl = cat.load_table((a.namespace, a.table))
    except (NoSuchTableError, NoSuchNamespaceError) as e:
        print(json.dumps({"error": "no such table: %s" % e}))
        return 3
    # The table's own s3.* properties must not send the reader elsewhere.
    tbl.io.properties.update({k: v for k, v in props.items() if k.startswith("s3.")})
    cols = a.columns.split(",") if a.columns else [f.name for f in tbl.schema().fields]
    row_filter = a.filter or "True"  # pyiceberg's expression syntax, e.g. "timestamp >= '2026-03-16T14:00:00+00:00'"
    arrow = tbl.scan(row_filter=row_filter, selected_fields=tuple(cols)).to_arrow()
    rows = [[r[c] for c in cols] for r in arrow.to_pylist()]
    snaps = [{"id": s.snapshot_id, "parent": s.parent_snapshot_id,
              "operation": s.summary.operation.value if s.summary else None,
              "summary": {k: v for k, v in (s.summary.additional_properties.items() if s.summary else [])}}
             for s in tbl.metadata.snapshots]
    files = [t.file.file_path for t in tbl.scan().plan_files()]
    planned = [t.file.file_path for t in tbl.scan(row_filter=row_filter).plan_files()]
    partitions = [{"path": t.file.file_path, "spec_id": t.file.spec_id,
                   "partition": [v for v in t.file.partition]} for t in tbl.scan().plan_files()]
    spec = [{"name": f.name, "transform": str(f.transform),
             "source": tbl.schema().find_column_name(f.source_id)} for f in tbl.spec().fields]
    print(json.dumps({"columns": cols, "rows": rows, "snapshots": snaps,
                      "properties": dict(tbl.properties), "data_files": files, "planned_files": planned,
                      "file_partitions": partitions, "spec": spec}, default=str))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one JSON document on stdout, always
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        sys.exit(1)
