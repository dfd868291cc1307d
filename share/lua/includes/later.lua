--[[
  later - writes of a batch script gathered and sent once per key: the
  finishes of a hundred results cost one DEL of a hundred hashes and one
  ZREM of a hundred members, not a hundred of each. A command run from a
  script costs Redis about 0.2 us beyond its own work (its argument
  objects, the command lookup and timing, its reply turned back into Lua):
  measured, a one-field HSET from Lua 0.33 us all told, an EXISTS 0.18 us.

  Only writes that nothing in the batch reads back, and that cannot fail
  for one card alone, go here: the account's queues, running claims,
  confirming set and open alerts, a finished card's hash (DEL), and the
  claim's removal of the bucket entries it has just read (HDEL). A write
  that may be a bucket's first touch in the item stays in its item, under
  its pcall, so that a damaged bucket fails that card and not the batch's
  end. batch.lua's
  batchEach flushes before an item whose card an earlier item had, so every
  item sees what the items before it did; the claim flushes before it
  reads its queue again.
]]
-- The finish itself (a hash's DEL) first, then what indexes it.
local LATER_ORDER = { 'DEL', 'ZADD', 'ZREM', 'SREM', 'HDEL' }
local LATER_GATHERS = {}
for _, cmd in ipairs(LATER_ORDER) do LATER_GATHERS[cmd] = true end
-- Arguments gathered in all before everything is flushed: far below what
-- one Lua call may unpack (about 8,000).
local LATER_MAX = 2000
-- cmd -> { order = { args... }, by = { key -> args } }
local laterPending, laterArgs = {}, 0

-- Send what is gathered. Each command is a protected call: one the account's
-- damaged key refuses (a string where the confirming set was) costs that
-- command, logged in Redis's log, not the other writes of the batch, whose
-- items have already been answered and audited; sr-sweep repairs what is
-- left out of place.
local function laterFlush()
  local pending = laterPending
  laterPending, laterArgs = {}, 0
  for _, cmd in ipairs(LATER_ORDER) do
    local p = pending[cmd]
    if p then
      for _, args in ipairs(p.order) do
        local r = redis.pcall(cmd, unpack(args, 1, args.n))
        if type(r) == 'table' and r.err then
          redis.log(redis.LOG_WARNING, 'srq: ' .. cmd .. ' ' .. tostring(args[1]) .. ': ' .. r.err)
        end
      end
    end
  end
end

-- later(cmd, key, a[, b[, c[, d]]]): cmd (one of LATER_ORDER) on key, with
-- these arguments added to the others for that key. DEL gathers its keys:
-- later('DEL', key). A flush never holds a ZADD and a ZREM of one member
-- (the callers flush before they touch a member again). Up to four
-- arguments, no varargs: it runs for every item of a batch, and select()
-- over varargs cost a call per argument.
local function later(cmd, key, a, b, c, d, e)
  -- A fifth is said, not dropped. (A nil between arguments would fail the
  -- whole gathered command at the flush: the callers pass none.)
  if e ~= nil then error('later: ' .. cmd .. ' takes up to four arguments') end
  local p = laterPending[cmd]
  if not p then
    if not LATER_GATHERS[cmd] then error('later: ' .. cmd .. ' is not gathered') end
    p = { order = {}, by = {} }
    laterPending[cmd] = p
  end
  -- (a priority out of range names no queue: that item's error, said plainly)
  if type(key) ~= 'string' then error('later: ' .. cmd .. ' of no key') end
  local isDel = cmd == 'DEL'
  local target = isDel and '' or key
  local args = p.by[target]
  if not args then
    args = isDel and { n = 0 } or { key, n = 1 }
    p.by[target] = args
    p.order[#p.order + 1] = args
  end
  local n = args.n
  if isDel then
    args[n + 1] = key
    n = n + 1
  elseif d ~= nil then
    args[n + 1], args[n + 2], args[n + 3], args[n + 4] = a, b, c, d
    n = n + 4
  elseif c ~= nil then
    args[n + 1], args[n + 2], args[n + 3] = a, b, c
    n = n + 3
  elseif b ~= nil then
    args[n + 1], args[n + 2] = a, b
    n = n + 2
  else
    args[n + 1] = a
    n = n + 1
  end
  laterArgs = laterArgs + n - args.n
  args.n = n
  if laterArgs >= LATER_MAX then laterFlush() end
end
