-- apply: versioned changes to one product's index, in order, atomically (`docs/architecture.md`, a
-- write).
--
-- KEYS[1..5]   the product's rating sets of comments without helpful votes (member ->
--              createdAt)
-- KEYS[6..10]  its rating sets of comments with votes (member -> createdAt)
-- KEYS[11..15] the same comments by count (`createdAt` in 6 big-endian bytes, then the member
--              -> helpful count)
-- KEYS[16]     its version hash: member -> version, only for comments at version 2 or more
--              (a member without a field is at version 1)
-- KEYS[16 + i] the tombstone key of change i (a string: the version of the comment's
--              deletion, expiring after the tombstone lifetime)
-- KEYS[#KEYS]  the product's version (a string), replaced when any change is applied
-- ARGV[1]      the tombstone lifetime, in milliseconds
-- ARGV[2]      a missing version's start: the caller's clock in microseconds; 'none' for a
--              list that keeps no version (an author's: `domain::AuthorList`)
-- ARGV[3..]    eight values per change: kind, member, score, rating (1..5, or 0), version,
--              expected state, expected version, helpful count. Kinds:
--                'u' upsert: applied if its version is >= the live one, or > a deletion's
--                'd' deletion: applied if its version is > the live one or the deletion's
--                'r' repair to this entry, 'x' repair to nothing: applied only if the index
--                    still holds the expected state ('n' nothing, 'l' live, 'd' deleted) at
--                    the expected version, whatever the versions say
-- Returns {i, state, version} for each change that was not applied (i is 0-based), with
-- what the index held for its comment.
--
-- All keys carry the product's {sku} hash tag, so this runs in Redis Cluster. (by_count.lua,
-- prepended, spells the members of the sets by count.)

local ttl = ARGV[1]
local hash = KEYS[16]
local refused = {}
local applied = 0

-- What the index holds for member m: 'd' and the deletion's version, 'l' and the live
-- version with the set by time holding it (1..10), or 'n'. The sets of rating `first` are
-- looked at first.
local function held(m, tomb, first)
  local deleted = redis.call('GET', tomb)
  if deleted then
    return 'd', tonumber(deleted), nil
  end
  for k = 0, 4 do
    local r = (first - 1 + k) % 5 + 1
    for _, i in ipairs({r, r + 5}) do
      if redis.call('ZSCORE', KEYS[i], m) then
        local v = redis.call('HGET', hash, m)
        return 'l', v and tonumber(v) or 1, i
      end
    end
  end
  return 'n', 0, nil
end

for i = 0, (#ARGV - 2) / 8 - 1 do
  local a = 3 + i * 8
  local kind, m, s = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local r, v = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local count = tonumber(ARGV[a + 7])
  local tomb = KEYS[17 + i]
  local state, h, where = held(m, tomb, math.max(r, 1))
  local ok
  if kind == 'u' then
    ok = state == 'n' or (state == 'l' and v >= h) or (state == 'd' and v > h)
  elseif kind == 'd' then
    ok = state == 'n' or v > h
  else
    ok = state == ARGV[a + 5] and h == tonumber(ARGV[a + 6])
  end
  if ok then
    if state == 'd' and kind ~= 'd' then
      redis.call('DEL', tomb)
    end
    local live = kind == 'u' or kind == 'r'
    -- Its set by time: by rating, and whether anyone voted for it.
    local target = r
    if count > 0 then
      target = r + 5
    end
    if where and not (live and where == target) then
      redis.call('ZREM', KEYS[where], m)
    end
    if where and where > 5 and not (live and where == target) then
      redis.call('ZREM', KEYS[where + 5], by_count(tonumber(s), m))
    end
    if live then
      redis.call('ZADD', KEYS[target], s, m)
      if count > 0 then
        local millis = tonumber(s)
        redis.call('ZADD', KEYS[target + 5], helpful_score(count, millis), by_count(millis, m))
      end
    end
    if live and v > 1 then
      redis.call('HSET', hash, m, v)
    elseif state == 'l' and h > 1 then
      redis.call('HDEL', hash, m)
    end
    if kind == 'd' then
      redis.call('SET', tomb, v, 'PX', ttl)
    end
    applied = applied + 1
  else
    refused[#refused + 1] = {i, state, h}
  end
end
-- The product's version. A missing one starts from the caller's clock in microseconds, not
-- from 0: after the key is lost (a flushed Redis, a rebuilt index) a version does not repeat
-- one a server may still hold a cached response for.
if applied > 0 and ARGV[2] ~= 'none' then
  local version = KEYS[#KEYS]
  if redis.call('EXISTS', version) == 0 then
    redis.call('SET', version, ARGV[2])
  end
  redis.call('INCR', version)
end
return refused
