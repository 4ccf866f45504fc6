# Sourced by run.sh and callgrind.sh: the four page shapes of the A/B, one JSON body per file.
# A page of 20 (the selection of `load` and `page-numbers`), alone and with the numbered pager,
# at offset 0 and at offset 199,000 of the 200,000 demo comments.
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

# free_port: a TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
