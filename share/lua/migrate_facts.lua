#!lua
--[[
  migrate_facts - rename one facts hash's fields from the names 0.1 wrote
  ("status") to the short fields kept since ("st"): the facts hash of every
  card is in Redis for good, and long names were a quarter of its bytes. The readers understand both meanwhile; a short field
  already there was written since, so it wins and the old one only goes.
  Idempotent: a hash already migrated is left as it is.

  Input:
    KEYS[1]  P:card:*:facts|P:device:*:facts  a card's or a device's facts hash
    ARGV[1..] pairs  pairs: old name, short field (every fact)
  Output:
    how many fields were renamed or dropped (0: nothing to do)
]]
local n = 0
for i = 1, #ARGV, 2 do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if v then
    redis.call('HSETNX', KEYS[1], ARGV[i + 1], v)
    redis.call('HDEL', KEYS[1], ARGV[i])
    n = n + 1
  end
end
return n
