-- commit: swaps one product's staged rebuild sets in for its live sets, atomically.
--
-- KEYS[1..n]     the live keys (the product set, then the five rating sets)
-- KEYS[n+1..2n]  the staged keys of one rebuild run, in the same order
-- For each pair: RENAME the staged key over the live one if it was staged, else DEL the live
-- key (nothing staged for it means the rebuild found no such comments). A script runs
-- atomically, so readers see either the old sets or the new ones; all keys share the
-- product's {sku} hash tag, so it also runs in Redis Cluster.
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[n + i]) == 1 then
    redis.call('RENAME', KEYS[n + i], KEYS[i])
  else
    redis.call('DEL', KEYS[i])
  end
end
return n
