"""The peer for `npm run bench -- kafka`: Quix Streams 3.28.1 (PyPI) moving the same article
records from one topic to another, exactly-once, commit interval and poll timeout 0.1 s. It
parses and serialises JSON but validates nothing. Prints one JSON line: the records after the
first one, and the milliseconds they took (timing starts at the first record, as ours starts at
its first commit, so joining the group is not counted).

usage: run.py BROKER INPUT OUTPUT N
"""

import json
import sys
import time

from quixstreams import Application

broker, source, sink, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
app = Application(
    broker_address=broker,
    consumer_group=f"quix-{source}",
    auto_offset_reset="earliest",
    processing_guarantee="exactly-once",
    commit_interval=0.1,
    consumer_poll_timeout=0.1,
    auto_create_topics=False,
    use_changelog_topics=False,
)
inp = app.topic(source, value_deserializer="json")
out = app.topic(sink, value_serializer="json")
seen = {"count": 0, "first": 0.0, "last": 0.0}


def count(value):
    seen["count"] += 1
    now = time.perf_counter()
    if seen["count"] == 1:
        seen["first"] = now
    if seen["count"] >= n:
        app.stop()
    return value


app.dataframe(inp).update(count).to_topic(out)
app.run()
# After run() returns, the last checkpoint has committed.
seen["last"] = time.perf_counter()
print(json.dumps({"records": n - 1, "ms": (seen["last"] - seen["first"]) * 1000}))
