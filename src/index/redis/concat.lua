-- concat.lua: a list by rating (`domain::Listing` with a grouping). Its sets in KEYS each hold
-- one rating, in ascending group order, and the list is those sets one after another, not their
-- union: ascending index idx runs through KEYS[1]'s members by time, then KEYS[2]'s, and so on.
-- Placed after select.lua and pick.lua, it replaces the two functions read.lua asks of them,
-- `position_of` and `members_at`, with their one-set forms; read.lua is the same for both kinds
-- of list.
--
-- ARGV[12] the group of each set in KEYS, comma-separated ("1,2,3,4,5"); a position in ARGV
--          and in the reply is "group:score".
--
-- Cost: a position is a ZCARD per set ahead of its group and the one-set search of select.lua
-- (two ZCOUNTs and a binary search in a tie); a member is one ZRANGE of the set that holds it.

local groups = {}
for g in string.gmatch(ARGV[12], '%d+') do
  groups[#groups + 1] = tonumber(g)
end

-- A "group:score" argument as its two numbers.
local function group_and_score(arg)
  local sep = string.find(arg, ':', 1, true)
  return tonumber(string.sub(arg, 1, sep - 1)), tonumber(string.sub(arg, sep + 1))
end

-- How many members of the list sort below the position ("group:score", member), and whether it
-- is one of them: every member of the groups below it, and those of its own group below it.
local function position_of(arg, m)
  local g, score = group_and_score(arg)
  local below, present = 0, 0
  for i = 1, #KEYS do
    if groups[i] < g then
      below = below + redis.call('ZCARD', KEYS[i])
    elseif groups[i] == g then
      local b, p = position_in(KEYS[i], score, m)
      below, present = below + b, p
    end
  end
  return below, present
end

-- The members at each ascending index of `wanted` (0 <= idx < total), as idx -> {member,
-- "group:score"}: the set that holds idx is found from the sizes, then one ZRANGE.
local function members_at(sizes, total, wanted)
  local out = {}
  for _, idx in ipairs(wanted) do
    if out[idx] == nil and idx >= 0 and idx < total then
      local rest, i = idx, 1
      while rest >= sizes[i] do
        rest = rest - sizes[i]
        i = i + 1
      end
      local f = redis.call('ZRANGE', KEYS[i], rest, rest, 'WITHSCORES')
      out[idx] = {f[1], groups[i] .. ':' .. f[2]}
    end
  end
  return out
end
