-- Registers an automatic persisted query in the deployment's shared store, bounded in bytes.
--
-- KEYS[1]: the texts (hash: sha256 -> text)
-- KEYS[2]: when each was last registered (sorted set: sha256 -> Redis time in ms)
-- KEYS[3]: the bytes the store holds, as this script counts them (string)
-- ARGV[1]: the sha256 (lowercase hex); ARGV[2]: the text
-- ARGV[3]: how long a text lives after its last registration, in ms
-- ARGV[4]: the bound on the bytes held; ARGV[5]: the bytes counted per entry beyond its text
--
-- Texts older than their time are dropped first (a few at a time, so a call stays short), then
-- the least recently registered until the new one fits. Returns 1 when stored, 0 when it was
-- there already (its time is renewed), -1 when it can never fit.
local texts, at, held = KEYS[1], KEYS[2], KEYS[3]
local hash, text = ARGV[1], ARGV[2]
local ttl, bound, overhead = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function drop(victim)
  local size = redis.call('HSTRLEN', texts, victim)
  redis.call('HDEL', texts, victim)
  redis.call('ZREM', at, victim)
  redis.call('DECRBY', held, size + #victim + overhead)
end

for _, victim in ipairs(redis.call('ZRANGEBYSCORE', at, '-inf', now - ttl, 'LIMIT', 0, 16)) do
  drop(victim)
end
if redis.call('HEXISTS', texts, hash) == 1 then
  redis.call('ZADD', at, now, hash)
  return 0
end
local size = #text + #hash + overhead
if size > bound then
  return -1
end
local total = tonumber(redis.call('GET', held) or '0')
while total + size > bound do
  local oldest = redis.call('ZRANGE', at, 0, 0)[1]
  if not oldest then
    -- The count says bytes are held that no entry holds (keys removed by hand): start over.
    redis.call('SET', held, 0)
    total = 0
    break
  end
  drop(oldest)
  total = tonumber(redis.call('GET', held) or '0')
end
redis.call('HSET', texts, hash, text)
redis.call('ZADD', at, now, hash)
redis.call('INCRBY', held, size)
return 1
