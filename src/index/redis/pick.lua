-- pick.lua: the members at several indexes of the (union) list at once, for read.lua; the
-- Rust side concatenates select.lua, this file and read.lua into one script (`concat!`), so
-- `less`, `select_at` and the costs are select.lua's.

-- The members next to a position `pos` of the union (as select_at gives it): the returned
-- function `pick(d)` gives the d-th member (d >= 1) and its score (as Redis wrote it), from
-- index sum(pos) ascending (dir 1: index sum(pos) + d - 1) or from index sum(pos) - 1
-- descending (dir -1: index sum(pos) - d); nil past the list's end. `depth` is the largest d
-- the caller will ask for; asking in increasing d costs one pass.
--
-- Each set is read by rank for its share of `depth` and two more, at most `depth` (one ZRANGE
-- per set); the scores are merged as numbers, without the members; only the members tied on a
-- picked score (usually one) are compared, bytewise. A set that runs out before the merge is
-- done with it (ratings are spread over time alike, so its share misses by about its square
-- root) is read further by that square root and the merge goes on. Cost: one member read with
-- its score (~9 k instructions with its `tonumber` and keeping it) per member read, ~5 k for the
-- merge per member passed, and a ZRANGE (~10 k) per set and read.
local function picker(keys, sizes, pos, dir, depth)
  local n = #keys
  local total = 0
  for i = 1, n do
    total = total + sizes[i]
  end
  -- Per set, in the pick's order: members, scores as Redis wrote them, and scores as numbers,
  -- negated for a descending pick so that the merge always takes the smallest; the next rank
  -- to read, whether it was read to its end, and how many to read next time.
  local ms, raws, sc, nxt, done, more = {}, {}, {}, {}, {}, {}

  local function read(i, want)
    local lo, hi
    if dir < 0 then
      hi = nxt[i]
      lo = math.max(0, hi - want + 1)
      nxt[i] = lo - 1
      done[i] = lo <= 0
    else
      lo = nxt[i]
      hi = math.min(sizes[i] - 1, lo + want - 1)
      nxt[i] = hi + 1
      done[i] = hi >= sizes[i] - 1
    end
    if hi < lo then
      return
    end
    local g = redis.call('ZRANGE', keys[i], fmt(lo), fmt(hi), 'WITHSCORES')
    local m, raw, s = ms[i], raws[i], sc[i]
    local c, at = #g / 2, #s
    for k = 1, c do
      local j = k
      if dir < 0 then
        j = c - k + 1
      end
      at = at + 1
      m[at], raw[at] = g[2 * j - 1], g[2 * j]
      s[at] = dir * tonumber(raw[at])
    end
  end

  for i = 1, n do
    ms[i], raws[i], sc[i] = {}, {}, {}
    nxt[i] = pos[i]
    if dir < 0 then
      nxt[i] = pos[i] - 1
    end
    -- No set gives more than `depth` members, and a short pick (the member beside a bound:
    -- depth 1) needs one past it only in the set it came from.
    local e = depth * sizes[i] / math.max(total, 1)
    more[i] = math.min(math.ceil(math.sqrt(e)) + 2, depth + 1)
    read(i, math.min(math.ceil(e) + 2, depth))
  end

  -- The merge: how far it is in each set, how many members it passed, the score of the last
  -- one and the count at which that score's run began.
  local ptr, taken, cur, first
  local function restart()
    ptr, taken, cur, first = {}, 0, nil, 0
    for i = 1, n do
      ptr[i] = 1
    end
  end
  restart()

  -- Merges up to the d-th member; returns a set that was read short, if one was.
  local function merge_to(d)
    while taken < d do
      local bi, bv = nil, math.huge
      for i = 1, n do
        local v = sc[i][ptr[i]]
        if v == nil then
          if not done[i] then
            return i
          end
        elseif v < bv then
          bi, bv = i, v
        end
      end
      if bi == nil then
        return nil
      end
      ptr[bi] = ptr[bi] + 1
      taken = taken + 1
      if bv ~= cur then
        cur, first = bv, taken
      end
    end
    -- Every set not read to its end must have been read past the score picked (a tie on it
    -- could go on beyond what was read).
    for i = 1, n do
      if not done[i] then
        local edge = sc[i][#sc[i]]
        if edge == nil or edge <= cur then
          return i
        end
      end
    end
    return nil
  end

  return function(d)
    if d < taken then
      restart()
    end
    local short = merge_to(d)
    while short do
      read(short, more[short])
      short = merge_to(d)
    end
    if taken < d then
      return nil
    end
    -- The members tied on the score picked, in every set around where the merge stands.
    local tie = {}
    for i = 1, n do
      local ss = sc[i]
      local k = ptr[i] - 1
      while k >= 1 and ss[k] == cur do
        k = k - 1
      end
      k = k + 1
      while ss[k] == cur do
        tie[#tie + 1] = {ms[i][k], raws[i][k]}
        k = k + 1
      end
    end
    table.sort(tie, function(a, b)
      if dir > 0 then
        return less(a[1], b[1])
      end
      return less(b[1], a[1])
    end)
    local t = tie[d - first + 1]
    return t[1], t[2]
  end
end

-- The union's oldest (`first`) or newest member, as {member, score}: each set's first or last
-- member (one ZRANGE each), the least or greatest of them by score, then bytewise.
local function extreme(keys, first)
  local at = '-1'
  if first then
    at = '0'
  end
  local best, best_s
  for i = 1, #keys do
    local f = redis.call('ZRANGE', keys[i], at, at, 'WITHSCORES')
    if f[1] then
      local s = tonumber(f[2])
      -- No member is in two sets, so two members never compare equal.
      if best == nil or before(s, f[1], best_s, best[1]) == first then
        best, best_s = f, s
      end
    end
  end
  return {best[1], best[2]}
end

-- The members at each ascending index of `wanted` (0 <= idx < total, any order, repeats
-- allowed), as a table idx -> {member, score}. Indexes within GAP of the one before them
-- (descending) form a run, found with one search (select_at at its top) and a picker below
-- it, or with a picker alone when the run starts within GAP of either end of the list (the
-- end's own member alone, a first page's edge: `extreme`, no picker). So a deep page's bound,
-- its first edge and its page's bound cost one search and one short read below it (none when
-- the search's last window holds them), not a search each. One set: a ZRANGE per index.
local GAP = 64
local function union_members_at(keys, sizes, total, wanted)
  local list, seen = {}, {}
  for _, idx in ipairs(wanted) do
    if not seen[idx] then
      seen[idx] = true
      list[#list + 1] = idx
    end
  end
  table.sort(list, function(a, b) return a > b end)
  local out = {}
  local n = #keys
  local i = 1
  while i <= #list do
    local j = i
    while j < #list and list[j] - list[j + 1] <= GAP do
      j = j + 1
    end
    local top, bottom = list[i], list[j]
    if n > 1 and i == j and (top == 0 or top == total - 1) then
      -- The oldest or the newest member alone (a first page's edge): the first or the last
      -- member of one of the sets, compared; what a picker would read, without its merge.
      out[top] = extreme(keys, top == 0)
    elseif n == 1 then
      for k = i, j do
        local at = fmt(list[k])
        local f = redis.call('ZRANGE', keys[1], at, at, 'WITHSCORES')
        out[list[k]] = {f[1], f[2]}
      end
    elseif top < GAP then
      -- Near the oldest end: count up from index 0.
      local zeros = {}
      for k = 1, n do
        zeros[k] = 0
      end
      local pick = picker(keys, sizes, zeros, 1, top + 1)
      for k = j, i, -1 do
        out[list[k]] = {pick(list[k] + 1)}
      end
    elseif total - 1 - top < GAP then
      -- Near the newest end: count down from the top.
      local pick = picker(keys, sizes, sizes, -1, total - bottom)
      for k = i, j do
        out[list[k]] = {pick(total - list[k])}
      end
    else
      local f = select_at(keys, sizes, total, top, bottom)
      out[top] = {f[1], f[2]}
      local window = f[4]
      if top > bottom and window and bottom >= window.first then
        -- The whole run is in the search's last window: no pick. (So it usually is for a deep
        -- page's bound and its first edge, the member next to it.)
        for k = i + 1, j do
          local item = window.items[list[k] - window.first + 1]
          out[list[k]] = {item.m, item.raw}
        end
      elseif top > bottom then
        local pick = picker(keys, sizes, f[3], -1, top - bottom)
        for k = i + 1, j do
          out[list[k]] = {pick(top - list[k])}
        end
      end
    end
    i = j + 1
  end
  return out
end

-- A list by time: the union of the non-empty sets of KEYS. (concat.lua and helpful.lua, placed
-- after this file, replace these three with their lists' own.)
local function all_sets()
  local indexes = {}
  for i = 1, #KEYS do
    indexes[i] = i
  end
  return indexes
end
local list_keys, list_sizes, list_total = nonempty(all_sets())

local function sizes_of()
  return list_sizes, list_total
end

-- How many members of the list sort below (score, member) (the score as ARGV spells it:
-- integer milliseconds), and whether it is one of them.
local function position_of(score, m)
  return union_position(list_keys, tonumber(score), m)
end

local function members_at(sizes, total, wanted)
  return union_members_at(list_keys, sizes, total, wanted)
end
