#!/usr/bin/env bash
# The server's CPU per request for one page shape, from one binary alone: the median of three
# 5-second wrk runs (1 thread, 4 connections) after a 2-second warm-up, as utime+stime from
# /proc/PID/stat over the requests completed. For `git bisect run` over a range of commits
# (BENCHMARKS.md, "Cost of the abuse checks"); on a quiet machine two runs of one binary agree
# within about 2 %, and run.sh's alternating A/B is the measurement to report.
#
#   CASE=page-0 bench/ab/cpu.sh BINARY      prints µs of CPU per request
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bodies.sh"
write_bodies "$work"
port=$(free_port)
"$1" "${SERVER_ARGS[@]}" --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
pids+=("$!")
url="http://127.0.0.1:$port"
wait_ready "$url" 120
tick=$(getconf CLK_TCK)
# one SECONDS: µs of CPU per request over a wrk run of SECONDS
one() {
  local measured requests ticks
  measured=$(wrk_cpu "${pids[0]}" "$url" "${CASE:-page-0}" "$1")
  read -r requests ticks <<<"$measured"
  awk -v n="$requests" -v t="$ticks" -v hz="$tick" 'BEGIN { printf "%.2f\n", t * 1e6 / hz / n }'
}
one 2 >/dev/null
for _ in 1 2 3; do one 5; done | sort -n | sed -n 2p
