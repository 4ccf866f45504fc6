# Sourced by the bench scripts that start services of their own: a scratch directory ($work),
# the started processes ($pids, killed on exit), a free loopback port, and a redis-server that
# keeps nothing on disk.
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts a redis-server on a free port, waits until it answers, and sets $rport.
start_redis() {
  rport=$(free_port)
  redis-server --port "$rport" --save "" --appendonly no >"$work/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
