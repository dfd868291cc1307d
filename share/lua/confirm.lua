#!lua
--[[
  confirm - apply one result of sr-exec to the card's command, atomically.

  Only a result of a call or query that really went counts: its token must
  be the command's live claim and the one that passed the gate for that call
  ('called') or query ('queried'). Anything else (forged, replayed, a claim
  since lost) is answered "stale" and changes nothing. A result that counts
  moves the account's side first: the carrier's answers are counted for the
  account's effective rate (AIMD: lowered when the share refused for rate
  is the carrier's limit, not its noise) and the breaker counts failures (5xx, unknown, not
  sent, authentication) and successes; a probe's result closes or reopens it
  (includes/edge.lua). Results the gate settled itself
  (blocked, superseded: it released or finished the command) change nothing
  here either; the reply says where the command stands.

  Then the card. Version compare first: a result for an old version never
  touches the newer command; it only releases its own claim and puts the
  newer command back at its due time ("stale"). For the current version:
    ok / already / superseded, or a query that observed the target state:
        the command is finished and removed; the version and last call stay,
        and the target becomes the card's 'seen' state (what srq last saw
        at the carrier, with 'seen_ms'; enqueue.lua judges against it).
    ok that the carrier only accepted (in_progress: an asynchronous carrier):
        confirming; status queries every s.poll ms decide, and one that still
        sees the old state after s.settle ms means the change did not land.
    query that observed the other state: the call did not happen; re-call
        after the interval ("requeued").
  A change that may be at the carrier is the card's outstanding change,
  apart from its command ('out': action, version, since when, how it
  stands, the carrier's txn): the gate records it when a call passes, and
  its result says how it stands (landed: gone; accepted or unknown: kept).
  A command turned around meanwhile (a renewal while a stop is on its way)
  never inherits another call's acceptance: while the change is
  outstanding, a status query settles that change first (landed: the
  first query showing its target; not landed: settle ms passed since it
  was accepted, or for an unknown result at once, but at an asynchronous
  carrier, where it may have been accepted: includes/out.lua), and only then is the
  command's own target weighed: already there, done; otherwise called, at
  once (the interval permitting), not after settle ms. A result of an
  older version's call still tells how its change stands.
    query that observed the card pending (the carrier says a change is
        under way: a profile's state.pending, or its query rule's
        in_progress): not a state, nor a failure: confirming, asked again a
        poll after the query went, until the change lands or settle ms
        passed since it was accepted or sent (then it did not land: called
        again after the interval). Never frozen nor alerted, and for the
        breaker an answer, not a failure (includes/out.lua).
    query that observed none of these (retired, pre-activation...): frozen
        with an alert; such a card is never changed automatically.
    poll (a query that asked the carrier about the change's order, by the
        txn it gave: kind 'poll', observed its word on the order): done
        is the change landed, as a query showing its target; failed, it
        did not land (called again after the interval); pending, as a
        query that observed pending. Only of the change out whose order it
        is (txn): else, or any other word (not read, a state no list
        names), the order is asked no more and the card's status is
        queried at once; a refused poll is no failure of the card's.
    unknown (the call may have happened): confirming; a status query decides.
    retry before the gate (gated 0): the account's login failed (auth) or
        did not connect (not_sent); nothing was called. It counts for the
        breaker like a refused call (a failed login opens it; during its
        half-open spell it answers for the probe), and the command goes
        back to its queue, its claim released.
    retry, and the carrier said the call was NOT applied (throttled: 429 or a
        throttle code; not_sent: no connection; auth): the card's interval is
        given back (last_call restored) and it goes again after Retry-After or
        a short backoff, not after the interval. A throttle is the account's
        rate, not the card's failure: no failure is counted.
    retry because the card's own window at the carrier is running
        (too_frequent): backoff, never before the interval.
    fail (permanent rejection): alert and freeze at once.
    blocked by the interval: back to the queue at the interval's end; by a
        pause or the breaker: back at Retry-After (their end), untouched.
  Failures the breaker explains (the account down, the breaker open) are not
  counted against the card. Consecutive failures raise one alert at
  s.alert_after and freeze the command at s.freeze_after (taken out of the
  queues into the frozen set). Every transition is appended to the audit
  stream in the same script.

  A batch: the results of ONE account, each with its own reply, in one
  script call (the account's edge and limits are read once, its counters
  written once). Results are applied in order, as if one call each.

  Input:
    KEYS[1]   stop_resume:high  queue high
    KEYS[2]   stop_resume       queue normal
    KEYS[3]   stop_resume:bulk  queue bulk
    KEYS[4]   frozen            frozen commands (ZSET card -> ms)
    KEYS[5]   sr_running        running claims (ZSET token -> lease expiry)
    KEYS[6]   audit             audit stream
    KEYS[7]   alerts            alert stream
    KEYS[8]   confirming        confirming commands (SET card)
    KEYS[9]   flapping          flapping cards (ZSET card -> last direction change ms)
    KEYS[10]  alerts_open       open alerts (HASH cause -> alert id): one alert per cause until
                acknowledged (sr-admin alerts --ack) or resolved (the command finishes)
    KEYS[11]  edge              account edge state (HASH)
    KEYS[12]  limits            account limits (HASH)
    KEYS[12+i.1]  card:*        result i's card's command hash
    KEYS[12+i.2]  idle:*        then its idle bucket
    ARGV[1]  settings  the account's settings (JSON: interval, window, qps, running, burst,
             alert_after, freeze_after, audit_max, confirm_delay, poll, settle,
             aimd_*, brk_*)
    ARGV[2]  stats     stats prefix (includes/stats.lua: out_<outcome> of calls,
             query_<outcome> of queries, finishes, conflicts)
    ARGV[3]  account   the account id (for account-level alerts and audit)
    ARGV[3+i.1]   card         result i: its card
    ARGV[3+i.2]   token        its claim's token
    ARGV[3+i.3]   version      the command's version it was claimed at
    ARGV[3+i.4]   kind         call | query | poll
    ARGV[3+i.5]   outcome
    ARGV[3+i.6]   http         the HTTP status
    ARGV[3+i.7]   error        the error text
    ARGV[3+i.8]   observed     a query's: active|stopped|pending|other; a poll's:
                  done|failed|pending|other|''; else ''
    ARGV[3+i.9]   retry_after  ms
    ARGV[3+i.10]  jitter       in [0,1000)
    ARGV[3+i.11]  blocked      reason (gate: interval|lost|rate|paused|breaker|replayed|frozen)
    ARGV[3+i.12]  class        of a retry (throttled|too_frequent|refused|not_sent|auth|unreplicated|
                  clock_step), of an unknown (mismatch: the answer was about another
                  card; alert carrier_mismatch, the breaker not fed) or ''
    ARGV[3+i.13]  granted      when the gate granted the call's slot (Redis ms; '' unknown; 0: the
                  task never passed its gate)
    ARGV[3+i.14]  in_progress  '1' when the carrier only accepted the change
    ARGV[3+i.15]  txn          the carrier's id of an accepted change; a poll's: the order it
                  asked about; or ''
    ARGV[3+i.16]  at           the slot the call went at (Redis ms, the result's 'at'; '' unknown)
  Output: one reply per result, in order (an error for a result that failed):
    { state, version now, genuine }
    state: done | requeued | confirming | alerted | frozen | stale
    genuine: 1 when the result was applied (its facts may be learned), 2 when
      it is a query that found srq's own stop landed (the card is stopped,
      by srq: stopped_by auto), else 0
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
--- @include "card"
--- @include "stats"
--- @include "alert"
--- @include "outcome"
--- @include "batch"
--- @include "later"
--- @include "version"
--- @include "out"
--- @include "lanes"
-- A finish's writes (the card's hash gone, its queue entry, its claim in
-- the running set) are gathered and sent once per key at the batch's end.
cardWrite = later
local now = serverNow()
local nowS = digits(now)
local queues = { KEYS[1], KEYS[2], KEYS[3] }
local frozenKey, runningKey, auditKey, alertKey = KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local confirmingKey, flappingKey, openKey, edgeKey = KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local s = cjson.decode(ARGV[1])
local account = ARGV[3]
local interval, maxlen = s.interval, digits(s.audit_max)
local count, flushCounts = statsBatch(ARGV[2], now)
-- The account's side, read once for the batch (edgeLower and edgeResult
-- keep it in step with what they write).
local e = edgeRead(edgeKey)
local qps = edgeLimits(KEYS[12], s)
local trimFlapping = false
-- Whether the account has an open alert: a finished command resolves its
-- card's alerts, and when there are none (the common case) there is nothing
-- to resolve. Raising one sets it.
local anyOpen = rcall('EXISTS', openKey) == 1
local function raise(cause, fields)
  anyOpen = true
  return alertOnce(openKey, alertKey, cause, fields)
