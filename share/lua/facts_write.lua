#!lua
--[[
  facts_write - write facts of ONE card (or device), each as of its time:
  a fact older than the one stored is not written.

  A fact is true as of a moment (ms on the Redis clock's scale): the
  request's as_of, the export's, or when srq receives it. A write whose time
  is older than the stored fact's is ignored for that fact, and the write's
  other facts still apply: whatever order they reach Redis in, the newest
  fact stays, and a stale export cannot undo a newer renewal. Equal times:
  the later write wins (the same request sent again changes nothing). A
  time ahead of the Redis clock counts as now (callers refuse one more than
  a few minutes ahead): nothing is newer than now, so a writer whose clock
  runs fast cannot shadow the writes that follow it.

  Where the times are: each write that holds the newest value of some fact
  is one field of the facts hash, '@' .. ms .. ':' .. source, whose value
  lists those facts' fields ("pe,du"). A write that loses its last fact to
  a newer one goes. Facts come in writes (a loader's row, a renewal, a usage
  report, a status srq saw), so a card keeps a few such fields, not a time
  and a writer per fact: its facts hash stays a small listpack. (A source
  is kept to its first 48 bytes: a field over 64 would turn the hash into a
  hash table, twice the bytes.) A fact stored without a time (before times
  were kept) is older than any timed write. The value '' deletes the fact;
  its time stays, so an older write cannot bring it back.

  A card belongs to one account: a hash that names another account in its
  carrier field is not written at all (checked here, atomically, not only
  by the caller's read before). The carrier field has no time: it is who
  the card is, not a fact about it.

  A batch: one write per key, each with its own reply, in one script call
  (on one server a tool sends its batch's writes at once; on a cluster each
  card's facts live in their own slot, and each write is a call).

  Input:
    KEYS[i]  write i's facts hash (P:card:ID:facts or P:device:ID:facts)
    ARGV     for each write, in KEYS order:
      as of, ms ('' : now, the moment srq receives it);
      source: who says so (a request's source, sr-asset, sr-confirm);
      the carrier field and the card's account ('' '' for a device): written
        when absent, and a hash naming another account is refused;
      n, then n field, value pairs (the facts' fields, README "Redis layout")
  Output: one reply per write, in order (an error for a write that failed):
    the fields not written, each stored as of a later time, joined by ','
      ('' when every one was written);
    or { 'carrier', ACCOUNT }: the hash names another account; nothing written
]]
--- @include "now"
local now = serverNow()
local nowS = string.format('%d', now)
-- The field of the last write's time and source: a batch's writes mostly
-- share them.
local lastAsOf, lastSource, lastThis
-- A fact's field as releases before the short fields wrote it (src/sr_facts.c's
-- table): the readers take it when the short one is absent, so a fact
-- deleted (a resume clears stopped_by) is deleted under both, or the old
-- value would be read again.
local legacyOf = { cr = 'carrier', dv = 'device', st = 'status', sb = 'stopped_by',
  pe = 'pkg_expires_at', du = 'data_used_kb', dq = 'data_quota_kb', rf = 'refunded',
  pp = 'polling_paused', ds = 'disabled' }

-- One write: key, its arguments from ARGV[a], up to ARGV[last]. Its reply.
local function writeOne(key, a, last)
  local asOfS = ARGV[a]
  local asOf = tonumber(asOfS)
  if not asOf or asOf > now then asOf, asOfS = now, nowS end
  local source, carrierField, carrier = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]

  -- What is stored: the account, and each write that holds facts: its
  -- field, and the facts it holds (as a list, and each fact's write and
  -- time). (A key damaged by hand, not a hash: its error, as Redis words
  -- it.)
  local h = redis.pcall('HGETALL', key)
  if h.err then return h end
  local storedCarrier
  local writeOf, timeOf, holds -- (none for a new card)
  for i = 1, #h, 2 do
    local f = h[i]
    if string.byte(f, 1) == 64 then -- '@'
      if not holds then writeOf, timeOf, holds = {}, {}, {} end
      local t, list = tonumber(string.match(f, '^@(%d+)')) or 0, {}
      for fact in string.gmatch(h[i + 1], '[^,]+') do
        writeOf[fact], timeOf[fact] = f, t
        list[#list + 1] = fact
      end
      holds[f] = list
    elseif f == carrierField then
      storedCarrier = h[i + 1]
    end
  end
  if carrierField ~= '' and storedCarrier and storedCarrier ~= carrier then
    return { 'carrier', storedCarrier }
  end

  if asOfS ~= lastAsOf or source ~= lastSource then
    lastAsOf, lastSource, lastThis = asOfS, source, '@' .. asOfS .. ':' .. string.sub(source, 1, 48)
  end
  local this = lastThis
  -- (The HSET's arguments in a table made at its usual size: one grown a
  -- field at a time is rehashed at every power of two, which cost more
  -- than the rest of a write.)
  local set = { false, false, false, false, false, false, false, false, false, false }
  local ns, del, stale, changed = 0, nil, nil, nil
  if carrierField ~= '' and not storedCarrier then
    set[1] = carrierField; set[2] = carrier; ns = 2
  end
  -- Its facts: written unless older; each taken from the write that held
  -- it. mine: the facts this write holds, as the field's value.
  local held = holds and holds[this]
  local mine = held and table.concat(held, ',')
  local added = false
  for i = a + 5, last, 2 do
    local field, value = ARGV[i], ARGV[i + 1]
    local from = writeOf and writeOf[field]
    if from and asOf < timeOf[field] then
      stale = stale and (stale .. ',' .. field) or field
    else
      if value == '' then
        del = del or {}
        del[#del + 1] = field
        if legacyOf[field] then del[#del + 1] = legacyOf[field] end
      else
        set[ns + 1] = field; set[ns + 2] = value; ns = ns + 2
      end
      if from ~= this then
        if from then
          local list, kept = holds[from], {}
          for _, f in ipairs(list) do
            if f ~= field then kept[#kept + 1] = f end
          end
          holds[from] = kept
          changed = changed or {}
          changed[from] = true
        end
        mine = mine and (mine .. ',' .. field) or field
        added = true
      end
    end
  end
  if added then set[ns + 1] = this; set[ns + 2] = mine; ns = ns + 2 end
  if changed then
    for w in pairs(changed) do
      if #holds[w] > 0 then
        set[ns + 1] = w; set[ns + 2] = table.concat(holds[w], ','); ns = ns + 2
      else
        del = del or {}
        del[#del + 1] = w -- it holds no newest fact any more
      end
    end
  end
  -- (Refused: an ACL, Redis out of memory: said as Redis words it. The
  -- HSET is all or nothing, and comes first: a refused HDEL leaves a
  -- deleted fact with its new time, and says so.)
  if ns > 0 then
    local r = redis.pcall('HSET', key, unpack(set, 1, ns))
    if type(r) == 'table' and r.err then return r end
  end
  if del then
    local r = redis.pcall('HDEL', key, unpack(del))
    if type(r) == 'table' and r.err then return r end
  end
  return stale or ''
end

local replies, a = {}, 1
for k = 1, #KEYS do
  local last = a + 4 + 2 * tonumber(ARGV[a + 4])
  local ok, r = pcall(writeOne, KEYS[k], a, last)
  if not ok then r = redis.error_reply(type(r) == 'table' and (r.err or '?') or tostring(r)) end
  replies[k] = r
  a = last + 1
end
return replies
