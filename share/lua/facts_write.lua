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
    KEYS[i.1]  P:card:*:facts|P:device:*:facts  write i's facts hash
    ARGV[1..]  writes  for each write, in KEYS order:
      as of, ms ('' : the moment srq receives it: now, or the newest
        time stored for the card if Redis's clock stepped back since);
      source: who says so (a request's source, sr-asset, sr-confirm);
      the carrier field and the card's account ('' '' for a device): written
        when absent, and a hash naming another account is refused;
      n, then n field, value pairs (the facts' fields, docs/redis.md "Redis layout")
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
-- A fact's field as releases before the short fields wrote it (src/lib/sr_facts.c's
-- table): the readers take it when the short one is absent, so a fact
-- deleted (a resume clears stopped_by) is deleted under both, or the old
-- value would be read again.
local legacyOf = { cr = 'carrier', dv = 'device', st = 'status', sb = 'stopped_by',
  pe = 'pkg_expires_at', du = 'data_used_kb', dq = 'data_quota_kb', rf = 'refunded',
  pp = 'polling_paused', ds = 'disabled' }

-- Where a fact's field is in a write's value ("pe,st,du": two-letter
-- fields, so a match at 1, 4, 7... is one), or nil.
local function findIn(v, field)
  local p = string.find(v, field, 1, true)
  while p and (p - 1) % 3 ~= 0 do p = string.find(v, field, p + 1, true) end
  return p
end

-- A write's time, from its field ('@' .. ms .. ':' .. source).
local function writeTime(f)
  return tonumber(string.sub(f, 2, (string.find(f, ':', 2, true) or 0) - 1)) or 0
end

-- The value without the field found at p.
local function dropAt(v, p)
  if #v == 2 then return '' end
  if p == 1 then return string.sub(v, 4) end
  return string.sub(v, 1, p - 2) .. string.sub(v, p + 2)
end

-- The stored writes of the hash at hand (field, value, time once needed),
-- and the HSET's arguments: made once for the batch, at a size that holds
-- the usual write (a table grown a field at a time is rehashed at every
-- power of two), and reused: this runs for every result sr-confirm applies,
-- and a table per write cost more than its commands.
local wf, wv, wt = { false, false, false, false }, { false, false, false, false }, { false, false, false, false }
local set = { false, false, false, false, false, false, false, false, false, false, false, false }
local changed = { false, false, false, false }

-- One write: key, its arguments from ARGV[a], up to ARGV[last]. Its reply.
local function writeOne(key, a, last)
  local asOfS = ARGV[a]
  local asOf = tonumber(asOfS)
  local received = not asOf
  if not asOf or asOf > now then asOf, asOfS = now, nowS end
  local source, carrierField, carrier = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]

  -- What is stored: the account, and each write that holds facts: its
  -- field (wf), the facts it holds (wv), its time once needed (wt). (A key
  -- damaged by hand, not a hash: its error, as Redis words it.)
  local h = redis.pcall('HGETALL', key)
  if h.err then return h end
  local storedCarrier
  local nw = 0
  for i = 1, #h, 2 do
    local f = h[i]
    if string.byte(f, 1) == 64 then -- '@'
      nw = nw + 1
      wf[nw], wv[nw], wt[nw] = f, h[i + 1], false
    elseif f == carrierField then
      storedCarrier = h[i + 1]
    end
  end
  if carrierField ~= '' and storedCarrier and storedCarrier ~= carrier then
    return { 'carrier', storedCarrier }
  end
  -- A write as of when srq receives it is the newest word there is, even
  -- when the Redis clock stepped back since a stored fact's time: it is as
  -- of that time then (and the same write again still wins: equal times).
  if received then
    for j = 1, nw do
      wt[j] = writeTime(wf[j])
      if wt[j] > asOf then asOf = wt[j] end
    end
    if asOf > now then asOfS = string.format('%d', asOf) end
  end

  if asOfS ~= lastAsOf or source ~= lastSource then
    lastAsOf, lastSource, lastThis = asOfS, source, '@' .. asOfS .. ':' .. string.sub(source, 1, 48)
  end
  local this = lastThis
  -- This write's own field may be there already (the same request again).
  local mine, moved = nil, false
  for j = 1, nw do
    if wf[j] == this then mine = wv[j] end
    changed[j] = false
  end
  -- (The HSET's arguments in a table made at its usual size: one grown a
  -- field at a time is rehashed at every power of two.)
  local ns, del, stale = 0, nil, nil
  if carrierField ~= '' and not storedCarrier then
    set[1] = carrierField; set[2] = carrier; ns = 2
  end
  -- Its facts: written unless older; each taken from the write that held it.
  for i = a + 5, last, 2 do
    local field, value = ARGV[i], ARGV[i + 1]
    local from, at
    for j = 1, nw do
      at = findIn(wv[j], field)
      if at then from = j; break end
    end
    if from and not wt[from] then wt[from] = writeTime(wf[from]) end
    if from and asOf < wt[from] then
      stale = stale and (stale .. ',' .. field) or field
    else
      if value == '' then
        del = del or {}
        del[#del + 1] = field
        if legacyOf[field] then del[#del + 1] = legacyOf[field] end
      else
        set[ns + 1] = field; set[ns + 2] = value; ns = ns + 2
      end
      if not from or wf[from] ~= this then
        if from then
          wv[from] = dropAt(wv[from], at)
          changed[from] = true
        end
        mine = mine and (mine .. ',' .. field) or field
        moved = true
      end
    end
  end
  if moved then
    set[ns + 1] = this; set[ns + 2] = mine; ns = ns + 2
    for j = 1, nw do
      if changed[j] and wf[j] ~= this then
        if wv[j] ~= '' then
          set[ns + 1] = wf[j]; set[ns + 2] = wv[j]; ns = ns + 2
        else
          del = del or {}
          del[#del + 1] = wf[j] -- it holds no newest fact any more
        end
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
