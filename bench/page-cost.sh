#!/usr/bin/env bash
# What a page costs to serve (issue 23, BENCHMARKS.md "Cost per million pages"): DynamoDB read
# capacity and Redis CPU per page for a first page, a deep jump, pages of a rating filter, a
# backward page and a numbered page with its pager, on DynamoDB Local + Redis. Read units are
# what DynamoDB Local reports in each query's ConsumedCapacity (the server logs it, per query,
# at debug level); Redis CPU is `INFO cpu` around the requests (nothing else uses that Redis).
# Neither depends on the server's build, so a debug build will do. Prints one line per case.
# With WRK_SECONDS=S (and a release build), each case is also run for S seconds by wrk at 16
# connections (bench/wrk/post.lua) for its pages per second, on the same server and data (which
# logs every query at debug level for the read units: a line of JSON per query). BODY_BYTES=B
# seeds comments whose bodies are B bytes long (`seed --body-bytes`; default: 20 to 60 bytes).
#
#   cargo build --bin dynapage
#   bench/page-cost.sh              # BIN=target/debug/dynapage N=100000 REQUESTS=300
#   cargo build --release --bin dynapage
#   BIN=target/release/dynapage WRK_SECONDS=10 bench/page-cost.sh
#   BIN=target/release/dynapage WRK_SECONDS=10 BODY_BYTES=1024 bench/page-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/debug/dynapage}
N=${N:-100000}
REQUESTS=${REQUESTS:-300}
WRK_SECONDS=${WRK_SECONDS:-0}
BODY_BYTES=${BODY_BYTES:-0}
SKU=DAFT_PUNK_TSHIRT
DEEP=$((N * 9 / 10))
source bench/lib.sh
start_redis
dport=$(free_port)
scripts/dynamodb-local "$dport" >"$work/dynamodb.log" 2>&1 &
pids+=($!)
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
store=(--store dynamodb --dynamodb-endpoint "http://127.0.0.1:$dport")
index=(--index redis --redis-url "redis://127.0.0.1:$rport")
for _ in $(seq 1 100); do
  "$BIN" seed --sku WARMUP --count 1 "${store[@]}" --create-tables >/dev/null 2>&1 && break
  sleep 0.5
done
echo "seeding $N comments (bodies: ${BODY_BYTES} bytes, 0: short) into DynamoDB Local, then reindexing" >&2
"$BIN" seed --sku "$SKU" --count "$N" --body-bytes "$BODY_BYTES" "${store[@]}" >/dev/null 2>&1
"$BIN" reindex --sku "$SKU" "${store[@]}" "${index[@]}" >/dev/null 2>&1
port=$(free_port)
url="http://127.0.0.1:$port"
RUST_LOG="warn,dynapage::store::dynamo::reads=debug" "$BIN" serve --listen "127.0.0.1:$port" \
  "${store[@]}" "${index[@]}" --auth off --cursor-secret bench-cost-per-page-secret-0123456789 \
  --response-cache-bytes 0 --rate-limit-cost 0 --rate-limit-writes 0 --log-format json \
  >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.5; done

# Read units counted by the server's metrics (BatchGetItem, GetItem): queries are counted from
# the log instead, as fractions of a unit.
batch_units() { curl -s "$url/metrics" | awk '/^dynapage_store_read_units_total/ {s += $NF} END {print s + 0}'; }
redis_cpu() { redis-cli -p "$rport" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
page='edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage }'
pager="totalCount startOffset pageCursors(size: 20, around: 5) { around { page cursor } first { page cursor } last { page cursor } }"
cases=(
  "first page|first: 20|$page"
  "deep jump, offset $DEEP|first: 20, offset: $DEEP|$page"
  "numbered page with pager, offset $DEEP|first: 20, offset: $DEEP|$page $pager"
  "ratings [3, 5]|first: 20, ratings: [3, 5]|$page"
  "ratings [1, 4, 5]|first: 20, ratings: [1, 4, 5]|$page"
  "backward, last 20|last: 20|$page"
)
# Pages per second of QUERY under wrk (16 connections, WRK_SECONDS); then a second's pause, so
# that the server's last log lines of the run are written before the next case counts its own.
pages_per_second() {
  python3 -c 'import json, sys; print(json.dumps({"query": sys.argv[1]}))' "$1" >"$work/body.jsonl"
  BENCH_BODIES="$work/body.jsonl" wrk -t2 -c16 -d"${WRK_SECONDS}s" -s bench/wrk/post.lua "$url/graphql" |
    sed -n 's/^RESULT .*requests_per_s=\([0-9.]*\).*/\1/p'
  sleep 1
}
if [ "$WRK_SECONDS" -gt 0 ]; then
  # DynamoDB Local's JVM compiles its hot code in the first seconds under load: without a
  # warm-up, the first case measured is the slowest whatever it is.
  pages_per_second "{ comments(sku: \"$SKU\", first: 20) { $page } }" >/dev/null
fi
printf 'case\tread units per page\tstore queries per page\titems per page\tRedis CPU us per page\tpages/s at 16 connections\n'
for case in "${cases[@]}"; do
  IFS='|' read -r name args selection <<<"$case"
  query="{ comments(sku: \"$SKU\", $args) { $selection } }"
  lines_before=$(wc -l <"$work/server.log")
  cpu_before=$(redis_cpu)
  batch_before=$(batch_units)
  python3 - "$url" "$query" "$REQUESTS" <<'PY'
import json, sys, urllib.request
url, query, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = json.dumps({"query": query}).encode()
for _ in range(n):
    request = urllib.request.Request(url + "/graphql", data=body, headers={"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request))
    assert "errors" not in answer and len(answer["data"]["comments"]["edges"]) == 20, answer
PY
  cpu_after=$(redis_cpu)
  batch=$(( $(batch_units) - batch_before ))
  lines_after=$(wc -l <"$work/server.log")
  rate=-
  if [ "$WRK_SECONDS" -gt 0 ]; then
    rate=$(pages_per_second "$query")
  fi
  sed -n "$((lines_before + 1)),${lines_after}p" "$work/server.log" | python3 -c '
import json, sys
name, n, cpu, batch = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
units, queries, items = batch, 0, 0
for line in sys.stdin:
    try:
        event = json.loads(line)
    except ValueError:
        continue
    fields = event.get("fields", event)  # --log-format json flattens the event
    if fields.get("message") == "dynamodb query":
        units += float(fields.get("consumed_rcu") or 0)
        queries += 1
        items += int(fields.get("items", 0))
print(f"{name}\t{units / n:.2f}\t{queries / n:.2f}\t{items / n:.1f}\t{cpu * 1e6 / n:.0f}\t{sys.argv[5]}")
' "$name" "$REQUESTS" "$(echo "$cpu_after - $cpu_before" | bc)" "$batch" "$rate"
done
