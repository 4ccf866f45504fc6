-- Takes a request's charge from one client's two token buckets, both or neither.
--
-- KEYS[1]: the cost bucket, KEYS[2]: the writes bucket (one hash tag: one Cluster slot).
-- ARGV: cost_per_second, cost_burst, cost, writes_per_second, writes_burst, writes.
--   A rate of 0 means that budget is not limited (its key is not touched).
--
-- Each bucket is one string: its theoretical arrival time (tat), the moment it is full again,
-- in microseconds of this Redis's clock (GCRA; the arithmetic of src/ratelimit/bucket.rs, in
-- the same order, with the same rounding). An absent key is a full bucket, so a key expires
-- when its bucket is full. The clock is Redis's own TIME: every server process charges and
-- refills on one clock, so their clocks' skew does not matter.
--
-- Returns { cost_allowed, cost_available, cost_wait_us, writes_allowed, writes_available,
-- writes_wait_us }: allowed 1 or 0; whole tokens available after the check (as before it when
-- either bucket refused), -1 when the budget is off; microseconds until it would pass (rounded up), 0 when
-- allowed, -1 when it never can (more than the burst).

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local WHOLE = 1e-6

local function take(key, per_second, burst, n)
  if per_second <= 0 then
    return { allowed = true, available = -1, before = -1, wait = 0 }
  end
  local emission = 1000000 / per_second
  local tolerance = burst * emission
  local base = now
  local tat = tonumber(redis.call('GET', key))
  if tat and tat > now then
    base = tat
  end
  local function available(at)
    local tokens = math.floor((tolerance - (at - now)) / emission + WHOLE)
    if tokens < 0 then
      return 0
    end
    return tokens
  end
  local before = available(base)
  if n > burst then
    return { allowed = false, available = before, before = before, wait = -1 }
  end
  local next = base + n * emission
  local over = next - now - tolerance
  if over <= WHOLE * emission then
    return { allowed = true, available = available(next), before = before, wait = 0, tat = next, n = n }
  end
  return { allowed = false, available = before, before = before, wait = math.ceil(over) }
end

local cost = take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
local writes = take(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))

if cost.allowed and writes.allowed then
  for i, bucket in ipairs({ cost, writes }) do
    if bucket.tat and bucket.n > 0 then
      local ttl = math.max(1, math.ceil((bucket.tat - now) / 1000))
      redis.call('SET', KEYS[i], string.format('%.0f', bucket.tat), 'PX', ttl)
    end
  end
else
  -- Refused: neither bucket is spent, so each keeps what it held before.
  cost.available = cost.before
  writes.available = writes.before
end

local function flag(allowed)
  if allowed then
    return 1
  end
  return 0
end

return {
  flag(cost.allowed), cost.available, cost.wait,
  flag(writes.allowed), writes.available, writes.wait,
}
