#!lua
--[[
  device_claim - lease due devices of ONE shard to a dev-eval process.

  This script is the dispatch lock: it runs atomically, and a claimed device
  is not handed out again while its lease lives (its queue score becomes the
  lease expiry; a request that lowers the score meanwhile is pushed back to
  the lease). The claim snapshots the device's version and scenes.

  Input:
    KEYS[1]  P:device_eval:{d*}:queue  device queue of the shard (ZSET device -> due ms)
    ARGV[1]  dev_prefix  device key prefix, e.g. "polling:device_eval:{d3}:dev:"
    ARGV[2]  max         max devices to claim
    ARGV[3]  lease       lease ms
  Output:
    { claims, next_due_ms, queued, now_ms }
    claims: array of { device, version, token, {scenes...} }
    next_due_ms: earliest score left (-1 when empty); queued: ZCARD
  Device keys are named from ARGV[1]; they carry the shard's hash tag.
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local queue, prefix = KEYS[1], ARGV[1]
local max, leaseMs = tonumber(ARGV[2]), tonumber(ARGV[3])
local claims = {}

while #claims < max do
  local due = rcall('ZRANGEBYSCORE', queue, '-inf', now, 'LIMIT', 0, max - #claims)
  if #due == 0 then break end
  for _, dev in ipairs(due) do
    local key = prefix .. dev
    -- A protected call: while the shard's slot moves to another master, a
    -- device hash already there is refused here; its entry waits a lease
    -- and moves with the queue, and the rest are claimed.
    local h = redis.pcall('HMGET', key, 'claim', 'lease_until', 'ver')
    local lease = tonumber(h[2]) or 0
    if h.err then
      rcall('ZADD', queue, now + leaseMs, dev)
    elseif h[1] and lease > now then
      rcall('ZADD', queue, lease, dev) -- held by a live evaluation
    else
      local token = (h[3] or '0') .. '-' .. rcall('HINCRBY', key, 'seq', 1)
      rcall('HSET', key, 'claim', token, 'lease_until', now + leaseMs)
      rcall('ZADD', queue, now + leaseMs, dev)
      claims[#claims + 1] = { dev, tonumber(h[3]) or 0, token, rcall('SMEMBERS', key .. ':scenes') }
    end
  end
end

local nextDue = -1
local first = rcall('ZRANGE', queue, 0, 0, 'WITHSCORES')
if #first == 2 then nextDue = tonumber(first[2]) end
return { claims, nextDue, rcall('ZCARD', queue), now }
