#!/usr/bin/env bash
# The response cache benchmark (BENCHMARKS.md, "Response cache"): the first page of a popular
# product repeated over GET by 16 connections, against a server with the response cache and
# one without, then If-None-Match 304s, then hits through Varnish with the repository's VCL.
# Embedded backends (DAFT_PUNK_TSHIRT with $COMMENTS comments). Prints requests per second and
# the server's CPU per request (utime+stime from /proc/PID/stat around each run).
#
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
#     cargo build --release --bin dynapage
#   bench/response-cache.sh            # DURATION=10 COMMENTS=250000 by default
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/dynapage}
DURATION=${DURATION:-10}
COMMENTS=${COMMENTS:-250000}
QUERY='query($sku: String!) { comments(sku: $sku, first: 20) { totalCount edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage endCursor } } }'
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
path() {
  python3 -c 'import sys, urllib.parse, json; print("/graphql?" + urllib.parse.urlencode({"query": sys.argv[1], "variables": json.dumps({"sku": "DAFT_PUNK_TSHIRT"})}))' "$QUERY"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_server() { # port, cache bytes
  "$BIN" serve --listen "127.0.0.1:$1" --demo-comments "$COMMENTS" --response-cache-bytes "$2" \
    --rate-limit-cost 0 --rate-limit-writes 0 --max-connections-per-address 10000 \
    >"target/response-cache-server-$1.log" 2>&1 &
  PIDS+=($!)
  SERVER_PID=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return; sleep 0.2; done
  echo "server on $1 did not start" >&2; exit 1
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
COLD=$(free_port); start_server "$COLD" 0; COLD_PID=$SERVER_PID
run "without the response cache" "$COLD_PID" "http://127.0.0.1:$COLD$P"
kill "$COLD_PID"
WARM=$(free_port); start_server "$WARM" 67108864; WARM_PID=$SERVER_PID
run "with the response cache" "$WARM_PID" "http://127.0.0.1:$WARM$P"
ETAG=$(curl -s -D - -o /dev/null "http://127.0.0.1:$WARM$P" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
run "If-None-Match (304)" "$WARM_PID" "http://127.0.0.1:$WARM$P" -H "If-None-Match: $ETAG"

VPORT=$(free_port); VDIR=$(mktemp -d)
sed -e "s/\.port = \"8080\";/.port = \"$WARM\";/" deploy/varnish/default.vcl >"$VDIR/default.vcl"
varnishd -F -j none -n "$VDIR/work" -a "127.0.0.1:$VPORT" -f "$VDIR/default.vcl" -s malloc,64m -T none >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$VPORT$P" && break; sleep 0.1; done
run "through Varnish (server CPU: what reached it)" "$WARM_PID" "http://127.0.0.1:$VPORT$P"
