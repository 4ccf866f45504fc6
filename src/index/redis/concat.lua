-- concat.lua: a list by rating (`domain::Listing` with a grouping by rating). Each rating is a
-- group: the union of its two sets in KEYS (its comments without votes and with votes, by
-- time), and the list is the groups one after another in ascending group order, not their
-- union: ascending index idx runs through the lowest group's members by time, then the next
-- group's, and so on. Placed after select.lua and pick.lua, it replaces the three functions
-- read.lua asks of them, `sizes_of`, `position_of` and `members_at`, with forms for groups;
-- read.lua is the same for every kind of list.
--
-- ARGV[11] the group of each set in KEYS, comma-separated and ascending ("1,1,2,2,5,5"); a
--          position in ARGV and in the reply is "group:score".
--
-- Cost: a position is the sizes of the groups ahead of its group and the union search of
-- select.lua in its group (one set's search when the rating has no comments with votes); a
-- member is one search in the group that holds it.

-- The groups in ascending order: {group, keys, sizes, total}, only the sets with members.
local groups = {}
do
  local i = 0
  for g in string.gmatch(ARGV[11], '%d+') do
    i = i + 1
    g = tonumber(g)
    local last = groups[#groups]
    if last == nil or last.group ~= g then
      last = {group = g, indexes = {}}
      groups[#groups + 1] = last
    end
    last.indexes[#last.indexes + 1] = i
  end
  for _, group in ipairs(groups) do
    group.keys, group.sizes, group.total = nonempty(group.indexes)
  end
end

local function sizes_of()
  local total = 0
  for _, group in ipairs(groups) do
    total = total + group.total
  end
  return nil, total
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
  for _, group in ipairs(groups) do
    if group.group < g then
      below = below + group.total
    elseif group.group == g then
      local b, p = union_position(group.keys, score, m)
      below, present = below + b, p
    end
  end
  return below, present
end

-- The members at each ascending index of `wanted` (0 <= idx < total), as idx -> {member,
-- "group:score"}: the group that holds each idx is found from the totals, then the indexes of
-- one group are found together (`union_members_at`).
local function members_at(_, _, wanted)
  local out = {}
  local start = 0
  for _, group in ipairs(groups) do
    local mine = {}
    for _, idx in ipairs(wanted) do
      if idx >= start and idx < start + group.total then
        mine[#mine + 1] = idx - start
      end
    end
    if #mine > 0 then
      local found = union_members_at(group.keys, group.sizes, group.total, mine)
      for rest, f in pairs(found) do
        out[rest + start] = {f[1], group.group .. ':' .. f[2]}
      end
    end
    start = start + group.total
  end
  return out
end
