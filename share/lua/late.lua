#!lua
--[[
  late - a call leaves later than its slot: hold the account's pace for that
  long too; and the headroom sr-exec measured, reported.

  The gate accounted the call at its slot, as if it left then. It may leave
  later: it must set up a new connection first (TCP, TLS), or the executor
  was late to send it. A late call followed a second later by calls on time
  would crowd that second at the carrier, so every slot not granted yet
  moves by the lateness, and the time the rate accounts for is never earlier
  than when a request really leaves. (The gate set tat past every granted
  slot, so moving tat moves exactly the calls after them.)

  The slots already granted do not move, so a machine that sends late keeps
  squeezing seconds; sr-exec measures how late its calls leave (the p99 over
  the last minute) and reports it here as the account's headroom (hr), which
  widens the pace's window (includes/edge.lua, edgeWindow). Several sr-exec
  share the account: a report replaces a smaller one, one older than a
  minute, or its own reporter's earlier one; otherwise the larger one stays
  until it is a minute old (its reporter refreshes it while it holds).

  Input:
    KEYS[1]  edge  account edge state (HASH)
    ARGV[1]  late      how much later than its slot the call leaves, ms (0: none)
    ARGV[2]  headroom  the headroom measured, ms (0..200), or '' (no report)
    ARGV[3]  who       who reports it (host:pid), with ARGV[2]
  Output:
    the account's new pace (tat, ms), or nil when it did not move
]]
--- @include "now"
local late, tat = tonumber(ARGV[1]) or 0, nil
if late > 0 then tat = redis.call('HINCRBYFLOAT', KEYS[1], 'tat', late) end
local hr = tonumber(ARGV[2] or '')
if hr then
  local now = serverNow()
  local h = redis.call('HMGET', KEYS[1], 'hr', 'hr_at', 'hr_by')
  local cur, at = tonumber(h[1]), tonumber(h[2]) or 0
  if not cur or hr >= cur or now - at > 60000 or h[3] == ARGV[3] then
    redis.call('HSET', KEYS[1], 'hr', string.format('%d', hr), 'hr_at', string.format('%d', now),
      'hr_by', ARGV[3])
  end
end
return tat
