"""Produce to and read back from Iggy through the released Python client
(apache-iggy 0.9.0), for the replay's round trip test.

usage: IGGY_USERNAME=.. IGGY_PASSWORD=.. py_roundtrip.py produce ADDR STREAM TOPIC PARTITIONS PER_PARTITION
       IGGY_USERNAME=.. IGGY_PASSWORD=.. py_roundtrip.py read ADDR STREAM TOPIC PARTITIONS

produce sends PER_PARTITION JSON messages, with string and integer user
headers, to each partition of an existing topic (explicit partitioning).
read polls every partition from offset 0 as a plain consumer. Both print
{"<partition>": [{"offset": N, "payload": "...", "headers": {...}}, ...]}
in offset order (read; produce prints what it sent, offsets counted).
"""

import asyncio
import json
import os
import sys

from apache_iggy import Consumer, IggyClient, PollingStrategy, SendMessage


def scalar_headers(message):
    headers = message.user_headers()
    if headers is None:
        return {}
    return {str(k): v for k, v in headers.to_scalar_dict().items()}


async def connect(addr):
    client = IggyClient(addr)
    await client.connect()
    await client.login_user(os.environ["IGGY_USERNAME"], os.environ["IGGY_PASSWORD"])
    return client


async def produce(addr, stream, topic, partitions, per_partition):
    client = await connect(addr)
    sent = {}
    for p in range(partitions):
        out = []
        for start in range(0, per_partition, 40):
            batch = []
            for i in range(start, min(start + 40, per_partition)):
                payload = json.dumps({"order": i, "partition": p, "item": "widget-é", "qty": i % 5}, separators=(",", ":"), ensure_ascii=False)
                headers = {"source": "python", "seq": i}
                if i % 3 == 0:
                    headers["trace"] = f"t-{p}-{i}"
                batch.append(SendMessage(payload, user_headers=headers))
                out.append({"offset": i, "payload": payload, "headers": headers})
            await client.send_messages(stream, topic, p, batch)
        sent[str(p)] = out
    print(json.dumps(sent, ensure_ascii=False))


async def read(addr, stream, topic, partitions):
    client = await connect(addr)
    got = {}
    for p in range(partitions):
        msgs, offset = [], 0
        while True:
            polled = await client.poll_messages(
                stream,
                topic,
                consumer=Consumer.Single("py-roundtrip-reader"),
                polling_strategy=PollingStrategy.Offset(offset),
                count=100,
                auto_commit=False,
                partition_id=p,
            )
            if not polled:
                break
            for m in polled:
                msgs.append({"offset": m.offset(), "payload": m.payload().decode(), "headers": scalar_headers(m)})
            offset = polled[-1].offset() + 1
        got[str(p)] = msgs
    print(json.dumps(got, ensure_ascii=False))


if __name__ == "__main__":
    mode, addr, stream, topic, partitions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    if mode == "produce":
        asyncio.run(produce(addr, stream, topic, partitions, int(sys.argv[6])))
    else:
        asyncio.run(read(addr, stream, topic, partitions))
