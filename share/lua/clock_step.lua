#!lua
--[[
  clock_step - a forward step of the Redis server's clock (an NTP step),
  detected by a tool that compares Redis's clock with its own monotonic
  clock (src/lib/sr_clock.c), recorded in ONE account's edge.

  Every time the account's scripts wrote before the step is behind the
  clock after it by the step's size. Two of them matter at the carrier:
    a card's last call: its interval would open that much early. The step
      is appended to the edge's 'steps' (includes/clock.lua), and every
      check of an interval counts a last call below its 'at' that much
      later. 'at' is the latest a last call on the old clock can be: the
      step came at least 'lo' ms (its certain size) before now on the new
      clock, and a gate grants a slot at most 'ahead' ms past its now;
    the pace's tat: slots would start again at the stepped now while calls
      granted before the step are still held for their slots (two trains of
      calls in one second). tat moves on by the step, but never past one
      window beyond the horizon of granted slots (edgeClampTat's rule): by
      then every call granted before the step has left, whatever its size.
  Steps whose every interval is over (at + ms + interval < now) are dropped.

  Two processes may detect the same step, each against its own readings.
  A recorded step R is part of the caller's when the caller's last reading
  before its step (since) is below R.from + R.lo: R.from is the recorder's
  last reading before R, and a reading after R is at least R.from + R's
  size. The caller's step less those (their certain sizes: nothing is
  taken off that R may not have been) is recorded when it is over the
  caller's threshold; a step recorded twice only makes waits longer.

  The account's alert is raised once (cause 'clock_step:ACCOUNT',
  includes/alert.lua) and every recorded step audited ('clock:step').

  Input:
    KEYS[1]  edge         account edge state (HASH)
    KEYS[2]  alerts_open  open alerts (HASH cause -> alert id)
    KEYS[3]  alerts       alert stream
    KEYS[4]  audit        audit stream of the account
    ARGV[1]  settings   the account's settings (JSON: interval, window, audit_max)
    ARGV[2]  account    the account id
    ARGV[3]  hi         the step's size at most, ms (what a last call is moved by)
    ARGV[4]  lo         its size at least, ms (certain)
    ARGV[5]  since      Redis ms of the caller's last reading before the step
    ARGV[6]  ahead      how far ahead a gate grants slots, ms
    ARGV[7]  threshold  ms: a step smaller than this is not recorded
    ARGV[8]  who        who detected it (the tool, for the audit)
  Output:
    { ms recorded (0: already recorded by another), tat after }
]]
local rcall = redis.call
--- @include "now"
--- @include "alert"
local now = serverNow()
local edgeKey, openKey, alertKey, auditKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local s = cjson.decode(ARGV[1])
local account = ARGV[2]
local hi, lo, since = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ahead, threshold = tonumber(ARGV[6]), tonumber(ARGV[7])

-- The steps kept, and what of the caller's step they already hold.
local e = rcall('HMGET', edgeKey, 'steps', 'tat')
local kept = {}
for at, ms, rlo, from in string.gmatch(e[1] or '', '(%d+):(%d+):(%d+):(%d+)') do
  at, ms, rlo, from = tonumber(at), tonumber(ms), tonumber(rlo), tonumber(from)
  if since < from + rlo then
    hi, lo = hi - rlo, lo - ms
  end
  if at + ms + s.interval >= now then
    kept[#kept + 1] = digits(at) .. ':' .. digits(ms) .. ':' .. digits(rlo) .. ':' .. digits(from)
  end
end
local tat = tonumber(e[2])
if hi < threshold then
  return { 0, math.floor(tat or 0) }
end
lo = math.max(lo, 0)
kept[#kept + 1] = digits(now - lo + ahead + 1) .. ':' .. digits(hi) .. ':' .. digits(lo) .. ':' ..
  digits(since)
rcall('HSET', edgeKey, 'steps', table.concat(kept, ' '))
if tat then
  tat = math.max(tat, math.min(tat + hi, now + ahead + s.window))
  rcall('HSET', edgeKey, 'tat', string.format('%.3f', tat))
end
local detail = string.format("the Redis server's clock stepped forward by %d ms (at least %d): "
  .. "a card called before it waits that much longer for its interval, and the calls granted "
  .. "before it leave before any other", hi, lo)
alertOnce(openKey, alertKey, 'clock_step:' .. account, { 'card', '', 'alert', 'clock_step',
  'account', account, 'ms', digits(hi), 'detail', detail })
rcall('XADD', auditKey, 'MAXLEN', '~', digits(s.audit_max), '*', 'card', '', 'event', 'clock:step',
  'ms', digits(hi), 'ms_min', digits(lo), 'by', ARGV[8])
return { hi, math.floor(tat or 0) }
