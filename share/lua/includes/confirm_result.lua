--[[
  confirm_result - confirm.lua's one result: whether it counts, the
  account's side (includes/outcome.lua), how the change stands, and a
  command finished; the rest in includes/confirm_unfinished.lua. A part of
  confirm.lua in a file of its own (for its length), included where it
  stands: it uses the script's locals above its include line.
]]

-- One result. Its helpers are made only after the finish, the common case,
-- has returned (confirmUnfinished): eight closures per result cost about
-- 0.4 us of Redis CPU.
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

  return confirmUnfinished(key, card, token, ver, kind, asked, outcome, http, err, observed,
    retryAfterArg, jitterArg, class, gatedAtArg, inProgress, txn, sentAt, h, action, curVer, prio,
    out, poll, pollWord, settled, executed, ownStop, accountDown)
end
