--[[
  outcome - the account's side of a carrier's answer, the same for a
  result of sr-exec (confirm.lua) and of the direct path (direct_done.lua):
  the effective rate, lowered when the carrier refuses for rate (AIMD,
  edgeLower), and the breaker, which counts the answer's verdict (edgeResult),
  its changes alerted and audited. Needs includes/edge.lua.
]]

-- Whether an answer counts for the account's rate: every answer of the
-- carrier does; a call that never reached it does not (not sent, a login
-- refused, held back for Redis's replicas or a clock step).
local function outcomeReached(outcome, class)
  return not (outcome == 'retry' and (class == 'not_sent' or class == 'auth' or
    class == 'unreplicated' or class == 'clock_step'))
end

-- The effective rate after an answer (edgeLower tells the carrier's limit
-- from its noise by the share refused for rate); a lowering is audited
-- with audit(event, field, value, ...).
local function outcomeRate(edgeKey, e, qps, now, gatedAt, outcome, class, http, err, s, audit)
  local refused = outcome == 'retry' and (class == 'throttled' or class == 'too_frequent')
  local from, to = edgeLower(edgeKey, e, qps, now, gatedAt, refused, s)
  if from then
    audit('rate:lowered', 'qps_from', string.format('%.2f', from), 'qps_to',
      string.format('%.2f', to), 'http', http, 'error', err)
  end
end

-- What the breaker counts an answer as: 'fail' (unknown, not sent, login
-- refused) or 'ok'. (An answer about another card is an answer: the
-- carrier is up.)
local function outcomeVerdict(outcome, class)
  if (outcome == 'unknown' and class ~= 'mismatch') or
      (outcome == 'retry' and (class == 'not_sent' or class == 'auth')) then
    return 'fail'
  end
  return 'ok'
end

-- The breaker's count of an answer (edgeResult; why: said when it opens or
-- reopens; auth: a refused login, which opens it whatever the verdict),
-- and its change: opened, the account's alert raised with raise(cause,
-- fields); each change audited with audit(event, field, value, ...).
local function outcomeBreaker(edgeKey, openKey, e, id, verdict, now, s, why, auth, account, err, http,
    raise, audit)
  local change = edgeResult(edgeKey, e, id, verdict, now, s, why, auth)
  if change == 'opened' then
    raise('breaker:' .. account, { 'card', '', 'alert', 'breaker', 'account', account,
      'error', err, 'http', http, 'detail', 'calls to the account stopped until a probe succeeds' })
    audit('breaker:opened', 'why', why)
  elseif change == 'reopened' then
    audit('breaker:reopened', 'why', why)
  elseif change == 'closed' then
    redis.call('HDEL', openKey, 'breaker:' .. account)
    audit('breaker:closed', 'why', 'the probe call succeeded')
  end
end
