--[[
  confirm - apply one result of sr-exec to the card's command, atomically.

  Version compare first: a result for an old version never touches the newer
  command; it only releases its own claim and puts the newer command back at
  its due time ("stale"). For the current version:
    ok / already / superseded, or a query that observed the target state:
        the command is finished and removed; the version and last call stay.
    query that observed the other state: the call did not happen; re-call
        after the interval ("requeued").
    unknown (the call may have happened): confirming; a status query decides.
    retry (not executed): exponential backoff with jitter, never before the
        card's interval, nor before Retry-After.
    fail (permanent rejection): alert and freeze at once.
    blocked by the interval: back to the queue at the interval's end.
  Consecutive failures raise one alert at ARGV alert_after and freeze the
  command at ARGV freeze_after (taken out of the queues into the frozen set).
  Every transition is appended to the audit stream in the same script.

  Input:
    KEYS[1]     command hash of the card
    KEYS[2..4]  queues high, normal, bulk
    KEYS[5]     frozen commands (ZSET card -> ms)
    KEYS[6]     running claims (ZSET token -> lease expiry)
    KEYS[7]     audit stream       KEYS[8] alert stream
    KEYS[9]     confirming commands (SET card)
    KEYS[10]    flapping cards (ZSET card -> last direction change ms)
    KEYS[11]    open alerts (HASH cause -> alert id): one alert per cause until
                acknowledged (sr-admin alerts --ack) or resolved (the command finishes)
    ARGV[1] card      ARGV[2] token      ARGV[3] version    ARGV[4] kind (call|query)
    ARGV[5] outcome   ARGV[6] http       ARGV[7] error      ARGV[8] observed
    ARGV[9] retry_after ms               ARGV[10] min interval ms
    ARGV[11] alert after N failures      ARGV[12] freeze after N failures
    ARGV[13] audit cap                   ARGV[14] jitter in [0,1000)
    ARGV[15] confirm delay ms (wait before the status query of an unknown result)
    ARGV[16] blocked reason (interval|lost|rate) for outcome blocked
    ARGV[17] stats bucket prefix (a HASH per minute, kept 2 h: out_<outcome> of calls,
             query_<outcome> of queries,
             finishes, conflicts)
  Output:
    { state, version now }
    state: done | requeued | confirming | alerted | frozen | stale
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1]
local queues = { KEYS[2], KEYS[3], KEYS[4] }
local frozenKey, runningKey, auditKey, alertKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local card, token, ver, kind, outcome = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local http, err, observed = ARGV[6], ARGV[7], ARGV[8]
local retryAfter, interval = tonumber(ARGV[9]) or 0, tonumber(ARGV[10])
local alertAfter, freezeAfter, maxlen = tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13]
local jitter, confirmDelay, blockedWhy = tonumber(ARGV[14]), tonumber(ARGV[15]), ARGV[16]
local confirmingKey, flappingKey, openKey = KEYS[9], KEYS[10], KEYS[11]
local bucket = ARGV[17] .. math.floor(now / 60000)

local h = rcall('HMGET', key, 'action', 'ver', 'claim', 'fails', 'last_call', 'prio',
  'reason', 'scene', 'source', 'called', 'first_fail', 'last_dir', 'dir_changes')
local action, curVer, claim = h[1], h[2], h[3]
local fails, lastCall, prio = tonumber(h[4]) or 0, tonumber(h[5]) or 0, tonumber(h[6]) or 1
local mine = claim == token

rcall('ZREM', runningKey, token)
rcall('HINCRBY', bucket, (kind == 'query' and 'query_' or 'out_') .. outcome, 1)
rcall('HINCRBY', bucket, 'finishes', 1)
rcall('EXPIRE', bucket, 7200)

-- One alert per cause until it is acknowledged or resolved: no storms.
local function alert(kindOf, fails, extra)
  local cause = kindOf .. ':' .. card
  if rcall('HEXISTS', openKey, cause) == 1 then return end
  local id = rcall('XADD', alertKey, 'MAXLEN', '~', 10000, '*', 'card', card, 'ver', curVer or ver,
    'alert', kindOf, 'action', action or '', 'fails', fails or 0, 'error', err, 'http', http,
    'detail', extra or '')
  rcall('HSET', openKey, cause, id)
end
local function resolveAlerts()
  rcall('HDEL', openKey, 'failures:' .. card, 'frozen:' .. card, 'permanent:' .. card)
end

local function audit(state, vAfter)
  rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', card, 'ver_before', ver,
    'ver_after', vAfter or curVer or ver, 'event', kind .. ':' .. outcome, 'state', state,
    'action', action or '', 'reason', h[7] or '', 'scene', h[8] or '', 'source', h[9] or '',
    'http', http, 'error', err)
