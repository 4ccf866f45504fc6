# Shared start-up and tear-down for the scripts in bench/ (sourced, not run).
#
# Starts everything on 127.0.0.1 on free ports: DynamoDB Local (scripts/dynamodb-local, in
# memory), a private redis-server, and the release server; registers every process it starts
# and stops them (SIGTERM, then SIGKILL) on exit through a trap. Needs curl, python3, Java 17+
# and npm (DynamoDB Local) and redis-server.

BENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Cargo's target directory: CARGO_TARGET_DIR if set (relative to the repository), else target/.
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
[[ "$TARGET_DIR" = /* ]] || TARGET_DIR="$BENCH_ROOT/$TARGET_DIR"
BIN="$TARGET_DIR/release/dynapage"
# Raw output (wrk logs, server logs): not committed.
RAW_DIR="${RAW_DIR:-$BENCH_ROOT/target/bench-raw}"
mkdir -p "$RAW_DIR"
BENCH_PIDS=()
# Empty, or a command prefix that confines the load generators to some cores ("taskset -c 1").
CLIENT_CPUS="${CLIENT_CPUS:-}"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

bench_cleanup() {
  local pid
  for pid in "${BENCH_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${BENCH_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  BENCH_PIDS=()
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# Stops one process started here (SIGTERM, then SIGKILL after 5 s).
stop_pid() {
  local pid=$1 rest=() p
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for p in "${BENCH_PIDS[@]}"; do [ "$p" = "$pid" ] || rest+=("$p"); done
  BENCH_PIDS=("${rest[@]}")
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for DESCRIPTION SECONDS COMMAND...: retries COMMAND every 0.2 s.
wait_for() {
  local what=$1 seconds=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$what did not come up within ${seconds}s"
      return 1
    fi
    sleep 0.2
  done
}

need_wrk() {
  command -v wrk >/dev/null && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing wrk"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  else
    echo "wrk is missing: apt-get install wrk" >&2
    exit 1
  fi
}

# The release profile's settings can be overridden from the environment as Cargo allows, e.g.
# CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 for a build minutes
# shorter than fat LTO (and somewhat slower code: say so beside the figures).
build_release() {
  log "cargo build --release${CARGO_PROFILE_RELEASE_LTO:+ (lto=$CARGO_PROFILE_RELEASE_LTO)}${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:+ (codegen-units=$CARGO_PROFILE_RELEASE_CODEGEN_UNITS)}"
  (cd "$BENCH_ROOT" && cargo build --release --quiet --bin dynapage --example dynamodb_query_rate)
}

# Sets DYNAMODB_URL and DYNAMODB_PID.
start_dynamodb_local() {
  local port
  port=$(free_port)
  "$BENCH_ROOT/scripts/dynamodb-local" "$port" >"$RAW_DIR/dynamodb-local.log" 2>&1 &
  BENCH_PIDS+=($!)
  DYNAMODB_PID=$! # scripts/dynamodb-local execs java: this is the JVM
  DYNAMODB_URL="http://127.0.0.1:$port"
  wait_for "DynamoDB Local" 60 curl -sf -o /dev/null -X POST "$DYNAMODB_URL" \
    -H 'Content-Type: application/x-amz-json-1.0' -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}'
  log "DynamoDB Local on $DYNAMODB_URL"
}

# Sets REDIS_PORT, REDIS_PID and REDIS_URL.
start_redis() {
  REDIS_PORT=$(free_port)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    >"$RAW_DIR/redis.log" 2>&1 &
  BENCH_PIDS+=($!)
  REDIS_PID=$!
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  wait_for "redis-server" 20 redis-cli -p "$REDIS_PORT" ping
  log "redis-server on $REDIS_URL"
}

# launch_server NAME ARGS...: starts the release server on a free port without waiting. Sets
# SERVER_URL and SERVER_PID. Rate limits are off: every load comes from one client address, which
# its budgets would throttle (the check's own cost is measured by `cargo bench --bench rate_limit`).
launch_server() {
  local name=$1 port
  shift
  port=$(free_port)
  RUST_LOG="${RUST_LOG:-warn}" DYNAPAGE_REQUEST_TIMEOUT_MS=120000 \
    DYNAPAGE_RATE_LIMIT_COST=0 DYNAPAGE_RATE_LIMIT_WRITES=0 \
    "$BIN" serve --listen "127.0.0.1:$port" "$@" >"$RAW_DIR/server-$name.log" 2>&1 &
  SERVER_PID=$!
  BENCH_PIDS+=("$SERVER_PID")
  SERVER_URL="http://127.0.0.1:$port"
}

# await_server NAME URL: waits for /readyz (seeding millions of demo comments takes minutes).
await_server() {
  wait_for "server $1" 900 curl -sf "$2/readyz" || { tail -n 20 "$RAW_DIR/server-$1.log" >&2; return 1; }
  log "server $1 ready on $2"
}

# start_server NAME ARGS...: launch_server, then await_server.
start_server() {
  launch_server "$@"
  await_server "$1" "$SERVER_URL"
}

# gql URL QUERY: POSTs one GraphQL query, prints the response.
gql() {
  python3 -c 'import json,sys; print(json.dumps({"query": sys.argv[1]}))' "$2" |
    curl -sf -X POST "$1/graphql" -H 'Content-Type: application/json' --data-binary @-
}

# json_get PATH: reads JSON on stdin, prints the value at a dotted path (list indexes as numbers).
json_get() {
  python3 -c '
import json, sys
v = json.load(sys.stdin)
for part in sys.argv[1].split("."):
    v = v[int(part)] if isinstance(v, list) else v[part]
print(v if not isinstance(v, (dict, list)) else json.dumps(v))' "$1"
}

# rss_kb PID: the process's resident set size in kB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# graphql_failures URL: GraphQL requests the server at URL has executed with errors or cut at its
# timeout since it started, from its /metrics. (Requests refused before execution, for depth or
# aliases, are not in it; bench/load checks each case's query once before loading it.)
graphql_failures() {
  local metrics
  metrics=$(curl -sf "$1/metrics") || { echo "no /metrics at $1: cannot count GraphQL errors" >&2; return 1; }
  awk '/^dynapage_graphql_requests_total\{/ && !/outcome="ok"/ { s += $NF } END { print s + 0 }' <<<"$metrics"
}

# run_wrk URL BODIES_FILE CONNECTIONS DURATION: one wrk run of random POST bodies from the file
# (with $WRK_HEADER, e.g. "Authorization: Bearer …", sent on every request);
# prints the RESULT line of bench/wrk/post.lua (req/s, p50, p99 in ms, errors). With
# BENCH_LEAN=1 and one body, wrk sends a prebuilt request and reads no body (see post.lua); the
# GraphQL errors of the run are then the growth of the server's own count (graphql_failures).
run_wrk() {
  local url=$1 bodies=$2 connections=$3 duration=$4 threads=2 before="" line failed
  [ "$connections" -lt 2 ] && threads=1
  if [ "${BENCH_LEAN:-0}" = 1 ]; then before=$(graphql_failures "$url"); fi
  BENCH_BODIES="$bodies" $CLIENT_CPUS wrk -t "$threads" -c "$connections" -d "$duration" --timeout 60s \
    ${WRK_HEADER:+-H "$WRK_HEADER"} \
    -s "$BENCH_ROOT/bench/wrk/post.lua" "$url/graphql" >"$RAW_DIR/wrk-last.txt" 2>&1
  line=$(grep '^RESULT' "$RAW_DIR/wrk-last.txt" | tail -n 1)
  if [[ "$line" == *graphql_errors=-1* ]]; then
    [ -n "$before" ] || { echo "wrk ran lean but no error count was taken" >&2; return 1; }
    failed=$(($(graphql_failures "$url") - before))
    line=$(sed -e "s/graphql_errors=-1/graphql_errors=$failed/" \
      -e "s/ errors=\([0-9]*\)/ errors=$(($(field "$line" errors) + failed))/" <<<"$line")
  fi
  echo "$line"
}

# field LINE NAME: the value of NAME=value in a RESULT line.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# median VALUES...: the median (middle value; mean of the two middle ones).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# spread VALUES...: (max - min) / median, in percent.
spread() {
  local m
  m=$(median "$@")
  printf '%s\n' "$@" | sort -g | awk -v m="$m" 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f", (m > 0 ? 100 * (hi - lo) / m : 0) }'
}
