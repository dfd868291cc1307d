--[[
  out - a card's outstanding change: a call that may be at the carrier, apart
  from the command (which a new request can turn meanwhile). Kept in the
  command hash's field 'out' as "ACTION VER SINCE HOW [TXN]":
    ACTION  stop | resume: the direction sent
    VER     the version of the command it was sent for
    SINCE   when it was sent, or accepted (ms)
    HOW     sent (at the carrier, no answer yet: a crash here is unknown) |
            accepted (in progress at the carrier: it may land until SINCE +
            settle ms) | unknown (it may or may not have applied; at an
            asynchronous carrier it may land until SINCE + settle ms too)
    TXN     the carrier's id of an accepted change, when it gave one
  The gate records it as the call passes (sent); the call's result says how
  it stands (landed or refused: gone; accepted, unknown: kept); a status
  query settles it (confirm.lua).
]]

-- The state a command's action puts the card in.
local function targetOf(action)
  return action == 'stop' and 'stopped' or 'active'
end

-- The change as read (the field's value), or nil.
local function outRead(v)
  if not v then return nil end
  local act, ver, at, how, txn = string.match(v, '^(%a+) (%d+) (%d+) (%a+) ?(.*)$')
  if not act then return nil end
  return { act = act, ver = ver, at = tonumber(at), kind = how, txn = txn }
end

-- The field's value for a change.
local function outValue(act, ver, at, how, txn)
  return act .. ' ' .. ver .. ' ' .. at .. ' ' .. how .. ((txn and txn ~= '') and (' ' .. txn) or '')
end
