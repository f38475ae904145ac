"""Drive an Iggy 0.9 server (binary protocol 0.11.0) with the released Python
client, apache-iggy 0.9.0, and print what it saw as one JSON object.

Usage: python pyclient_conformance.py HOST:PORT

Run by TestPythonClient in internal/iggy/iggytest against the in-process broker;
it can be pointed at a real 0.9 server too. Stream "pys", topic "pyt" (3
partitions) and group "pyg" must not exist yet.
"""

import asyncio
import json
import os
import struct
import sys

from apache_iggy import Consumer, IggyClient, PollingStrategy, SendMessage

STREAM, TOPIC, GROUP, PARTITIONS, PER_PARTITION = "pys", "pyt", "pyg", 3, 4


def ident(name):
    raw = name.encode()
    return bytes([2, len(raw)]) + raw


def group_partition(partition):
    # [consumer kind 2][group][stream][topic][partition flag 1][partition id]
    return bytes([2]) + ident(GROUP) + ident(STREAM) + ident(TOPIC) + bytes([1]) + struct.pack("<I", partition)


def scalar_headers(message):
    headers = message.user_headers()
    if headers is None:
        return {}
    return {str(k): v for k, v in headers.to_scalar_dict().items()}


async def main(addr):
    client = IggyClient(addr)
    await client.connect()
    await client.ping()
    await client.login_user("iggy", "iggy")
    await client.create_stream(STREAM)
    # The released client always sends the durability options here.
    await client.create_topic(STREAM, TOPIC, PARTITIONS)
    topic = await client.get_topic(STREAM, TOPIC)
    missing = await client.get_topic(STREAM, "no-such-topic")

    confirmations = []
    for p in range(PARTITIONS):
        messages = [
            SendMessage(f"p{p}-m{i}", user_headers={"source": "python", "seq": i}, id=1000 * (p + 1) + i)
            for i in range(PER_PARTITION)
        ]
        response = await client.send_messages(STREAM, TOPIC, p, messages)
        confirmations += [{"partition": c.partition_id, "base_offset": c.base_offset} for c in response.confirmations]

    await client.create_consumer_group(STREAM, TOPIC, GROUP)
    await client.join_consumer_group(STREAM, TOPIC, GROUP)

    polled, stored = {}, {}
    for p in range(PARTITIONS):
        messages = await client.poll_messages(
            STREAM,
            TOPIC,
            consumer=Consumer.Group(GROUP),
            polling_strategy=PollingStrategy.Offset(1),
            count=10,
            auto_commit=False,
            partition_id=p,
        )
        polled[p] = [
            {
                "offset": m.offset(),
                "partition": m.partition_id(),
                "payload": m.payload().decode(),
                "id": m.id(),
                "headers": scalar_headers(m),
            }
            for m in messages
        ]
        if messages:
            last = messages[-1].offset() - p  # partition p commits p messages short of its last
            # StoreConsumerOffset (121): group, explicit partition, offset, ack Quorum.
            await client.send_binary_request(121, group_partition(p) + struct.pack("<Q", last) + bytes([1]))
        # GetConsumerOffset (120): 20 bytes [partition][current][stored], or empty.
        raw = await client.send_binary_request(120, group_partition(p))
        if len(raw) == 20:
            partition, current, offset = struct.unpack("<IQQ", raw)
            stored[p] = {"partition": partition, "current": current, "stored": offset}
        else:
            stored[p] = {"raw": raw.hex()}

    group = await client.get_consumer_group(STREAM, TOPIC, GROUP)
    result = {
        "topic": {
            "name": topic.name,
            "partitions_count": topic.partitions_count,
            "messages_count": topic.messages_count,
        },
        "missing_topic_is_none": missing is None,
        "confirmations": confirmations,
        "polled": polled,
        "stored": stored,
        "group": {
            "name": group.name,
            "members": [{"id": m.id, "partitions": sorted(m.partitions)} for m in group.members],
        },
    }
    await client.leave_consumer_group(STREAM, TOPIC, GROUP)
    await client.logout_user()
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
    # Interpreter finalisation sometimes aborts (SIGABRT, nothing on stderr) while
    # the client's Rust runtime is still winding down; about 1 run in 10 with a
    # piped stdout here, none when the process lingers 0.3 s first. Everything
    # has been printed and the session logged out: skip finalisation.
    sys.stdout.flush()
    os._exit(0)
