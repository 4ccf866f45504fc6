#!/usr/bin/env bash
# A category page's stars (issue 26, BENCHMARKS.md "Rating summaries"): in one request,
# `ratingSummaries` of 48 products ("summaries"), 48 aliased `product(sku:) { ratingSummary }`
# lookups ("lookups"), and 48 aliased `comments(sku:) { totalCount }` ("totals"), on a server
# with the Redis index (a redis-server of its own) and the embedded store, 48 products of
# PER_PRODUCT comments each (`--max-aliases 64`: the default 30 refuses 48 aliases). Per shape:
# what the server reports (`extensions.cost`), what Redis counted per request over REQUESTS
# sequential requests (`INFO commandstats`: commands, by name; `INFO stats`:
# `total_reads_processed`, the read events of Redis's event loop, about one per batch of
# commands that arrives together), and unless WRK=0, wrk at 1 and 16 connections (requests/s,
# p50, p99).
#
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
#     cargo build --release --bin dynapage
#   bench/rating-summaries.sh            # BIN=target/release/dynapage DURATION=10
#   WRK=0 BIN=target/debug/dynapage PER_PRODUCT=200 bench/rating-summaries.sh   # counts only
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/dynapage}
DURATION=${DURATION:-10}
WRK=${WRK:-1}
REQUESTS=${REQUESTS:-1000}
PRODUCTS=48
PER_PRODUCT=${PER_PRODUCT:-1000}
source bench/lib.sh
start_redis
port=$(free_port)
url="http://127.0.0.1:$port"
RUST_LOG=warn "$BIN" serve --listen "127.0.0.1:$port" --demo-comments 0 --index redis \
  --redis-url "redis://127.0.0.1:$rport" --response-cache-bytes 0 --rate-limit-cost 0 \
  --rate-limit-writes 0 --max-connections-per-address 10000 --max-aliases 64 \
  >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.2; done

# The products' comments, written through the API (the index follows each write).
python3 - "$url" "$PRODUCTS" "$PER_PRODUCT" "$work" <<'PY'
import json, sys, urllib.request, concurrent.futures
url, products, per, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
add = ('mutation($sku: String!, $rating: Int!) { addComment(input: { sku: $sku, author: "b", '
       'body: "stars", rating: $rating }) { comment { id } } }')
def write(i):
    sku = f"SHELF_{i // per}"
    body = json.dumps({"query": add, "variables": {"sku": sku, "rating": 1 + i % 5}}).encode()
    request = urllib.request.Request(url + "/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
    assert b'"errors"' not in urllib.request.urlopen(request).read()
with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(write, range(products * per)))
skus = [f"SHELF_{i}" for i in range(products)]
fields = "total average counts { rating count }"
one = "{ ratingSummaries(skus: %s) { sku summary { %s } } }" % (json.dumps(skus), fields)
many = "{ " + " ".join(f'p{i}: product(sku: "{s}") {{ ratingSummary {{ {fields} }} }}'
                       for i, s in enumerate(skus)) + " }"
totals = "{ " + " ".join(f't{i}: comments(sku: "{s}") {{ totalCount }}'
                         for i, s in enumerate(skus)) + " }"
for name, query in (("summaries", one), ("lookups", many), ("totals", totals)):
    with open(f"{work}/{name}.json", "w") as f:
        f.write(json.dumps({"query": query}) + "\n")
PY
echo "load: $(uptime)"
# Redis's counters: every command's calls (`name=calls ...`) and the read events.
counters() {
  redis-cli -p "$rport" info commandstats | awk -F'[_:=,]' '/^cmdstat_/ {print $2, $4}'
  redis-cli -p "$rport" info stats | awk -F: '/^total_reads_processed/ {print "read_events", $2}' | tr -d '\r'
}
for shape in summaries lookups totals; do
  counters >"$work/before"
  for _ in $(seq 1 "$REQUESTS"); do
    curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary "@$work/$shape.json" "$url/graphql"
  done
  counters >"$work/after"
  per_request=$(python3 - "$work/before" "$work/after" "$REQUESTS" <<'PY'
import sys
read = lambda path: {k: int(v) for k, v in (line.split() for line in open(path))}
before, after, n = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
# The two INFO calls that read the counters are not the requests'.
delta = {k: (v - before.get(k, 0)) / n for k, v in after.items() if k != "info"}
events = delta.pop("read_events")
commands = sum(delta.values())
named = ", ".join(f"{k} {v:g}" for k, v in sorted(delta.items()) if v >= 0.01)
print(f"{commands:g} commands ({named}); {events:.2f} read events")
PY
)
  cost=$(curl -s -H 'Content-Type: application/json' --data-binary "@$work/$shape.json" "$url/graphql" |
    python3 -c 'import json, sys; r = json.load(sys.stdin); assert "errors" not in r, r; print(r["extensions"]["cost"])')
  echo "$shape: per request $per_request; cost $cost"
  [ "$WRK" = 0 ] && continue
  for connections in 1 16; do
    out=$(BENCH_BODIES="$work/$shape.json" wrk -t1 -c"$connections" -d"${DURATION}s" \
      -s bench/wrk/post.lua "$url/graphql")
    echo "$shape, $connections connection(s): $(grep -o 'RESULT.*' <<<"$out")"
  done
done
