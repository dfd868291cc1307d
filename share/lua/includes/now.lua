-- now: the Redis server's clock in ms. Every time decision uses it, never a
-- worker's clock.
local function serverNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A whole number (ms, a count) as the string Redis is handed. A Lua number
-- given to redis.call is formatted with "%.17g" on every call, which costs
-- about as much as a small HSET itself; a string costs nothing, and one
-- formatted with %d costs half as much.
local function digits(x) return string.format('%d', x) end
