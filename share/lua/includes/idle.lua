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
  when absent). The bucket shares the account's hash tag, and every script
  that touches it has it among its KEYS (Redis checks declared keys before
  a script runs, which matters while a slot moves between masters). A
  card's hash that outlives its command (written by an older release, or by
  a direct call) is read as it is. The 100 to a bucket hold for ids of
  digits: ids of letters too can fill a bucket past Redis's compact
  encoding (still correct, less compact).
]]
-- How the card functions write what nothing reads back in the same script
-- (a finished card's hash gone, its queue entries): at once, unless a batch
-- script gathers them for its end with `cardWrite = later` (later.lua).
local cardWrite = redis.call
local IDLE_FIELDS = { 'ver', 'last_call', 'seen', 'seen_ms', 'last_dir', 'dir_changes', 'superseded' }
-- A packed value longer than this would make its bucket leave the compact
-- encoding (Redis: hash-max-listpack-value 64); such a card keeps a hash.
local IDLE_MAX = 64

-- The card's field in its bucket: the last two characters of its id (the
-- callers name the bucket itself, a declared key: src/sr_keys.c sr_key_idle).
local function idleField(key)
  local id = string.match(key, ':card:([^:]*)$')
  return #id <= 2 and id or string.sub(id, -2)
end

-- The sleeping card's state (field -> value); nil when it is not asleep.
local function idleRead(key, bucket)
  local v = redis.call('HGET', bucket, idleField(key))
  if not v then return nil end
  local t, i = {}, 1
  for part in string.gmatch(v .. '|', '([^|]*)|') do
    if part ~= '' and IDLE_FIELDS[i] then t[IDLE_FIELDS[i]] = part end
    i = i + 1
  end
  return t
end

-- Wake a sleeping card before anything writes its hash: its state moves
-- back into the hash, with the fields of set (a flat list) written in the
-- same HSET, after it (so they win). Returns the state it woke with (nil:
-- it was not asleep).
local function cardWake(key, bucket, set)
  local t = idleRead(key, bucket)
  local all = {}
  if t then
    for k, v in pairs(t) do
      all[#all + 1] = k; all[#all + 1] = v
    end
  end
  for _, x in ipairs(set or {}) do all[#all + 1] = x end
  if #all > 0 then redis.call('HSET', key, unpack(all)) end
  if t then redis.call('HDEL', bucket, idleField(key)) end
  return t
end

-- The card awake, whatever happened since the caller last looked: the
-- direct path works on a card's hash between scripts, and a queued command
-- of the same card may finish (and put it to sleep) in between.
local function cardAwake(key, bucket)
  if redis.call('HEXISTS', key, 'ver') == 0 then cardWake(key, bucket) end
end

-- Put a card whose command is done to sleep: state (field -> value; false
-- or nil: absent) is packed into its bucket, then its hash goes (in that
-- order: a script stopped in between leaves the state twice, not nowhere).
-- A state without a version is not a card's whole state: left as it is.
-- Returns true when the card sleeps in its bucket, false when it keeps a
-- hash (a state too long to pack, or none).
local function cardSleep(key, bucket, state)
  if not state.ver then return false end
  local parts, last = {}, 0
  for i, k in ipairs(IDLE_FIELDS) do
    parts[i] = state[k] or ''
    if parts[i] ~= '' then last = i end
  end
  local v = table.concat(parts, '|', 1, last)
  if #v > IDLE_MAX then
    local set = {}
    for i = 1, last do
      if parts[i] ~= '' then set[#set + 1] = IDLE_FIELDS[i]; set[#set + 1] = parts[i] end
    end
    redis.call('DEL', key)
    redis.call('HSET', key, unpack(set))
    return false
  end
  -- At once, not gathered: a bucket that is not a hash (damaged) must fail
  -- this card's finish here, before anything of it is gathered, and not
  -- the writes of the whole batch at its end.
  redis.call('HSET', bucket, idleField(key), v)
  cardWrite('DEL', key)
  return true
end

-- A card whose hash holds no command (the direct path's, or one an older
-- release left) to sleep, as cardSleep does; false if it has a command.
local function cardSleepIfIdle(key, bucket)
  local h = redis.call('HMGET', key, 'action', unpack(IDLE_FIELDS))
  if h[1] then return false end
  local state = {}
  for i, k in ipairs(IDLE_FIELDS) do state[k] = h[i + 1] end
  return cardSleep(key, bucket, state)
end
