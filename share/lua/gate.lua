#!lua
--[[
  gate - the one atomic check before every gateway call.

  Passes only if, at this instant on the Redis clock:
    the account is not paused and its breaker is closed (a half-open breaker
      lets one probe call through);
    the claim is still ours (token), the command is not frozen (sr-admin
      freeze since the claim), and the version is still current;
    for a state-change call: this claim has not called already (a replayed
      task never calls twice), and at least the interval has passed since
      the card's last call, stop and resume together (a last call made
      before a step of the Redis clock counted on the clock after it:
      includes/clock.lua);
    the account's pace grants a slot (includes/edge.lua: calls leave evenly,
      qps per second at most, at the carrier's wire, over a window widened
      by the lateness sr-exec measured, edgeWindow; the account's other
      callers take theirs from the same pace, rate_take.lua).
  A batch that asked the pace for a slot, granted or not, records when
  (srq_at): while srq asks, the other callers leave its reserve free.
  On pass it records the call before it is made: for a state change the
  card's last call time (the previous one is kept in prev_call, so a call the
  carrier refuses without applying it gives the interval back), 'called'
  = token, so a crash after this point is seen by the next claim as an
  unknown result, and the change as the card's outstanding one ('out',
  includes/out.lua: whatever becomes of the command, its result settles it). The lease is extended to cover the call, unless what is
  left of it does (a fresh claim's outlasts the call's timeout by half a
  lease).

  resend: this claim's own call was refused for authentication and goes again
  after a re-authentication; it skips the interval (the refused call changed
  nothing) but takes a slot like any call, and the interval counts from it.

  When it refuses a claim that is still ours, the gate itself puts the
  command back (nothing for sr-confirm to trust a result line for): a newer
  version, at once (or after the card's interval); the card's interval, at
  its end; a paused account or an open breaker, in a second (the claim holds
  the account back meanwhile). kind 'judged': sr-exec's re-judgment found the
  call no longer wanted, and the gate finishes the command without a call.

  A batch: the ready calls of ONE account, each with its own reply, in one
  script call (the account's state is read once, its counters and its pace
  written once). Items are judged in order: the first takes the first slot.

  Input:
    KEYS[1]  edge              account edge state (HASH: pace, rate, pause, breaker)
    KEYS[2]  limits            account limits (HASH qps, running, burst)
    KEYS[3]  stop_resume:high  queue high
    KEYS[4]  stop_resume       queue normal
    KEYS[5]  stop_resume:bulk  queue bulk
    KEYS[6]  sr_running        running claims (ZSET token -> lease expiry)
    KEYS[7]  audit             audit stream of the account
    KEYS[8]  confirming        confirming commands (SET card)
    KEYS[9]  alerts_open       open alerts (HASH cause -> alert id)
    KEYS[9+i.1]  card:*        item i's card's command hash
    KEYS[9+i.2]  idle:*        then its idle bucket
    ARGV[1]  settings  the account's settings (JSON: interval, window, lease, call (a
             call's timeout), qps, running, burst, aimd_inc, aimd_memory, audit_max)
    ARGV[2]  stats     stats prefix, e.g. "polling:carrier:{c17}:stats:" (includes/stats.lua:
             calls, queries, and cmds, the distinct commands called)
    ARGV[3]  ahead     ms: how far ahead a slot may be granted
    ARGV[3+i.1]  token    item i: its claim's token
    ARGV[3+i.2]  version
    ARGV[3+i.3]  kind     call | query | judged
    ARGV[3+i.4]  card     card id (queue member)
    ARGV[3+i.5]  resend   1 or 0
    ARGV[3+i.6]  action   stop | resume: the task's, which must be the command's
  Output: one reply per item, in order (an error for an item that failed):
    { 'pass', at_ms, now_ms, seq }  go ahead: send at at_ms (Redis clock, >= now_ms);
                           seq: the account's call sequence number (unique request ids)
    { 'done' }             (judged) the command is finished, no call made
    { 'lost' }             the claim is no longer ours (lease expired and re-claimed, or done)
    { 'frozen' }           frozen by an operator since its claim: the claim is dropped, no call
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
--- @include "clock"
--- @include "card"
--- @include "stats"
--- @include "batch"
--- @include "out"
local now = serverNow()
local edgeKey, limitsKey, runningKey, auditKey = KEYS[1], KEYS[2], KEYS[6], KEYS[7]
local confirmingKey, openKey = KEYS[8], KEYS[9]
local queues = { KEYS[3], KEYS[4], KEYS[5] }
local s = cjson.decode(ARGV[1])
local ahead = tonumber(ARGV[3])
local maxlen = digits(s.audit_max)
local count, flushCounts = statsBatch(ARGV[2], now)
local e = edgeRead(edgeKey)
-- The pace's window: the headroom sr-exec measured widens it (edgeWindow).
s.window = edgeWindow(e, s, now)
local steps = clockSteps(e)
local qps, _, burst, stopped = edgeLimits(limitsKey, s)
local held, heldUntil = edgeBlocked(e, now, stopped)
local paced, restored, seqs, asked = false, false, 0, false

-- The audit entry of a refusal or a judged finish, the command's own
-- fields read then (a pass writes no audit and needs none of them).
local function audit(key, card, ver, event, state)
  local w = rcall('HMGET', key, 'action', 'reason', 'scene', 'source')
  rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', card, 'ver_before', ver,
    'ver_after', ver, 'event', event, 'state', state, 'action', w[1] or '',
    'reason', w[2] or '', 'scene', w[3] or '', 'source', w[4] or '', 'http', '', 'error', '')
