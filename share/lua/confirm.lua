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

-- One result. Its helpers are made only after the finish, the common case,
-- has returned: eight closures per result cost about 0.4 us of Redis CPU.
local function confirmOne(key, bucket, card, token, ver, kind, outcome, http, err, observed,
    retryAfterArg, jitterArg, _, class, gatedAtArg, inProgressArg, txn, sentAtArg)
  local inProgress = inProgressArg == '1'
  local gatedAt = tonumber(gatedAtArg) -- nil: unknown; 0: never passed its gate
  -- A poll is a status query that asked about the change's order (its
  -- txn): it went through the query's gate, and counts as one.
  local asked, poll = kind, kind == 'poll'
  if poll then kind = 'query' end
  -- When the call went: a poll after it, the card's next query (the
  -- carrier sees them a poll apart at least; a slot may be granted ahead).
  -- (A line's time is its own word: never later than now, or an edited
  -- one would put the card's query off at will.)
  local sentAt = tonumber(sentAtArg) or gatedAt
  if sentAt and sentAt > now then sentAt = now end
  local h = rcall('HMGET', key, 'action', 'ver', 'claim', 'prio', 'reason', 'scene', 'source',
    'called', 'last_dir', 'dir_changes', 'queried', 'confirming', 'last_call', 'seen', 'seen_ms',
    'frozen', 'out')
  local action, curVer, claim, prio = h[1], h[2], h[3], tonumber(h[4]) or 1
  frozenByHand = h[16] == '1'
  if outcome == 'blocked' or outcome == 'superseded' then
    -- The gate settled these itself. Say where the command stands.
    if not action then
      -- Finished; stale if the card's version moved on since (a newer
      -- command waiting packed, or cancelled).
      if not curVer then curVer = (idleRead(key, bucket) or {}).ver end
      return { curVer == ver and 'done' or 'stale', tonumber(curVer) or 0, 0 }
    end
    if curVer ~= ver or claim == token then return { 'stale', tonumber(curVer) or 0, 0 } end
    return { h[16] == '1' and 'frozen' or 'requeued', tonumber(curVer) or 0, 0 }
  end

  -- A call or a query that went, and this claim's own: the command's live
  -- claim, and the token that passed the gate for that call ('called') or
  -- query ('queried'). A replayed line finds them gone (released when the
  -- first copy was applied); a forged one never had them.
  -- A task answered before its gate: its account's login (the token
  -- fetch) was refused or did not connect, so nothing went for it, and no
  -- gate pass carries its token ('called', 'queried') or its time (gated
  -- 0). Its claim is still live: the result is this claim's own. Were it
  -- "stale", the claim would be held to the end of its lease, and a login
  -- that always fails would reach neither the breaker nor an alert.
  local unsent = claim == token and outcome == 'retry' and (class == 'auth' or class == 'not_sent')
    and (gatedAt or 0) == 0 and h[8] ~= token and h[11] ~= token
  local mine = (claim == token and ((kind == 'call' and h[8] == token) or
    (kind == 'query' and h[11] == token))) or unsent
  local live = mine
  -- A half-open breaker's probe is claimed like any task: when its login
  -- fails before its gate, it never becomes the probe, and the breaker
  -- would stay half-open, one claim after another, the login failing each
  -- time. The failed login is the probe's answer: it reopens the breaker.
  if unsent and e.brk_until and tonumber(e.brk_until) <= now and
      not (e.brk_probe and (tonumber(e.brk_probe_until) or 0) > now) then
    e.brk_probe = token -- in memory only: edgeResult clears it
  end
  -- (A query that found a change under way says so as much as an
  -- accepted call.)
  if live and (inProgress or (kind == 'query' and outcome == 'ok' and observed == 'pending'))
      and not e.async_at then
    -- An asynchronous carrier, from now on (outSettled).
    rcall('HSET', edgeKey, 'async_at', nowS)
    e.async_at = nowS
  end
  if live then
    if (gatedAt or 0) > 0 then edgeLatency(e, now - gatedAt) end
    later('ZREM', runningKey, token)
    count(kind == 'query' and queryCounter[outcome] or outCounter[outcome])
    count('finishes')
  end

  -- The account's side: the effective rate and the breaker
  -- (includes/outcome.lua).
  if live and (gatedAt or 1) > 0 and outcomeReached(outcome, class) then
    outcomeRate(edgeKey, e, qps, now, gatedAt or (now - s.window), outcome, class, http, err, s,
      auditAccount)
  end
  local verdict = outcomeVerdict(outcome, class)
  if live and class == 'mismatch' then
    -- Not believed of this card (a failure of its command, below); the
    -- account's operator is told once, until acknowledged.
    raise('carrier_mismatch:' .. account, { 'card', card, 'alert', 'carrier_mismatch',
      'account', account, 'error', err, 'http', http,
      'detail', 'an answer named another card, or none: not believed; check the profile\'s card key' })
  end
  -- A call held back because its gate pass did not reach the replicas, or
  -- was made on a clock that had just stepped, says nothing of the carrier.
  if live and class ~= 'unreplicated' and class ~= 'clock_step' then
    -- Why, said only when the breaker may open or reopen: on a failure,
    -- or on a refused authentication, which opens it whatever the outcome.
    local why = (verdict == 'fail' or class == 'auth') and (err ~= '' and err or ('HTTP ' .. http)) or ''
    outcomeBreaker(edgeKey, openKey, e, token, verdict, now, s, why, class == 'auth', account, err, http,
      raise, auditAccount)
  end
  -- Failures while the breaker is open are the account's, not the card's.
  local accountDown = e.brk_until ~= nil

  if not action then
    -- Finished or cancelled meanwhile: its version is where it sleeps.
    if not curVer then curVer = (idleRead(key, bucket) or {}).ver end
    return { 'stale', tonumber(curVer) or 0, 0 }
  end
  if not mine then
    return { 'stale', tonumber(curVer) or 0, 0 } -- not this claim's call: forged, replayed, or lost
  end

  local target = targetOf(action)
  local finished = (outcome == 'ok' and not inProgress) or outcome == 'already'
  -- The direction this result shows executed (flapping counts it).
  local executed = outcome == 'ok' and kind == 'call' and action or nil
  -- The change that may be at the carrier (out), or, from a release before
  -- it was kept, the command's own (accepted since, or unknown).
  -- (Read only where it matters: a call that simply landed needs none.)
  local out
  if kind == 'query' or not finished or curVer ~= ver then
    out = outRead(h[17])
    if not out and h[12] == '1' then
      local accepted = tonumber(rcall('HGET', key, 'accepted'))
      out = { act = action, ver = curVer, at = accepted or 0, kind = accepted and 'accepted' or 'unknown' }
    end
  end
  -- A poll's word on the order, believed only of the change out whose
  -- order it is (its txn): done, the change landed (the card is at its
  -- target); failed, it did not; pending, it is still on its way. Any
  -- other (not read, an order state no list names): nothing learned.
  local pollWord
  if poll then
    pollWord = outcome == 'ok' and out and out.txn ~= '' and out.txn == txn and observed or nil
    if pollWord == 'done' then
      observed = targetOf(out.act)
    elseif pollWord ~= 'failed' and pollWord ~= 'pending' then
      pollWord, observed = nil, ''
    end
  end
  -- A query settles the outstanding change first. settled: how it ends
  -- ('landed', 'not landed'), or nil while it may still land.
  local settled, ownStop = nil, 1
  if kind == 'query' and outcome == 'ok' and
      (observed == 'active' or observed == 'stopped' or observed == 'pending') then
    settled = outSettled(out, observed, now, s.settle, s.async or e.async_at ~= nil)
    if settled == 'landed' then executed = out and out.act end
    finished = settled ~= nil and observed == target
    -- A stop srq sent (accepted, or its result unknown) found landed is
    -- srq's stop, as an 'ok' to the call would have said.
    if settled == 'landed' and out and out.act == 'stop' then ownStop = 2 end
  elseif pollWord == 'failed' then
    settled, finished = 'not landed', false
  elseif kind == 'query' then
    finished = false
  end

  if finished and curVer == ver then
    -- What srq now knows the card is at the carrier, written with the finish
    -- so that no judgment can run between them (enqueue.lua reads it).
    -- (every field it may get, named now: a table grown by a field is
    -- rehashed)
    local after = { seen = target, seen_ms = nowS, last_dir = h[9], dir_changes = '' }
    after.last_dir, after.dir_changes = turned(card, h, executed, curVer or ver, err, http)
    -- A command frozen by hand while its call was out: the call applied,
    -- the command is done, and nothing is left for the frozen set to hold.
    if h[16] == '1' then later('ZREM', frozenKey, card) end
    cardFinish(key, bucket, queues, card, confirmingKey, anyOpen and openKey, prio, h[12] == '1', after,
      { ver = h[2], last_call = h[13], seen = h[14], seen_ms = h[15], last_dir = h[9],
        dir_changes = h[10] })
    trimFlapping = true
    auditResult(card, ver, curVer, asked .. ':' .. outcome, 'done', h, http, err)
    return { 'done', tonumber(curVer) or 0, ownStop }
  end

  -- What only a command that is not finished needs.
  local retryAfter, jitter = tonumber(retryAfterArg) or 0, tonumber(jitterArg)
  local r = rcall('HMGET', key, 'fails', 'last_call', 'first_fail', 'prev_call')
  local fails, lastCall, firstFail = tonumber(r[1]) or 0, tonumber(r[2]) or 0, r[3]
  local prevCall = r[4]
  local function audit(state)
    auditResult(card, ver, curVer or ver, asked .. ':' .. outcome, state, h, http, err)
  end
  local function release()
    cardRelease(key, token, h[8])
    rcall('HDEL', key, 'queried')
  end
  local function requeue(due)
    release()
    -- Frozen by hand meanwhile: it stays out of the queues (and in the
    -- frozen set) until an operator retries it.
    if not frozenByHand then rcall('ZADD', queues[prio + 1], digits(due), card) end
  end
  local function afterInterval(due)
    if lastCall + interval > due then return lastCall + interval end
    return due
  end
  -- A confirming command's next query, at due: it goes before the
  -- account's queues (includes/lanes.lua).
  local function queryAt(due)
    requeue(due)
    if not frozenByHand then laneAdd(laneQueryKey(queues[2]), digits(due), card, later) end
  end
  local function confirming(due)
    rcall('HSET', key, 'confirming', '1')
    rcall('SADD', confirmingKey, card)
    queryAt(due)
  end
  -- A call's result says how its change stands (includes/out.lua),
  -- whatever the command's version is now: 'accepted' or 'unknown' when it
  -- stays outstanding.
  local function callStands()
    if kind ~= 'call' then return nil end
    return outAnswered(key, out, action, ver, curVer, gatedAtArg, outcome, inProgress, txn, now)
  end

  if not versionWhole(curVer) then
    -- The hash lost its version (a hand edit) while this call was out: it
    -- gets one above this claim's, and whether the call applied is asked
    -- of the carrier (the next claim is a status query), not assumed.
    curVer = digits(versionRecover(key))
    confirming(now)
    audit('confirming')
    return { 'confirming', tonumber(curVer), 1 }
  end
  if curVer ~= ver then
    count('conflicts') -- a newer version was found
    -- The newer command settles this call's change first, if it may
    -- still land; a confirming command's next query is a poll away.
    local open = callStands()
    if open == 'accepted' then
      confirming(now + s.poll)
    elseif open == 'unknown' then
      confirming(now + s.confirm_delay)
    elseif h[12] == '1' then
      queryAt(now + s.poll)
    else
      requeue(afterInterval(now))
    end
    audit('stale')
    return { 'stale', tonumber(curVer) or 0, 1 }
  end
  callStands()

  if poll and not pollWord then
    -- The order told nothing of this change (an order the carrier does
    -- not name, or not read): it is not asked again; the card's status
    -- is, next (the claim gives a query no txn then). An order the
    -- carrier refused to look up is no failure of the card's; an
    -- unknown answer is one as a query's is (below).
    outForgetTxn(key, out)
    if outcome == 'ok' or outcome == 'fail' then
      queryAt(now)
      audit('confirming')
      return { 'confirming', tonumber(curVer) or 0, 1 }
    end
  end

  local function freeze(alertKind, n)
    release()
    rcall('HSET', key, 'frozen', '1')
    -- What srq saw before is in doubt now: a frozen command is an operator's,
    -- and a later request must not re-queue it on the strength of 'seen'.
    -- (One an operator froze while its call was out keeps who and why.)
    rcall('HDEL', key, 'accepted', 'seen', 'seen_ms')
    if not frozenByHand then rcall('HDEL', key, 'frozen_who', 'frozen_why') end
    for q = 1, 3 do rcall('ZREM', queues[q], card) end
    laneDrop(queues[2], card, later)
    rcall('ZADD', frozenKey, 'NX', nowS, card)
    -- A confirming command stays confirming (listed) while frozen, as a
    -- freeze by hand leaves it: a retry or a new request then queries first.
    cardAlert(card, curVer or ver, action, err, http, alertKind, n,
      observed ~= '' and ('observed ' .. observed) or nil)
    audit('frozen')
    return { 'frozen', tonumber(curVer) or 0, 1 }
  end

  if kind == 'call' and outcome == 'ok' and inProgress then
    -- Accepted, not yet done: the change lands later; status queries decide,
    -- the first a poll after the call went (not after its result came).
    confirming(math.max(now, (sentAt or now) + s.poll))
    audit('confirming')
    return { 'confirming', tonumber(curVer) or 0, 1 }
  end

  if kind == 'query' and outcome == 'ok' then
    if observed ~= 'active' and observed ~= 'stopped' and observed ~= 'pending' and
        pollWord ~= 'failed' then
      return freeze('state', fails) -- never changed automatically
    end
    if not settled then
      -- Accepted, still landing (the query shows the old state, or the
      -- carrier says it is on its way): ask again a poll after this query went,
      -- as the first went a poll after its call. (After its result came,
      -- a call's first query and another's next would come due together,
      -- more than the rate's slots at once.)
      queryAt(math.max(now, (sentAt or now) + s.poll))
      audit('confirming')
      return { 'confirming', tonumber(curVer) or 0, 1 }
    end
    -- Settled, and the card is not where its command wants it: the change
    -- that landed was another (the command was turned since), or none did.
    -- The command's own call goes now, the card's interval permitting.
    local lastDir, dirChanges = turned(card, h, executed, curVer, err, http)
    rcall('HSET', key, 'confirming', '0', 'dir_changes', dirChanges)
    if observed == 'pending' or pollWord == 'failed' then
      -- On its way to a state the query did not say, or a failed order
      -- (the card's state unsaid): srq has seen none.
      rcall('HDEL', key, 'seen', 'seen_ms')
    else
      rcall('HSET', key, 'seen', observed, 'seen_ms', nowS)
    end
    if lastDir then rcall('HSET', key, 'last_dir', lastDir) end
    rcall('HDEL', key, 'accepted', 'out')
    rcall('SREM', confirmingKey, card)
    requeue(afterInterval(now))
    audit('requeued')
    return { 'requeued', tonumber(curVer) or 0, ownStop }
  end

  local notApplied = outcome == 'retry' and class ~= 'too_frequent' and class ~= ''
  if notApplied and kind == 'call' and h[8] == token then
    -- The carrier did not apply this call and said so: it was no change, so
    -- the card's interval is given back.
    if prevCall and prevCall ~= '' then
      rcall('HSET', key, 'last_call', prevCall)
      lastCall = tonumber(prevCall)
    else
      rcall('HDEL', key, 'last_call')
      lastCall = 0
    end
  end

  if (outcome == 'retry' and (class == 'throttled' or class == 'auth' or class == 'unreplicated' or
      class == 'clock_step')) or
      (accountDown and outcome ~= 'fail') then
    -- The account's rate, the account itself, or Redis's replicas or clock;
    -- not the card: no failure.
    rcall('HSET', key, 'last_error', err ~= '' and err or ('HTTP ' .. http), 'last_http', http)
    -- The carrier's Retry-After, when it gave one: the account's pace
    -- spreads the retries that come due together. Else a second and a
    -- jitter.
    local due = now + (retryAfter > 0 and retryAfter or 1000 + jitter)
    if accountDown then
      due = math.max(due, tonumber(e.brk_until) or 0)
    end
    if outcome == 'unknown' and kind == 'call' then
      confirming(math.max(due, now + s.confirm_delay))
      audit('confirming')
      return { 'confirming', tonumber(curVer) or 0, 1 }
    end
    if not notApplied and kind == 'call' then due = afterInterval(due) end
    requeue(due)
    -- Not applied: no change was made, and its retry goes before the
    -- account's queues (includes/lanes.lua).
    if notApplied and kind == 'call' and not frozenByHand then
      laneAdd(laneRetryKey(queues[2]), digits(due), card, later)
    end
    audit('requeued')
    return { 'requeued', tonumber(curVer) or 0, 1 }
  end

  -- unknown, retry, fail: a failure of this command.
  fails = fails + 1
  rcall('HSET', key, 'fails', digits(fails), 'last_error', err ~= '' and err or ('HTTP ' .. http), 'last_http', http)
  if not firstFail then rcall('HSET', key, 'first_fail', nowS) end

  if outcome == 'fail' or fails >= s.freeze_after then
    if outcome == 'unknown' and kind == 'call' then
      -- It may have applied: frozen confirming, so that a retry asks the
      -- carrier first, never calls blind.
      rcall('HSET', key, 'confirming', '1')
      rcall('SADD', confirmingKey, card)
    end
    return freeze(outcome == 'fail' and 'permanent' or 'frozen', fails)
  end

  local state
  if outcome == 'unknown' and kind == 'call' then
    confirming(now + s.confirm_delay)
    state = 'confirming'
  else
    -- Exponential backoff from 1 s, capped at 15 min, with jitter in [50%, 100%].
    local backoff = math.min(1000 * 2 ^ (fails - 1), 900000)
    backoff = math.floor(backoff * (0.5 + jitter / 2000))
    local due = now + math.max(backoff, retryAfter)
    if kind == 'call' and not notApplied then due = afterInterval(due) end
    requeue(due)
    state = 'requeued'
  end
  if fails == s.alert_after then
    cardAlert(card, curVer or ver, action, err, http, 'failures', fails)
    state = 'alerted'
  end
  audit(state)
  return { state, tonumber(curVer) or 0, 1 }
end

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
