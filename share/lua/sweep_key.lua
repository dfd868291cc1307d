#!lua
--[[
  sweep_key - move ONE account key of the wrong type aside, the check and
  the move in one step: a key repaired meanwhile (by another sweep, by
  hand) and written again by the pipeline is never moved.

  Input:
    KEYS[1]  P:*             the key
    KEYS[2]  P:*:damaged:*   its aside name (same hash tag)
    ARGV[1]  type  the type it must have
  Output:
    the type it had when moved; false when it is absent or of the right
    type now; an error when the aside name is taken
]]
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' or t == ARGV[1] then return false end
if redis.call('RENAMENX', KEYS[1], KEYS[2]) == 0 then
  return redis.error_reply('aside name ' .. KEYS[2] .. ' is taken')
end
return t
