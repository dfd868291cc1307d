--[[
  idle - where a card sleeps between commands. A card with no command keeps
  only what outlives its commands: its version (versions never repeat), its
  last call (the interval), what srq last saw at the carrier, its last
  direction and recent direction changes (flapping), and the version last
  superseded. Most of a platform's cards are idle most of the time, and a
  hash of their own cost ~190 B each, most of it the key. So an idle card's
  state is packed into one field of a bucket hash shared by the cards whose
  ids differ only in the last two characters (ICCIDs of one batch are
  consecutive: up to 100 to a bucket, small enough for Redis's compact
  encoding):
    P:carrier:{c}:card:89860012345678901234  (while it has a command)
    P:carrier:{c}:idle:898600123456789012 field "34"  (while it has none)
  value: ver|last_call|seen|seen_ms|last_dir|dir_changes|superseded (empty
  when absent). The bucket shares the account's hash tag, so a script that
  holds the card's key may touch it. A card's hash that outlives its command
  (written by an older release, or by a direct call) is read as it is.
]]
local IDLE_FIELDS = { 'ver', 'last_call', 'seen', 'seen_ms', 'last_dir', 'dir_changes', 'superseded' }
-- A packed value longer than this would make its bucket leave the compact
-- encoding (Redis: hash-max-listpack-value 64); such a card keeps a hash.
local IDLE_MAX = 64

-- The bucket and field of the card whose command hash is key.
local function idleSlot(key)
  local base, id = string.match(key, '^(.*):card:([^:]*)$')
  local n = #id
  if n <= 2 then return base .. ':idle:', id end
  return base .. ':idle:' .. string.sub(id, 1, n - 2), string.sub(id, n - 1)
end

-- The sleeping card's state (field -> value), with its bucket and field;
-- nil when the card is not asleep.
local function idleRead(key)
  local bucket, f = idleSlot(key)
  local v = redis.call('HGET', bucket, f)
  if not v then return nil end
  local t, i = {}, 1
  for part in string.gmatch(v .. '|', '([^|]*)|') do
    if part ~= '' and IDLE_FIELDS[i] then t[IDLE_FIELDS[i]] = part end
    i = i + 1
  end
  return t, bucket, f
end

-- Wake a sleeping card before anything writes its hash: its state moves
-- back into the hash, with the fields of set (a flat list) written in the
-- same HSET, after it (so they win). Returns the state it woke with (nil:
-- it was not asleep).
local function cardWake(key, set)
  local t, bucket, f = idleRead(key)
  local all = {}
  if t then
    for k, v in pairs(t) do
      all[#all + 1] = k; all[#all + 1] = v
    end
    redis.call('HDEL', bucket, f)
  end
  for _, x in ipairs(set or {}) do all[#all + 1] = x end
  if #all > 0 then redis.call('HSET', key, unpack(all)) end
  return t
end

-- The card awake, whatever happened since the caller last looked: the
-- direct path works on a card's hash between scripts, and a queued command
-- of the same card may finish (and put it to sleep) in between.
local function cardAwake(key)
  if redis.call('HEXISTS', key, 'ver') == 0 then cardWake(key) end
end

-- Put a card whose command is done to sleep: its hash goes, and state
-- (field -> value; false or nil: absent) is packed into its bucket. A
-- state without a version is not a card's whole state: left as it is.
local function cardSleep(key, state)
  if not state.ver then return end
  local parts, last = {}, 0
  for i, k in ipairs(IDLE_FIELDS) do
    parts[i] = state[k] or ''
    if parts[i] ~= '' then last = i end
  end
  redis.call('DEL', key)
  if last == 0 then return end
  local v = table.concat(parts, '|', 1, last)
  if #v > IDLE_MAX then
    local set = {}
    for i = 1, last do
      if parts[i] ~= '' then set[#set + 1] = IDLE_FIELDS[i]; set[#set + 1] = parts[i] end
    end
    redis.call('HSET', key, unpack(set))
    return
  end
  local bucket, f = idleSlot(key)
  redis.call('HSET', bucket, f, v)
end
