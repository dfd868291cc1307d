--[[
  stats - the account's counters, two HASHes under the stats prefix (the
  account's hash tag): one per minute (PREFIX<minute>, kept 2 h: sr-stat's
  window sums them) and PREFIXtotal, counting since the start and never
  expiring (Prometheus counters: sr-stat --prom prints them as *_total).
]]

-- A counting function for this script's minute: count(field[, n]).
local function statsCounter(prefix, now)
  local bucket, total = prefix .. math.floor(now / 60000), prefix .. 'total'
  local touched = false
  return function(field, n)
    redis.call('HINCRBY', bucket, field, n or 1)
    redis.call('HINCRBY', total, field, n or 1)
    if not touched then
      redis.call('EXPIRE', bucket, 7200)
      touched = true
    end
  end
end
