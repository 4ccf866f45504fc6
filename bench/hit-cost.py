#!/usr/bin/env python3
"""What a response-cache hit costs the server against computing a page (the price per KiB of
a hit: graphql::CACHED_POINTS_PER_KIB). Starts BIN twice on free ports (embedded, DEMO comments,
budgets off), one with the response cache off and one with it on, and sends N sequential
keep-alive GETs per case, reading the server's CPU (utime+stime of /proc/PID/stat) around
each case:

  page      the first page of 20 with bodies, computed (cache off): its price is its complexity
  hit/small the same page answered from the cache, as identity
  hit/large a page of 100 with bodies, three times over (aliases), from the cache, as identity

The marginal CPU of a KiB sent is (large - small) / (their KiB apart); in points, at the page's
price for the page's CPU. A kept answer is sent as the bytes kept (encoded once per coding),
so an identity hit measures what any hit costs per byte.

  BIN=target/release/dynapage N=3000 bench/hit-cost.py
"""
import http.client, json, os, socket, subprocess, sys, time, urllib.parse

BIN = os.environ.get("BIN", "target/release/dynapage")
N = int(os.environ.get("N", "3000"))
DEMO = os.environ.get("DEMO", "2000")
SKU = "DAFT_PUNK_TSHIRT"
FIELDS = "edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage endCursor }"
SMALL = "query($sku: String!) { comments(sku: $sku, first: 20) { %s } }" % FIELDS
LARGE = ("query($sku: String!) { a: comments(sku: $sku, first: 100) { %s } "
         "b: comments(sku: $sku, first: 100, offset: 100) { %s } "
         "c: comments(sku: $sku, first: 100, offset: 200) { %s } }") % (FIELDS, FIELDS, FIELDS)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(cache_bytes):
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--demo-comments", DEMO,
                             "--response-cache-bytes", str(cache_bytes), "--rate-limit-cost", "0",
                             "--rate-limit-writes", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.1)
    sys.exit("server did not start")


def ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def path(query):
    return "/graphql?" + urllib.parse.urlencode({"query": query, "variables": json.dumps({"sku": SKU})})


def run(proc, port, query):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    p = path(query)
    size, cost = 0, None
    for _ in range(20):  # warm: the cache keeps the third answer on
        conn.request("GET", p, headers={"Accept": "application/json"})
        r = conn.getresponse(); body = r.read(); size = len(body)
        ext = json.loads(body).get("extensions")
        if ext:
            cost = ext["cost"]["requestedQueryCost"]
    before = ticks(proc.pid); t = time.time()
    for _ in range(N):
        conn.request("GET", p, headers={"Accept": "application/json"})
        conn.getresponse().read()
    cpu = (ticks(proc.pid) - before) / os.sysconf("SC_CLK_TCK") / N * 1e6
    return cpu, size, cost, (time.time() - t) / N * 1e6


ROUNDS = int(os.environ.get("ROUNDS", "7"))
median = lambda xs: sorted(xs)[len(xs) // 2]
cold, cold_port = start(0)
warm, warm_port = start(64 << 20)
try:
    pages, smalls, larges = [], [], []
    for _ in range(ROUNDS):  # alternating, so the machine's load drifts alike over each case
        page_cpu, page_size, price, _ = run(cold, cold_port, SMALL); pages.append(page_cpu)
        small_cpu, small_size, _, _ = run(warm, warm_port, SMALL); smalls.append(small_cpu)
        large_cpu, large_size, _, _ = run(warm, warm_port, LARGE); larges.append(large_cpu)
    _, _, large_price, _ = run(cold, cold_port, LARGE)
finally:
    cold.kill(); warm.kill()
page_cpu, small_cpu, large_cpu = median(pages), median(smalls), median(larges)
per_kib = (large_cpu - small_cpu) / ((large_size - small_size) / 1024)
print(f"load: {os.getloadavg()}; {ROUNDS} rounds of {N} requests a case, medians")
print(f"page of 20 computed: {page_cpu:.1f} us server CPU ({' '.join(f'{x:.0f}' for x in pages)}), {page_size} B, price {price}")
print(f"hit, {small_size} B: {small_cpu:.1f} us ({' '.join(f'{x:.0f}' for x in smalls)})")
print(f"hit, {large_size} B: {large_cpu:.1f} us ({' '.join(f'{x:.0f}' for x in larges)}); computing it: price {large_price}")
print(f"a KiB sent: {per_kib:.2f} us = {price * per_kib / page_cpu:.3f} points at the page's rate")
print(f"a hit's fixed part: {small_cpu:.1f} us = {price * small_cpu / page_cpu:.1f} points")
