#!lua
--[[
  claim - lease due commands of ONE account to a pipeline, within its limits.

  Takes up to min(ARGV max, max_running - running) due commands, in lanes:
  status queries due (includes/lanes.lua), then retries of calls the
  carrier did not apply, then high priority, then normal, then bulk; when
  bulk work is due, a tenth of what the priorities get (at least one) is
  kept for it so a monthly reset is never starved. And no further ahead
  than the account sends: claims in flight at most what its effective rate
  sends in a second plus its calls' time at the carrier (the edge's 'lat',
  confirm.lua): a task claimed ahead of its slot only waits in sr-exec, and
  whatever comes meanwhile (a paying user's resume) waits behind it. Of
  those, normal and bulk work leave a tenth of a second's calls free (one
  at least), for the lanes above them to need no call to end first.
  Each claimed command gets a token and a lease: its queue score becomes the
  lease expiry, so a pipeline that dies leaves it claimable again once the
  lease runs out, with no one's help. A command whose previous claim passed
  the gate (field 'called') but never confirmed was possibly executed: it is
  turned into a status query (a crash between call and finish is unknown).
  A call whose card is still inside its interval is pushed to the interval's
  end instead of being claimed. A paused account, or one whose breaker is
  open, gets nothing claimed (its commands stay queued, untouched); a
  half-open breaker gets one claim, its probe.

  Input:
    KEYS[1]  stop_resume:high  queue high (ZSET card -> due ms)
    KEYS[2]  stop_resume       queue normal
    KEYS[3]  stop_resume:bulk  queue bulk
    KEYS[4]  sr_running        running claims (ZSET token -> lease expiry ms)
    KEYS[5]  limits            account limits (HASH qps, running, burst)
    KEYS[6]  seq               token sequence (STRING counter: with ARGV[4], it makes the tokens)
    KEYS[7]  confirming        confirming commands (SET card)
    KEYS[8]  edge              account edge state (HASH: pause, breaker; see includes/edge.lua)
    ARGV[1]  settings     the account's settings (JSON: interval, lease, qps, running, burst)
    ARGV[2]  card_prefix  command hash key prefix, e.g. "polling:carrier:{c17}:card:"
    ARGV[3]  max          max commands to claim now
    ARGV[4]  secret       the claiming process's secret (random, 32 hex digits): a token
                is the version, '-' and 16 hex digits of the SHA-1 of the secret
                and the sequence's next number, so that nobody can guess a live
                claim's token and forge its result (a forged line is 'stale')
  Output:
    { tasks, next_due_ms, queued, now_ms, held, held_until_ms }
    tasks: one flat array, 10 values per task: kind (call|query), card, action,
           ver, token, attempt, reason, scene, lane (query|retry|high|normal|
           bulk), txn (a query's: the carrier's id of the change it settles,
           from the card's outstanding change, includes/out.lua; else '')
           (a table per task cost Redis more to turn into its reply than the
           task's own redis.calls)
    next_due_ms: earliest score left in the queues (-1 when empty)
    queued: commands in the queues, claimed ones included (frozen excluded)
    held: 'paused' or 'breaker' when the account takes no call now, else ''
    held_until_ms: when that hold ends (0 with none, or for a limit of 0,
           which has no end)
  Command hashes, and the idle and wait buckets of a command waiting packed
  (includes/idle.lua: its claim moves it into its card's hash), are named
  from ARGV[2] and the queue members: they carry the same hash tag as KEYS,
  so the script still touches a single slot.
]]
local rcall = redis.call
--- @include "now"
--- @include "edge"
--- @include "clock"
--- @include "later"
--- @include "version"
--- @include "idle"
--- @include "lane_take"
local now = serverNow()
local nowS = digits(now)
local queues = { KEYS[1], KEYS[2], KEYS[3] }
local runningKey, limitsKey, seqKey = KEYS[4], KEYS[5], KEYS[6]
local s = cjson.decode(ARGV[1])
local prefix = ARGV[2]
-- The account's key prefix: where a card's idle and wait buckets are.
local account = string.sub(prefix, 1, -6) -- less "card:"
local max = tonumber(ARGV[3])
if #ARGV[4] < 32 then return redis.error_reply('claim: ARGV[4], the secret, is missing or short') end
-- (The secret and the number alone: under 56 bytes, one SHA-1 block. Two
-- accounts' tokens may be alike; each is only ever compared in its own.)
local secret = ARGV[4] .. ':'
local leaseMs, interval = s.lease, s.interval
local e = edgeRead(KEYS[8])
local steps = clockSteps(e)
local qps, maxRunning, _, stopped = edgeLimits(limitsKey, s)
local held, heldUntil = edgeBlocked(e, now, stopped)
if held then
  max = 0
elseif e.brk_until and e.brk_probe and (tonumber(e.brk_probe_until) or 0) > now then
  max = 0 -- half-open: the probe is out, wait for its result
elseif e.brk_until then
  max = math.min(max, 1) -- half-open: one claim, the probe
end

rcall('ZREMRANGEBYSCORE', runningKey, '-inf', nowS)
local running = rcall('ZCARD', runningKey)
if maxRunning > 0 and maxRunning - running < max then max = maxRunning - running end
-- What normal and bulk work may take: they leave rooms free, so that a due
-- query or retry, or a paying user's command, claimed next, waits for no
-- call to end first.
local normalMax = max
if qps > 0 then
  -- What the account sends in a second, and while its calls are out.
  local rate = edgeRate(e, qps, now, s)
  local ahead = math.ceil(rate * (1000 + (tonumber(e.lat) or 0)) / 1000)
  if ahead - running < max then max = ahead - running end
  -- (a tenth of a second's calls, one at least, never all of them)
  local keep = math.min(math.max(1, math.floor(rate / 10)), ahead - 1)
  -- And the rooms of the lanes' work coming due within that horizon: a
  -- call claimed now is sent within it, in the slot a query due then will
  -- want. At an asynchronous carrier every call brings a query a poll
  -- later, so queries come due at the rate the calls went; calls claimed
  -- beside them would push each one slots past its poll.
  local soon, till = 0, '(' .. digits(now + 1000 + (tonumber(e.lat) or 0))
  for _, lane in ipairs(LANES) do
    local key = not LANE_QUEUE[lane] and laneKey(queues[2], lane)
    if key and laneHas(key) then
      local n = redis.pcall('ZCOUNT', key, '(' .. nowS, till)
      if type(n) == 'number' then soon = soon + n end
    end
  end
  normalMax = math.min(max, ahead - running - keep - soon)
end
if max < 0 then max = 0 end

local tasks = {}
-- The lane of a task taken from queue q.
local LANE_OF_QUEUE = {}
for lane, q in pairs(LANE_QUEUE) do LANE_OF_QUEUE[q] = lane end
-- Every claim of this call gets the same lease.
local leaseS = digits(now + leaseMs)

-- Claim tokens: the account's sequence, taken once for the whole batch
-- (numbers a batch does not use are skipped; they need only be unique),
-- hashed with the secret (ARGV[4]).
local seqNext, seqLast = 0, -1
local function nextSeq()
  if seqNext > seqLast then
    seqLast = rcall('INCRBY', seqKey, max)
    seqNext = seqLast - max + 1
  end
  seqNext = seqNext + 1
  return seqNext - 1
end

-- A bucket's idle and wait keys by the card id's head: an account's cards
-- come in runs of consecutive ids, and a batch names each bucket many times.
local bucketKeys = {}
local function bucketsOf(head)
  local b = bucketKeys[head]
  if not b then
    b = { account .. 'idle:' .. head, account .. 'wait:' .. head }
    bucketKeys[head] = b
  end
  return b[1], b[2]
end

--- @include "claim_one"

-- Claim up to n from queue q; returns how many were claimed.
local function take(q, n)
  local got = 0
  while got < n do
    local due = rcall('ZRANGEBYSCORE', queues[q], '-inf', nowS, 'LIMIT', 0, digits(n - got))
    if #due == 0 then break end
    for j = 1, #due do
      if claimOne(q, due[j]) then got = got + 1 end
    end
    -- The new scores, one ZADD per key, before the queue is read again.
    laterFlush()
  end
  return got
end

-- Taken: what this call claimed so far (all of it uses rooms).
local taken = 0
-- What bulk keeps when it has work due: a tenth (one at least) of what the
-- priority lanes find left, so that a monthly reset is never starved.
local reserve
-- How many lane may claim now: an index lane up to max; the priority lanes
-- less bulk's tenth, which bulk then takes with its own; normal and bulk
-- within normalMax too.
local function share(lane)
  if not LANE_QUEUE[lane] then return max - taken end
  if not reserve then
    reserve = 0
    if max - taken > 1 and #rcall('ZRANGEBYSCORE', queues[3], '-inf', nowS, 'LIMIT', 0, 1) > 0 then
      reserve = math.max(1, math.floor((max - taken) / 10))
    end
  end
  if lane == 'high' then return max - taken - reserve end
  if lane == 'bulk' then return math.min(max, normalMax) - taken end
  return math.min(max - reserve, normalMax) - taken
end
-- The lanes in their order (includes/lanes.lua).
for _, lane in ipairs(LANES) do
  local n, q = share(lane), LANE_QUEUE[lane]
  if n > 0 and q then
    taken = taken + take(q, n)
  elseif n > 0 then
    taken = taken + laneTake(laneKey(queues[2], lane), lane, n, queues, now, claimOne, later, laterFlush)
  end
end

local nextDue, queued = -1, 0
for q = 1, 3 do
  queued = queued + rcall('ZCARD', queues[q])
  local first = rcall('ZRANGE', queues[q], 0, 0, 'WITHSCORES')
  if #first == 2 then
    local s = tonumber(first[2])
    if nextDue < 0 or s < nextDue then nextDue = s end
  end
end
if held and nextDue >= 0 and nextDue < heldUntil then nextDue = heldUntil end
-- (a limit of 0 holds the account until someone changes it: no end)
local heldEnd = 0
if held and (held == 'breaker' or (tonumber(e.pause_until) or 0) > now) then heldEnd = heldUntil end
return { tasks, nextDue, queued, now, held or '', heldEnd }