end

-- Refused, the claim still ours: the command goes back to its queue at due.
local function giveBack(key, card, ver, token, called, queue, why, due)
  audit(key, card, ver, 'gate:' .. why, 'requeued')
  cardRelease(key, token, called)
  rcall('ZADD', queue, digits(due), card)
  rcall('ZREM', runningKey, token)
  count(why == 'stale' and 'out_superseded' or 'out_blocked')
  count('finishes')
end

local function gateOne(key, bucket, token, ver, kind, card, resendArg, action)
  local resend = resendArg == '1'
  local h = rcall('HMGET', key, 'claim', 'ver', 'last_call', 'prio', 'counted_ver', 'called',
    'lease_until', 'frozen', 'action')
  local lastCall = clockLast(steps, tonumber(h[3]) or 0)
  local queue = queues[(tonumber(h[4]) or 1) + 1]

  -- A task whose action is not its command's was not made by the claim
  -- (an edited line): judged against the wrong direction, it must neither
  -- call nor finish the command.
  if h[1] ~= token or (h[2] == ver and h[9] ~= action) then return { 'lost' } end
  if h[8] == '1' then
    -- Frozen by an operator since its claim: nothing goes out for it, not
    -- even a query; its claim ends and it stays in the frozen set.
    audit(key, card, ver, 'gate:frozen', 'frozen')
    cardRelease(key, token, h[6])
    rcall('ZREM', runningKey, token)
    count('out_blocked')
    count('finishes')
    return { 'frozen' }
  end
  if h[2] ~= ver then
    count('conflicts') -- a newer version was found
    giveBack(key, card, ver, token, h[6], queue, 'stale', math.max(now, lastCall + s.interval))
    return { 'stale', tonumber(h[2]) or 0 }
  end
  if kind == 'judged' then
    -- Re-judged with fresh facts: the call is no longer wanted.
    audit(key, card, ver, 'call:superseded', 'done')
    -- The superseded version is kept until the card's next command
    -- finishes: sr-admin why says so without reading the audit.
    cardFinish(key, bucket, queues, card, confirmingKey, openKey, nil, nil, { superseded = h[2] })
    rcall('ZREM', runningKey, token)
    count('out_superseded')
    count('finishes')
    return { 'done' }
  end
  if kind == 'call' then
    if (h[6] == token) ~= resend then return { resend and 'lost' or 'replayed' } end
    if not resend and lastCall + s.interval > now then
      giveBack(key, card, ver, token, h[6], queue, 'interval', lastCall + s.interval)
      return { 'interval', lastCall + s.interval }
    end
  end

  local why, untilMs = held, heldUntil
  if not why and not edgeProbe(edgeKey, e, token, now, s.lease) then why, untilMs = 'breaker', now + 1000 end
  if why then
    -- The account holds every call: back in a second, the claim holds it off.
    giveBack(key, card, ver, token, h[6], queue, why, now + 1000)
    return { why, untilMs, now }
  end
  asked = true
  local at, extra = edgePace(nil, e, qps, burst, now, ahead, s)
  if not at then return { 'rate', extra } end
  paced = paced or qps > 0
  if extra then -- the effective rate is back to the configured one
    restored = true
    rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', '', 'event', 'rate:restored',
      'qps', qps)
  end

  local set
  local atS = digits(at)
  if kind == 'call' then
    count('calls')
    if resend then
      -- the interval counts from the call that went
      set = { 'last_call', atS, 'out', outValue(action, ver, atS, 'sent') }
    else
      set = { 'last_call', atS, 'prev_call', h[3] or '', 'called', token, 'out', outValue(action, ver, atS, 'sent') }
      if h[5] ~= ver then
        -- The first call of this command: retry amplification is calls / cmds.
        count('cmds')
        set[#set + 1] = 'counted_ver'; set[#set + 1] = ver
      end
    end
  else
    -- Only this claim's own query may settle the command (sr-confirm checks).
    count('queries')
    set = { 'queried', token }
  end
  -- The lease must outlast the call (s.call: its timeout) by half a lease,
  -- for the result to be confirmed. A fresh claim's does; an older one is
  -- extended.
  if (tonumber(h[7]) or 0) - at < s.call + s.lease / 2 then
    local lease = digits(at + s.lease)
    set[#set + 1] = 'lease_until'; set[#set + 1] = lease
    rcall('ZADD', queue, 'XX', lease, card)
    rcall('ZADD', runningKey, 'XX', lease, token)
  end
  rcall('HSET', key, unpack(set))
  seqs = seqs + 1
  return { 'pass', at, now, seqs }
end

local replies = batchEach(9, 3, 6, gateOne)
if paced then
  edgePaceSave(edgeKey, e, restored, digits(now))
elseif asked then
  edgeSrqAsked(edgeKey, now)
end
if seqs > 0 then
  -- Sequence numbers, one per call that passed, taken in one step.
  local last = rcall('HINCRBY', edgeKey, 'seq', seqs)
  for _, r in ipairs(replies) do
    if r[1] == 'pass' then r[4] = (last - seqs + r[4]) % 100000000 end
  end
end
flushCounts()
return replies
