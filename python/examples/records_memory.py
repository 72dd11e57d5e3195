"""The memory of a run's records as Arrow against its Parquet file (docs/python.md, Memory).

    python records_memory.py N DIR [jsonl]

runs N requests against the built-in simulator (16 users, 16-token answers) with
``records="parquet"`` into DIR/pq, prints the Arrow table's size beside the Parquet file's,
and with a third argument runs again with ``requests.jsonl`` (DIR/js) to compare sizes.
"""

import os
import resource
import sys
import time

import ringbench

n, base = int(sys.argv[1]), sys.argv[2]
flags = dict(request_count=n, concurrency=16, output_tokens=16, sim_ttft_ms=0, sim_itl_ms=0,
             allow_invalid=True, export="none", overwrite=True)
t0 = time.time()
s = ringbench.run(out=f"{base}/pq", records="parquet", **flags)
took = time.time() - t0
t = s.records()
pq = os.path.getsize(f"{base}/pq/requests.parquet")
print(f"{n} requests in {took:.1f} s; scheduled {s.counts['scheduled']}, rows {t.num_rows}")
print(f"records as Arrow {t.nbytes / 1e6:.1f} MB (events {t.column('events').nbytes / 1e6:.1f} MB);"
      f" requests.parquet {pq / 1e6:.1f} MB; ratio {t.nbytes / pq:.2f}")
print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB")
if len(sys.argv) > 3:
    ringbench.run(out=f"{base}/js", **flags)
    js = os.path.getsize(f"{base}/js/requests.jsonl")
    print(f"requests.jsonl {js / 1e6:.1f} MB, requests.parquet {pq / 1e6:.1f} MB")
