--[[
  later - the writes of a batch script gathered and sent once per key at its
  end: the finishes of a hundred results cost one DEL of a hundred hashes
  and one ZREM of a hundred members, not a hundred of each. Each command
  Redis runs from a script costs about a microsecond beyond its own work
  (the argument objects, the command lookup, its timing, the reply turned
  back into Lua), which for a finish was most of its cost.

  Only writes nothing in the batch reads back go here (the queues, the
  running claims, the confirming set, the open alerts, the idle buckets, a
  finished card's hash). batch.lua's batchEach flushes them before an item
  whose card an earlier item touched, so every item still sees what the
  items before it did; the claim flushes before it reads its queue again. Flushed in a fixed order, whatever order they came
  in: HSET first and DEL last, so an idle bucket holds a card's state
  before its hash goes (cardSleep's order).
]]
-- A flush never holds a ZADD and a ZREM of the same member: a script
-- flushes before it touches a member again (batchEach does).
local LATER_ORDER = { 'HSET', 'ZADD', 'ZREM', 'SREM', 'HDEL', 'DEL' }
-- Arguments gathered in all before everything is flushed: far below what
-- one Lua call may unpack (about 8,000).
local LATER_MAX = 2000
-- cmd -> { order = { args... }, by = { key -> args } }
local laterPending, laterArgs = {}, 0

local function laterFlush()
  for _, cmd in ipairs(LATER_ORDER) do
    local p = laterPending[cmd]
    if p then
      for _, args in ipairs(p.order) do redis.call(cmd, unpack(args)) end
    end
  end
  laterPending, laterArgs = {}, 0
end

-- later(cmd, key, arg...): cmd (one of LATER_ORDER) on key, with these
-- arguments added to the others for that key. DEL gathers its keys:
-- later('DEL', key).
local function later(cmd, key, ...)
  local p = laterPending[cmd]
  if not p then p = { order = {}, by = {} }; laterPending[cmd] = p end
  local isDel = cmd == 'DEL'
  local target = isDel and '' or key
  local args = p.by[target]
  if not args then
    args = isDel and {} or { key }
    p.by[target] = args
    p.order[#p.order + 1] = args
  end
  local n = select('#', ...)
  if isDel then
    args[#args + 1] = key
  else
    for i = 1, n do args[#args + 1] = select(i, ...) end
  end
  laterArgs = laterArgs + n + 1
  if laterArgs >= LATER_MAX then laterFlush() end
end
