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

-- The command is done: its fields go (what counted it, too), its version
-- and last call stay (so versions never repeat and the interval still
-- holds); it leaves every queue, and its card's alerts are resolved. A
-- caller that read the command may pass its priority and its confirming
-- flag: a command sits only in its priority's queue (enqueue moves it when
-- that changes), and only a confirming one is in the confirming set, so the
-- others are spared. openKey nil: the account has no open alert to resolve.
local function cardFinish(key, queues, card, confirmingKey, openKey, prio, confirming)
  redis.call('HDEL', key, 'action', 'reason', 'scene', 'source', 'prio', 'fails', 'first_fail',
    'last_error', 'last_http', 'confirming', 'frozen', 'claim', 'lease_until', 'attempt', 'called', 'queried',
    'accepted', 'prev_call', 'frozen_who', 'frozen_why', 'superseded', 'counted_ver')
  if prio then
    redis.call('ZREM', queues[prio + 1], card)
  else
    for q = 1, 3 do redis.call('ZREM', queues[q], card) end
  end
  if confirming ~= '0' and confirming ~= false then redis.call('SREM', confirmingKey, card) end
  if openKey then
    redis.call('HDEL', openKey, 'failures:' .. card, 'frozen:' .. card, 'permanent:' .. card,
      'state:' .. card)
  end
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
