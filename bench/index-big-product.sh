#!/usr/bin/env bash
# One product of 10 million comments in the Redis index (BENCHMARKS.md, "Redis index: a
# 10-million-comment product"): its memory and what a page jump and a pager page cost at
# offsets 0, 10^6 and the far end.
#
#   bench/index-big-product.sh              # COMMENTS=10000000 CALLS=200 PORT=17491
#
# Seeds the comments like `--demo-comments` (ratings 8/7/15/30/40 %, one in four on the
# millisecond of the one before, gaps up to 90 s, 11-byte members) straight into the five
# rating sets of a redis-server of its own (chunks of 100,000 per script call), reads
# `MEMORY USAGE … SAMPLES 0` of the sets and `INFO memory`, then sends the index's read script
# (src/index/redis/{select,pick,read}.lua of the work tree) CALLS times per case, one at a time
# (redis-benchmark, one connection), and reports Redis's CPU per call (`INFO cpu`, user +
# system, around the calls), its own time per call (`INFO commandstats`) and its commands per
# call. Needs redis-server, redis-cli, redis-benchmark and ~1.5 GB of memory.
set -euo pipefail

COMMENTS=${COMMENTS:-10000000}
CALLS=${CALLS:-200}
PORT=${PORT:-17491}
repo=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/seed.lua" <<'EOF'
math.randomseed(tonumber(ARGV[3]))
local ms = tonumber(ARGV[2])
local w = {8, 7, 15, 30, 40}
for i = 1, tonumber(ARGV[1]) do
  if math.random(4) ~= 1 then ms = ms - math.random(90000) end
  local roll, r, acc = math.random(100), 5, 0
  for k = 1, 5 do acc = acc + w[k]; if roll <= acc then r = k; break end end
  local b = {1}
  for j = 2, 11 do b[j] = math.random(0, 255) end
  redis.call('ZADD', KEYS[r], ms, string.char(unpack(b)))
end
return ms
EOF

redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no >"$tmp/redis.log" 2>&1 &
server=$!
R=(redis-cli -p "$PORT")
until "${R[@]}" ping >/dev/null 2>&1; do sleep 0.2; done
K='idx:{BIG}:r'
keys=("${K}1" "${K}2" "${K}3" "${K}4" "${K}5")
start=1767225600000
chunk=100000
for ((done = 0, s = 1; done < COMMENTS; done += chunk, s++)); do
  n=$((COMMENTS - done < chunk ? COMMENTS - done : chunk))
  start=$("${R[@]}" --eval "$tmp/seed.lua" "${keys[@]}" , "$n" "$start" "$s")
done

sizes=()
bytes=0
for k in "${keys[@]}"; do
  sizes+=("$("${R[@]}" zcard "$k")")
  bytes=$((bytes + $("${R[@]}" memory usage "$k" samples 0)))
done
echo "# $COMMENTS comments, ratings 1..5: ${sizes[*]}; redis $(redis-server --version | awk '{print $3}'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# MEMORY USAGE of the five sets (SAMPLES 0): $bytes B = $(echo "scale=1; $bytes / $COMMENTS" | bc) B per comment; INFO used_memory: $("${R[@]}" info memory | grep '^used_memory:' | cut -d: -f2 | tr -d '\r') B"

sha=$(cat "$repo"/src/index/redis/{select,pick,read}.lua | "${R[@]}" -x script load)
cpu() {
  "${R[@]}" info cpu | grep -E '^used_cpu_(sys|user):' | cut -d: -f2 | tr -d '\r' | paste -sd+ | bc
}
row() {
  local name=$1
  shift
  "${R[@]}" config resetstat >/dev/null
  local c0 c1 usec calls
  c0=$(cpu)
  redis-benchmark -p "$PORT" -c 1 -n "$CALLS" -q EVALSHA "$sha" 5 "${keys[@]}" "$@" >/dev/null
  c1=$(cpu)
  usec=$("${R[@]}" info commandstats | grep '^cmdstat_evalsha' | sed 's/.*usec_per_call=\([0-9.]*\).*/\1/')
  calls=$("${R[@]}" info commandstats | grep '^cmdstat_' | grep -v -E 'config|info' |
    sed 's/.*:calls=\([0-9]*\),.*/\1/' | paste -sd+ | bc)
  printf '| %s | %.0f | %s | %s |\n' "$name" "$(echo "($c1 - $c0) * 1000000 / $CALLS" | bc -l)" \
    "$usec" "$(echo "scale=1; $calls / $CALLS" | bc)"
}
last=$((COMMENTS - 20))
echo "| call ($CALLS, one at a time) | Redis CPU per call (µs) | script time by Redis's clock (µs) | Redis commands per call |"
echo '|---|---|---|---|'
row 'totalCount' desc '' '' '' none '' '' 1 newest none
for offset in 0 1000000 "$last"; do
  row "bare jump, offset $offset" desc '' '' $((offset > 0 ? offset - 1 : 0)) none '' '' 20 newest none
  row "pager page, offset $offset" desc '' '' $((offset > 0 ? offset - 1 : 0)) rank "$offset" '' 1 newest none
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
