--[[
  claim_one - claim.lua's claim of one card's command (claimOne). A part of
  claim.lua in a file of its own (for its length), included where it
  stands: it uses the script's locals above its include line (prefix,
  queues, the keys, s, now, the lease, nextSeq, bucketsOf, tasks).
]]

-- Claim card's command from queue q, now due there; lane: the lane it came
-- from, moved to the lease's end with the queue entry, or nil. want: what a
-- lane's entry must still be ('query': confirming; 'retry': claimed before
-- and not confirming), else it is dropped (the command is not that any
-- more) and nothing is claimed. Returns true when claimed.
local function claimOne(q, card, lane, want)
  local key = prefix .. card
  -- Its card's hash, or with none, its command waiting packed (idle.lua).
  -- Protected calls: while the account's slot moves to another master,
  -- a card key already there is refused here ("non local key"), and
  -- that must cost this entry, not the whole claim.
  local f = string.sub(card, -2)
  local head = string.sub(card, 1, #card - #f)
  local bucket, wait = bucketsOf(head)
  local iv, wv -- a packed command's idle and waiting values, as read
  local h = {}
  local exists = redis.pcall('EXISTS', key)
  if exists == 1 then
    h = redis.pcall('HMGET', key, 'action', 'ver', 'confirming', 'last_call', 'frozen',
      'called', 'reason', 'scene', 'attempt', 'out')
    if h.err then h = {} end
  elseif exists == 0 and not lane then
    local w = redis.pcall('HGET', wait, f)
    local t = type(w) == 'string' and redis.pcall('HGET', bucket, f)
    if type(t) == 'string' then
      iv, wv = { idleValues(t) }, { waitValues(w) }
      h = { wv[1], iv[1], nil, iv[2] ~= '' and iv[2] or nil, nil, nil, wv[2], wv[3] }
    end
  end
  local action = h[1]
  if lane then
    local confirming = h[3] == '1' or (h[6] ~= nil and h[6] ~= false) -- (HMGET: false when not set)
    if not action or h[5] == '1' or (want == 'query') ~= confirming or
        (want == 'retry' and not h[9]) then
      later('ZREM', lane, card)
      return false
    end
  end
  if h[5] == '1' then
    rcall('ZREM', queues[q], card) -- frozen: the frozen set holds it
  elseif not action or not versionWhole(h[2]) then
    -- No command behind this entry here. While the account's slot moves
    -- to another cluster master, its card hashes may be there already
    -- and this queue not yet: the entry is put a lease ahead, not
    -- removed, and moves with the queue. sr-sweep removes a true orphan.
    -- A command without a version (a damaged hash) waits the same way,
    -- not claimed, and holds back no other card; sr-sweep gives it one.
    later('ZADD', queues[q], leaseS, card)
    if lane then later('ZREM', lane, card) end
  else
    local confirming = h[3] == '1'
    if h[6] then
      -- The previous holder passed the gate and vanished: unknown result.
      rcall('HSET', key, 'confirming', '1')
      rcall('HDEL', key, 'called')
      rcall('SADD', KEYS[7], card)
      confirming = true
      -- Its query is due now: in the query lane, whatever brought it.
      local queryLane = laneQueryKey(queues[2])
      if lane and lane ~= queryLane then later('ZREM', lane, card) end
      lane, want = queryLane, 'query'
    end
    local lastCall = clockLast(steps, tonumber(h[4]) or 0)
    if not confirming and lastCall + interval > now then
      later('ZADD', queues[q], digits(lastCall + interval), card)
      if lane then later('ZREM', lane, card) end
    else
      local token = h[2] .. '-' .. string.sub(redis.sha1hex(secret .. digits(nextSeq())), 1, 16)
      local attempt = (tonumber(h[9]) or 0) + 1
      local claimed = { 'claim', token, 'lease_until', leaseS, 'attempt', digits(attempt) }
      local ok = true
      if wv then
        -- Its first claim: into the card's hash, with the claim. While
        -- the slot moves, a key not yet there is refused: it waits a
        -- lease, as above.
        ok = pcall(cardUnpackValues, key, bucket, wait, iv, wv, claimed, later, f)
      else
        rcall('HSET', key, unpack(claimed))
      end
      later('ZADD', queues[q], leaseS, card)
      if lane then laneAdd(lane, leaseS, card, later) end
      if ok then
        later('ZADD', runningKey, leaseS, token)
        local t = #tasks
        tasks[t + 1], tasks[t + 2], tasks[t + 3], tasks[t + 4] = confirming and 'query' or 'call',
          card, action, tonumber(h[2])
        tasks[t + 5], tasks[t + 6], tasks[t + 7], tasks[t + 8] = token, attempt, h[7] or '', h[8] or ''
        tasks[t + 9] = want or LANE_OF_QUEUE[q]
        -- A query settles the change out: by its order (txn), when the
        -- carrier gave one and the profile polls orders (sr-exec).
        tasks[t + 10] = confirming and h[10] and string.match(h[10], '^%a+ %d+ %d+ %a+ (.+)$') or ''
        return true
      end
    end
  end
  return false
end
