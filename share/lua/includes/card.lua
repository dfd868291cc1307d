--[[
  card - what the scripts do to ONE card's command (included by gate and
  confirm): release a claim, put the command back in its queue, finish it,
  append to the audit. The command hash and the account's keys share the
  account's hash tag.
]]

-- Drop the claim `token` holds; keep 'called' only if another claim's call
-- is pending (its result decides).
local function cardRelease(key, token, called)
  redis.call('HDEL', key, 'claim', 'lease_until')
  if called == token then redis.call('HDEL', key, 'called') end
end

-- The command is done: its fields go, its version and last call stay (so
-- versions never repeat and the interval still holds); it leaves every
-- queue, and its card's alerts are resolved.
local function cardFinish(key, queues, card, confirmingKey, openKey)
  redis.call('HDEL', key, 'action', 'reason', 'scene', 'source', 'prio', 'fails', 'first_fail',
    'last_error', 'last_http', 'confirming', 'frozen', 'claim', 'lease_until', 'attempt', 'called', 'queried',
    'accepted', 'prev_call', 'frozen_who', 'frozen_why', 'superseded')
  for q = 1, 3 do redis.call('ZREM', queues[q], card) end
  redis.call('SREM', confirmingKey, card)
  redis.call('HDEL', openKey, 'failures:' .. card, 'frozen:' .. card, 'permanent:' .. card,
    'state:' .. card)
end

-- Cancel the command: a new version (a claim in flight for the old one fails
-- at its gate), then it goes as a finished one does, out of the frozen set
-- too. Returns the new version.
local function cardCancel(key, queues, card, frozenKey, confirmingKey, openKey)
  local nv = redis.call('HINCRBY', key, 'ver', 1)
  cardFinish(key, queues, card, confirmingKey, openKey)
  redis.call('ZREM', frozenKey, card)
  return nv
end
