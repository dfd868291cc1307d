--[[
  gate - the one atomic check before every gateway call (SPEC section 5).

  Passes only if, at this instant on the Redis clock:
    the claim is still ours (token), the version is still current,
    for a state-change call: at least min_interval since the card's last call,
    the account's sliding rate log has room (a window of 1 s plus headroom,
    so calls that reach the carrier a little late still fit its second).
  On pass it records the call before it is made: the rate log entry, and for
  a state change the card's last call time and 'called' = token, so a crash
  after this point is seen by the next claim as an unknown result. The lease
  is extended to cover the call.

  Input:
    KEYS[1]     command hash of the card
    KEYS[2]     account rate log (ZSET member -> ms)
    KEYS[3]     account limits (HASH qps, running)
    KEYS[4..6]  queues high, normal, bulk
    KEYS[7]     running claims (ZSET token -> lease expiry)
    ARGV[1]     token         ARGV[2] version     ARGV[3] kind (call|query)
    ARGV[4]     min interval ms                   ARGV[5] default qps (0 = unlimited)
    ARGV[6]     rate window ms                    ARGV[7] lease ms
    ARGV[8]     card id (queue member)
    ARGV[9]     stats bucket prefix, e.g. "polling:carrier:{c17}:stats:" (a HASH per
                minute, kept 2 h: calls, queries, and cmds, the distinct commands called)
  Output:
    { 'pass' }             go ahead: call now
    { 'lost' }             the claim is no longer ours (lease expired and re-claimed, or done)
    { 'stale', ver }       a newer version exists
    { 'interval', until }  the card was called too recently; may call at 'until' (ms)
    { 'rate', wait_ms }    the account's rate is used up; try again after wait_ms
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, rateKey, limitsKey, runningKey = KEYS[1], KEYS[2], KEYS[3], KEYS[7]
local token, ver, kind = ARGV[1], ARGV[2], ARGV[3]
local interval, window, leaseMs = tonumber(ARGV[4]), tonumber(ARGV[6]), tonumber(ARGV[7])
local qps = tonumber(rcall('HGET', limitsKey, 'qps') or ARGV[5])

local h = rcall('HMGET', key, 'claim', 'ver', 'last_call', 'prio', 'counted_ver')
if h[1] ~= token then return { 'lost' } end
if h[2] ~= ver then return { 'stale', tonumber(h[2]) } end
if kind == 'call' then
  local lastCall = tonumber(h[3]) or 0
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
  rcall('ZADD', rateKey, now, token .. ':' .. kind .. ':' .. now)
  rcall('PEXPIRE', rateKey, window * 2)
end
local bucket = ARGV[9] .. math.floor(now / 60000)
if kind == 'call' then
  rcall('HSET', key, 'last_call', now, 'called', token)
  rcall('HINCRBY', bucket, 'calls', 1)
  if h[5] ~= ver then
    -- The first call of this command: retry amplification is calls / cmds.
    rcall('HSET', key, 'counted_ver', ver)
    rcall('HINCRBY', bucket, 'cmds', 1)
  end
else
  rcall('HINCRBY', bucket, 'queries', 1)
end
rcall('EXPIRE', bucket, 7200)
local lease = now + leaseMs
local q = KEYS[4 + (tonumber(h[4]) or 1)]
rcall('HSET', key, 'lease_until', lease)
rcall('ZADD', q, 'XX', lease, ARGV[8])
rcall('ZADD', runningKey, 'XX', lease, token)
return { 'pass' }
