#!lua
--[[
  enqueue - write the judged intent of a batch of cards of ONE account.

  For each card, given what the judgment wants (stop, resume or none):
  - a wanted command that is already queued is left alone ("unchanged"),
    unless a claim of it is out and has not called: then it gets a new
    version ("queued"), so that the claim, which its holder may judge
    again on facts older than this request's, fails at its gate;
  - a new or different command bumps the card's version and replaces the old
    one ("queued"); the version counter is never deleted, so versions never
    repeat for a card, even after its command finished (no ABA);
  - "none" cancels a pending command ("cancelled", version bumped so any
    claim in flight for the old version fails at the gate) or does nothing
    ("noop"). Two exceptions, because "none" only means that the card's
    facts already show the target state, and the facts can lag the carrier:
    - a command whose call is at the carrier now (the gate passed it) or
      whose last call had an unknown result is not dropped but turned towards
      the judged target (kept confirming): the card may be changing; but
      never into a resume of a card stopped by hand. Turned, it keeps the
      change that may be on its way ('out', includes/out.lua): its next
      query settles that change before the new target is called;
    - the state srq itself last saw at the carrier ('seen', written by the
      finish of a call or query, in the same script) is not the target:
      the target is queued. A renewal judged between a stop's finish and
      sr-confirm's update of the facts must not be lost. At worst this costs
      one call the carrier answers "already" (the card was changed outside
      srq since). A card stopped by hand is exempt: it is never resumed
      automatically, and it is already stopped.
  Due time is max(now, last_call + min_interval): a command is never claimable
  before its card may be called again. A new command of a card with no hash
  waits packed in its wait bucket until its claim (includes/idle.lua).

  Input:
    KEYS[1]  stop_resume:high  queue high (ZSET card -> due ms)
    KEYS[2]  stop_resume       queue normal
    KEYS[3]  stop_resume:bulk  queue bulk
    KEYS[4]  frozen            frozen commands (ZSET card -> frozen at ms)
    KEYS[5]  audit             audit stream of the account
    KEYS[6]  confirming        confirming commands (SET card)
    KEYS[7]  alerts_open       open alerts (HASH cause -> alert id): a cancelled command's
                card alerts are resolved
    KEYS[7+i.1]  card:*        card i's command hash (in ARGV's order)
    KEYS[7+i.2]  idle:*        its idle bucket
    KEYS[7+i.3]  wait:*        its wait bucket (idle.lua; see docs/redis.md "Redis layout")
    ARGV[1]  interval   min interval between state-change calls of a card, ms
    ARGV[2]  audit_max  audit stream cap (approximate MAXLEN)
    ARGV[2+i.1]  card    card i's id
    ARGV[2+i.2]  want    stop | resume | none
    ARGV[2+i.3]  target  stop | resume
    ARGV[2+i.4]  reason
    ARGV[2+i.5]  scene
    ARGV[2+i.6]  source
    ARGV[2+i.7]  prio    priority class (0 high, 1 normal, 2 bulk)
    ARGV[2+i.8]  manual  '1': the card was stopped by hand
  Output:
    flat array, two entries per card: status string, version (integer)
    status: queued | unchanged | cancelled | noop
  All keys share the account's hash tag.
]]
local rcall = redis.call
--- @include "now"
--- @include "card"
--- @include "version"
local now = serverNow()
local interval = tonumber(ARGV[1])
local maxlen = ARGV[2]
local queues = { KEYS[1], KEYS[2], KEYS[3] }
local frozenKey, auditKey, confirmingKey, openKey = KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local out = {}

local function audit(card, vb, va, event, action, reason, scene, source)
  rcall('XADD', auditKey, 'MAXLEN', '~', maxlen, '*', 'card', card, 'ver_before', vb,
    'ver_after', va, 'event', event, 'action', action, 'reason', reason, 'scene', scene,
    'source', source)
end

-- A command waiting packed that is changed (replaced, cancelled, moved up a
-- class) is changed in its card's hash: unpacked first.
local function unpackWaiting(key, bucket, wait, packed)
  if packed then cardWake(key, bucket, nil, wait) end
end

