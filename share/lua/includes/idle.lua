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

  A card's command waits packed too, from the request that writes it until
  its claim, when the card has no hash of its own (asleep, or new):
    P:carrier:{c}:wait:898600123456789012 field "34"
  value: action|reason|scene|source|prio (scene empty when it is the
  reason). Its version and the rest of its state stay in its idle entry.
  A hash cost a waiting command ~200 B, most of it the key; packed it costs
  ~40. Whatever changes a waiting command other than the request that
  wrote it (its claim, a replacement or a cancel, an operator, the direct
  path, the sweep's repair) unpacks it into the card's hash first: from
  there on every script sees a hash, as before. A value that would not fit
  (a long source, a '|' in one) is written to a hash, as before.
]]
-- How the card functions write what nothing reads back in the same script
-- (a finished card's hash gone, its queue entries): at once, unless a batch
-- script gathers them for its end with `cardWrite = later` (later.lua).
local cardWrite = redis.call
-- The packed values' fields, in their order (scripts/lua-embed makes the C
-- side's sr_idle_fields and sr_wait_fields of these two lines).
local IDLE_FIELDS = { 'ver', 'last_call', 'seen', 'seen_ms', 'last_dir', 'dir_changes', 'superseded' }
local WAIT_FIELDS = { 'action', 'reason', 'scene', 'source', 'prio' }
-- A packed value longer than this would make its bucket leave the compact
-- encoding (Redis: hash-max-listpack-value 64); such a card keeps a hash.
local IDLE_MAX = 64

-- The card's field in its bucket: the last two characters of its id (the
-- callers name the bucket itself, a declared key: src/lib/sr_keys.c sr_key_idle).
local function idleField(key)
  local id = string.match(key, ':card:([^:]*)$')
  return #id <= 2 and id or string.sub(id, -2)
end

-- A packed idle state's values, in IDLE_FIELDS order ('' when absent):
-- one match, no table.
local function idleValues(v)
  return string.match(v, '^([^|]*)|?([^|]*)|?([^|]*)|?([^|]*)|?([^|]*)|?([^|]*)|?([^|]*)')
end

-- A packed idle state (field -> value).
local function idleParse(v)
  local t, iv = {}, { idleValues(v) }
  for i = 1, 7 do
    if iv[i] ~= '' then t[IDLE_FIELDS[i]] = iv[i] end
  end
  return t
end

-- A packed waiting command's action, reason, scene (the reason when left
-- empty), source and prio.
local function waitValues(w)
  local action, reason, scene, source, prio = string.match(w, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)')
  return action, reason, scene ~= '' and scene or reason, source, prio
end

-- The sleeping card's state (field -> value); nil when it is not asleep.
local function idleRead(key, bucket)
  local v = redis.call('HGET', bucket, idleField(key))
  return v and idleParse(v)
end

-- The card's command waiting packed in wait (field -> value: action,
-- reason, scene, source, prio); nil when it has none.
local function waitRead(key, wait)
  local v = redis.call('HGET', wait, idleField(key))
  if not v then return nil end
  local t = {}
  t.action, t.reason, t.scene, t.source, t.prio = waitValues(v)
  return t
end

-- A card's idle state packed: its bucket's value.
local function idlePack(state)
  local parts, last = { nil, nil, nil, nil, nil, nil, nil }, 0 -- sized: see cardUnpackValues
  for i = 1, 7 do
    local v = state[IDLE_FIELDS[i]] or ''
    parts[i] = v
    if v ~= '' then last = i end
  end
  return table.concat(parts, '|', 1, last), parts, last
end

-- A new command of a card with no hash, packed: idle is its idle state
-- packed, with its new version. Returns false, having written nothing, when
-- a value would not fit.
local function waitPack(key, bucket, wait, idle, action, reason, scene, source, prio)
  if scene == reason then scene = '' end
  if string.find(reason, '|', 1, true) or string.find(scene, '|', 1, true) or
      string.find(source, '|', 1, true) then
    return false
  end
  local w = action .. '|' .. reason .. '|' .. scene .. '|' .. source .. '|' .. prio
  if #w > IDLE_MAX or #idle > IDLE_MAX then return false end
  local f = idleField(key)
  redis.call('HSET', bucket, f, idle)
  redis.call('HSET', wait, f, w)
  return true
end

-- Into the card's hash: a packed idle state's values iv and a waiting
-- command's wv (tables of idleValues and waitValues; nil: none), then the
-- fields of set (a flat list, after them: they win). Their bucket entries
-- go with del (redis.call, or a batch's later). f: the card's field in its
-- buckets, when the caller has it.
local function cardUnpackValues(key, bucket, wait, iv, wv, set, del, f)
  -- Sized for the most it holds (7 + 5 pairs, and a claim's 3): a table
  -- grown one field at a time is rehashed at every power of two, which
  -- cost a claim more than the HSET it builds.
  local all, n = { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, 0
  if iv then
    for i = 1, 7 do
      if iv[i] ~= '' then all[n + 1], all[n + 2] = IDLE_FIELDS[i], iv[i]; n = n + 2 end
    end
  end
  if wv then
    local F = WAIT_FIELDS
    all[n + 1], all[n + 2], all[n + 3], all[n + 4], all[n + 5] = F[1], wv[1], F[2], wv[2], F[3]
    all[n + 6], all[n + 7], all[n + 8], all[n + 9], all[n + 10] = wv[3], F[4], wv[4], F[5], wv[5]
    n = n + 10
  end
  if set then
    for i = 1, #set do all[n + i] = set[i] end
    n = n + #set
  end
  if n > 0 then redis.call('HSET', key, unpack(all, 1, n)) end
  if iv or wv then
    f = f or idleField(key)
    if iv then del('HDEL', bucket, f) end
    if wv then del('HDEL', wait, f) end
  end
end

-- The same from the packed values as read (t, w: strings; nil: none).
local function cardUnpack(key, bucket, wait, t, w, set, del)
  cardUnpackValues(key, bucket, wait, t and { idleValues(t) }, w and { waitValues(w) }, set, del)
end

-- Wake a sleeping card before anything writes its hash: its state, and its
-- waiting command if wait is given, move back into the hash, with the
-- fields of set written in the same HSET.
local function cardWake(key, bucket, set, wait)
  local f = idleField(key)
  cardUnpack(key, bucket, wait, redis.call('HGET', bucket, f), wait and redis.call('HGET', wait, f), set,
    redis.call)
end

-- The card awake, whatever happened since the caller last looked: the
-- direct path works on a card's hash between scripts, and a queued command
-- of the same card may finish (and put it to sleep), and a new one be
-- packed, in between.
local function cardAwake(key, bucket, wait)
  if redis.call('HEXISTS', key, 'ver') == 0 then cardWake(key, bucket, nil, wait) end
end

-- A command waiting packed into its card's hash, before a script that
-- changes it; false when the card has a hash or no waiting command.
local function cardUnpackWaiting(key, bucket, wait)
  if redis.call('EXISTS', key) == 1 or not waitRead(key, wait) then return false end
  cardWake(key, bucket, nil, wait)
  return true
end

-- Put a card whose command is done to sleep: state (field -> value; false
-- or nil: absent) is packed into its bucket, then its hash goes (in that
-- order: a script stopped in between leaves the state twice, not nowhere).
-- A state without a version is not a card's whole state: left as it is.
-- Returns true when the card sleeps in its bucket, false when it keeps a
-- hash (a state too long to pack, or none).
local function cardSleep(key, bucket, state)
  if not state.ver then return false end
  local v, parts, last = idlePack(state)
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
