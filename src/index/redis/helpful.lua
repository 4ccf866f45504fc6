-- helpful.lua: the list by helpful votes (`domain::Grouping::MostHelpful`). Its comments
-- without votes (count 0, group 0) come lowest, by time: the union of the selected ratings'
-- sets of comments without votes (KEYS[1 .. ARGV[11]]). Above them come the comments with
-- votes: the union of the selected ratings' sets by count (the rest of KEYS), where a member's
-- score is its count and its second (`helpful_score`, by_count.lua) and the member is its
-- `createdAt` in 6 big-endian bytes, then its member by time, so that they order like the
-- list's positions (count, sort key).
-- Placed after select.lua and pick.lua, it replaces `sizes_of`, `position_of` and `members_at`
-- like concat.lua does; a position in ARGV and in the reply is "count:score" (score =
-- `createdAt`), the member the one by time.
--
-- ARGV[11] how many of KEYS, from the first, hold the comments without votes.
--
-- (by_count.lua, prepended, spells the members of the sets by count.)
--
-- Cost: a position or a member is one union search, in one of the two unions: a product
-- nobody voted for costs what its list by time costs, plus a ZCARD per set by count.

local unvoted, voted
do
  local low, high = {}, {}
  local n = tonumber(ARGV[11])
  for i = 1, #KEYS do
    if i <= n then
      low[#low + 1] = i
    else
      high[#high + 1] = i
    end
  end
  unvoted, voted = {}, {}
  unvoted.keys, unvoted.sizes, unvoted.total = nonempty(low)
  voted.keys, voted.sizes, voted.total = nonempty(high)
end

local function sizes_of()
  return nil, unvoted.total + voted.total
end

local function position_of(arg, m)
  local sep = string.find(arg, ':', 1, true)
  local count = tonumber(string.sub(arg, 1, sep - 1))
  local millis = tonumber(string.sub(arg, sep + 1))
  if count == 0 then
    return union_position(unvoted.keys, millis, m)
  end
  local below, present =
    union_position(voted.keys, helpful_score(count, millis), by_count(millis, m))
  return unvoted.total + below, present
end

local function members_at(_, _, wanted)
  local low, high = {}, {}
  for _, idx in ipairs(wanted) do
    if idx < unvoted.total then
      low[#low + 1] = idx
    else
      high[#high + 1] = idx - unvoted.total
    end
  end
  local out = {}
  if #low > 0 then
    for idx, f in pairs(union_members_at(unvoted.keys, unvoted.sizes, unvoted.total, low)) do
      out[idx] = {f[1], '0:' .. f[2]}
    end
  end
  if #high > 0 then
    for rest, f in pairs(union_members_at(voted.keys, voted.sizes, voted.total, high)) do
      local millis, m = by_time(f[1])
      local count = count_of(tonumber(f[2]), millis)
      out[unvoted.total + rest] = {m, string.format('%.0f:%.0f', count, millis)}
    end
  end
  return out
end
