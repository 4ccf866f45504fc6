#!/usr/bin/env bash
# The Redis index's read script, counted in instructions (BENCHMARKS.md, "Redis index: cheaper
# union ranks"): a deterministic A/B of `src/index/redis/{select,pick,read}.lua` between git
# revisions, for a machine too loaded for CPU times to compare.
#
#   bench/index-lua-callgrind.sh [REV ...]    # default: main and the work tree
#
# Seeds 200,000 members like `--demo-comments 200000` (ratings 8/7/15/30/40 %, one in four on
# the millisecond of the one before, 11-byte members) into five rating sets of a plain
# redis-server, saves them, loads them into a redis-server under valgrind's callgrind
# (`hz 1`, so that its timers add little), and for each revision and case sends N calls of
# the script as the server would (one `redis-cli` each) and reports the instructions per call
# (Redis's whole process: the script, its commands, and the client's connection, ~40 k) and
# the Redis commands per call; the last four rows are N bare jumps and N pager pages to
# offsets spread at random (the same ones for every revision). Needs redis-server, redis-cli
# and valgrind; takes ~1 min per revision. "worktree" names the files as they are on disk.
set -euo pipefail

N=${N:-20}
PORT=${PORT:-17391}
repo=$(git rev-parse --show-toplevel)
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(main worktree)
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
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
  local m = string.char(1)
  for _ = 1, 10 do m = m .. string.char(math.random(0, 255)) end
  redis.call('ZADD', KEYS[r], ms, m)
end
return ms
EOF

K='idx:{P}:r'
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" \
  --dbfilename seed.rdb >"$tmp/seed.log" 2>&1 &
pids+=($!)
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 0.2; done
start=1767225600000
for s in $(seq 10); do
  start=$(redis-cli -p "$PORT" --eval "$tmp/seed.lua" "${K}1" "${K}2" "${K}3" "${K}4" "${K}5" , \
    20000 "$start" "$s")
done
redis-cli -p "$PORT" save >/dev/null
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
wait "${pids[0]}" 2>/dev/null || true
pids=()

valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" redis-server --port "$PORT" \
  --bind 127.0.0.1 --save "" --appendonly no --hz 1 --dir "$tmp" --dbfilename seed.rdb \
  >"$tmp/valgrind.log" 2>&1 &
vg=$!
pids+=("$vg")
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 1; done

R=(redis-cli -p "$PORT")
total() {
  local sum=0 key
  for key in "$@"; do sum=$((sum + $("${R[@]}" zcard "$key"))); done
  echo "$sum"
}
# One row: runs "$@" (N script calls) between zeroed counters and reports them per call.
row() {
  local name=$1
  shift
  "${R[@]}" config resetstat >/dev/null
  callgrind_control -z "$vg" >/dev/null 2>&1
  "$@"
  callgrind_control -d "$vg" >/dev/null 2>&1
  local dump ir calls
  dump=$(ls -t "$tmp"/cg.out.* | head -1)
  ir=$(grep -E '^(summary|totals):' "$dump" | head -1 | awk '{print $2}')
  calls=$("${R[@]}" info commandstats | grep '^cmdstat_' | grep -v -E 'config|info' |
    sed 's/.*:calls=\([0-9]*\),.*/\1/' | paste -sd+ | bc)
  printf '| %s | %d | %s |\n' "$name" $((ir / N / 1000)) "$(echo "scale=1; $calls / $N" | bc)"
}
# N calls with the same arguments.
same_calls() {
  for _ in $(seq "$N"); do "${R[@]}" evalsha "$@" >/dev/null; done
}
case_row() {
  local sha=$1 name=$2
  shift 2
  row "$name" same_calls "$sha" "$@"
}
# N bare jumps (or pager pages) to offsets spread at random over the list's `total` members
# (the same offsets for every revision: bash's RANDOM, seeded): what a jump costs on average,
# not at one offset.
random_jumps() {
  local sha=$1 kind=$2 total=$3 offset
  shift 3
  RANDOM=7
  for _ in $(seq "$N"); do
    offset=$(((RANDOM * 32768 + RANDOM) % (total - 128) + 64))
    if [ "$kind" = pager ]; then
      "${R[@]}" evalsha "$sha" "$@" desc '' '' $((offset - 1)) rank "$offset" '' "${pager[@]}" \
        >/dev/null
    else
      "${R[@]}" evalsha "$sha" "$@" desc '' '' "$offset" none '' '' 20 newest none >/dev/null
    fi
  done
}
jumps_row() {
  local sha=$1 name=$2 kind=$3 total=$4
  shift 4
  row "$name" random_jumps "$sha" "$kind" "$total" "$@"
}

