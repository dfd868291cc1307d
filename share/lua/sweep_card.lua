#!lua
--[[
  sweep_card - inspect and repair ONE card's queue state (the inspection sweep).

  Normal operation leaves nothing to find; each finding is damage (a lost
  write, a hand edit, a bug) repaired on the spot:
    orphan_entry      a queue entry with no command behind it: removed
    orphan_frozen     a frozen-set entry with no frozen command behind it (a
                      command finished, or replaced by a new request, after
                      an older release let it stay): removed, so it neither
                      pages (srq_frozen) nor lists a live command as frozen
    orphan_confirming a confirming-set entry with no command: removed
    frozen_in_queue   a frozen command still queued: taken out (and listed)
    frozen_unlisted   a frozen command missing from the frozen set: listed
    no_version        a command whose version is gone or not a whole number
                      (the claim leaves it waiting): given one above every
                      version its hash still names (includes/version.lua)
    stale_claim       a claim whose lease expired long ago: released, due now
                      ('called' is kept, so the next claim queries first)
    missing_entry     a command in no queue: queued at max(now, interval end,
                      the lease of a live claim)
    stuck_confirming  a confirming command overdue for its query: due now
    confirming_unlisted  a confirming command missing from the confirming
                      set (an index: sr-stat counts it): listed (reported
                      when nothing else was found)
    wrong_type:T      the card's key is a T, not a hash (a hand edit): its
                      command cannot be read; left as it is, for a look
    packed_and_hash   a command waiting packed (includes/idle.lua) for a card
                      that has a hash: the hash's command wins, and the packed
                      one is removed (left, it would pass for the card's
                      command once the card sleeps); with none in the hash,
                      the packed one is moved into it
  "Long ago" and "overdue" depend on the priority class (ARGV[3..5]).

  Input:
    KEYS[1]  card:*            command hash of the card
    KEYS[2]  stop_resume:high  queue high
    KEYS[3]  stop_resume       queue normal
    KEYS[4]  stop_resume:bulk  queue bulk
    KEYS[5]  frozen            frozen (ZSET)
    KEYS[6]  confirming        confirming commands (SET)
    KEYS[7]  idle:*            the card's idle bucket
    KEYS[8]  wait:*            its wait bucket (idle.lua)
    ARGV[1]  card          card id
    ARGV[2]  interval      min interval ms
    ARGV[3]  grace_high    grace ms for high
    ARGV[4]  grace_normal  for normal
    ARGV[5]  grace_bulk    for bulk
  Output:
    the finding's name, or false when the card is sound
]]
local rcall = redis.call
--- @include "version"
--- @include "idle"
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, frozenKey, card = KEYS[1], KEYS[5], ARGV[1]
local queues = { KEYS[2], KEYS[3], KEYS[4] }
local keyType = rcall('TYPE', key).ok
if keyType ~= 'hash' and keyType ~= 'none' then return 'wrong_type:' .. keyType end
if keyType == 'hash' and rcall('HEXISTS', KEYS[8], idleField(key)) == 1 then
  local c = rcall('HMGET', key, 'action', 'ver')
  if c[1] then
    rcall('HDEL', KEYS[8], idleField(key))
  else
    cardWake(key, KEYS[7], nil, KEYS[8])
    -- Its version above the hash's: never one the card may have had.
    if versionWhole(c[2]) and (tonumber(rcall('HGET', key, 'ver')) or 0) <= tonumber(c[2]) then
      rcall('HSET', key, 'ver', string.format('%d', tonumber(c[2]) + 1))
    end
  end
  return 'packed_and_hash'
end
if keyType == 'none' then
  -- Its command may wait packed: sound when it is queued with a whole
  -- version; else it is unpacked, and repaired in its hash as below.
  local w = waitRead(key, KEYS[8])
  if w then
    local idle = idleRead(key, KEYS[7])
    local queued = false
    for q = 1, 3 do queued = queued or rcall('ZSCORE', queues[q], card) end
    if queued and idle and versionWhole(idle.ver) then
      -- (a packed command is never frozen: a freeze unpacks it)
      return rcall('ZREM', frozenKey, card) == 1 and 'orphan_frozen'
    end
    cardWake(key, KEYS[7], nil, KEYS[8])
  end
end
local h = rcall('HMGET', key, 'action', 'frozen', 'claim', 'lease_until', 'confirming',
  'last_call', 'prio', 'ver')
local prio = tonumber(h[7]) or 1
local grace = tonumber(ARGV[3 + prio])
local inq, score = nil, nil
for q = 1, 3 do
  local s = rcall('ZSCORE', queues[q], card)
  if s then inq, score = q, tonumber(s) end
end

if not h[1] then
  if inq then
    for q = 1, 3 do rcall('ZREM', queues[q], card) end
    return 'orphan_entry'
  end
  if rcall('ZREM', frozenKey, card) == 1 then return 'orphan_frozen' end
  if rcall('SREM', KEYS[6], card) == 1 then return 'orphan_confirming' end
  return false
end
if not versionWhole(h[8]) then
  versionRecover(key)
  return 'no_version'
end
if h[2] == '1' then
  local finding = false
  if inq then
    for q = 1, 3 do rcall('ZREM', queues[q], card) end
    finding = 'frozen_in_queue'
  end
  if not rcall('ZSCORE', frozenKey, card) then
    rcall('ZADD', frozenKey, now, card)
    finding = finding or 'frozen_unlisted'
  end
  return finding
end
local unlisted = false
if h[5] == '1' and rcall('SISMEMBER', KEYS[6], card) == 0 then
  rcall('SADD', KEYS[6], card)
  unlisted = 'confirming_unlisted'
end
-- (not frozen: the branch above returned)
if rcall('ZREM', frozenKey, card) == 1 then unlisted = unlisted or 'orphan_frozen' end
if h[3] and (tonumber(h[4]) or 0) < now - grace then
  rcall('HDEL', key, 'claim', 'lease_until')
  rcall('ZADD', queues[prio + 1], now, card)
  return 'stale_claim'
end
if not inq then
  local due = now
  local nextCall = (tonumber(h[6]) or 0) + tonumber(ARGV[2])
  if h[5] ~= '1' and nextCall > due then due = nextCall end
  -- A live claim keeps its lease as the score, as the claim sets it: due
  -- sooner, the command would be claimed again under the call in flight.
  if h[3] and (tonumber(h[4]) or 0) > due then due = tonumber(h[4]) end
  rcall('ZADD', queues[prio + 1], due, card)
  return 'missing_entry'
end
if h[5] == '1' and not h[3] and score < now - grace then
  rcall('ZADD', queues[inq], now, card)
  return 'stuck_confirming'
end
return unlisted
