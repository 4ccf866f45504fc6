#!/usr/bin/env bash
# The response cache benchmark (BENCHMARKS.md, "Response cache"): the first page of a popular
# product repeated over GET by 16 connections, against a server with the response cache and
# one without, then If-None-Match 304s, then hits through Varnish with the repository's VCL.
# Prints requests per second and the server's CPU per request (utime+stime from
# /proc/PID/stat around each run).
#
# BACKEND=embedded (the default): the in-process store and index, DAFT_PUNK_TSHIRT with
# $COMMENTS comments. BACKEND=dynamodb: DynamoDB Local and a redis-server of its own,
# $COMMENTS comments seeded with `dynapage seed` and indexed through the stream by the server
# without the cache (`--sync`, which also purges Varnish); then bench/write-to-fresh.py
# measures the time from a write to the first fresh page through Varnish at 10 writes/s.
#
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
#     cargo build --release --bin dynapage
#   bench/response-cache.sh                          # DURATION=10 COMMENTS=250000
#   BACKEND=dynamodb COMMENTS=1100000 bench/response-cache.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/dynapage}
DURATION=${DURATION:-10}
COMMENTS=${COMMENTS:-250000}
BACKEND=${BACKEND:-embedded}
SKU=DAFT_PUNK_TSHIRT
QUERY='query($sku: String!) { comments(sku: $sku, first: 20) { totalCount edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage endCursor } } }'
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
path() {
  python3 -c 'import sys, urllib.parse, json; print("/graphql?" + urllib.parse.urlencode({"query": sys.argv[1], "variables": json.dumps({"sku": "DAFT_PUNK_TSHIRT"})}))' "$QUERY"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_server() { # port, cache bytes, backend flags...
  local port=$1 bytes=$2
  shift 2
  "$BIN" serve --listen "127.0.0.1:$port" --response-cache-bytes "$bytes" \
    --rate-limit-cost 0 --rate-limit-writes 0 --max-connections-per-address 10000 "$@" \
    >"target/response-cache-server-$port.log" 2>&1 &
  PIDS+=($!)
  SERVER_PID=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.2; done
  echo "server on $port did not start" >&2; exit 1
}

run() { # label, pid, url, extra wrk args...
  local label=$1 pid=$2 url=$3; shift 3
  curl -s -o /dev/null "$url" "$@" ; curl -s -o /dev/null "$url"; curl -s -o /dev/null "$url"
  local before after out requests
  before=$(ticks "$pid")
  out=$(wrk -t2 -c16 -d"${DURATION}s" --latency "$@" "$url")
  after=$(ticks "$pid")
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$label: $(echo "$out" | awk '/Requests\/sec/ {print $2}') req/s, p50 $(echo "$out" | awk '$1=="50%" {print $2}'), p99 $(echo "$out" | awk '$1=="99%" {print $2}'), non-2xx/3xx: $(echo "$out" | awk '/Non-2xx/ {n=$4} END {print n+0}'), server CPU $(awk -v t=$((after - before)) -v n="$requests" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}') us/request"
}

echo "load: $(uptime)"
P=$(path)
VPORT=$(free_port); VDIR=$(mktemp -d)
COLD=$(free_port); WARM=$(free_port)
if [[ $BACKEND == dynamodb ]]; then
  DPORT=$(free_port); RPORT=$(free_port)
  scripts/dynamodb-local "$DPORT" >target/response-cache-dynamodb.log 2>&1 &
  PIDS+=($!)
  redis-server --port "$RPORT" --save "" --appendonly no >target/response-cache-redis.log 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 300); do
    curl -s -o /dev/null -X POST "http://127.0.0.1:$DPORT" && break; sleep 0.2
  done
  STACK=(--store dynamodb --dynamodb-endpoint "http://127.0.0.1:$DPORT" --index redis
    --redis-url "redis://127.0.0.1:$RPORT" --auth off --cursor-secret "$(openssl rand -base64 32)")
  # The server without the cache follows the stream into Redis and purges Varnish.
  start_server "$COLD" 0 "${STACK[@]}" --create-tables --sync \
    --purge-url "http://127.0.0.1:$VPORT/" --purge-format varnish
  COLD_PID=$SERVER_PID
  started=$(date +%s)
  "$BIN" seed --sku "$SKU" --count "$COMMENTS" --store dynamodb \
    --dynamodb-endpoint "http://127.0.0.1:$DPORT" 2>&1 | tail -n 2
  total() {
    python3 - "http://127.0.0.1:$COLD/graphql" "$SKU" <<'PY'
import json, sys, urllib.request
query = '{ comments(sku: "%s", first: 1) { totalCount } }' % sys.argv[2]
request = urllib.request.Request(sys.argv[1], data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request))["data"]["comments"]["totalCount"])
PY
  }
  until [[ $(total) -ge $COMMENTS ]]; do sleep 2; done
  echo "seeded and indexed $COMMENTS comments in $(($(date +%s) - started)) s"
  start_server "$WARM" 67108864 "${STACK[@]}"
  WARM_PID=$SERVER_PID
else
  start_server "$COLD" 0 --demo-comments "$COMMENTS"
  COLD_PID=$SERVER_PID
fi
echo "load: $(uptime)"
run "without the response cache" "$COLD_PID" "http://127.0.0.1:$COLD$P"
if [[ $BACKEND != dynamodb ]]; then
  kill "$COLD_PID"
  start_server "$WARM" 67108864 --demo-comments "$COMMENTS"
  WARM_PID=$SERVER_PID
fi
run "with the response cache" "$WARM_PID" "http://127.0.0.1:$WARM$P"
ETAG=$(curl -s -D - -o /dev/null "http://127.0.0.1:$WARM$P" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
run "If-None-Match (304)" "$WARM_PID" "http://127.0.0.1:$WARM$P" -H "If-None-Match: $ETAG"

sed -e "s/\.port = \"8080\";/.port = \"$WARM\";/" deploy/varnish/default.vcl >"$VDIR/default.vcl"
varnishd -F -j none -n "$VDIR/work" -a "127.0.0.1:$VPORT" -f "$VDIR/default.vcl" -s malloc,64m -T none >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$VPORT$P" && break; sleep 0.1; done
run "through Varnish (server CPU: what reached it)" "$WARM_PID" "http://127.0.0.1:$VPORT$P"
if [[ $BACKEND == dynamodb ]]; then
  bench/write-to-fresh.py "http://127.0.0.1:$COLD" "http://127.0.0.1:$VPORT$P" "$SKU" 200 10
fi
