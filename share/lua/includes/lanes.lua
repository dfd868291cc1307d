--[[
  lanes - the work that goes before an account's queues: a status query
  that is due (a change accepted or unknown at the carrier waits on it), and
  the retry of a call the carrier did not apply (throttled, not sent: it was
  no change, and the card's interval was given back). Under a backlog these
  sit in their command's queue behind every older due entry: a reset day's
  20,000 bulk stops put a query a quarter of an hour behind its poll.

  A lane is a ZSET beside the queues (card -> due ms), named from the
  normal queue's key ("...:stop_resume:query", "...:stop_resume:retry"),
  so it carries the account's hash tag and every script still touches one
  slot. It is an index, not the truth: the command hash and its queue entry
  are. confirm.lua adds an entry when it puts a command back for a query or
  a retry; the claim takes a lane's due entries before any queue, each one
  only when its command is still that (a query: confirming; a retry: claimed
  before, not confirming) and due in its queue, and drops the others. A
  finish, a cancel and a freeze drop its entries (card.lua, confirm.lua);
  one left behind all the same is dropped when it comes due. A claimed entry moves to the lease's end with
  its queue entry: a pipeline that dies leaves it first in line again.
]]

-- An account's work, first served first: the claim takes from these in
-- this order (claim.lua), and sr-exec sends what it holds in it. The one
-- definition of the order: scripts/lua-embed makes C's enum sr_lane of
-- this line. The first two are the lanes of this file; the others are the
-- priority queues, a task's lane its queue's.
local LANES = { 'query', 'retry', 'high', 'normal', 'bulk' }
-- A priority lane's queue: its place among the account's three queues, as
-- every script's KEYS list them (high, normal, bulk). A lane not here is an
-- index of this file.
local LANE_QUEUE = { high = 1, normal = 2, bulk = 3 }

-- An index lane's key, named from the account's normal queue's key.
local function laneKey(normalQueue, lane) return normalQueue .. ':' .. lane end
local function laneQueryKey(normalQueue) return laneKey(normalQueue, 'query') end
local function laneRetryKey(normalQueue) return laneKey(normalQueue, 'retry') end

-- Whether a lane holds anything, asked once per script call (and known
-- from the entries this call adds, laneAdd): most finishes meet empty
-- lanes, and then drop nothing from them. An entry left all the same is
-- dropped when it comes due.
local laneLive = {}
local function laneHas(key)
  local live = laneLive[key]
  if live == nil then
    -- (an error: the account's slot is moving, the lane not here yet)
    live = redis.pcall('EXISTS', key) == 1
    laneLive[key] = live
  end
  return live
end

-- card's entry in lane, due at dueS, through write (redis.call, or a
-- batch's later).
local function laneAdd(lane, dueS, card, write)
  write('ZADD', lane, dueS, card)
  laneLive[lane] = true
end

-- card's command leaves the queues (finished, cancelled, frozen): it
-- leaves the lanes too, through write.
local laneKeysOf = {}
local function laneDrop(normalQueue, card, write)
  local k = laneKeysOf[normalQueue]
  if not k then
    k = { laneQueryKey(normalQueue), laneRetryKey(normalQueue) }
    laneKeysOf[normalQueue] = k
  end
  if laneHas(k[1]) then write('ZREM', k[1], card) end
  if laneHas(k[2]) then write('ZREM', k[2], card) end
end