end

-- The card's alert of kind kindOf (one per cause until acknowledged).
local function cardAlert(card, ver, action, err, http, kindOf, n, extra)
  raise(kindOf .. ':' .. card, { 'card', card, 'ver', ver, 'alert', kindOf,
    'action', action or '', 'fails', n or 0, 'error', err, 'http', http, 'detail', extra or '' })
end
local function auditAccount(event, ...)
  rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', '', 'event', event, ...)
end
-- A result's audit entry: h is the command as read (action, reason, scene,
-- source at 1, 5, 6, 7).
local function auditResult(card, verBefore, verAfter, event, state, h, http, err)
  rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', card, 'ver_before', verBefore,
    'ver_after', verAfter, 'event', event, 'state', state, 'action', h[1] or '',
    'reason', h[5] or '', 'scene', h[6] or '', 'source', h[7] or '', 'http', http, 'error', err)
end

-- The counter of an outcome of a call (out_<outcome>) and of a query
-- (query_<outcome>), each name made once per script call, not per result.
local function counterNames(prefix)
  return setmetatable({}, { __index = function(t, outcome)
    local name = prefix .. outcome
    t[outcome] = name
    return name
  end })
end
local outCounter, queryCounter = counterNames('out_'), counterNames('query_')

-- The card's directions once a change in direction act landed (nil: none
-- did): the last direction and the times it changed (within the hour) as
-- the card keeps them. Flapping: the direction changed 3 or more times
-- within an hour, raised once. Changes older than that go (they would only
-- lengthen what the card keeps asleep). h: the command as read (last_dir,
-- dir_changes at 9, 10).
local function turned(card, h, act, ver, err, http)
  local kept = {}
  for t in string.gmatch(h[10] or '', '%d+') do
    if tonumber(t) > now - 3600000 then kept[#kept + 1] = t end
  end
  if act and h[9] and h[9] ~= act then
    kept[#kept + 1] = nowS
    if #kept >= 3 then
      rcall('ZADD', flappingKey, nowS, card)
      cardAlert(card, ver, act, err, http, 'flapping', 0, #kept .. ' direction changes in an hour')
    end
    trimFlapping = true
  end
  return act or h[9], table.concat(kept, ' ')
end

-- Whether the command of the result being applied was frozen by an
-- operator while its call was out (set by confirmOne).
local frozenByHand = false

--- @include "confirm_unfinished"
--- @include "confirm_result"

-- A result that leaves a command frozen by hand says so, whatever it did.
local function confirmItem(...)
  local r = confirmOne(...)
  if frozenByHand and (r[1] == 'requeued' or r[1] == 'confirming' or r[1] == 'alerted') then
    r[1] = 'frozen'
  end
  return r
end

local replies = batchEach(12, 3, 16, confirmItem, laterFlush)
laterFlush()
edgeWindowSave(edgeKey, e)
edgeLatencySave(edgeKey, e)
if trimFlapping then rcall('ZREMRANGEBYSCORE', flappingKey, '-inf', digits(now - 3600000)) end
flushCounts()
return replies
