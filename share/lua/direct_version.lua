#!lua
--[[
  direct_version - a fresh version for a direct-path call (global switch
  off): the request id of every intent (card-ver-action) is unique, and a
  claim of an older queued version fails its gate. A sleeping card (see
  idle.lua) is woken first, so the version counts on from its last one and
  direct_gate.lua finds its last call; direct_done.lua puts it back to sleep.

  Input:
    KEYS[1]  card:*  command hash of the card
    KEYS[2]  idle:*  its idle bucket
    KEYS[3]  wait:*  its wait bucket (a queued command waiting packed: idle.lua)
  A card whose queued command an operator froze is not the direct path's:
  nothing is changed, and the caller hands the request to the queue.

  Output:
    the new version (integer), or -1 when the card's command is frozen
]]
--- @include "idle"
--- @include "version"
local h = redis.call('HMGET', KEYS[1], 'action', 'ver', 'frozen')
if h[1] and h[3] == '1' then return -1 end
if not h[1] then
  cardAwake(KEYS[1], KEYS[2], KEYS[3])
elseif not versionWhole(h[2]) then
  versionRecover(KEYS[1]) -- a hash damaged by hand: above any claim in flight
end
return redis.call('HINCRBY', KEYS[1], 'ver', 1)
