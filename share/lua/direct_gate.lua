#!lua
--[[
  direct_gate - the gate of the direct path (global switch off).

  The same limits as gate.lua, without a claim: the account neither paused
  nor behind an open breaker (half-open, after its cool-down, it lets one
  probe through, as gate.lua does: with the switch off the queue claims
  nothing, so without the direct path's probe the breaker would never
  close; direct_done.lua closes or reopens it on the probe's result),
  at least the interval since the card's last state-change call (stop and
  resume together; one made before a step of the Redis clock counted on the
  clock after it: includes/clock.lua), and a slot from the account's pace.
  On pass, the call time is recorded before the call is made (the previous
  one kept in prev_call: direct_done.lua gives it back if the carrier
  refuses the call without applying it). Queries (kind 'query') take a
  slot only; a 'resend' (the same call again after a re-authentication)
  skips the interval, which then counts from it.

  Input:
    KEYS[1]  card:*  command hash of the card (holds last_call)
    KEYS[2]  edge    account edge state (HASH)
    KEYS[3]  limits  account limits (HASH)
    KEYS[4]  idle:*  the card's idle bucket
    KEYS[5]  wait:*  its wait bucket
    ARGV[1]  settings     the account's settings (JSON: interval, window (widened by the
             edge's measured headroom, edgeWindow), qps, burst, aimd_*)
    ARGV[2]  kind         call | query | resend
    ARGV[3]  ahead        ms
    ARGV[4]  request      the request's id (the probe's, if it is one)
    ARGV[5]  probe_lease  how long a probe may take before another may replace it, ms
  Output:
    { 'pass', at_ms, now_ms, the last call before this one ('' if none) }
    | { 'interval', until_ms } | { 'rate', wait_ms }
    | { 'paused', until_ms, now_ms } | { 'breaker', until_ms, now_ms }
      (half-open with another's probe out: until_ms is now + 1 s)
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
--- @include "clock"
--- @include "idle"
local now = serverNow()
local key, edgeKey = KEYS[1], KEYS[2]
local s = cjson.decode(ARGV[1])
local kind, ahead, id, probeLease = ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])

cardAwake(key, KEYS[4], KEYS[5]) -- its last call is in its hash
local lastCall = rcall('HGET', key, 'last_call')
local e = edgeRead(edgeKey)
-- The pace's window: the headroom sr-exec measured widens it (edgeWindow).
s.window = edgeWindow(e, s, now)
local since = clockLast(clockSteps(e), tonumber(lastCall) or 0)
if kind == 'call' and since + s.interval > now then
  return { 'interval', since + s.interval }
end
local qps, _, burst, stopped = edgeLimits(KEYS[3], s)
local why, untilMs = edgeBlocked(e, now, stopped)
if why then return { why, untilMs, now } end
if not edgeProbe(edgeKey, e, id, now, probeLease) then return { 'breaker', now + 1000, now } end
edgeSrqAsked(edgeKey, now)
local at, wait = edgePace(edgeKey, e, qps, burst, now, ahead, s)
if not at then return { 'rate', wait } end
if kind == 'call' then
  rcall('HSET', key, 'last_call', at, 'prev_call', lastCall or '')
elseif kind == 'resend' then
  rcall('HSET', key, 'last_call', at)
end
return { 'pass', at, now, lastCall or '' }
