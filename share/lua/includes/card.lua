--[[
  card - what the scripts do to ONE card's command (included by gate and
  confirm): release a claim, put the command back in its queue, finish it,
  append to the audit. The command hash and the account's keys share the
  account's hash tag.
]]
--- @include "idle"
--- @include "lanes"

-- Drop the claim `token` holds; keep 'called' only if another claim's call
-- is pending (its result decides).
local function cardRelease(key, token, called)
  redis.call('HDEL', key, 'claim', 'lease_until')
  if called == token then redis.call('HDEL', key, 'called') end
end

-- The command is done: the card goes to sleep in bucket (see idle.lua) with what
-- outlives its commands (its version and last call, so versions never
-- repeat and the interval still holds; what srq saw; its directions), with
-- the fields of `after` laid over them (the finish's `seen`, a superseded
-- version); the rest goes, what counted it too. It leaves every queue, and
-- its card's alerts are resolved. A caller that read the command may pass
-- its priority and its confirming flag: a command sits only in its
-- priority's queue (enqueue moves it when that changes), and only a
-- confirming one is in the confirming set, so the others are spared.
-- openKey nil: the account has no open alert to resolve. A caller that
-- read what outlives the command (ver last_call seen seen_ms last_dir
-- dir_changes) passes it as `known`, and it is not read again.
local function cardFinish(key, bucket, queues, card, confirmingKey, openKey, prio, confirming, after,
    known)
  local state = known
  if not state then
    local h = redis.call('HMGET', key, 'ver', 'last_call', 'seen', 'seen_ms', 'last_dir', 'dir_changes')
    state = { ver = h[1], last_call = h[2], seen = h[3], seen_ms = h[4], last_dir = h[5],
      dir_changes = h[6] }
  end
  if after then
    for k, v in pairs(after) do state[k] = v end
  end
  cardSleep(key, bucket, state)
  if prio then
    cardWrite('ZREM', queues[prio + 1], card)
  else
    for q = 1, 3 do cardWrite('ZREM', queues[q], card) end
  end
  if confirming ~= '0' and confirming ~= false then cardWrite('SREM', confirmingKey, card) end
  laneDrop(queues[2], card, cardWrite)
  if openKey then
    cardWrite('HDEL', openKey, 'failures:' .. card, 'frozen:' .. card, 'permanent:' .. card,
      'state:' .. card)
  end
end

-- Cancel the command: a new version (a claim in flight for the old one fails
-- at its gate), then it goes as a finished one does, out of the frozen set
-- too. Returns the new version.
local function cardCancel(key, bucket, queues, card, frozenKey, confirmingKey, openKey)
  local nv = redis.call('HINCRBY', key, 'ver', 1)
  cardFinish(key, bucket, queues, card, confirmingKey, openKey)
  redis.call('ZREM', frozenKey, card)
  return nv
end
