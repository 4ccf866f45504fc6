#!/usr/bin/env bash
# A/B of the WebSocket soak (BENCHMARKS.md, "Soak beside hostile sockets") between two values
# of one server setting, given by its environment variable, which the test's server inherits:
# one server binary (a release build, copied over the debug binary the test runs, and put back
# afterwards), SOAK_WRITES writes per phase, the order of the two values flipped every round.
#
#   bench/ab/soak.sh BINARY VARIABLE VALUE_A VALUE_B [ROUNDS=4]
#   SOAK_ONLY=3 bench/ab/soak.sh ...       200 honest sockets instead of the hostile mix
#
# e.g. bench/ab/soak.sh target/release/dynapage DYNAPAGE_WEBSOCKET_SEND_BUFFER_BYTES 0 32768
# Prints each run's report and, per value, the p99 ratio (beside the sockets / quiet) of each
# round and the server's CPU. Build the binary with
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo build --release --bin dynapage
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=$1 variable=$2 a=$3 b=$4 rounds=${5:-4}
export SOAK_WRITES=${SOAK_WRITES:-1000}

cargo build --tests -q
test_binary=$(ls -t target/debug/deps/api-* | grep -v '\.d$' | head -1)
saved=$(mktemp)
cp target/debug/dynapage "$saved"
trap 'cp "$saved" target/debug/dynapage; rm -f "$saved"' EXIT
cp "$binary" target/debug/dynapage

declare -A ratios cpus
for round in $(seq "$rounds"); do
  order="$a $b"
  (( round % 2 == 0 )) && order="$b $a"
  for value in $order; do
    echo "== round $round: $variable=$value"
    report=$(env "$variable=$value" "$test_binary" ws_soak --nocapture 2>&1 | grep -E '^soak:|panicked')
    echo "$report"
    # "quiet 1.02ms, beside 200 hostile sockets 1.48ms; ... the server used 0.16 cores"
    read -r ratio cpu < <(python3 - "$report" <<'EOF'
import re, sys
def ms(v, unit):
    return float(v) * (1e-3 if unit == "µs" else 1.0)
m = re.search(r"quiet ([\d.]+)(ms|µs), beside 200 hostile sockets ([\d.]+)(ms|µs).*server used ([\d.]+) cores", sys.argv[1])
print(f"{ms(m[3], m[4]) / ms(m[1], m[2]):.2f} {m[5]}" if m else "failed -")
EOF
    )
    ratios[$value]+="$ratio "
    cpus[$value]+="$cpu "
  done
done
for value in "$a" "$b"; do
  echo "$variable=$value: p99 beside / quiet per round: ${ratios[$value]}; server cores: ${cpus[$value]}"
done
