-- by_count.lua: the members of the sets by helpful count (`h<k>`, `keys::by_count`), for
-- apply.lua, which writes them, and helpful.lua, which reads them; the Rust side prepends this
-- file to both (`concat!`), since Redis scripts cannot load one another.

-- The member of a set by count: `createdAt` (integer milliseconds) in 6 big-endian bytes,
-- then the member by time, so that equal counts order by time.
local function by_count(millis, m)
  local bytes = {}
  for k = 6, 1, -1 do
    bytes[k] = millis % 256
    millis = math.floor(millis / 256)
  end
  return string.char(unpack(bytes)) .. m
end

-- The score of a member of a set by count: the count, then the second of `createdAt` (its
-- milliseconds over 1,024), as `count * 2^31 + second`, an integer like every score the union
-- search (select.lua) works with. With the count alone, the members of one count would all tie,
-- and a search inside a tie of thousands costs thousands of calls; now only the members of one
-- count within one second tie, and their members (which start with `createdAt`) order them.
-- Exact below 2^22 votes on one comment; beyond, scores round (monotonically), ties grow, and
-- the order stays right.
local SECOND = 1024
local COUNT_STEP = 2147483648
local function helpful_score(count, millis)
  return count * COUNT_STEP + math.floor(millis / SECOND)
end

-- The count a score by count stands for, given the member's `createdAt`.
local function count_of(score, millis)
  return math.floor((score - math.floor(millis / SECOND)) / COUNT_STEP + 0.5)
end

-- A member of a set by count as its `createdAt` and its member by time.
local function by_time(member)
  local millis = 0
  for k = 1, 6 do
    millis = millis * 256 + string.byte(member, k)
  end
  return millis, string.sub(member, 7)
end