five=(5 "${K}1" "${K}2" "${K}3" "${K}4" "${K}5")
# A pager page's view, as the server asks it since a pager's links are page cursors: the
# total and the first edge's rank, no page bounds (before: `20 newest pager 5`, a bound per link).
pager=(1 newest none)
for rev in "${revs[@]}"; do
  if [ "$rev" = worktree ]; then
    source=$(cat "$repo"/src/index/redis/{select,pick,read}.lua)
  else
    # pick.lua was split from select.lua after main's ce54dd4; older revisions lack it.
    files=("$rev:src/index/redis/select.lua")
    if git -C "$repo" cat-file -e "$rev:src/index/redis/pick.lua" 2>/dev/null; then
      files+=("$rev:src/index/redis/pick.lua")
    fi
    source=$(git -C "$repo" show "${files[@]}" "$rev:src/index/redis/read.lua")
  fi
  sha=$(printf '%s' "$source" | "${R[@]}" -x script load)
  if [ "$rev" = worktree ]; then
    echo "## the work tree (on $(git -C "$repo" rev-parse --short HEAD)); $N calls per case"
  else
    echo "## $rev ($(git -C "$repo" rev-parse --short "$rev")); $N calls per case"
  fi
  echo '| case (200,000 comments) | k instructions per call | Redis commands per call |'
  echo '|---|---|---|'
  case_row "$sha" 'pager, offset 0' "${five[@]}" desc '' '' '' rank 0 '' "${pager[@]}"
  case_row "$sha" 'pager, offset 150000' "${five[@]}" desc '' '' 149999 rank 150000 '' "${pager[@]}"
  case_row "$sha" 'pager, ratings [3, 5], offset 50000' 2 "${K}3" "${K}5" desc '' '' 49999 rank 50000 '' "${pager[@]}"
  case_row "$sha" 'pager, ratings [1, 4, 5], offset 50000' 3 "${K}1" "${K}4" "${K}5" desc '' '' 49999 rank 50000 '' "${pager[@]}"
  case_row "$sha" 'pager, ratings [4], offset 50000' 1 "${K}4" desc '' '' 49999 rank 50000 '' "${pager[@]}"
  case_row "$sha" 'bare jump, offset 150000' "${five[@]}" desc '' '' 149999 none '' '' 20 newest none
  case_row "$sha" 'bare jump, ratings [3, 5], offset 50000' 2 "${K}3" "${K}5" desc '' '' 49999 none '' '' 20 newest none
  case_row "$sha" 'totalCount' "${five[@]}" desc '' '' '' none '' '' 1 newest none
  all=$(total "${K}1" "${K}2" "${K}3" "${K}4" "${K}5")
  two=$(total "${K}3" "${K}5")
  jumps_row "$sha" "bare jumps, $N random offsets" jump "$all" "${five[@]}"
  jumps_row "$sha" "bare jumps, ratings [3, 5], $N random offsets" jump "$two" 2 "${K}3" "${K}5"
  jumps_row "$sha" "pager pages, $N random offsets" pager "$all" "${five[@]}"
  jumps_row "$sha" "pager pages, ratings [3, 5], $N random offsets" pager "$two" 2 "${K}3" "${K}5"
done
