#!/usr/bin/env python3
"""Produces the lines of a JSON-lines file as messages of a Kafka topic, in large record batches
(linger.ms 100, up to 10,000 messages a batch, no compression), round-robin over the topic's
partitions. Run with kc's venv (confluent-kafka): `produce.py BOOTSTRAP TOPIC FILE`."""
import sys
from confluent_kafka import Producer

boot, topic, path = sys.argv[1:4]
prod = Producer({"bootstrap.servers": boot, "linger.ms": 100, "batch.num.messages": 10000,
                 "batch.size": 1000000, "queue.buffering.max.messages": 500000,
                 "compression.type": "none", "sticky.partitioning.linger.ms": 0})
n = 0
with open(path, "rb") as fh:
    for line in fh:
        line = line.rstrip(b"\n")
        if not line:
            continue
        while True:
            try:
                prod.produce(topic, value=line)
                break
            except BufferError:
                prod.poll(0.05)
        n += 1
        if n % 10000 == 0:
            prod.poll(0)
left = prod.flush(60)
if left:
    sys.exit(f"produce.py: {left} messages not delivered")
print(f"produced {n} messages to {topic}", file=sys.stderr)