end
local function release()
  -- Drop our claim; keep 'called' only if another claim's call is pending.
  rcall('HDEL', key, 'claim', 'lease_until')
  if h[10] == token then rcall('HDEL', key, 'called') end
end
local function requeue(due)
  release()
  rcall('ZADD', queues[prio + 1], due, card)
end
local function afterInterval(due)
  if lastCall + interval > due then return lastCall + interval end
  return due
end

if not action then
  return { 'stale', tonumber(curVer) or 0 } -- finished or cancelled meanwhile
end
if curVer ~= ver then
  rcall('HINCRBY', bucket, 'conflicts', 1) -- a newer version was found
  if mine then requeue(afterInterval(now)) end
  audit('stale')
  return { 'stale', tonumber(curVer) }
end

local target = action == 'stop' and 'stopped' or 'active'
local finished = outcome == 'ok' or outcome == 'already' or
  (kind == 'query' and outcome == 'ok' and observed == target)
if kind == 'query' and outcome == 'ok' and observed ~= target then finished = false end
if outcome == 'superseded' and mine then finished = true end

if not mine and not finished then
  audit('stale') -- our lease was lost; the current holder decides
  return { 'stale', tonumber(curVer) }
end

if finished then
  rcall('HDEL', key, 'action', 'reason', 'scene', 'source', 'prio', 'fails', 'first_fail',
    'last_error', 'confirming', 'frozen', 'claim', 'lease_until', 'attempt', 'called')
  for q = 1, 3 do rcall('ZREM', queues[q], card) end
  rcall('SREM', confirmingKey, card)
  resolveAlerts()
  -- Flapping: the executed direction changed 3 or more times within an hour.
  if outcome == 'ok' or (kind == 'query' and observed == target) then
    if h[12] and h[12] ~= action then
      local kept = {}
      for t in string.gmatch(h[13] or '', '%d+') do
        if tonumber(t) > now - 3600000 then kept[#kept + 1] = t end
      end
      kept[#kept + 1] = tostring(now)
      rcall('HSET', key, 'dir_changes', table.concat(kept, ' '))
      if #kept >= 3 then
        rcall('ZADD', flappingKey, now, card)
        alert('flapping', 0, #kept .. ' direction changes in an hour')
      end
    end
    rcall('HSET', key, 'last_dir', action)
  end
  rcall('ZREMRANGEBYSCORE', flappingKey, '-inf', now - 3600000)
  audit('done')
  return { 'done', tonumber(curVer) }
end

if kind == 'query' and outcome == 'ok' then
  -- The card is not in the target state: the unknown call did not apply.
  rcall('HSET', key, 'confirming', 0)
  rcall('SREM', confirmingKey, card)
  requeue(afterInterval(now))
  audit('requeued')
  return { 'requeued', tonumber(curVer) }
end

if outcome == 'blocked' then
  if blockedWhy == 'interval' then
    requeue(afterInterval(now))
  else
    requeue(now + math.max(retryAfter, 1))
  end
  audit('requeued')
  return { 'requeued', tonumber(curVer) }
end

-- unknown, retry, fail: a failure of this command.
fails = fails + 1
rcall('HSET', key, 'fails', fails, 'last_error', (http ~= '' and http .. ' ' or '') .. err)
if not h[11] then rcall('HSET', key, 'first_fail', now) end


if outcome == 'fail' or fails >= freezeAfter then
  release()
  rcall('HSET', key, 'frozen', 1)
  for q = 1, 3 do rcall('ZREM', queues[q], card) end
  rcall('ZADD', frozenKey, now, card)
  rcall('SREM', confirmingKey, card)
  alert(outcome == 'fail' and 'permanent' or 'frozen', fails)
  audit('frozen')
  return { 'frozen', tonumber(curVer) }
end

local state
if outcome == 'unknown' and kind == 'call' then
  rcall('HSET', key, 'confirming', 1)
  rcall('SADD', confirmingKey, card)
  requeue(now + confirmDelay)
  state = 'confirming'
else
  -- Exponential backoff from 1 s, capped at 15 min, with jitter in [50%, 100%].
  local backoff = math.min(1000 * 2 ^ (fails - 1), 900000)
  backoff = math.floor(backoff * (0.5 + jitter / 2000))
  local due = now + math.max(backoff, retryAfter)
  if kind == 'call' then due = afterInterval(due) end
  requeue(due)
  state = 'requeued'
end
if fails == alertAfter then
  alert('failures', fails)
  state = 'alerted'
end
audit(state)
return { state, tonumber(curVer) }
