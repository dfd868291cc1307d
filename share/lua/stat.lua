#!lua flags=no-writes
--[[
  stat - a snapshot of ONE account for sr-stat (read only).

  Input:
    KEYS[1]   stop_resume:high  queue high
    KEYS[2]   stop_resume       queue normal
    KEYS[3]   stop_resume:bulk  queue bulk
    KEYS[4]   sr_running        running claims (ZSET)
    KEYS[5]   frozen            frozen (ZSET)
    KEYS[6]   confirming        confirming (SET)
    KEYS[7]   flapping          flapping cards (ZSET)
    KEYS[8]   alerts_open       open alerts (HASH)
    KEYS[9]   limits            account limits (HASH qps, running, burst)
    KEYS[10]  edge              account edge state (HASH; see includes/edge.lua)
    ARGV[1]  stats     stats bucket prefix ("…:stats:")
    ARGV[2]  window    window in minutes
    ARGV[3]  settings  the account's settings (JSON: qps, running, burst, aimd_*)
  Output:
    flat array of name, value pairs (values are integers): queued, due,
    claimed, confirming (frozen ones not counted), frozen, oldest_due_ms, running, max_running, qps,
    burst, qps_effective_milli (the effective rate x 1000), headroom_ms (the
    pace's: the configured one, or the lateness sr-exec measured), paused_until_ms
    (0: not paused), breaker (0 closed, 1 open, 2 half-open), breaker_since_ms,
    breaker_until_ms, flapping, alerts_open, the window's sums of every
    counter (calls, queries, cmds, finishes, conflicts, out_<outcome>,
    query_<outcome>), and every counter since the start as total_<counter>
  The counters' keys are named from ARGV[1] (includes/stats.lua); they carry
  the account's hash tag.
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
local now = serverNow()
local s = cjson.decode(ARGV[3])
local out = {}
local function put(k, v) out[#out + 1] = k; out[#out + 1] = v end

local queued, due, oldest = 0, 0, -1
for q = 1, 3 do
  queued = queued + rcall('ZCARD', KEYS[q])
  due = due + rcall('ZCOUNT', KEYS[q], '-inf', now)
  local first = rcall('ZRANGE', KEYS[q], 0, 0, 'WITHSCORES')
  if #first == 2 and tonumber(first[2]) <= now then
    local age = now - tonumber(first[2])
    if age > oldest then oldest = age end
  end
end
put('queued', queued)
put('due', due)
put('claimed', rcall('ZCOUNT', KEYS[4], now, '+inf'))
-- A frozen command stays in the confirming set (confirm.lua's freeze: its
-- retry queries first), but waits for an operator, not for a query: it is
-- counted frozen, not confirming, or srq_confirming would never fall.
put('confirming', rcall('SCARD', KEYS[6]) - rcall('ZINTERCARD', 2, KEYS[5], KEYS[6]))
put('frozen', rcall('ZCARD', KEYS[5]))
put('oldest_due_ms', math.max(oldest, 0))
put('running', rcall('ZCOUNT', KEYS[4], now, '+inf'))
local qps, running, burst, stopped = edgeLimits(KEYS[9], s)
local e = edgeRead(KEYS[10])
put('max_running', running)
put('qps', qps)
put('burst', burst)
put('qps_effective_milli', math.floor(edgeRate(e, qps, now, s) * 1000))
put('headroom_ms', edgeWindow(e, s, now) - 1000)
local held, heldUntil = edgeBlocked(e, now, stopped)
put('paused_until_ms', held == 'paused' and heldUntil or 0)
local brk = 0
if e.brk_until then brk = tonumber(e.brk_until) > now and 1 or 2 end
put('breaker', brk)
put('breaker_since_ms', tonumber(e.brk_since) or 0)
put('breaker_until_ms', tonumber(e.brk_until) or 0)
put('flapping', rcall('ZCOUNT', KEYS[7], now - 3600000, '+inf'))
put('alerts_open', rcall('HLEN', KEYS[8]))

local sums, names = {}, {}
local minute = math.floor(now / 60000)
for m = minute - tonumber(ARGV[2]) + 1, minute do
  local h = rcall('HGETALL', ARGV[1] .. m)
  for i = 1, #h, 2 do
    if not sums[h[i]] then sums[h[i]] = 0; names[#names + 1] = h[i] end
    sums[h[i]] = sums[h[i]] + tonumber(h[i + 1])
  end
end
table.sort(names)
for _, n in ipairs(names) do put(n, sums[n]) end
local total = rcall('HGETALL', ARGV[1] .. 'total')
for i = 1, #total, 2 do put('total_' .. total[i], tonumber(total[i + 1])) end
return out
