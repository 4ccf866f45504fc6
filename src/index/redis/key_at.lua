-- key_at: the member `rank` places into a product's list, read in one order, counting only
-- items strictly beyond a cursor `after`. Read-only; one round trip. (select.lua, prepended,
-- has the functions and says what KEYS are.)
--
-- ARGV[1] "desc" (newest first) or "asc" (oldest first)
-- ARGV[2] rank, 0-based
-- ARGV[3] the cursor's score (integer milliseconds), or "" for no cursor
-- ARGV[4] the cursor's member (the comment id's 16 bytes); the cursor need not be a member
-- Returns {member, score} or nil.
--
-- With below = how many members sort below the cursor (position_of):
--   asc:  idx = below + (1 if the cursor is a member) + rank
--   desc: idx = below - 1 - rank

local desc = ARGV[1] == 'desc'
local rank = tonumber(ARGV[2])
local has_after = ARGV[3] ~= ''

local sizes, total = sizes_of()
local idx
if has_after then
  local below, present = position_of(tonumber(ARGV[3]), ARGV[4])
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
return select_at(sizes, total, idx)