-- One card: its status and version.
local function enqueueOne(i)
  local key, bucket, wait = KEYS[5 + 3 * i], KEYS[6 + 3 * i], KEYS[7 + 3 * i]
  local a = 2 + (i - 1) * 8
  local card, want, target, reason, scene, source, prio, manual =
    ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6],
    tonumber(ARGV[a + 7]), ARGV[a + 8] == '1'
  local h = rcall('HMGET', key, 'action', 'ver', 'confirming', 'last_call', 'prio', 'frozen',
    'lease_until', 'called', 'seen')
  local asleep, packed
  local hashless = not h[1] and not h[2]
  if hashless then
    -- No command and no version in a hash: the card is asleep (idle.lua),
    -- or new, and its command, if any, waits packed. (A packed version
    -- damaged by hand counts as none: no claim of a sleeping card can be
    -- in flight.)
    asleep = idleRead(key, bucket)
    if asleep then
      h[2], h[4], h[9] = versionWhole(asleep.ver) and asleep.ver or nil, asleep.last_call, asleep.seen
      -- (a packed command always has its card's idle entry beside it)
      packed = waitRead(key, wait)
      if packed then h[1], h[5] = packed.action, packed.prio end
    end
  end
  if h[1] and not versionWhole(h[2]) then
    unpackWaiting(key, bucket, wait, packed)
    asleep, packed = nil, nil
    -- A command whose version was lost (a hash damaged by hand): one above
    -- any claim in flight, before the command is judged against.
    h[2] = versionRecover(key)
  end
  local action, ver = h[1], tonumber(h[2]) or 0
  local confirming, lastCall, called, seen = h[3] == '1', tonumber(h[4]) or 0, h[8], h[9]

  if want == 'none' and action and (confirming or called) and not (manual and target == 'resume') then
    want = target
  end
  if want == 'none' and not manual and seen and
      seen ~= (target == 'stop' and 'stopped' or 'active') then
    want = target
  end
  if want == 'none' then
    if action then
      unpackWaiting(key, bucket, wait, packed)
      local nv = cardCancel(key, bucket, queues, card, frozenKey, confirmingKey, openKey)
      audit(card, ver, nv, 'cancelled', action, reason, scene, source)
      return 'cancelled', nv
    end
    return 'noop', ver
  elseif action == want then
    -- Same intent already queued: keep its place, its counters and its
    -- version; only a more urgent scene moves it up a class.
    local old = tonumber(h[5]) or 1
    if prio < old and h[6] ~= '1' then
      local score = rcall('ZSCORE', queues[old + 1], card)
      if score then
        unpackWaiting(key, bucket, wait, packed)
        rcall('ZREM', queues[old + 1], card)
        rcall('ZADD', queues[prio + 1], score, card)
        rcall('HSET', key, 'prio', prio)
      end
    end
    if (tonumber(h[7]) or 0) > now and not called then
      -- A claim of it is out and has not called: its holder judges the
      -- card again before the call (sr-exec), maybe on facts older than
      -- this request's, and would finish it as no longer wanted. A new
      -- version fails that claim at its gate; the command is claimed again
      -- and judged on the facts as they are now.
      local nv = ver + 1
      rcall('HSET', key, 'ver', nv)
      audit(card, ver, nv, 'queued', want, reason, scene, source)
      return 'queued', nv
    end
    return 'unchanged', ver
  end
  -- The version read above, one more (one write for the whole command).
  local nv = ver + 1
  local set = { 'ver', nv, 'action', want, 'reason', reason, 'scene', scene, 'source', source,
    'prio', prio }
  if action then
    unpackWaiting(key, bucket, wait, packed)
    asleep, packed = nil, nil
  end
  if asleep then asleep.ver = nv end
  if not action and hashless and waitPack(key, bucket, wait, asleep and idlePack(asleep) or digits(nv),
      want, reason, scene, source, prio) then
    -- A new command of a card with no hash (no command and no version in
    -- it): packed, its version in its idle entry.
  elseif asleep then
    cardWake(key, bucket, set) -- its state back into its hash, with the command
  else
    rcall('HSET', key, unpack(set))
  end
  local due = now
  if not confirming and lastCall + interval > due then due = lastCall + interval end
  if confirming then
    -- Its next status query stays when it was: a change on its way is
    -- settled first, a poll apart, however many requests turn the card.
    local at = tonumber(rcall('ZSCORE', queues[(tonumber(h[5]) or 1) + 1], card))
    if at and at > due then due = at end
  end
  if action then
    -- Replacing a command: its counters and its place in another class
    -- or in the frozen set go with it. (A new command has neither.)
    rcall('HDEL', key, 'fails', 'first_fail', 'last_error', 'last_http', 'frozen', 'frozen_who',
      'frozen_why')
    for q = 1, 3 do
      if q ~= prio + 1 then rcall('ZREM', queues[q], card) end
    end
    rcall('ZREM', frozenKey, card)
  end
  -- A live claim keeps its lease as the score (its gate will fail on the
  -- version); an old backoff does not delay a new intent.
  local lease = tonumber(h[7]) or 0
  if lease > due then due = lease end
  rcall('ZADD', queues[prio + 1], due, card)
  audit(card, ver, nv, 'queued', want, reason, scene, source)
  return 'queued', nv
end

-- Each card under pcall: one card's damaged key (its hash or its bucket
-- of the wrong type, a hand edit) is that card's error reply, not its
-- batch's. A damaged hash fails the card's first read; a damaged bucket
-- the read of a sleeping card, or a cancel's write putting an awake card
-- to sleep, once its version was bumped (a script's writes are never
-- rolled back: a claim in flight for the old version fails at its gate).
for i = 1, (#KEYS - 7) / 3 do
  local ok, status, ver = pcall(enqueueOne, i)
  if ok then
    out[#out + 1] = status; out[#out + 1] = ver
  else
    out[#out + 1] = redis.error_reply(type(status) == 'table' and (status.err or '?') or tostring(status))
    out[#out + 1] = 0
  end
end
return out
