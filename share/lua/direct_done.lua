#!lua
--[[
  direct_done - the account's side of one direct-path call's answer (global
  switch off), as confirm.lua does it for the queue: the answer counts for the
  account's effective rate (AIMD: lowered when the share refused for rate is
  the carrier's limit, not its noise), the breaker counts the result
  (a half-open breaker's probe, direct_gate.lua's, closes it or reopens it),
  and a call the carrier did not apply (throttled, refused, not sent, auth)
  gives the card's interval back. The state the answer says the card is now
  in is recorded as the card's 'seen' (see enqueue.lua). A card with no
  command then goes back to sleep (idle.lua).

  Input:
    KEYS[1]  card:*       command hash of the card (last_call, prev_call)
    KEYS[2]  edge         account edge state (HASH)
    KEYS[3]  limits       account limits (HASH)
    KEYS[4]  audit        account audit stream
    KEYS[5]  alerts       alert stream
    KEYS[6]  alerts_open  open alerts (HASH)
    KEYS[7]  idle:*       the card's idle bucket
    KEYS[8]  wait:*       the card's wait bucket
    ARGV[1]   settings   the account's settings (JSON)
    ARGV[2]   outcome    ok already retry fail unknown
    ARGV[3]   class      class of a retry, or ''
    ARGV[4]   granted    when its slot was granted (ms)
    ARGV[5]   error      error text
    ARGV[6]   http       http status
    ARGV[7]   account    the account id
    ARGV[8]   kind       call | query | resend
    ARGV[9]   seen       the card's state the answer shows (stopped|active), or ''
    ARGV[10]  prev_call  the card's last call before this one ('' if none), as
              direct_gate.lua answered
    ARGV[11]  slot       this call's slot (ms)
    ARGV[12]  request    the request's id, as direct_gate.lua was given it
  Output:
    'ok'
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
--- @include "alert"
--- @include "outcome"
--- @include "idle"
local now = serverNow()
local key, edgeKey, auditKey, alertKey, openKey = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6]
local s = cjson.decode(ARGV[1])
local bucket = KEYS[7]
cardAwake(key, bucket, KEYS[8]) -- what it writes below lands on the card's whole state
local outcome, class, gatedAt, err, http, account, kind =
  ARGV[2], ARGV[3], tonumber(ARGV[4]) or 0, ARGV[5], ARGV[6], ARGV[7], ARGV[8]

local e = edgeRead(edgeKey)
local qps = edgeLimits(KEYS[3], s)
local function audit(event, ...)
  rcall('XADD', auditKey, 'MAXLEN', '~', s.audit_max, '*', 'card', '', 'event', event, ...)
end
local function raise(cause, fields) return alertOnce(openKey, alertKey, cause, fields) end
if outcomeReached(outcome, class) then
  outcomeRate(edgeKey, e, qps, now, gatedAt, outcome, class, http, err, s, audit)
end
outcomeBreaker(edgeKey, openKey, e, ARGV[12], outcomeVerdict(outcome, class), now, s, err, class == 'auth',
  account, err, http, raise, audit)
edgeWindowSave(edgeKey, e)
if outcome == 'retry' and class ~= 'too_frequent' and class ~= '' and kind == 'call' then
  -- Not applied, and the carrier said so: no change, the interval is given back.
  -- Unless a call went since (the card's last call is not this one's): its
  -- interval counts from that one. The last call before this one comes
  -- from the gate's answer, not the hash: a sleep in between drops
  -- prev_call there.
  if tonumber(rcall('HGET', key, 'last_call')) == tonumber(ARGV[11]) then
    if ARGV[10] ~= '' then rcall('HSET', key, 'last_call', ARGV[10]) else rcall('HDEL', key, 'last_call') end
  end
end
if ARGV[9] ~= '' then rcall('HSET', key, 'seen', ARGV[9], 'seen_ms', now) end
-- A card with no command goes back to sleep (direct_version.lua woke it).
cardSleepIfIdle(key, bucket)
return 'ok'
