#!/usr/bin/env bash
# What helpful votes cost in Redis (issue 26, BENCHMARKS.md "Helpful votes"): the Redis index of
# a product of N comments before any vote, after one vote on each of VOTED of them, and after a
# second voter's vote on the same ones (voters are client addresses, `--auth off`, sent as
# `X-Forwarded-For` through `--trusted-proxies 127.0.0.1`). The server runs the embedded store and the Redis index
# (a redis-server of its own); votes go through the API (`markHelpful`), and the index applies
# each vote's change (the comment's next version) from the store's feed. Redis memory does not
# depend on the server's build, so a debug build will do.
#
#   cargo build --bin dynapage
#   bench/vote-memory.sh            # BIN=target/debug/dynapage N=100000 VOTED=20000
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/debug/dynapage}
N=${N:-100000}
VOTED=${VOTED:-20000}
SKU=DAFT_PUNK_TSHIRT
source bench/lib.sh
start_redis
used() { redis-cli -p "$rport" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }
keys_bytes() {
  local total=0
  for key in r1 r2 r3 r4 r5 w1 w2 w3 w4 w5 h1 h2 h3 h4 h5 v n; do
    bytes=$(redis-cli -p "$rport" memory usage "dynapage:idx:{$SKU}:$key" samples 0)
    total=$((total + ${bytes:-0}))
  done
  echo "$total"
}
empty=$(used)
port=$(free_port)
url="http://127.0.0.1:$port"
RUST_LOG=warn "$BIN" serve --listen "127.0.0.1:$port" --demo-comments "$N" --index redis \
  --redis-url "redis://127.0.0.1:$rport" --response-cache-bytes 0 --rate-limit-cost 0 \
  --rate-limit-writes 0 --max-connections-per-address 10000 --trusted-proxies 127.0.0.1 \
  >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.5; done
until [ "$(redis-cli -p "$rport" zcard "dynapage:idx:{$SKU}:r5")" -gt 0 ] &&
  python3 - "$url" "$N" "$SKU" <<'PY'
import json, sys, urllib.request
url, n, sku = sys.argv[1], int(sys.argv[2]), sys.argv[3]
body = json.dumps({"query": '{ product(sku: "%s") { comments { totalCount } } }' % sku}).encode()
request = urllib.request.Request(url + "/graphql", data=body, headers={"Content-Type": "application/json"})
total = json.load(urllib.request.urlopen(request))["data"]["product"]["comments"]["totalCount"]
sys.exit(0 if total == n else 1)
PY
do sleep 1; done
seeded=$(used)
seeded_keys=$(keys_bytes)

vote() { # $1: the voter's address
  python3 - "$url" "$VOTED" "$SKU" "$1" <<'PY'
import json, sys, urllib.request, concurrent.futures
url, voted, sku, voter = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def post(query, variables):
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(url + "/graphql", data=body, headers={
        "Content-Type": "application/json", "X-Forwarded-For": voter})
    answer = json.load(urllib.request.urlopen(request))
    assert "errors" not in answer, answer
    return answer["data"]
ids, after = [], None
while len(ids) < voted:
    page = post('query($sku: String!, $after: String) { comments(sku: $sku, first: 100, after: $after) '
                '{ edges { cursor node { id } } } }', {"sku": sku, "after": after})["comments"]["edges"]
    ids += [e["node"]["id"] for e in page]
    after = page[-1]["cursor"]
mark = "mutation($id: ID!) { markHelpful(input: { commentId: $id }) { comment { helpfulCount } } }"
with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(lambda i: post(mark, {"id": i}), ids[:voted]))
PY
}
settle() { # until the index holds version $1 for a voted comment, then a moment more
  until [ "$(redis-cli -p "$rport" hvals "dynapage:idx:{$SKU}:v" | grep -c "^$1$")" -ge "$VOTED" ]; do
    sleep 0.5
  done
  sleep 2
}
vote 192.0.2.1
settle 2
voted=$(used)
voted_keys=$(keys_bytes)
# A second voter on the same comments: each gets one more version, nothing more to keep.
vote 192.0.2.2
settle 3
again=$(used)
again_keys=$(keys_bytes)

echo "load: $(uptime)"
echo "comments: $N; voted: $VOTED"
echo "used_memory: empty $empty, seeded $seeded, voted once $voted, voted by a second voter $again"
# The demo's two small products (1,246 comments) are in `used_memory` too.
echo "per comment, no votes: $(((seeded - empty) / (N + 1246))) B used_memory, $((seeded_keys / N)) B MEMORY USAGE of the product's keys"
echo "per voted comment: $(((voted - seeded) / VOTED)) B used_memory, $(((voted_keys - seeded_keys) / VOTED)) B MEMORY USAGE"
echo "a second vote on a voted comment: $(((again - voted) / VOTED)) B used_memory, $(((again_keys - voted_keys) / VOTED)) B MEMORY USAGE"
