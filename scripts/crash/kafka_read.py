#!/usr/bin/env python3
"""Reads a whole topic (every partition, from the beginning) with confluent-kafka (the client kc
uses, an independent implementation of the protocol: librdkafka from PyPI) and prints one JSON
line per message: {"epoch": <the eddy.epoch header, or null>, "value": <text>}.

Stops once every partition's position reached its end (high watermark; for read_committed, the
last stable offset) and then SETTLE seconds passed without a message, or after IDLE seconds
without a message. The settling is needed on the test broker: tansu 0.6.0 reports as the high
watermark the base offset of the partition's last record batch plus one, not its last offset plus
one (measured: 4 flushed batches of 200 messages, all 800 readable, high watermark 601). Trusting
it cut the last batch to its first message; the Kafka sink flushes an epoch's rows together, so
the last epoch was read short (a window-append run's final epoch: 1 row of 183).

Usage: kafka_read.py BOOTSTRAP TOPIC [--isolation read_committed|read_uncommitted] [--idle S] [--settle S]
Also: kafka_read.py BOOTSTRAP TOPIC --probe-transactions   (exit 0: the broker commits
transactions; 3: it does not, with the reason on stdout)
"""
import argparse, json, sys, time
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING

ap = argparse.ArgumentParser()
ap.add_argument("bootstrap"); ap.add_argument("topic")
ap.add_argument("--isolation", default="read_uncommitted")
ap.add_argument("--idle", type=float, default=5.0)
ap.add_argument("--settle", type=float, default=2.0)
ap.add_argument("--probe-transactions", action="store_true")
a = ap.parse_args()

if a.probe_transactions:
    p = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": f"probe-{time.time_ns()}"})
    try:
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(a.topic, value=b'{"probe": true}')
        p.commit_transaction(10)
    except KafkaException as e:
        print(str(e.args[0]))
        sys.exit(3)
    sys.exit(0)

c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": f"crash-read-{time.time_ns()}",
              "enable.auto.commit": False, "isolation.level": a.isolation, "fetch.wait.max.ms": 10})
md = c.list_topics(a.topic, timeout=10).topics[a.topic]
parts = sorted(md.partitions)
c.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in parts])
ends = {p: c.get_watermark_offsets(TopicPartition(a.topic, p), timeout=10)[1] for p in parts}
pos = {p: 0 for p in parts}
last = time.time()
out = sys.stdout
while time.time() - last < (a.settle if all(pos[p] >= ends[p] for p in parts) else a.idle):
    m = c.poll(0.2)
    if m is None:
        # Control records (transaction markers) move the position without a message.
        for tp in c.position([TopicPartition(a.topic, p) for p in parts]):
            if tp.offset >= 0:
                pos[tp.partition] = max(pos[tp.partition], tp.offset)
        continue
    if m.error():
        print(f"kafka_read: {m.error()}", file=sys.stderr)
        continue
    last = time.time()
    pos[m.partition()] = m.offset() + 1
    epoch = next((v.decode() for k, v in (m.headers() or []) if k == "eddy.epoch" and v is not None), None)
    out.write(json.dumps({"epoch": None if epoch is None else int(epoch),
                          "value": m.value().decode(errors="replace") if m.value() is not None else None}) + "\n")
c.close()
