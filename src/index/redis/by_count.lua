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

-- A member of a set by count as its `createdAt` and its member by time.
local function by_time(member)
  local millis = 0
  for k = 1, 6 do
    millis = millis * 256 + string.byte(member, k)
  end
  return millis, string.sub(member, 7)
end
