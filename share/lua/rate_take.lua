#!lua
--[[
  rate_take - slots of the account's pace for another caller of its API.

  A carrier's rate limit belongs to the API account: its usage and status
  pollers count against it as srq's stops and resumes do. Such a caller
  takes its slots here, from the account's ONE pace (the edge hash's tat,
  includes/edge.lua), the same pace srq's gate takes its slots from: every
  call of every caller leaves at its own slot, so no second at the carrier
  holds more than the account's limit, whoever called. sr-rate is the
  command-line client; a poller in another language may call this script
  itself (docs/carriers.md: "Sharing the account's rate").

  The limits (includes/share.lua): srq's reserve (reserve_qps) while srq has
  work, a class's share (max_share); both counted in the slots held in any
  window. Why it is sound:
    - Every slot of the window around a new one is counted: the slots held
      from (first - window) on, whenever granted, are read, and the new
      slots are counted in full; so no window holding a new slot holds more
      than the cap.
    - The pace holds P slots in a window (its spacing is window / P); the
      other classes hold at most P - reserve of them in any window while
      srq is active, so srq can take at least `reserve` a window whatever
      the others ask for. Their lateness is counted too (WEIGHT).
    - A slot is never placed past the pace's next one: that would leave a
      hole no one can use. A take the limits refuse writes nothing and says
      when to ask again.
    - A slot is granted at most one window ahead: srq's gate takes slots at
      most 200 ms ahead, and a caller booking further would push srq's calls
      out. So when srq comes back after its reserve was lent, what was lent
      is spent within a window of its first ask (srq_at, written by
      gate.lua and direct_gate.lua, refusals included), and from then on the
      reserve holds again.
  Every time is the Redis server's (TIME). A paused account, or one whose
  breaker is open, gives no slot (a half-open breaker's probe is srq's).

  Input:
    KEYS[1]  edge        the account's edge state (HASH P:carrier:{c}:edge: tat, eff,
             srq_at, pause, breaker; includes/edge.lua)
    KEYS[2]  limits      the account's limits (HASH P:carrier:{c}:limits: qps, burst)
    KEYS[3]  rate:slots  the other callers' slots (ZSET P:carrier:{c}:rate:slots;
             includes/share.lua)
    ARGV[1]  settings  the account's settings (JSON): window (ms, one second plus
             headroom; widened by the headroom sr-exec measured, edge's hr:
             includes/edge.lua, edgeWindow), qps, burst, aimd_inc, aimd_memory (the effective
             rate while the carrier refuses for rate, as the gate computes
             it), reserve (calls a second kept for srq), share (JSON object
             class -> fraction of the rate; "*": every class not named)
    ARGV[2]  class     the caller's class, [a-z0-9_]{1,32}, not srq
    ARGV[3]  n         the slots wanted (1..1000): call i is sent at slot i
    ARGV[4]  ahead     ms: how far ahead the first slot may be (at most one
             window is granted)
    ARGV[5]  late      ms (0..10000): how much later than its slot a call may
             reach the carrier; the pace is held that much longer per slot
  Output:
    { 'ok', now_ms, { slot_ms, ... } }  send call i at slot i (Redis clock)
    { 'rate', first_ms, now_ms, retry_ms }  the pace's next slot is further
                           than ahead (or a window): first_ms; one who can
                           wait that long asks again at retry_ms
    { 'share', until_ms, now_ms }    the class holds its share of the window:
                           ask again at until_ms
    { 'reserve', until_ms, now_ms }  the other classes hold all srq's reserve
                           leaves them: ask again at until_ms
    { 'paused', until_ms, now_ms }   the account is paused (or stopped by a
                           limit of 0) until until_ms
    { 'breaker', until_ms, now_ms }  its breaker is open until until_ms
    { 'over', cap }        n (with late) is more than the class may ever hold
                           in a window (cap, in slots)
  An ARGV out of range is an error reply.
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
--- @include "share"
local now = serverNow()
local edgeKey, limitsKey, slotsKey = KEYS[1], KEYS[2], KEYS[3]
local s = cjson.decode(ARGV[1])
local cls, n, ahead, late = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if not string.match(cls, '^[a-z0-9_]+$') or #cls > 32 or cls == 'srq' then
  return redis.error_reply('rate_take: ARGV[2], the class, is not [a-z0-9_]{1,32} or is srq')
