-- key_at: the member `rank` places into a product's list, read in one order, counting only
-- items strictly beyond a cursor `after`. Read-only; one round trip.
--
-- KEYS    the sets to read: the product set, one rating set, or 2 to 4 rating sets (their
--         union). All carry the product's {sku} hash tag, so this runs in Redis Cluster.
-- ARGV[1] "desc" (newest first) or "asc" (oldest first)
-- ARGV[2] rank, 0-based
-- ARGV[3] the cursor's score (integer milliseconds), or "" for no cursor
-- ARGV[4] the cursor's member (comment id); the cursor need not be a member
-- Returns {member, score} or nil.
--
-- Everything is first reduced to an ascending index `idx` into the (union) list:
--   below = #members with (score, member) < cursor, summed over the sets
--   asc:  idx = below + (1 if the cursor is a member) + rank
--   desc: idx = below - 1 - rank
-- Each set's `below` is ZCOUNT for the smaller scores plus a binary search (by rank, with
-- ZRANGE r r) inside the group of members tied on the cursor's score, so it is O(log n) even
-- for a cursor that has been deleted.
--
-- One set: ZRANGE idx idx. A union: binary search on the (integer) score for the smallest s
-- with sum(ZCOUNT -inf..s) > idx, then pick the right member among those tied at s: for each
-- set, binary search its tied members for the one whose union rank inside the tie group
-- (its rank in its own set plus, in every other set, how many tied members sort below it)
-- equals the wanted one. O(log(score range) * sets + sets^2 * log^2(ties)) commands of
-- O(log n) each: no scan, whatever the offset.
--
-- Members are compared bytewise by `less`, never with Lua's `<` on strings, which uses the
-- C library's strcoll and so depends on the server's locale. Bytewise is the order Redis
-- itself gives equal scores, and the order invariant of DESIGN §3.

local desc = ARGV[1] == 'desc'
local rank = tonumber(ARGV[2])
local has_after = ARGV[3] ~= ''
local after_score = tonumber(ARGV[3])
local after_member = ARGV[4]

-- Integer scores as plain digits (tostring would switch to exponent notation).
local function fmt(n)
  return string.format('%.0f', n)
end

local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

local function member_at(key, r)
  return redis.call('ZRANGE', key, r, r)[1]
end

-- How many of the `cnt` members of `key` tied at one score (ascending ranks lo .. lo+cnt-1)
-- sort bytewise below `m`.
local function tied_below(key, lo, cnt, m)
  local a, b = 0, cnt
  while a < b do
    local mid = math.floor((a + b) / 2)
    if less(member_at(key, lo + mid), m) then
      a = mid + 1
    else
      b = mid
    end
  end
  return a
end

-- Members of `key` tied at score s: first ascending rank and count.
local function tie_group(key, s)
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. fmt(s))
  local cnt = redis.call('ZCOUNT', key, fmt(s), fmt(s))
  return lo, cnt
end

local total = 0
for i = 1, #KEYS do
  total = total + redis.call('ZCARD', KEYS[i])
end

local idx
if has_after then
  local below, present = 0, 0
  for i = 1, #KEYS do
    local lo, cnt = tie_group(KEYS[i], after_score)
    below = below + lo
    if cnt > 0 then
      below = below + tied_below(KEYS[i], lo, cnt, after_member)
      local score = redis.call('ZSCORE', KEYS[i], after_member)
      if score and tonumber(score) == after_score then
        present = 1
      end
    end
  end
  if desc then
    idx = below - 1 - rank
  else
    idx = below + present + rank
  end
elseif desc then
  idx = total - 1 - rank
else
  idx = rank
end
if idx < 0 or idx >= total then
  return nil
end

if #KEYS == 1 then
  local found = redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')
  return {found[1], found[2]}
end

-- The union: the smallest score s whose cumulative count passes idx.
local lo_s, hi_s
for i = 1, #KEYS do
  local first = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
  if first[2] then
    local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
    local a, b = tonumber(first[2]), tonumber(last[2])
    if lo_s == nil or a < lo_s then lo_s = a end
    if hi_s == nil or b > hi_s then hi_s = b end
  end
end
while lo_s < hi_s do
  local mid = math.floor((lo_s + hi_s) / 2)
  local through = 0
  for i = 1, #KEYS do
    through = through + redis.call('ZCOUNT', KEYS[i], '-inf', fmt(mid))
  end
  if through > idx then
    hi_s = mid
  else
    lo_s = mid + 1
  end
end
local s = lo_s

-- The wanted member is number `j` (0-based, ascending) among the members tied at s.
local j = idx
local groups = {}
for i = 1, #KEYS do
  local lo, cnt = tie_group(KEYS[i], s)
  j = j - lo
  if cnt > 0 then
    groups[#groups + 1] = {key = KEYS[i], lo = lo, cnt = cnt}
  end
end
if #groups == 1 then
  return {member_at(groups[1].key, groups[1].lo + j), fmt(s)}
end
for gi, g in ipairs(groups) do
  local a, b = 0, g.cnt - 1
  while a <= b do
    local t = math.floor((a + b) / 2)
    local candidate = member_at(g.key, g.lo + t)
    local r = t
    for oi, o in ipairs(groups) do
      if oi ~= gi then
        r = r + tied_below(o.key, o.lo, o.cnt, candidate)
      end
    end
    if r == j then
      return {candidate, fmt(s)}
    elseif r < j then
      a = t + 1
    else
      b = t - 1
    end
  end
end
-- Only reachable when a member sits in two of the sets (an index that drifted).
return redis.error_reply('key_at: a member is in more than one rating set')
