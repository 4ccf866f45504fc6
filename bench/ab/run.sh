#!/usr/bin/env bash
# A/B of the server's CPU per request between two builds (BENCHMARKS.md, "Cost of the abuse
# checks"): both servers run at once on the embedded backends with 200,000 demo comments; for
# each page shape and round, wrk (1 thread, 4 connections, one prebuilt POST body) loads one
# server, then the other (the order flips every round), and the server's utime+stime from
# /proc/PID/stat around the run, divided by the requests wrk completed, is its CPU per request.
# Load on a shared machine stretches req/s far more than CPU per request.
#
#   bench/ab/run.sh OLD_BINARY NEW_BINARY [ROUNDS=4] [SECONDS=10]
#   CASES_ONLY="page-0 pager-deep" bench/ab/run.sh ...     only those shapes
#
# Prints one line per run and a table of medians (µs of server CPU per request, req/s). Needs
# wrk and curl. Build each side with
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo build --release --bin dynapage
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bodies.sh"
old=$1 new=$2 rounds=${3:-4} seconds=${4:-10}
write_bodies "$work"
tick=$(getconf CLK_TCK)

declare -A url pid
for side in old new; do
  port=$(free_port)
  binary=$old
  [[ $side == new ]] && binary=$new
  "$binary" "${SERVER_ARGS[@]}" --listen "127.0.0.1:$port" >"$work/$side.log" 2>&1 &
  pid[$side]=$!
  pids+=("$!")
  url[$side]="http://127.0.0.1:$port"
done
for side in old new; do wait_ready "${url[$side]}" 120; done

# run SIDE CASE SECONDS: prints "requests ticks"
run() { wrk_cpu "${pid[$1]}" "${url[$1]}" "$2" "$3"; }

# One short warm-up per side and case (page caches, allocator), not counted.
for case in "${CASES[@]}"; do
  for side in old new; do run "$side" "$case" 2 >/dev/null; done
done

results="$work/results"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# round case side requests req_per_s cpu_us_per_request"
for ((round = 1; round <= rounds; round++)); do
  order=(old new)
  ((round % 2 == 0)) && order=(new old)
  for case in "${CASES[@]}"; do
    for side in "${order[@]}"; do
      read -r requests ticks < <(run "$side" "$case" "$seconds")
      line=$(awk -v r="$round" -v c="$case" -v s="$side" -v n="$requests" -v t="$ticks" \
        -v hz="$tick" -v d="$seconds" \
        'BEGIN { printf "%d %s %s %d %.0f %.2f", r, c, s, n, n / d, t * 1e6 / hz / n }')
      echo "$line" | tee -a "$results"
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "| case | old µs/req | new µs/req | Δ CPU/req | old req/s | new req/s | Δ req/s |"
echo "|---|---|---|---|---|---|---|"
for case in "${CASES[@]}"; do
  median() { # median of column $2 for side $1
    awk -v c="$case" -v s="$1" -v k="$2" '$2 == c && $3 == s { print $k }' "$results" |
      sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
  }
  oc=$(median old 6) nc=$(median new 6) orps=$(median old 5) nrps=$(median new 5)
  awk -v c="$case" -v oc="$oc" -v nc="$nc" -v o="$orps" -v n="$nrps" 'BEGIN {
    printf "| %s | %.1f | %.1f | %+.1f %% | %.0f | %.0f | %+.1f %% |\n",
      c, oc, nc, (nc - oc) * 100 / oc, o, n, (n - o) * 100 / o }'
done
