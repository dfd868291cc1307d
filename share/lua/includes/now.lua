-- now: the Redis server's clock in ms. Every time decision uses it, never a
-- worker's clock.
local function serverNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
