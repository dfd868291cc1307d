#!lua
--[[
  admin_account - an operator's change to ONE account, atomic with its audit
  entry (in the account's audit stream, with who and why).

    limits   set per-account limits: ARGV[6..] field, value pairs (qps,
             running, burst; each at least 1: a limit of 0 would mean "no
             limit", so pausing is its own operation)
    pause    no call to the account until ARGV[6] (ms on the Redis clock; '':
             until resumed); its commands stay queued, untouched
    resume   end a pause
    open     open the breaker by hand: no call, no probe, until closed
    close    close the breaker (by hand, or after a fix): calls go again

  Input:
    KEYS[1]  limits       account limits (HASH)
    KEYS[2]  edge         account edge state (HASH)
    KEYS[3]  audit        account audit stream
    KEYS[4]  alerts_open  open alerts (HASH cause -> id)
    ARGV[1]  operation
    ARGV[2]  account
    ARGV[3]  who
    ARGV[4]  why
    ARGV[5]  audit_max    the audit stream's cap
    ARGV[6..] args        the operation's arguments
  Output:
    'ok'; 'unchanged' when the account already is as asked (its limits
    those values, paused until then, not paused, its breaker opened by hand
    or closed): nothing written, nothing audited; or an error reply saying
    what was refused
]]
local rcall = redis.call
--- @include "now"
local now = serverNow()
local limitsKey, edgeKey, auditKey, openKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, account, who, why = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local entry = { 'card', '', 'event', 'admin:' .. op, 'who', who, 'why', why }
local forever = 253402300799000 -- 9999-12-31: "until resumed"

if op == 'limits' then
  local same = true
  for i = 6, #ARGV, 2 do
    local f, v = ARGV[i], tonumber(ARGV[i + 1])
    if (f ~= 'qps' and f ~= 'running' and f ~= 'burst') or not v or v < 1 or v ~= math.floor(v) then
      return redis.error_reply('limits: ' .. f .. '=' .. ARGV[i + 1] .. ' is not a whole number of at least 1')
    end
    same = same and tonumber(rcall('HGET', limitsKey, f)) == v
  end
  if same then return 'unchanged' end
  for i = 6, #ARGV, 2 do
    rcall('HSET', limitsKey, ARGV[i], ARGV[i + 1])
    entry[#entry + 1] = ARGV[i]
    entry[#entry + 1] = ARGV[i + 1]
  end
elseif op == 'pause' then
  local untilMs = ARGV[6] == '' and forever or tonumber(ARGV[6])
  if not untilMs or untilMs <= now then return redis.error_reply('pause: --until is in the past') end
  if tonumber(rcall('HGET', edgeKey, 'pause_until')) == untilMs then return 'unchanged' end
  rcall('HSET', edgeKey, 'pause_until', untilMs, 'pause_since', now, 'pause_who', who,
    'pause_why', why)
  entry[#entry + 1] = 'until'
  entry[#entry + 1] = untilMs == forever and 'resumed' or untilMs
elseif op == 'resume' then
  -- A pause that ended by itself is no pause: its fields go, unaudited.
  local paused = (tonumber(rcall('HGET', edgeKey, 'pause_until')) or 0) > now
  rcall('HDEL', edgeKey, 'pause_until', 'pause_since', 'pause_who', 'pause_why')
  if not paused then return 'unchanged' end
elseif op == 'open' then
  if rcall('HGET', edgeKey, 'brk_manual') then return 'unchanged' end
  rcall('HSET', edgeKey, 'brk_until', forever, 'brk_since', now, 'brk_manual', 1,
    'brk_why', 'opened by ' .. who .. ': ' .. why)
  rcall('HDEL', edgeKey, 'brk_probe', 'brk_probe_until')
elseif op == 'close' then
  if not rcall('HGET', edgeKey, 'brk_until') then return 'unchanged' end
  rcall('HDEL', edgeKey, 'brk_until', 'brk_since', 'brk_why', 'brk_cool', 'brk_probe',
    'brk_probe_until', 'brk_manual', 'win_start', 'win_n', 'win_fail')
  rcall('HDEL', openKey, 'breaker:' .. account)
else
  return redis.error_reply('unknown operation ' .. op)
end
rcall('XADD', auditKey, 'MAXLEN', '~', ARGV[5], '*', unpack(entry))
return 'ok'
