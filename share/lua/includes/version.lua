--[[
  version - a command's version, and what to do when its hash lost it.

  A version is a whole number, written by enqueue and never by hand. A hash
  that holds a command (an action) but no whole-number version was damaged
  (a hand edit): the claim leaves such a command waiting, and the sweep, an
  enqueue or sr-admin give it a version again with versionRecover.
]]

-- Whether v (a hash field as read) is a version as enqueue writes it: digits
-- with no leading zero, short enough to be exact in Lua. Not "1.0", " 1" or
-- "01", which tonumber takes: a claim's token and the gate compare the
-- version as written, and "01" would never equal the task's 1.
local function versionWhole(v)
  return type(v) == 'string' and #v <= 15 and string.match(v, '^[1-9]%d*$') ~= nil
end

-- A version for the command in key that lost its own: one above every
-- version its hash still names (the claim, call and query tokens are
-- "version-hexdigits"; counted_ver; superseded), so that no claim in flight,
-- and no result of one, passes for it. Versions of commands finished before
-- may repeat (nothing of them is left to tell). Written, and returned.
local function versionRecover(key)
  local h = redis.call('HMGET', key, 'claim', 'called', 'queried', 'counted_ver', 'superseded')
  local top = 0
  for i = 1, 5 do
    local d = h[i] and string.match(h[i], '^(%d+)')
    local n = versionWhole(d) and tonumber(d)
    if n and n > top then top = n end
  end
  redis.call('HSET', key, 'ver', string.format('%d', top + 1))
  return top + 1
end
