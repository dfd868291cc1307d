--[[
  stats - the account's counters, two HASHes under the stats prefix (the
  account's hash tag): one per minute (PREFIX<minute>, kept 2 h: sr-stat's
  window sums them) and PREFIXtotal, counting since the start and never
  expiring (Prometheus counters: sr-stat --prom prints them as *_total).
  Their names depend on the server's minute, so no caller can declare them:
  the writes are protected calls. While the account's slot moves to another
  master, a counter hash already there is refused here, and that costs the
  batch's counts, not the batch (whose commands are already written).
]]

-- A counting function for this script's minute: count(field[, n]).
local function statsCounter(prefix, now)
  local bucket, total = prefix .. math.floor(now / 60000), prefix .. 'total'
  local touched = false
  return function(field, n)
    redis.pcall('HINCRBY', bucket, field, n or 1)
    redis.pcall('HINCRBY', total, field, n or 1)
    if not touched then
      redis.pcall('EXPIRE', bucket, 7200)
      touched = true
    end
  end
end

-- The same for a script that handles a batch: count(field[, n]) adds up in
-- memory and flush() writes each field once, so a batch of a hundred calls
-- costs the counters two HINCRBYs per field, not two hundred.
local function statsBatch(prefix, now)
  local sums, order = {}, {}
  local function count(field, n)
    if not sums[field] then
      sums[field] = 0
      order[#order + 1] = field
    end
    sums[field] = sums[field] + (n or 1)
  end
  local function flush()
    if #order == 0 then return end
    local bucket, total = prefix .. math.floor(now / 60000), prefix .. 'total'
    for _, field in ipairs(order) do
      redis.pcall('HINCRBY', bucket, field, sums[field])
      redis.pcall('HINCRBY', total, field, sums[field])
    end
    redis.pcall('EXPIRE', bucket, 7200)
    sums, order = {}, {}
  end
  return count, flush
end
