-- select.lua: the search functions read.lua uses; the Rust side concatenates this file,
-- pick.lua and read.lua into one script (`concat!`), since Redis scripts cannot load one
-- another.
--
-- KEYS are the sets to read: in a list by time, the union of the selected ratings' sets (each
-- rating's comments without votes and its comments with votes, by time); in a list by rating
-- (concat.lua) or by helpful votes (helpful.lua) those sets in groups. The functions here take
-- the sets of one union as `keys`. All carry the product's {sku} hash tag, so the scripts run
-- in Redis Cluster.
--
-- Positions are ascending indexes `idx` into the (union) list. `position_of` finds how many
-- members sort below a (score, member) pair, the pair need not be a member: per set, ZCOUNT
-- for the smaller scores plus a binary search (by rank, with ZRANGE r r) inside the group of
-- members tied on its score, so it is O(log n) even for a comment that has been deleted.
-- `select_at` finds the member at an index: one set, ZRANGE idx idx; a union, see there.
-- `members_at` (pick.lua) finds the members at several indexes (a deep offset's bound, the
-- first edge beside it, the bound of the page that holds it): one `select_at` per run of
-- nearby indexes and a `picker` below it, or a picker alone near either end of the list.
--
-- What things cost (Redis 7.0, counted with callgrind, ~10 instructions a nanosecond on the
-- machine of BENCHMARKS.md): a redis.call ~5 k instructions (~0.5 us) whatever it does, a
-- ZCOUNT ~7 k; a member read with its score ~6 k (Redis formats the score with %.17g) and a
-- `tonumber` of it ~2 k more; a member read without its score ~1.3 k. So a union search is
-- ~10-30 calls (a bare jump, the whole script: ~400-600 k instructions), and a pick costs
-- about one scored member read per member passed: cheaper than a search for up to GAP members.
--
-- Members are compared bytewise by `less`, never with Lua's `<` on strings, which uses the
-- C library's strcoll and so depends on the server's locale. Bytewise is the order Redis
-- itself gives equal scores, and the order invariant of `docs/architecture.md`.

-- An integer (a score or a rank) as plain digits, for a command's argument. Scores and ranks
-- here are integral and far below 2^63, where '%d' (a cast to a C long) is exact: times in
-- milliseconds, and helpful scores, which pass 2^53 only beyond 2^22 votes on one comment
-- (by_count.lua) and 2^63 beyond 2^32. '%d' takes the C library's integer path; '%.0f' went
-- through its arbitrary-precision float printing (~3.6 k instructions a call, a tenth of a deep
-- jump's instructions), and so does a number handed to redis.call as is (Redis prints it with
-- %.17g). (tostring would switch to exponent notation.)
local function fmt(n)
  return string.format('%d', n)
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

-- Whether (score s, member m) sorts before (t, n) in a sorted set: by score, then bytewise.
local function before(s, m, t, n)
  if s ~= t then
    return s < t
  end
  return less(m, n)
end

local function member_at(key, r)
  local at = fmt(r)
  return redis.call('ZRANGE', key, at, at)[1]
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
  local at = fmt(s)
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. at)
  local cnt = redis.call('ZCOUNT', key, at, at)
  return lo, cnt
end

-- The size of each set in KEYS (one ZCARD each, read once per call).
local key_sizes = {}
for i = 1, #KEYS do
  key_sizes[i] = redis.call('ZCARD', KEYS[i])
end

