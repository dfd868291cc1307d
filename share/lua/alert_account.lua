#!lua
--[[
  alert_account - raise, resolve or acknowledge ONE account-level alert,
  once per cause until resolved. The check, the alert and its open entry
  are one step: a crash can not leave an entry that says "open" for an
  alert that was never raised, nor an acknowledgement without its audit.

    raise    sr-stat: amplification or conflicts over its threshold
    resolve  sr-stat: back under it
    ack      sr-admin alerts --ack ID: the operator has seen it; the cause
             is closed (a new alert is raised if it happens again), audited
             in the account's stream with who and why
    ack_all  sr-admin alerts --ack --carrier A [--type T]: every open alert
             of the account (of kind T), each closed and audited as by ack,
             in one step

  Input:
    KEYS[1]  alerts_open  open alerts (HASH cause -> alert id)
    KEYS[2]  alerts       alert stream
    KEYS[3]  audit        account audit stream
    ARGV[1]  operation
    ARGV[2]  account
    ARGV[3..] args        the operation's:
      raise:   cause ('kind:account'), kind, value, threshold
      resolve: cause
      ack:     alert id, who, why, the audit stream's cap
      ack_all: kind ('' every kind), who, why, the audit stream's cap
  Output:
    raise: the new alert's id, or 1 if it was already open; resolve: 0;
    ack: the cause acknowledged, or false if no open alert has that id;
    ack_all: { cause, id, cause, id, ... } of those acknowledged
]]
--- @include "alert"
local openKey, alertKey, auditKey = KEYS[1], KEYS[2], KEYS[3]
local op, account = ARGV[1], ARGV[2]

if op == 'resolve' then
  redis.call('HDEL', openKey, ARGV[3])
  return 0
elseif op == 'raise' then
  return alertOnce(openKey, alertKey, ARGV[3], { 'alert', ARGV[4], 'account', account,
    'value', ARGV[5], 'threshold', ARGV[6] }) or 1
elseif op == 'ack' or op == 'ack_all' then
  -- A cause is 'kind:subject' (failures:CARD, breaker:ACCOUNT).
  local open, acked, prefix = redis.call('HGETALL', openKey), {}, ARGV[3] .. ':'
  for i = 1, #open, 2 do
    local cause, id = open[i], open[i + 1]
    if (op == 'ack' and id == ARGV[3]) or
        (op == 'ack_all' and (ARGV[3] == '' or string.sub(cause, 1, #prefix) == prefix)) then
      redis.call('HDEL', openKey, cause)
      redis.call('XADD', auditKey, 'MAXLEN', '~', ARGV[6], '*', 'card', '', 'event', 'admin:ack',
        'alert', id, 'cause', cause, 'who', ARGV[4], 'why', ARGV[5])
      if op == 'ack' then return cause end
      acked[#acked + 1] = cause
      acked[#acked + 1] = id
    end
  end
  if op == 'ack' then return false end
  return acked
end
return redis.error_reply('unknown operation ' .. op)
