--[[
  direct_gate - the gate of the direct path (global switch off).

  The same two limits as gate.lua, without a claim: at least min_interval
  since the card's last state-change call (stop and resume together), and
  room in the account's sliding rate log. On pass, the call time is recorded
  before the call is made. Queries (kind 'query') take rate only.

  Input:
    KEYS[1]  command hash of the card (holds last_call)
    KEYS[2]  account rate log (ZSET)     KEYS[3] account limits (HASH qps)
    ARGV[1]  kind (call|query)   ARGV[2] min interval ms
    ARGV[3]  default qps (0 = unlimited)  ARGV[4] rate window ms
    ARGV[5]  a unique member for the rate log
  Output:
    { 'pass' } | { 'interval', until_ms } | { 'rate', wait_ms }
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, rateKey = KEYS[1], KEYS[2]
local interval, window = tonumber(ARGV[2]), tonumber(ARGV[4])
local qps = tonumber(rcall('HGET', KEYS[3], 'qps') or ARGV[3])

if ARGV[1] == 'call' then
  local lastCall = tonumber(rcall('HGET', key, 'last_call')) or 0
  if lastCall + interval > now then return { 'interval', lastCall + interval } end
end
if qps > 0 then
  rcall('ZREMRANGEBYSCORE', rateKey, '-inf', now - window)
  if rcall('ZCARD', rateKey) >= qps then
    local oldest = rcall('ZRANGE', rateKey, 0, 0, 'WITHSCORES')
    local wait = tonumber(oldest[2]) + window - now
    if wait < 1 then wait = 1 end
    return { 'rate', wait }
  end
  rcall('ZADD', rateKey, now, ARGV[5] .. ':' .. now)
  rcall('PEXPIRE', rateKey, window * 2)
end
if ARGV[1] == 'call' then rcall('HSET', key, 'last_call', now) end
return { 'pass' }
