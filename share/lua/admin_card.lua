#!lua
--[[
  admin_card - an operator's change to ONE card's command, read and written
  in one atomic step with its audit entry. (Read in C, then written in a
  MULTI, a concurrent enqueue could slip between the two: the card would sit
  in two queues and the audit would name the wrong versions.)

    retry    unfreeze: failures forgotten, the claim dropped, due now in its
             priority's queue
    freeze   out of every queue, kept in the frozen set until a retry; who
             and why are kept on the command too (sr-admin why says them)
    drop     cancel the command (a new version, as a cancelling enqueue
             does); its fields go, its version and last call stay, its
             card's alerts are resolved

  Input:
    KEYS[1]   card:*            command hash of the card
    KEYS[2]   stop_resume:high  queue high
    KEYS[3]   stop_resume       queue normal
    KEYS[4]   stop_resume:bulk  queue bulk
    KEYS[5]   frozen            frozen commands (ZSET)
    KEYS[6]   confirming        confirming commands (SET)
    KEYS[7]   audit             audit stream
    KEYS[8]   alerts_open       open alerts (HASH)
    KEYS[9]   idle:*            the card's idle bucket (a dropped command's card sleeps there)
    KEYS[10]  wait:*            the card's wait bucket (a command waiting packed: idle.lua)
    ARGV[1]  operation
    ARGV[2]  card
    ARGV[3]  who
    ARGV[4]  why
    ARGV[5]  audit_max  the audit stream's cap
  Output:
    { action, version after } or an error reply 'no command' (the card has
    nothing queued, frozen or confirming to change)
]]
local rcall = redis.call
--- @include "now"
--- @include "card"
--- @include "version"
local now = serverNow()
local key = KEYS[1]
local queues = { KEYS[2], KEYS[3], KEYS[4] }
local frozenKey, confirmingKey, auditKey, openKey, bucket = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local op, card, who, why, maxlen = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

cardUnpackWaiting(key, bucket, KEYS[10]) -- changed in its hash
local c = rcall('HMGET', key, 'action', 'ver', 'prio')
local action, ver, prio = c[1], tonumber(c[2]) or 0, tonumber(c[3]) or 1
if not action then return redis.error_reply('no command') end
if not versionWhole(c[2]) then ver = versionRecover(key) end -- a hash damaged by hand
local after = ver

if op == 'retry' then
  rcall('HDEL', key, 'frozen', 'fails', 'first_fail', 'last_error', 'last_http', 'claim', 'lease_until',
    'frozen_who', 'frozen_why')
  rcall('ZREM', frozenKey, card)
  for q = 1, 3 do rcall('ZREM', queues[q], card) end
  rcall('ZADD', queues[(prio % 3) + 1], now, card)
  rcall('HDEL', openKey, 'failures:' .. card, 'frozen:' .. card, 'permanent:' .. card)
elseif op == 'freeze' then
  rcall('HSET', key, 'frozen', 1, 'frozen_who', who, 'frozen_why', why)
  for q = 1, 3 do rcall('ZREM', queues[q], card) end
  laneDrop(queues[2], card, rcall)
  rcall('ZADD', frozenKey, now, card)
elseif op == 'drop' then
  after = cardCancel(key, bucket, queues, card, frozenKey, confirmingKey, openKey)
else
  return redis.error_reply('unknown operation ' .. op)
end
rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', card, 'ver_before', ver,
  'ver_after', after, 'event', 'admin:' .. op, 'action', action, 'who', who, 'why', why)
return { action, after }
