--[[
  confirm_unfinished - confirm.lua's result that does not finish its
  command: requeued, confirming, frozen, or a failure counted. A part of
  confirm.lua in a file of its own (for its length), included where it
  stands: it uses the script's locals above its include line (queues, the
  keys, s, e, frozenByHand, the audit and alert helpers).
]]

-- The rest of one result (confirmOne, includes/confirm_result.lua, hands
-- on what it read and decided; a local of its per name). Its helpers are
-- made only here: eight closures per result cost about 0.4 us of Redis CPU,
-- and a finish, the common case, needs none.
local function confirmUnfinished(key, card, token, ver, kind, asked, outcome, http, err, observed,
    retryAfterArg, jitterArg, class, gatedAtArg, inProgress, txn, sentAt, h, action, curVer, prio,
    out, poll, pollWord, settled, executed, ownStop, accountDown)
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