-- The sets of KEYS at `indexes` that have members, their sizes and their total: a union is
-- searched over these only (an empty set adds nothing but calls).
local function nonempty(indexes)
  local keys, sizes, total = {}, {}, 0
  for _, i in ipairs(indexes) do
    if key_sizes[i] > 0 then
      keys[#keys + 1] = KEYS[i]
      sizes[#sizes + 1] = key_sizes[i]
      total = total + key_sizes[i]
    end
  end
  return keys, sizes, total
end

-- How many members of `key` sort below (score, member), and whether it is one of them.
local function position_in(key, score, m)
  local lo, cnt = tie_group(key, score)
  local below, present = lo, 0
  if cnt > 0 then
    below = below + tied_below(key, lo, cnt, m)
    local s = redis.call('ZSCORE', key, m)
    if s and tonumber(s) == score then
      present = 1
    end
  end
  return below, present
end

-- How many members of the union of `keys` sort below (score, member), and whether it is one
-- of them.
local function union_position(keys, score, m)
  local below, present = 0, 0
  for i = 1, #keys do
    local b, p = position_in(keys[i], score, m)
    below = below + b
    present = math.max(present, p)
  end
  return below, present
end

-- The member at ascending index `idx` (0 <= idx < total) of the union, as {member, score,
-- pos, window}: pos[i] is how many members of KEYS[i] sort below it (their sum is idx), where a
-- `picker` from it starts; window, when the search ended by reading the last few members of
-- its bracket, is them: {first = the union index of the first, items = {m = member, raw =
-- score} in order}, which spares a pick of the members beside idx that are among them. `low`
-- (at most idx; idx if nil) is the lowest index the caller wants besides idx: the search aims
-- so that the window holds it too, more often than not.
local function select_at(keys, sizes, total, idx, low)
  low = low or idx
  if #keys == 1 then
    local at = fmt(idx)
    local found = redis.call('ZRANGE', keys[1], at, at, 'WITHSCORES')
    return {found[1], found[2], {idx}}
  end

  -- The union. The search keeps a bracket of scores (lo, hi] that holds the wanted member:
  -- through(lo) <= idx < through(hi), where through(s) = how many members of all the sets have
  -- a score <= s (nil bounds stand for -inf and +inf). Each probe narrows it:
  -- - a guided probe reads, in the set with the most members inside the bracket, the member at
  --   the rank where the wanted one would sit if that set were spread like the union, and
  --   probes its score. Ratings are spread over time alike, so the guess misses by about the
  --   square root of its distance to the nearer bracket end, and whichever side it lands on
  --   comes that close. It aims two members past the target, towards the farther end (the
  --   bracket must close from both sides; downwards, past `low`). An earlier aim of twice that
  --   square root past the target, to land beyond it for sure, took a probe or two more and a
  --   wider last window: ~4.7 probes and 10 members read against ~3.6 and 5 (random jumps into
  --   200,000 comments in five sets; two sets: ~5.2 and 13 against ~3.1 and 6), a third fewer
  --   instructions for a filtered jump (BENCHMARKS.md, "Redis index: the guided probe aims at
  --   the target");
  -- - when a guided probe did not halve the distance on the side it landed, the next probe
  --   bisects the score range instead, so a spread that misleads the guess (ratings that
  --   cluster in time) still ends in O(log(score range)) probes.
  -- Each probe is one ZRANGE and a ZCOUNT per set with members inside the bracket (O(log n)
  -- each), but for sets already known to lie wholly below or above the probe (`through`). Once at most WINDOW members remain inside the bracket, they are read by rank (one
  -- ZRANGE per set) and merged here; if they all share one score (a tie wider than WINDOW), the
  -- tie is resolved by binary search.
  -- WINDOW is 16, not 64: a probe (~45 k instructions) costs about what 6 member reads do,
  -- and closes a bracket of 64 to a handful (one fewer probe, 48 more members read, cost a
  -- bare jump ~25% more; BENCHMARKS.md).
  local WINDOW = 16
  local n = #keys

  -- Each set's least and greatest score, once known: a set whose count at a probe was none
  -- (or all) of it reads its least (greatest) score once, and is not counted again at a probe
  -- below (above) it. Why: a product's sets need not span the same time. Comments move to
  -- the sets of voted comments at their first vote, so on a product whose recent comments got
  -- votes, a jump into the older ones counted those five sets at every probe and found none
  -- (77 commands a deep jump where 34 did without votes; BENCHMARKS.md, "Redis index: memory
  -- and CPU per page").
  local least, greatest = {}, {}
  local function least_of(i)
    if not least[i] then
      least[i] = tonumber(redis.call('ZRANGE', keys[i], '0', '0', 'WITHSCORES')[2])
    end
    return least[i]
  end
  local function greatest_of(i)
    if not greatest[i] then
      greatest[i] = tonumber(redis.call('ZRANGE', keys[i], '-1', '-1', 'WITHSCORES')[2])
    end
    return greatest[i]
  end

  -- Per-set counts of members with a score <= s (`at` spells it, `probe` is it), and their
  -- sum, for an s inside the bracket: a set without members inside it has the same count at s
  -- as at its bounds.
  local function through(at, probe, clo, chi)
    local c, t = {}, 0
    for i = 1, n do
      if chi[i] <= clo[i] then
        c[i] = clo[i]
      elseif least[i] and probe < least[i] then
        c[i] = 0
      elseif greatest[i] and probe >= greatest[i] then
        c[i] = sizes[i]
      else
        c[i] = redis.call('ZCOUNT', keys[i], '-inf', at)
        if c[i] == 0 then
          least_of(i)
        elseif c[i] == sizes[i] then
          greatest_of(i)
        end
      end
      t = t + c[i]
    end
    return c, t
  end

  local lo, hi = nil, nil
  local clo, chi = {}, {}
  for i = 1, n do
    clo[i] = 0
    chi[i] = sizes[i]
  end
  local tlo, thi = 0, total

  -- The score range of all the sets, for bisection (read once, when first needed; the ends
  -- `through` already read are not read again).
  local function bounds()
    local min_s, max_s
    for i = 1, n do
      if chi[i] > 0 then
        local first, last = least_of(i), greatest_of(i)
        if min_s == nil or first < min_s then min_s = first end
        if max_s == nil or last > max_s then max_s = last end
      end
    end
    return min_s - 1, max_s
  end

  local bisect = false
  while thi - tlo > WINDOW and not (lo and hi and hi - lo <= 1) do
    local d_lo, d_hi = idx - tlo, thi - 1 - idx
    -- The probe's score, and as a command argument (the reply's own spelling when it is one).
    local probe, at
    if bisect then
      if lo == nil or hi == nil then
        local min_s, max_s = bounds()
        lo = lo or min_s
        hi = hi or max_s
      end
      probe = math.floor((lo + hi) / 2)
      at = fmt(probe)
    else
      local g, most = 1, -1
      for i = 1, n do
        if chi[i] - clo[i] > most then
          g, most = i, chi[i] - clo[i]
        end
      end
      local aim = idx + 2
      if d_lo > d_hi then
        aim = low - 2
      end
      aim = math.max(tlo, math.min(thi - 1, aim))
      local r = clo[g] + math.floor((aim - tlo + 0.5) * most / (thi - tlo))
      r = math.max(clo[g], math.min(chi[g] - 1, r))
      local rank = fmt(r)
      at = redis.call('ZRANGE', keys[g], rank, rank, 'WITHSCORES')[2]
      probe = tonumber(at)
      if hi and probe >= hi then
        probe = hi - 1
        at = fmt(probe)
      end
    end
    local c, t = through(at, probe, clo, chi)
    if t > idx then
      hi, thi, chi = probe, t, c
    else
      lo, tlo, clo = probe, t, c
    end
    -- Progress: the side the probe landed on came at least twice as close.
    if t > idx then
      bisect = not bisect and (thi - 1 - idx) * 2 > d_hi
    else
      bisect = not bisect and (idx - tlo) * 2 > d_lo
    end
  end

  -- The wanted member is number `j` (0-based, ascending) among the members inside the bracket.
  local j = idx - tlo
  if thi - tlo <= WINDOW then
    local items = {}
    for i = 1, n do
      if chi[i] > clo[i] then
        local found = redis.call('ZRANGE', keys[i], fmt(clo[i]), fmt(chi[i] - 1), 'WITHSCORES')
        for k = 1, #found, 2 do
          local raw = found[k + 1]
          items[#items + 1] = {m = found[k], s = tonumber(raw), raw = raw, set = i}
        end
      end
    end
    table.sort(items, function(a, b)
      return before(a.s, a.m, b.s, b.m)
    end)
    local pos = {}
    for i = 1, n do
      pos[i] = clo[i]
    end
    for k = 1, j do
      pos[items[k].set] = pos[items[k].set] + 1
    end
    return {items[j + 1].m, items[j + 1].raw, pos, {first = tlo, items = items}}
  end

  -- Every member inside the bracket has the score hi: a tie. Pick member `j` of the tie by
  -- binary search: for each set, find its tied member whose rank inside the whole tie group (its
  -- rank in its own set plus, in every other set, how many tied members sort below it) is j.
  local groups = {}
  local pos = {}
  for i = 1, n do
    pos[i] = clo[i]
    if chi[i] > clo[i] then
      groups[#groups + 1] = {key = keys[i], lo = clo[i], cnt = chi[i] - clo[i], set = i}
    end
  end
  local s = fmt(hi)
  if #groups == 1 then
    pos[groups[1].set] = groups[1].lo + j
    return {member_at(groups[1].key, groups[1].lo + j), s, pos}
  end
  for gi, g in ipairs(groups) do
    local a, b = 0, g.cnt - 1
    while a <= b do
      local t = math.floor((a + b) / 2)
      local candidate = member_at(g.key, g.lo + t)
      local r = t
      for oi, o in ipairs(groups) do
        if oi ~= gi then
          local below = tied_below(o.key, o.lo, o.cnt, candidate)
          pos[o.set] = o.lo + below
          r = r + below
        end
      end
      if r == j then
        pos[g.set] = g.lo + t
        return {candidate, s, pos}
      elseif r < j then
        a = t + 1
      else
        b = t - 1
      end
    end
  end
  -- Only reachable when a member sits in two of the sets (an index that drifted).
  return redis.error_reply('key_at: a member is in more than one rating set')
end
