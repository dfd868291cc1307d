#!lua
--[[
  migrate_card - a card's hash with no command, as 0.1 left it once the
  command finished, put to sleep in its idle bucket (see idle.lua), as a
  finish does now. A card with a command is left alone (its finish will),
  and so is a hash with no version (not a card's whole state). Idempotent.

  Input:
    KEYS[1]  card:*  command hash of a card
    KEYS[2]  idle:*  its idle bucket
  Output:
    1 when it was put to sleep in its bucket, else 0
]]
--- @include "idle"
return cardSleepIfIdle(KEYS[1], KEYS[2]) and 1 or 0
