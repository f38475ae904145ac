"""Produce JSON messages with a country field through the released Python
Iggy client (apache-iggy 0.9.0), for the drain's payload-field test.

usage: IGGY_USERNAME=.. IGGY_PASSWORD=.. py_produce_countries.py ADDR STREAM TOPIC PARTITIONS PER_PARTITION

Into an existing stream and topic (the released client's create_topic
sends options a 0.9.0-edge server refuses), sends PER_PARTITION messages to each
partition (explicit partitioning), each with user headers, and prints what
it sent as JSON: {"<partition>": [{"payload": ..., "country": ...}, ...]}, in
offset order ("country" is null for a message without the field).
"""

import asyncio
import json
import os
import sys

from apache_iggy import IggyClient, SendMessage

COUNTRIES = ["DE", "FR", "São Paulo", None, "a/../b", "_hidden"]


async def main(addr, stream, topic, partitions, per_partition):
    client = IggyClient(addr)
    await client.connect()
    await client.login_user(os.environ["IGGY_USERNAME"], os.environ["IGGY_PASSWORD"])
    sent = {}
    for p in range(partitions):
        batch = []
        for i in range(per_partition):
            country = COUNTRIES[(i * 7 + p) % len(COUNTRIES)]
            doc = {"n": i, "partition": p}
            if country is not None:
                doc["country"] = country
            payload = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
            batch.append((payload, country))
        for start in range(0, len(batch), 50):
            chunk = batch[start : start + 50]
            messages = [SendMessage(payload, user_headers={"source": "python", "seq": start + k}) for k, (payload, _) in enumerate(chunk)]
            await client.send_messages(stream, topic, p, messages)
        sent[str(p)] = [{"payload": payload, "country": country} for payload, country in batch]
    print(json.dumps(sent, ensure_ascii=False))


if __name__ == "__main__":
    addr, stream, topic, partitions, per_partition = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    asyncio.run(main(addr, stream, topic, partitions, per_partition))
