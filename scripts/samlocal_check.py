#!/usr/bin/env python3
"""Independent checks for scripts/sam-local.sh (no code of the sink is used).

judge RESULT --partitions N [--idle]
    Reads one invocation's result (the function's JSON on sam's stdout, or the
    file `aws lambda invoke` wrote) and prints one line. Exit 0: drained (lag 0
    and nothing pending on all N partitions; with --idle also nothing written),
    1: not drained yet, 2: the invocation failed.

check --endpoint URL --bucket B --prefix P --stream S --topic T --manifest F
    Lists and reads every object under P/S/T/ with boto3 and checks them
    against the producer's manifest: every produced message exactly once, in
    order, payload and headers as produced (headers rendered per the upstream
    table: string, bool, numbers, raw as base64, keys sorted), object names
    matching their offset ranges, no gap markers.
"""

import argparse
import base64
import json
import re
import sys

STATUS_DRAINED, STATUS_BUSY, STATUS_FAILED = 0, 1, 2


def judge(path, partitions, idle):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    if not lines:
        print("FAILED: the invocation returned nothing")
        return STATUS_FAILED
    try:
        res = json.loads(lines[-1])
    except ValueError as e:
        print("FAILED: the result is not JSON (%s): %.300s" % (e, lines[-1]))
        return STATUS_FAILED
    if not isinstance(res, dict):
        print("FAILED: the result is not an object: %.300s" % lines[-1])
        return STATUS_FAILED
    if "errorMessage" in res or "errorType" in res:
        print("FAILED: the function returned an error: %s: %s" % (res.get("errorType"), res.get("errorMessage")))
        return STATUS_FAILED
    parts = res.get("partitions") or []
    errors = ["%s/%s/%s: %s" % (p.get("stream"), p.get("topic"), p.get("partition"), p.get("error"))
              for p in parts if p.get("error")]
    if res.get("failed_partitions") or errors:
        print("FAILED: %s failed partitions: %s" % (res.get("failed_partitions"), "; ".join(errors)))
        return STATUS_FAILED
    lag = [p.get("lag", 0) for p in parts]
    pending = [p.get("pending", 0) for p in parts]
    print("objects=%d messages=%d bytes=%d lag=%s pending=%s duration_ms=%s" % (
        res.get("objects", 0), res.get("messages", 0), res.get("bytes", 0), lag, pending, res.get("duration_ms")))
    drained = len(parts) == partitions and not any(lag) and not any(pending)
    if idle and (res.get("objects") or res.get("messages")):
        print("FAILED: an invocation at lag 0 wrote objects")
        return STATUS_FAILED
    return STATUS_DRAINED if drained else STATUS_BUSY


