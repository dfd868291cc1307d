#!lua
--[[
  rate_show - who uses the account's pace: srq's own calls and every other
  caller's class (rate_take.lua) over the last minute, and the limits that
  share it now. Reads only.

  Input:
    KEYS[1]  edge        the account's edge state (HASH P:carrier:{c}:edge)
    KEYS[2]  limits      the account's limits (HASH P:carrier:{c}:limits)
    KEYS[3]  rate:slots  the other callers' slots (ZSET P:carrier:{c}:rate:slots)
    ARGV[1]  settings  the account's settings (JSON, as rate_take.lua takes them)
    ARGV[2]  stats     the account's stats prefix (includes/stats.lua): srq's own calls
             and queries are counted there per minute
  Output: one JSON text:
    { now, window_ms, qps, qps_effective, burst, slots_per_window,
      reserve_qps, srq_active (asked for a slot within two windows),
      srq_asked_at (ms or null), paused_or_breaker (or null),
      srq: { calls, since } (this minute and the one before, from the stats),
      classes: { CLASS: { slots, weight, max_share, cap } } (slots taken from
      now - 60 s on, later ones already granted included; weight: what they
      cost the pace, lateness included; cap: per window),
      others_cap (per window, while srq is active; null while its reserve is
      lent) }
]]
--- @include "now"
--- @include "edge"
--- @include "share"
local now = serverNow()
local s = cjson.decode(ARGV[1])
local e = edgeRead(KEYS[1])
-- The pace's window: the headroom sr-exec measured widens it (edgeWindow).
s.window = edgeWindow(e, s, now)
local qps, _, burst, stopped = edgeLimits(KEYS[2], s)
local held = edgeBlocked(e, now, stopped)
local rate = qps > 0 and edgeRate(e, qps, now, s) or 0
local b = math.max(1, math.min(burst, math.floor(rate)))
local P = math.max(0, rate - b + 1)
local _, othersCap, active, srqAt = shareCaps(s, '*', e, now, P)

-- srq's calls: the stats' minutes are calendar minutes (this one and the
-- last); protected reads, as the stats are written (includes/stats.lua).
local minute = math.floor(now / 60000)
local calls = 0
for m = minute - 1, minute do
  local v = redis.pcall('HMGET', ARGV[2] .. m, 'calls', 'queries')
  if type(v) == 'table' and not v.err then
    calls = calls + (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0)
  end
end

local classes = {}
for _, h in ipairs(shareHeld(KEYS[3], now - 60000)) do
  local c = classes[h[3]]
  if not c then
    local cap = shareCaps(s, h[3], e, now, P)
    local shares = s.share or {}
    c = { slots = 0, weight = 0, max_share = tonumber(shares[h[3]]) or tonumber(shares['*']) or 1,
      cap = tonumber(fmt3(cap)) }
    classes[h[3]] = c
  end
  c.slots = c.slots + 1
  c.weight = c.weight + h[2]
end
for _, c in pairs(classes) do c.weight = tonumber(fmt3(c.weight)) end
-- An empty table would be encoded as an array.
local out = { now = now, window_ms = s.window, qps = qps, qps_effective = tonumber(fmt3(rate)),
  burst = b, slots_per_window = tonumber(fmt3(P)), reserve_qps = tonumber(s.reserve) or 0,
  srq_active = active, srq_asked_at = srqAt or cjson.null, paused_or_breaker = held or cjson.null,
  srq = { calls = calls, since = (minute - 1) * 60000 },
  others_cap = othersCap and tonumber(fmt3(math.max(0, othersCap))) or cjson.null }
if next(classes) then out.classes = classes end
return cjson.encode(out)
