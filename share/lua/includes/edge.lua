--[[
  edge - the account's side of every gate, where srq meets the carrier:
  its limits, a pause, its breaker, and the pace at which calls may leave.
  Included by gate, direct_gate, claim, confirm and stat.

  The account's edge state is one HASH (P:carrier:{c}:edge):
    tat                      the pace (GCRA): the earliest time the next call
                             may be accounted at, ms (fractional)
    eff eff_at low_at        while the carrier refuses calls for rate, the
                             effective rate (AIMD, calls per second), when it
                             was last computed, and when it was lowered;
                             absent: the configured rate
    ref_at                   the last refusal for rate, while lowered
    rq_n rq_ref              answers at the configured rate, counted in
                             blocks, and how many of them were refused for
                             rate (edgeLower: the carrier's noise or its limit)
    hr hr_at hr_by           the headroom sr-exec measured (its calls' lateness
                             at send, p99 over a minute, ms), when and by whom
                             it was reported (late.lua); edgeWindow widens the
                             window by it
    pause_until pause_since pause_who pause_why     a pause (sr-admin pause)
    brk_until brk_since brk_why brk_cool brk_manual the breaker: open until
                             brk_until, then half-open (one probe call)
    brk_probe brk_probe_until                       the probe in flight
    win_start win_n win_fail the breaker's window: results and failures
    srq_at                   when srq's own calls last asked for a slot (gate,
                             direct_gate): while they asked within two windows, the
                             other callers of the account (rate_take.lua) leave
                             srq's reserve free
    rate_seq                 the other callers' slots, numbered (rate_take.lua)
    steps                    forward steps of the Redis clock (includes/clock.lua,
                             clock_step.lua)
    clk:HOST                 what the last sr-exec on HOST knew of that clock
                             (src/lib/sr_clock.c)
  The settings s (a table decoded from the caller's JSON) carry the account's
  resolved configuration: profile, then environment defaults. The operator's
  per-account limits (P:carrier:{c}:limits: qps, running, burst) override
  them.
]]
local function edgeRead(key)
  local flat = redis.call('HGETALL', key)
  local e = {}
  for i = 1, #flat, 2 do e[flat[i]] = flat[i + 1] end
  return e
end

local function fmt3(x) return string.format('%.3f', x) end

-- The account's limits: qps, max running, burst, and whether calls are
-- stopped by a per-account limit below 1 (a limit of 0 never means "no
-- limit"; only the environment's default may be 0 = unlimited, for
-- benchmarks, and only when the operator asked for it explicitly).
local function edgeLimits(limitsKey, s)
  local l = redis.call('HMGET', limitsKey, 'qps', 'running', 'burst')
  local qps, running = tonumber(l[1]), tonumber(l[2])
  local stopped = (qps and qps < 1) or (running and running < 1)
  return qps or s.qps, running or s.running, tonumber(l[3]) or s.burst, stopped
end

-- Why the account takes no call now, and until when (ms): 'paused' (by an
-- operator, or a per-account limit of 0) or 'breaker' (open). nil when calls
-- may go; a half-open breaker lets one probe through (edgeProbe).
local function edgeBlocked(e, now, stopped)
  local p = tonumber(e.pause_until)
  if p and p > now then return 'paused', p end
  if stopped then return 'paused', now + 60000 end
  local b = tonumber(e.brk_until)
  if b and b > now then return 'breaker', b end
  return nil
end

-- A half-open breaker (its cool-down over) lets exactly one probe call
-- through; the probe's result closes or reopens it (edgeResult). A probe
-- whose result never came (its pipeline died) is replaced after its lease.
-- Returns true if `id` may call now.
local function edgeProbe(key, e, id, now, leaseMs)
  if not e.brk_until then return true end
  local probe, probeUntil = e.brk_probe, tonumber(e.brk_probe_until) or 0
  if probe and probe ~= id and probeUntil > now then return false end
  redis.call('HSET', key, 'brk_probe', id, 'brk_probe_until', now + leaseMs)
  e.brk_probe, e.brk_probe_until = id, now + leaseMs
  return true
end

-- The effective rate, calls per second: the configured qps, or while the
-- carrier has been refusing calls for rate, a lowered rate growing back by
-- s.aimd_inc calls/s every second (a fifth of that for s.aimd_memory ms
-- after the last lowering: probing gently near the limit just found), never
-- above the configured qps.
local function edgeRate(e, qps, now, s)
  local eff = tonumber(e.eff)
  if not eff or qps <= 0 then return qps end
  local dt = math.max(0, now - (tonumber(e.eff_at) or now)) / 1000
  local inc = s.aimd_inc
  if now - (tonumber(e.low_at) or 0) < s.aimd_memory then inc = inc / 5 end
  eff = eff + inc * dt
  if eff >= qps then return qps end
  return eff
end

-- The window the pace spreads qps calls over: one second plus headroom for
-- the jitter between srq and the carrier. The configured headroom
-- (s.window - 1000) is the floor; when sr-exec measured its calls leaving
-- later than their slots (hr: the p99 of that lateness over the last
-- minute, reported by late.lua), the headroom is that, up to 200 ms: on a
-- loaded machine a call sent late next to one sent on time would squeeze
-- the carrier's second, so the window widens instead. A report older than a
-- minute (no sr-exec sending since) is not used.
local EDGE_HR_MAX, EDGE_HR_TTL = 200, 60000
local function edgeWindow(e, s, now)
  local hr, at = tonumber(e.hr), tonumber(e.hr_at)
  if not hr or not at or now - at > EDGE_HR_TTL then return s.window end
  return math.max(s.window, 1000 + math.min(hr, EDGE_HR_MAX))
end

-- The pace after a change of the limits (or of the effective rate) can
-- hold tat far ahead in the old spacing. A wait is never longer than one
-- window past the horizon of granted slots: by then every call of the old
-- spacing has left, so a slot there is safe whatever the spacing was.
local function edgeClampTat(tat, now, ahead, b, T, s)
  local cap = now + ahead + s.window + (b - 1) * T
  if tat > cap then return cap end
  return tat
end

-- Take a slot for one call (GCRA). Calls leave evenly, one every
-- window / (rate - burst + 1) ms (window: one second plus headroom for the
-- jitter between srq and the carrier's clock), up to `burst` at once after a
-- quiet spell; so no second at the carrier holds more than qps arrivals. A
-- slot up to `ahead` ms away is granted, and the caller holds the call until
-- then. (A call that must set up a new connection leaves later than its
-- slot, or is sent late: late.lua moves the pace for that.)
-- Returns slot_ms, restored (true when the effective rate just came back
-- to the configured one); or nil, wait_ms. With key nil it changes e only
-- (a batch writes it once, edgePaceSave).
local function edgePace(key, e, qps, burst, now, ahead, s)
  if qps <= 0 then return now, false end
  local rate = edgeRate(e, qps, now, s)
  local b = math.max(1, math.min(burst, math.floor(rate)))
  local T = s.window / (rate - b + 1)
  local tat = edgeClampTat(tonumber(e.tat) or 0, now, ahead, b, T, s)
  local at = math.max(tat - (b - 1) * T, now)
  if at - now > ahead then return nil, math.ceil(at - now - ahead) end
  e.tat = fmt3(math.max(tat, at) + T)
  if key then redis.call('HSET', key, 'tat', e.tat) end
  if e.eff then
    if rate >= qps then
      if key then redis.call('HDEL', key, 'eff', 'eff_at', 'low_at') end
      e.eff, e.eff_at, e.low_at = nil, nil, nil
      return math.ceil(at), true
    end
    e.eff, e.eff_at = fmt3(rate), now
    if key then redis.call('HSET', key, 'eff', e.eff, 'eff_at', now) end
  end
  return math.ceil(at), false
end

-- What edgePace(nil, e, ...) changed in memory, written once for a batch:
-- the pace, and the effective rate (gone once restored); with srqAt (srq's
-- own calls: the gate), when srq last asked for a slot, in the same write.
local function edgePaceSave(key, e, restored, srqAt)
  if restored then redis.call('HDEL', key, 'eff', 'eff_at', 'low_at') end
  local set = { 'tat', e.tat }
  if e.eff then
    set[3], set[4], set[5], set[6] = 'eff', e.eff, 'eff_at', e.eff_at
  end
  if srqAt then
    set[#set + 1] = 'srq_at'; set[#set + 1] = srqAt
  end
  redis.call('HSET', key, unpack(set))
end

-- srq's own calls asked for a slot now (granted or not): for two windows
-- the account's other callers leave srq's reserve free (rate_take.lua).
-- Recorded on a refusal too: calls held back by the pace are work waiting.
local function edgeSrqAsked(key, now)
  redis.call('HSET', key, 'srq_at', string.format('%d', now))
end

--- @include "edge_answer"
