"""Produces the bench's input and measures its output (bench/group-rebalance/run.sh).

  measure.py produce N RATE      events to bench-keyed, each to the partition Kafka's default
                                 partitioner gives its key (murmur2, written here from Kafka's
                                 algorithm, not Eddy's code), at RATE a second
  measure.py latency EVENTS_FILE MARKS_FILE
                                 reads bench-keyed and bench-out with their broker timestamps;
                                 per output row, latency = its timestamp - its input's (the row
                                 of event `last_seq`); prints percentiles over the whole run and
                                 over the rows whose input was produced within 5 s after a mark
                                 (a process joining or leaving)
"""
import json, os, sys, time
from confluent_kafka import Consumer, Producer

BOOT = os.environ.get("KAFKA_BOOTSTRAP", "127.0.0.1:19093")


def murmur2(data: bytes) -> int:
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = data[4 * n4:]
    if len(rest) >= 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if len(rest) >= 1:
        h ^= rest[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def produce(n, rate):
    prod = Producer({"bootstrap.servers": BOOT, "linger.ms": 0})
    t0 = time.perf_counter()
    for i in range(n):
        user = f"u{(i * 7919) % 64}"
        key = json.dumps({"user_id": user}, separators=(", ", ": "))
        part = (murmur2(key.encode()) & 0x7FFFFFFF) % 8
        ev = {"user_id": user, "seq": i, "amount": i % 100,
              "event_time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1714521600 + i // 100)) + "Z"}
        prod.produce("bench-keyed", value=json.dumps(ev).encode(), key=key.encode(), partition=part)
        prod.poll(0)
        wait = t0 + (i + 1) / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
    prod.flush(30)


def read(topic):
    c = Consumer({"bootstrap.servers": BOOT, "group.id": f"measure-{os.getpid()}-{topic}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out, last = [], time.time()
    while time.time() - last < 5:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        last = time.time()
        out.append((m.timestamp()[1], json.loads(m.value())))
    c.close()
    return out


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def latency(marks_file):
    inputs = {e["seq"]: ts for ts, e in read("bench-keyed")}
    rows = read("bench-out")
    marks = [float(l) * 1000 for l in open(marks_file) if l.strip()]
    lat, near = [], []
    seen = set()
    for ts, r in rows:
        seq = r["last_seq"]
        if seq in seen:  # a row written again after a process died: not a latency sample
            continue
        seen.add(seq)
        t_in = inputs.get(seq)
        if t_in is None:
            continue
        d = ts - t_in
        lat.append(d)
        if any(0 <= t_in - m <= 5000 for m in marks):
            near.append(d)
    lat.sort(); near.sort()
    missing = len(inputs) - len(seen)
    print(f"| all rows | {len(lat)} | {pct(lat, .5):.0f} | {pct(lat, .99):.0f} | {pct(lat, .999):.0f} | {lat[-1] if lat else 'nan'} |")
    if marks:
        print(f"| rows of input produced within 5 s after a join or leave | {len(near)} | {pct(near, .5):.0f} | {pct(near, .99):.0f} | {pct(near, .999):.0f} | {near[-1] if near else 'nan'} |")
    print(f"\ninputs {len(inputs)}, distinct output rows {len(seen)}, inputs without a row {missing}, rows written again {len(rows) - len(seen)}")


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        produce(int(sys.argv[2]), float(sys.argv[3]))
    else:
        latency(sys.argv[3])