end
if not n or n < 1 or n > 1000 or n ~= math.floor(n) then
  return redis.error_reply('rate_take: ARGV[3], n, is not a whole number from 1 to 1000')
end
if not ahead or ahead < 0 then return redis.error_reply('rate_take: ARGV[4], ahead, is not ms >= 0') end
if not late or late < 0 or late > 10000 then
  return redis.error_reply('rate_take: ARGV[5], late, is not ms from 0 to 10000')
end

local e = edgeRead(edgeKey)
-- The pace's window: the headroom sr-exec measured widens it (edgeWindow).
s.window = edgeWindow(e, s, now)
local qps, _, burst, stopped = edgeLimits(limitsKey, s)
local why, untilMs = edgeBlocked(e, now, stopped)
if why then return { why, untilMs, now } end
if qps <= 0 then
  -- No limit (SRQ_UNLIMITED, benchmarks): no pace to share.
  local slots = {}
  for i = 1, n do slots[i] = now end
  return { 'ok', now, slots }
end

local rate = edgeRate(e, qps, now, s)
local b = math.max(1, math.min(burst, math.floor(rate)))
local P = rate - b + 1
local T = s.window / P
local weight = 1 + late / T
local need = n * weight
local classCap, othersCap, _, srqAt = shareCaps(s, cls, e, now, P)
if need > classCap + 1e-9 then return { 'over', math.floor(classCap) } end

-- The slots, from the pace as it is in memory: written only if granted.
local slots, restored = {}, false
local horizon = math.min(ahead, s.window)
for i = 1, n do
  -- The first within the horizon; the rest follow it, one spacing apart.
  local at, extra = edgePace(nil, e, qps, burst, now, i == 1 and horizon or math.huge, s)
  if not at then
    local first = now + horizon + extra
    return { 'rate', first, now, math.max(now + 1, first - s.window) }
  end
  restored = restored or extra
  slots[i] = at
  if late > 0 then e.tat = fmt3(tonumber(e.tat) + late) end
end

-- The limits, over every window that holds a new slot.
local held = shareHeld(slotsKey, slots[1] - s.window)
local sumAll, sumClass = 0, 0
for _, h in ipairs(held) do
  sumAll = sumAll + h[2]
  if h[3] == cls then sumClass = sumClass + h[2] end
end
-- When enough of the held slots (of class c, or all) have left the window
-- for `need` more: the first slot must be a window after the last to leave.
local function freed(c, excess)
  for _, h in ipairs(held) do
    if not c or h[3] == c then
      excess = excess - h[2]
      if excess <= 1e-9 then return h[1] + s.window end
    end
  end
  return nil
end
if sumClass + need > classCap + 1e-9 then
  return { 'share', freed(cls, sumClass + need - classCap), now }
end
if othersCap and sumAll + need > othersCap + 1e-9 then
  -- Room comes back as the others' slots leave the window, or all at once
  -- when srq stops asking (its reserve is lent then).
  local lent = srqAt + 2 * s.window
  local f = freed(nil, sumAll + need - othersCap)
  return { 'reserve', f and math.min(f, lent) or lent, now }
end

local seq = rcall('HINCRBY', edgeKey, 'rate_seq', n) - n
local w = fmt3(weight)
local add = {}
for i = 1, n do
  add[#add + 1] = digits(slots[i])
  add[#add + 1] = cls .. ':' .. digits(seq + i) .. ':' .. w
end
rcall('ZADD', slotsKey, unpack(add))
rcall('ZREMRANGEBYSCORE', slotsKey, '-inf', digits(now - 60000))
rcall('PEXPIRE', slotsKey, 120000)
edgePaceSave(edgeKey, e, restored)
return { 'ok', now, slots }
