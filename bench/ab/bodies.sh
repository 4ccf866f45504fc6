# Sourced by run.sh, cpu.sh and callgrind.sh: the four page shapes of the A/B, one JSON body
# per file (a page of 20, the selection of `load` and `page-numbers`, alone and with the
# numbered pager, at offset 0 and at offset 199,000 of the 200,000 demo comments), the
# server's flags, and one wrk run's CPU per request. Sources ../lib.sh: the scratch directory
# $work, the processes $pids (killed on exit) and free_port.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"
SKU=DAFT_PUNK_TSHIRT
PAGE='edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }'
PAGER='totalCount startOffset pageCursors(around: 5) { pageCount first { page cursor offset } last { page cursor offset } previous { page cursor offset } next { page cursor offset } around { page cursor offset isCurrent } }'
DEEP=199000
# CASES_ONLY="page-0 pager-deep" runs a subset.
# shellcheck disable=SC2206
CASES=(${CASES_ONLY:-page-0 pager-0 pager-deep page-deep})

# write_bodies DIR: DIR/<case>.json for every case.
write_bodies() {
  local dir=$1
  mkdir -p "$dir"
  body() { printf '{"query":"{ comments(sku: \\"%s\\", first: 20, offset: %s) { %s } }"}\n' "$SKU" "$1" "$2"; }
  body 0 "$PAGE" >"$dir/page-0.json"
  body 0 "$PAGE $PAGER" >"$dir/pager-0.json"
  body "$DEEP" "$PAGE $PAGER" >"$dir/pager-deep.json"
  body "$DEEP" "$PAGE" >"$dir/page-deep.json"
}

# The server's flags and environment in every run: the embedded backends, no rate limits, no
# line per request, and no response cache (every request repeats one body, which a server with
# the cache would answer from it: the A/B measures running a page; builds before the cache
# ignore the variable).
SERVER_ARGS=(serve --demo-comments 200000 --rate-limit-cost 0 --rate-limit-writes 0)
export RUST_LOG=warn DYNAPAGE_REQUEST_TIMEOUT_MS=120000 DYNAPAGE_RESPONSE_CACHE_BYTES=0

# wait_ready URL SECONDS: polls URL/healthz.
wait_ready() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    curl -fs -o /dev/null "$1/healthz" && return 0
    sleep 0.1
  done
  echo "no answer from $1 within $2 s" >&2
  return 1
}

# cpu_ticks PID: the process's user and system time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# wrk_cpu PID URL CASE SECONDS: loads URL/graphql with the case's body ($work/CASE.json, from
# write_bodies) for SECONDS (wrk: 1 thread, 4 connections) and prints "requests ticks", the
# requests completed and the CPU ticks process PID spent meanwhile; exits on any non-2xx.
wrk_cpu() {
  local before after out requests non2xx
  before=$(cpu_ticks "$1")
  out=$(BENCH_LEAN=1 BENCH_BODIES="$work/$3.json" wrk -t1 -c4 -d"$4"s --timeout 30s \
    -s "$(dirname "${BASH_SOURCE[0]}")/../wrk/post.lua" "$2/graphql")
  after=$(cpu_ticks "$1")
  requests=$(sed -n 's/.*RESULT requests=\([0-9]*\).*/\1/p' <<<"$out")
  non2xx=$(sed -n 's/.* non2xx=\([0-9]*\).*/\1/p' <<<"$out")
  if [[ -z $requests || $non2xx != 0 ]]; then
    echo "wrk failed on $2 $3: $out" >&2
    exit 1
  fi
  echo "$requests $((after - before))"
}
