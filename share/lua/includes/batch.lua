--[[
  batch - a script over many items of one account (gate, confirm): the
  account's keys and arguments first, then each item's two keys (its card's
  command hash and idle bucket) and its arguments.
]]

-- Call fn(key, bucket, arg1 .. argN) for each item: item i's keys are
-- KEYS[ownKeys + 2i - 1] and KEYS[ownKeys + 2i], its nArgs arguments follow
-- the script's ownArgs and those of the items before it. Returns the
-- replies in order. Each item runs under pcall: one item's error (a card
-- hash of the wrong type, a priority out of range) is that item's reply,
-- not its batch's, and the others go on. flush, when given, sends the
-- writes the items gathered (includes/later.lua) before an item whose card
-- an earlier item of the batch had: it reads what they wrote.
local function batchEach(ownKeys, ownArgs, nArgs, fn, flush)
  local replies, seen = {}, {}
  for i = 1, (#KEYS - ownKeys) / 2 do
    local a = ownArgs + nArgs * (i - 1)
    local key = KEYS[ownKeys + 2 * i - 1]
    if flush then
      if seen[key] then flush(); seen = {} end
      seen[key] = true
    end
    local ok, r = pcall(fn, key, KEYS[ownKeys + 2 * i], unpack(ARGV, a + 1, a + nArgs))
    replies[i] = ok and r or
      redis.error_reply(type(r) == 'table' and (r.err or '?') or tostring(r))
  end
  return replies
end
