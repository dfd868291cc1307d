#!lua
--[[
  migrate_card - a card's hash with no command, as 0.1 left it once the
  command finished, put to sleep in its idle bucket (see idle.lua), as a
  finish does now. A card with a command is left alone (its finish will),
  and so is a hash with no version (not a card's whole state). Idempotent.

  Input:
    KEYS[1]  command hash of a card       KEYS[2] its idle bucket
  Output:
    1 when it was put to sleep in its bucket, else 0
]]
--- @include "idle"
local h = redis.call('HMGET', KEYS[1], 'action', 'ver', 'last_call', 'seen', 'seen_ms', 'last_dir',
  'dir_changes', 'superseded')
if h[1] or not h[2] then return 0 end
return cardSleep(KEYS[1], KEYS[2], { ver = h[2], last_call = h[3], seen = h[4], seen_ms = h[5],
  last_dir = h[6], dir_changes = h[7], superseded = h[8] }) and 1 or 0
