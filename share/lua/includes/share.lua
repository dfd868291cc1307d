--[[
  share - how the account's pace is shared between srq's own calls and the
  other callers of the same API account (usage and status pollers: sr-rate,
  rate_take.lua). Included by rate_take and rate_show.

  The other callers' slots are one ZSET (P:carrier:{c}:rate:slots): a member
  CLASS:SEQ:WEIGHT per slot, scored by the slot's time (ms, Redis clock),
  kept a minute. WEIGHT is what the slot costs the pace, in slots: 1, plus
  the lateness its caller declared (a call that reaches the carrier L ms
  after its slot holds the pace L ms longer).

  The limits, in slots of the pace over one window (s.window: one second
  plus headroom), P being the slots a window holds (rate - burst + 1: the
  pace's spacing is window / P):
    srq's reserve  while srq is active (it asked for a slot within the last
                   two windows: edge field srq_at), the other classes
                   together hold at most P - s.reserve; when it is not,
                   its reserve is lent and they may hold every slot
    a class's share  at most max(1, share * P) (s.share[class], or
                   s.share['*'], or 1)
]]

-- The share settings of class cls: its cap per window, and the others'
-- (nil while srq's reserve is lent).
local function shareCaps(s, cls, e, now, P)
  local shares = s.share or {}
  local share = tonumber(shares[cls]) or tonumber(shares['*']) or 1
  local classCap = math.max(1, share * P)
  local srqAt = tonumber(e.srq_at)
  local active = srqAt ~= nil and srqAt > now - 2 * s.window
  local othersCap = nil
  if active then othersCap = P - (tonumber(s.reserve) or 0) end
  return classCap, othersCap, active, srqAt
end

-- The slots held from `from` (exclusive) on, as { score, weight, class },
-- oldest first.
local function shareHeld(key, from)
  local flat = redis.call('ZRANGEBYSCORE', key, '(' .. string.format('%d', from), '+inf', 'WITHSCORES')
  local held = {}
  for i = 1, #flat, 2 do
    local cls, w = string.match(flat[i], '^([a-z0-9_]+):%d+:([%d.]+)$')
    if cls then held[#held + 1] = { tonumber(flat[i + 1]), tonumber(w), cls } end
  end
  return held
end
