#!/usr/bin/env bash
# A category page's stars (issue 26, BENCHMARKS.md "Rating summaries"): `ratingSummaries` of 48
# products in one request against 48 aliased `product(sku:) { ratingSummary }` lookups in one
# request (`--max-aliases 64`: the default 30 refuses 48 aliases, which is the point of
# `ratingSummaries`), on a server with the Redis index (a redis-server of its own) and the embedded store,
# 48 products of 1,000 comments each. Per shape: wrk at 1 and 16 connections (10 s each,
# requests/s, p50, p99) and the Redis commands per request (`INFO commandstats` around a run of
# 1,000 requests).
#
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
#     cargo build --release --bin dynapage
#   bench/rating-summaries.sh            # BIN=target/release/dynapage DURATION=10
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/dynapage}
DURATION=${DURATION:-10}
PRODUCTS=48
PER_PRODUCT=1000
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

rport=$(free_port)
redis-server --port "$rport" --save "" --appendonly no >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
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
for name, query in (("summaries", one), ("lookups", many)):
    with open(f"{work}/{name}.json", "w") as f:
        f.write(json.dumps({"query": query}) + "\n")
PY
echo "load: $(uptime)"
commands() { redis-cli -p "$rport" info commandstats | awk -F'[=,:]' '/^cmdstat_/ {n += $3} END {print n}'; }
for shape in summaries lookups; do
  before=$(commands)
  for _ in $(seq 1 1000); do
    curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary "@$work/$shape.json" "$url/graphql"
  done
  after=$(commands)
  cost=$(curl -s -H 'Content-Type: application/json' --data-binary "@$work/$shape.json" "$url/graphql" |
    python3 -c 'import json, sys; r = json.load(sys.stdin); assert "errors" not in r, r; print(r["extensions"]["cost"])')
  echo "$shape: Redis commands per request $(((after - before) / 1000)); cost $cost"
  for connections in 1 16; do
    out=$(BENCH_BODIES="$work/$shape.json" wrk -t1 -c"$connections" -d"${DURATION}s" \
      -s bench/wrk/post.lua "$url/graphql")
    echo "$shape, $connections connection(s): $(grep -o 'RESULT.*' <<<"$out")"
  done
done
