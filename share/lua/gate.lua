#!lua
--[[
  gate - the one atomic check before every gateway call.

  Passes only if, at this instant on the Redis clock:
    the account is not paused and its breaker is closed (a half-open breaker
      lets one probe call through);
    the claim is still ours (token) and the version is still current;
    for a state-change call: this claim has not called already (a replayed
      task never calls twice), and at least the interval has passed since
      the card's last call, stop and resume together;
    the account's pace grants a slot (includes/edge.lua: calls leave evenly,
      qps per second at most, at the carrier's wire).
  On pass it records the call before it is made: for a state change the
  card's last call time (the previous one is kept in prev_call, so a call the
  carrier refuses without applying it gives the interval back) and 'called'
  = token, so a crash after this point is seen by the next claim as an
  unknown result. The lease is extended to cover the call.

  resend: this claim's own call was refused for authentication and goes again
  after a re-authentication; it skips the interval (the refused call changed
  nothing) but takes a slot like any call, and the interval counts from it.

  When it refuses a claim that is still ours, the gate itself puts the
  command back (nothing for sr-confirm to trust a result line for): a newer
  version, at once (or after the card's interval); the card's interval, at
  its end; a paused account or an open breaker, in a second (the claim holds
  the account back meanwhile). kind 'judged': sr-exec's re-judgment found the
  call no longer wanted, and the gate finishes the command without a call.

  Input:
    KEYS[1]     command hash of the card
    KEYS[2]     account edge state (HASH: pace, rate, pause, breaker)
    KEYS[3]     account limits (HASH qps, running, burst)
    KEYS[4..6]  queues high, normal, bulk
    KEYS[7]     running claims (ZSET token -> lease expiry)
    KEYS[8]     audit stream of the account
    KEYS[9]     confirming commands (SET card)
    KEYS[10]    open alerts (HASH cause -> alert id)
    ARGV[1]     the account's settings (JSON: interval, window, lease, qps,
                running, burst, aimd_inc, aimd_memory, audit_max)
    ARGV[2]     token        ARGV[3] version      ARGV[4] kind (call|query|judged)
    ARGV[5]     card id (queue member)
    ARGV[6]     stats prefix, e.g. "polling:carrier:{c17}:stats:" (includes/stats.lua:
                calls, queries, and cmds, the distinct commands called)
    ARGV[7]     ahead ms: how far ahead a slot may be granted
    ARGV[8]     resend (1 or 0)
  Output:
    { 'pass', at_ms, now_ms, seq }  go ahead: send at at_ms (Redis clock, >= now_ms);
                           seq: the account's call sequence number (unique request ids)
    { 'done' }             (judged) the command is finished, no call made
    { 'lost' }             the claim is no longer ours (lease expired and re-claimed, or done)
    { 'stale', ver }       a newer version exists
    { 'replayed' }         this claim has called already: a replayed task
    { 'interval', until }  the card was called too recently; may call at 'until' (ms)
    { 'rate', wait_ms }    no slot within ahead ms; try again after wait_ms
    { 'paused', until, now }   the account is paused (or stopped by a limit of 0) until 'until'
    { 'breaker', until, now }  the account's breaker is open until 'until' (or its probe is out)
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
--- @include "card"
--- @include "stats"
local now = serverNow()
local key, edgeKey, limitsKey, runningKey, auditKey = KEYS[1], KEYS[2], KEYS[3], KEYS[7], KEYS[8]
local queues = { KEYS[4], KEYS[5], KEYS[6] }
local s = cjson.decode(ARGV[1])
local token, ver, kind, card = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local ahead, resend = tonumber(ARGV[7]), ARGV[8] == '1'

local h = rcall('HMGET', key, 'claim', 'ver', 'last_call', 'prio', 'counted_ver', 'called',
  'action', 'reason', 'scene', 'source')
local count = statsCounter(ARGV[6], now)
local lastCall = tonumber(h[3]) or 0

local function audit(event, state, vAfter)
  rcall('XADD', auditKey, 'MAXLEN', '~', s.audit_max, '*', 'card', card, 'ver_before', ver,
    'ver_after', vAfter or ver, 'event', event, 'state', state, 'action', h[7] or '',
    'reason', h[8] or '', 'scene', h[9] or '', 'source', h[10] or '', 'http', '', 'error', '')
end
-- Refused, the claim still ours: the command goes back to its queue at due.
local function giveBack(why, due)
  cardRelease(key, token, h[6])
  rcall('ZADD', queues[(tonumber(h[4]) or 1) + 1], due, card)
  rcall('ZREM', runningKey, token)
  count(why == 'stale' and 'out_superseded' or 'out_blocked')
  count('finishes')
  audit('gate:' .. why, 'requeued')
end

if h[1] ~= token then return { 'lost' } end
if h[2] ~= ver then
  count('conflicts') -- a newer version was found
  giveBack('stale', math.max(now, lastCall + s.interval))
  return { 'stale', tonumber(h[2]) }
end
if kind == 'judged' then
  -- Re-judged with fresh facts: the call is no longer wanted.
  cardFinish(key, queues, card, KEYS[9], KEYS[10])
  -- Kept until the card's next command finishes: sr-admin why says so
  -- without reading the audit.
  rcall('HSET', key, 'superseded', h[2])
  rcall('ZREM', runningKey, token)
  count('out_superseded')
  count('finishes')
  audit('call:superseded', 'done')
  return { 'done' }
end
if kind == 'call' then
  if (h[6] == token) ~= resend then return { resend and 'lost' or 'replayed' } end
  if not resend and lastCall + s.interval > now then
    giveBack('interval', lastCall + s.interval)
    return { 'interval', lastCall + s.interval }
  end
end

local e = edgeRead(edgeKey)
local qps, _, burst, stopped = edgeLimits(limitsKey, s)
local why, untilMs = edgeBlocked(e, now, stopped)
if not why and not edgeProbe(edgeKey, e, token, now, s.lease) then why, untilMs = 'breaker', now + 1000 end
if why then
  -- The account holds every call: back in a second, the claim holds it off.
  giveBack(why, now + 1000)
  return { why, untilMs, now }
end
local at, extra = edgePace(edgeKey, e, qps, burst, now, ahead, s)
if not at then return { 'rate', extra } end
if extra then -- the effective rate is back to the configured one
  rcall('XADD', auditKey, 'MAXLEN', '~', s.audit_max, '*', 'card', '', 'event', 'rate:restored',
    'qps', qps)
end

if kind == 'call' then
  if resend then
    rcall('HSET', key, 'last_call', at) -- the interval counts from the call that went
  else
    rcall('HSET', key, 'last_call', at, 'prev_call', h[3] or '', 'called', token)
  end
  count('calls')
  if h[5] ~= ver then
    -- The first call of this command: retry amplification is calls / cmds.
    rcall('HSET', key, 'counted_ver', ver)
    count('cmds')
  end
else
  -- Only this claim's own query may settle the command (sr-confirm checks).
  rcall('HSET', key, 'queried', token)
  count('queries')
end
local lease = at + s.lease
rcall('HSET', key, 'lease_until', lease)
rcall('ZADD', queues[(tonumber(h[4]) or 1) + 1], 'XX', lease, card)
rcall('ZADD', runningKey, 'XX', lease, token)
return { 'pass', at, now, rcall('HINCRBY', edgeKey, 'seq', 1) % 100000000 }
