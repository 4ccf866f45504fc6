-- positions: a product's list seen from an anchor, for numbered pages (`domain::pages`, which
-- says what pages and bounds are): the list's total, the anchor's rank, and the member that
-- bounds each page a layout links. Read-only; one round trip, one consistent view of the list.
-- (select.lua, prepended, has the functions and says what KEYS are.)
--
-- ARGV[1] the anchor's score (integer milliseconds), or "" for no anchor
-- ARGV[2] the anchor's member; the anchor need not be a member
-- ARGV[3] page size, at least 1
-- ARGV[4] "newest" or "oldest": which end page 1 sits at
-- ARGV[5] "none", "current" or "pager": which pages to bound
-- ARGV[6] for "pager", how many pages around the current one
-- Returns {total, newer, older, page, member, score, page, member, score, ...}: newer and older
-- count the list's members strictly newer and older than the anchor (-1 without an anchor).
--
-- The choice of pages repeats `PageLayout::pages_to_bound`; the index contract tests hold the
-- two to the same answers.

local has_anchor = ARGV[1] ~= ''
local size = tonumber(ARGV[3])
local oldest = ARGV[4] == 'oldest'
local links = ARGV[5]
local around = tonumber(ARGV[6])

local sizes, total = sizes_of()
local newer, older = -1, -1
local count = math.max(1, math.floor((total + size - 1) / size))
local current
if has_anchor then
  local below, present = position_of(tonumber(ARGV[1]), ARGV[2])
  older = below
  newer = total - below - present
  local ahead = newer
  if oldest then
    ahead = older
  end
  current = math.min(math.floor(ahead / size) + 1, count)
elseif total == 0 then
  current = 1
end

local wanted = {}
if links == 'current' and current then
  wanted[current] = true
elseif links == 'pager' then
  wanted[count] = true
  if current then
    wanted[current] = true
    wanted[current - 1] = true
    wanted[current + 1] = true
  end
  local width = math.min(around, count)
  if width > 0 then
    local start = 1
    if current then
      start = math.max(1, math.min(current - math.floor((width - 1) / 2), count - width + 1))
    end
    for p = start, start + width - 1 do
      wanted[p] = true
    end
  end
end

local pages = {}
for p in pairs(wanted) do
  if p > 1 and p <= count then
    pages[#pages + 1] = p
  end
end
table.sort(pages)

local out = {total, newer, older}
for _, p in ipairs(pages) do
  -- The bound of page p is at rank (p - 1) * size - 1 counted from page 1's end.
  local rank = (p - 1) * size - 1
  local idx = rank
  if not oldest then
    idx = total - 1 - rank
  end
  if idx >= 0 and idx < total then
    local found = select_at(sizes, total, idx)
    out[#out + 1] = p
    out[#out + 1] = found[1]
    out[#out + 1] = found[2]
  end
end
return out
