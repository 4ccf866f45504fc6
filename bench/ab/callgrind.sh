#!/usr/bin/env bash
# Instructions the server executes per request (valgrind's callgrind: deterministic, unlike
# time on a shared machine), for each page shape of run.sh: the server starts under callgrind
# with instrumentation off (seeding 200,000 demo comments at near native speed), answers a few
# requests of the case to warm up, then counts N requests sent one after another on one
# keep-alive connection (curl), and dumps a profile per case.
#
#   bench/ab/callgrind.sh BINARY OUT_DIR [N=200]
#
# Prints "case instructions_per_request"; OUT_DIR/callgrind.out.*-<case> are the profiles
# (`callgrind_annotate --inclusive=yes FILE` reads one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bodies.sh"
binary=$1 out=$2 n=${3:-200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/callgrind.out.*
write_bodies "$out/bodies"
port=$(free_port)
url="http://127.0.0.1:$port"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out.%p" \
  "$binary" "${SERVER_ARGS[@]}" --listen "127.0.0.1:$port" >"$out/server.log" 2>&1 &
server=$!
pids+=("$server")
wait_ready "$url" 900
vpid=$server

# send CASE COUNT: COUNT POSTs of the case's body on one connection.
send() {
  local urls=()
  for ((i = 0; i < $2; i++)); do urls+=("$url/graphql"); done
  curl -fsS -H 'Content-Type: application/json' --data-binary "@$out/bodies/$1.json" \
    "${urls[@]}" >/dev/null
}

for case in "${CASES[@]}"; do
  send "$case" 5
  callgrind_control --instr=on "$vpid" >/dev/null
  callgrind_control --zero "$vpid" >/dev/null
  send "$case" "$n"
  callgrind_control --dump="$case" "$vpid" >/dev/null
  callgrind_control --instr=off "$vpid" >/dev/null
done
for case in "${CASES[@]}"; do
  file=$(grep -lx "desc: Trigger: .* $case" "$out"/callgrind.out.* | head -1)
  # awk reads to the end: an early `exit` would cut callgrind_annotate off (SIGPIPE), and under
  # pipefail that ended the script before it printed anything.
  total=$(callgrind_annotate "$file" 2>/dev/null |
    awk '/PROGRAM TOTALS/ && total == "" { gsub(",", "", $1); total = $1 } END { print total }')
  echo "$case $((total / n)) $file"
done