# Object names: <partition:05>-<first:020>-<last:020>[-g<generation>].jsonl
NAME = re.compile(r"^(\d{5})-(\d{20})-(\d{20})(?:-g(\d+))?\.jsonl$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def expected_headers(headers):
    """The JSON object the upstream table gives for the produced headers."""
    out = {}
    for h in headers:
        kind, value = h["kind"], h["value"]
        if kind in ("string", "raw"):  # raw is recorded as base64 already
            out[h["key"]] = value
        elif kind == "bool":
            out[h["key"]] = bool(value)
        elif kind in ("uint32", "int64"):
            out[h["key"]] = int(value)
        elif kind == "double":
            out[h["key"]] = float(value)
        else:
            raise ValueError("manifest header kind %r unknown to the checker" % kind)
    return out


def check_record(rec, want, stream, topic, where, problems):
    if list(rec)[:5] != ["offset", "timestamp", "stream", "topic", "partition_id"]:
        problems.append("%s: field order %s" % (where, list(rec)))
    if rec.get("stream") != stream or rec.get("topic") != topic or rec.get("partition_id") != want["partition"]:
        problems.append("%s: stream/topic/partition %s/%s/%s" % (where, rec.get("stream"), rec.get("topic"), rec.get("partition_id")))
    if not TIMESTAMP.match(str(rec.get("timestamp"))):
        problems.append("%s: timestamp %r" % (where, rec.get("timestamp")))
    if rec.get("payload") != json.loads(want["payload"]):
        problems.append("%s: payload %s, produced %s" % (where, json.dumps(rec.get("payload"))[:200], want["payload"][:200]))
    if want.get("headers"):
        got = rec.get("headers")
        exp = expected_headers(want["headers"])
        if got != exp or any(type(got[k]) is not type(exp[k]) for k in exp):
            problems.append("%s: headers %s, produced %s" % (where, json.dumps(got), json.dumps(exp)))
        elif list(got) != sorted(got):
            problems.append("%s: header keys not sorted: %s" % (where, list(got)))
    elif "headers" in rec:
        problems.append("%s: a message without headers has a headers field %s" % (where, rec["headers"]))


def read_objects(s3, bucket, prefix):
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def check(args):
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=args.endpoint, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
    want = {}  # partition -> produced messages in order
    with open(args.manifest, encoding="utf-8") as f:
        for line in f:
            m = json.loads(line)
            want.setdefault(m["partition"], []).append(m)
    base = "/".join(x for x in (args.prefix.strip("/"), args.stream, args.topic) if x) + "/"
    problems = []
    got = {}  # partition -> {offset: record}
    keys = read_objects(s3, args.bucket, base)
    for key in sorted(keys):
        name = key.rsplit("/", 1)[-1]
        if name.startswith("_"):
            problems.append("%s: a gap marker (no message may be missing here)" % key)
            continue
        m = NAME.match(name)
        if not m:
            problems.append("%s: not an object name of the sink" % key)
            continue
        part, first, last = int(m.group(1)), int(m.group(2)), int(m.group(3))
        body = s3.get_object(Bucket=args.bucket, Key=key)["Body"].read().decode("utf-8")
        lines = body.split("\n")
        if lines[-1] != "":
            problems.append("%s: does not end with a newline" % key)
        recs = [json.loads(l, object_pairs_hook=dict) for l in lines if l]
        offsets = [r.get("offset") for r in recs]
        if offsets != list(range(first, last + 1)):
            problems.append("%s: offsets %s..%s (%d records) do not match the name" % (key, offsets[:1], offsets[-1:], len(recs)))
        for r in recs:
            seen = got.setdefault(part, {})
            if r.get("offset") in seen:
                problems.append("%s: offset %s also in another object" % (key, r.get("offset")))
            seen[r.get("offset")] = (key, r)
    total = 0
    for part, msgs in sorted(want.items()):
        seen = got.get(part, {})
        if sorted(seen) != list(range(len(msgs))):
            missing = sorted(set(range(len(msgs))) - set(seen))
            extra = sorted(set(seen) - set(range(len(msgs))))
            problems.append("partition %d: %d messages produced, %d archived; missing offsets %s, unexpected %s" % (
                part, len(msgs), len(seen), missing[:10], extra[:10]))
        for off, produced in enumerate(msgs):
            if off in seen:
                key, rec = seen[off]
                check_record(rec, produced, args.stream, args.topic, "%s offset %d" % (key, off), problems)
                total += 1
    for part in sorted(set(got) - set(want)):
        problems.append("partition %d: archived but nothing was produced there" % part)
    if problems:
        print("check FAILED: %d problems in %d objects under s3://%s/%s" % (len(problems), len(keys), args.bucket, base))
        for p in problems[:30]:
            print("  " + p)
        return 1
    print("check ok: %d objects under s3://%s/%s hold all %d produced messages of %d partitions exactly once, "
          "in offset order, payloads and headers as produced" % (len(keys), args.bucket, base, total, len(want)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("judge")
    j.add_argument("result")
    j.add_argument("--partitions", type=int, required=True)
    j.add_argument("--idle", action="store_true")
    c = sub.add_parser("check")
    for flag in ("--endpoint", "--bucket", "--prefix", "--stream", "--topic", "--manifest"):
        c.add_argument(flag, required=True)
    args = ap.parse_args()
    if args.cmd == "judge":
        return judge(args.result, args.partitions, args.idle)
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
