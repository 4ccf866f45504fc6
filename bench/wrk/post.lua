-- wrk script of the benchmarks (examples/bench/wrk.rs runs it): POSTs GraphQL bodies to
-- /graphql, one body per request chosen at random from the file named by $BENCH_BODIES (one
-- JSON body per line).
-- Counts as an error every non-2xx response and every response whose body holds "errors"
-- (a GraphQL error answers 200). At the end prints one line:
--   RESULT requests=… requests_per_s=… p50_ms=… p99_ms=… errors=… non2xx=… graphql_errors=… socket_errors=…
--
-- With BENCH_LEAN=1 and a single body, wrk sends one prebuilt request and this script looks at
-- no response (graphql_errors=-1: not counted here): Lua per request costs wrk CPU that, on
-- shared cores, the server and the database would otherwise get. The tool then counts
-- GraphQL errors from the server's own /metrics instead; non-2xx are still counted by wrk.

local bodies = {}
for line in io.lines(os.getenv("BENCH_BODIES")) do
  if line ~= "" then bodies[#bodies + 1] = line end
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local lean = os.getenv("BENCH_LEAN") == "1" and #bodies == 1
if lean then wrk.body = bodies[1] end

local threads = {}
function setup(thread)
  thread:set("id", #threads + 1)
  threads[#threads + 1] = thread
end

function init(args)
  math.randomseed(os.time() * 1000 + id)
  graphql_errors = 0
  non2xx = 0
end

if not lean then
  function request()
    return wrk.format(nil, nil, nil, bodies[math.random(#bodies)])
  end

  function response(status, headers, body)
    if status < 200 or status > 299 then
      non2xx = non2xx + 1
    elseif string.find(body, '"errors"', 1, true) then
      graphql_errors = graphql_errors + 1
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local socket = e.connect + e.read + e.write + e.timeout
  -- Lean: wrk counted the non-2xx itself and nobody looked at a body (graphql_errors=-1).
  local graphql, bad = -1, e.status
  if not lean then
    graphql, bad = 0, 0
    for _, thread in ipairs(threads) do
      graphql = graphql + thread:get("graphql_errors")
      bad = bad + thread:get("non2xx")
    end
  end
  io.write(string.format(
    "RESULT requests=%d requests_per_s=%.1f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d graphql_errors=%d socket_errors=%d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    bad + math.max(graphql, 0) + socket, bad, graphql, socket))
end
