#!/usr/bin/env python3
"""The time from a write to the first fresh page through a CDN (issue 24, BENCHMARKS.md
"Response cache"): a writer adds a comment through the API every 1/RATE s, with a unique body;
a reader polls the page through the CDN every 5 ms and notes when each body first shows; a
second reader polls the server's `totalCount` (read from the index) and notes when each write
was applied to it (the stream lag). Times run from the write's acknowledgement.

    bench/write-to-fresh.py API_URL CDN_PAGE_URL SKU [WRITES=200] [RATE=10]

Prints p50/p99/max of both lags and of their difference (the purge's share). Standard library
only.
"""
import json
import statistics
import sys
import threading
import time
import urllib.request

api, page_url, sku = sys.argv[1], sys.argv[2], sys.argv[3]
writes = int(sys.argv[4]) if len(sys.argv) > 4 else 200
rate = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
tag = f"fresh-{int(time.time())}"

ADD = ("mutation($sku: String!, $body: String!) { addComment(input: "
       "{ sku: $sku, author: \"bench\", body: $body, rating: 5 }) { comment { id } } }")
COUNT = "query($sku: String!) { comments(sku: $sku, first: 1) { totalCount } }"


def post(query, variables):
    data = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(
        api + "/graphql", data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.load(response)
    if body.get("errors"):
        raise SystemExit(f"error: {body['errors']}")
    return body["data"]


acked = {}        # i -> time the write was acknowledged
fresh = {}        # i -> time the CDN page first showed it
applied = {}      # i -> time the index counted it
lock = threading.Lock()
done = threading.Event()
base = post(COUNT, {"sku": sku})["comments"]["totalCount"]


def writer():
    started = time.monotonic()
    for i in range(writes):
        post(ADD, {"sku": sku, "body": f"{tag}-{i}-"})
        with lock:
            acked[i] = time.monotonic()
        pause = started + (i + 1) / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)


def cdn_reader():
    while not done.is_set():
        with urllib.request.urlopen(page_url, timeout=30) as response:
            text = response.read().decode()
        now = time.monotonic()
        with lock:
            for i in list(acked):
                if i not in fresh and f"{tag}-{i}-" in text:
                    fresh[i] = now
        time.sleep(0.005)


def index_reader():
    while not done.is_set():
        total = post(COUNT, {"sku": sku})["comments"]["totalCount"]
        now = time.monotonic()
        with lock:
            for i in list(acked):
                if i not in applied and total >= base + i + 1:
                    applied[i] = now
        time.sleep(0.005)


readers = [threading.Thread(target=cdn_reader), threading.Thread(target=index_reader)]
for reader in readers:
    reader.start()
writer()
deadline = time.monotonic() + 60
while time.monotonic() < deadline and (len(fresh) < writes or len(applied) < writes):
    time.sleep(0.05)
done.set()
for reader in readers:
    reader.join()


def summary(name, lags):
    lags = sorted(lags)
    if not lags:
        print(f"{name}: none")
        return
    p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]
    print(f"{name}: n={len(lags)} p50={p(0.5) * 1000:.0f} ms p99={p(0.99) * 1000:.0f} ms "
          f"max={lags[-1] * 1000:.0f} ms mean={statistics.mean(lags) * 1000:.0f} ms")


# A body that shows in the CDN's page before the index counted it came from a page the
# server ran while the stream lagged; count each write from its acknowledgement either way.
summary("write to fresh page through the CDN", [fresh[i] - acked[i] for i in fresh])
summary("write to applied in the index (stream lag)", [applied[i] - acked[i] for i in applied])
summary("CDN after the index (purge and refetch)",
        [fresh[i] - applied[i] for i in fresh if i in applied])
missing = writes - len(fresh)
print(f"writes: {writes} at {rate}/s; never fresh within 60 s after the last: {missing}")
sys.exit(1 if missing else 0)
