-- read: everything one connection derives from a product's list, in one call and one
-- consistent view of it (`PageIndex::view`): a deep offset's bound, the list's total, the
-- anchor's rank and, for `containing`, the member that bounds the anchor's page
-- (`domain::page_numbers` says what pages and bounds are; a pager's links are offsets and need
-- none).
-- Read-only. (select.lua and pick.lua, prepended, have the functions and say what KEYS are.)
--
-- ARGV[1]  "desc" (newest first) or "asc" (oldest first): the order ranks are counted in
-- ARGV[2]  the start cursor's score (integer milliseconds; in a list by rating, "group:score"),
--          or "" to count from the list's end
-- ARGV[3]  the start cursor's member; ranks count only members strictly beyond the cursor,
--          which need not be a member
-- ARGV[4]  the bound's rank from the start, or "" for no bound
-- ARGV[5]  "none", "key" (the anchor is ARGV[6], ARGV[7]: score and member, member or not) or
--          "rank" (the anchor is the member at rank ARGV[6] from the start, if there is one)
-- ARGV[8]  page size, at least 1
-- ARGV[9]  "newest" or "oldest": which end page 1 sits at
-- ARGV[10] "none" or "current": whether to bound the anchor's page
-- ARGV[11] in a list by rating (concat.lua): the group of each set in KEYS; in the list by
--          helpful votes (helpful.lua): how many of KEYS hold the comments without votes
-- Returns {total, newer, older, bound member, bound score, anchor member, anchor score,
-- page bound member, page bound score}: newer and older count the list's members strictly
-- newer and older than the anchor (-1 without an anchor); an absent bound, anchor (or an anchor
-- given by key) or page bound is nil, nil. In a list by rating, scores are "group:score".
--
-- The page to bound repeats `PageLayout::page_to_bound`; the index contract tests hold the two
-- to the same answers.
--
-- Cost: a ZCARD per set in KEYS; for a start cursor or an anchor given by key, `position_of`
-- (two ZCOUNTs per set and a binary search in a tie); then one `members_at` for the bound, an
-- anchor given by rank and the anchor's page bound together: for a deep `first` page with its
-- `startOffset`, one union search for the bound, whose last window usually holds the member
-- below it (~20-35 calls; BENCHMARKS.md, "Redis index: a deep page's first edge from the
-- search's last window"). An anchor given by rank costs little beyond the bound's search.

local desc = ARGV[1] == 'desc'
local anchor_mode = ARGV[5]
local size = tonumber(ARGV[8])
local oldest = ARGV[9] == 'oldest'
local links = ARGV[10]

local sizes, total = sizes_of()

-- The ascending index of the member `rank` places from the start, if in the list.
local start_below, start_present
local function index_from_start(rank)
  local idx
  if ARGV[2] ~= '' then
    if start_below == nil then
      start_below, start_present = position_of(ARGV[2], ARGV[3])
    end
    if desc then
      idx = start_below - 1 - rank
    else
      idx = start_below + start_present + rank
    end
  elseif desc then
    idx = total - 1 - rank
  else
    idx = rank
  end
  if idx < 0 or idx >= total then
    return nil
  end
  return idx
end

-- The indexes whose members are wanted: the bound, the anchor, and the pages' bounds, found
-- together (`members_at`) once all are known.
local wanted = {}
local bound_idx
if ARGV[4] ~= '' then
  bound_idx = index_from_start(tonumber(ARGV[4]))
  wanted[#wanted + 1] = bound_idx
end

local newer, older = -1, -1
local anchor_idx
if anchor_mode == 'key' then
  local below, present = position_of(ARGV[6], ARGV[7])
  older = below
  newer = total - below - present
elseif anchor_mode == 'rank' then
  anchor_idx = index_from_start(tonumber(ARGV[6]))
  if anchor_idx then
    wanted[#wanted + 1] = anchor_idx
    older = anchor_idx
    newer = total - 1 - anchor_idx
  end
end

local count = math.max(1, math.floor((total + size - 1) / size))
local current
if newer >= 0 then
  local ahead = newer
  if oldest then
    ahead = older
  end
  current = math.min(math.floor(ahead / size) + 1, count)
elseif total == 0 then
  current = 1
end

-- The bound of the anchor's page past page 1: the member at rank (current - 1) * size - 1
-- counted from page 1's end.
local page_idx
if links == 'current' and current and current > 1 then
  local idx = (current - 1) * size - 1
  if not oldest then
    idx = total - 1 - idx
  end
  if idx >= 0 and idx < total then
    page_idx = idx
    wanted[#wanted + 1] = idx
  end
end

local found = members_at(sizes, total, wanted)
local none = {false, false}
local bound = bound_idx and found[bound_idx] or none
local anchor = anchor_idx and found[anchor_idx] or none
local page = page_idx and found[page_idx] or none
return {total, newer, older, bound[1], bound[2], anchor[1], anchor[2], page[1], page[2]}
