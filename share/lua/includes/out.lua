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

-- How the change out stands by a status query that observed the card
-- active or stopped: 'landed' (the query shows its target; also when there
-- is none to wait for), 'not landed' (it does not, and the change cannot
-- land any more), or nil while it may still land: one the carrier accepted,
-- within settle ms of it; and at an asynchronous carrier (async: its profile
-- says so, or it has answered "in progress" before) one whose answer was
-- lost or unknown too, for it may have been accepted. At a carrier that
-- answers when it has applied, a query settles an unknown change at once.
-- A query that observed the card pending (the carrier says a change is
-- under way) shows no state to settle by: the change may still land until
-- settle ms since it was accepted or sent, whatever its answer said (the
-- carrier has it), and then it did not; with none outstanding, none of
-- srq's is on its way ('not landed': the command's own call goes).
local function outSettled(out, observed, now, settle, async)
  if observed == 'pending' then
    if out and now < out.at + settle then return nil end
    return 'not landed'
  end
  if not out or observed == targetOf(out.act) then return 'landed' end
  if (out.kind == 'accepted' or async) and now < out.at + settle then return nil end
  return 'not landed'
end

-- A call's answer to the change out (the gate's record of it; nil: none
-- kept, a call from before it was), in the command hash key: the call was
-- for action, version ver (the command's is curVer now), its slot at
-- gatedAt. Accepted (in progress) or unknown, it stays outstanding, and
-- that is returned; landed (ok, already: its target is what srq saw), or
-- not applied (refused, failed), it is gone.
local function outAnswered(key, out, action, ver, curVer, gatedAt, outcome, inProgress, txn, now)
  local o = out
  if not o or o.ver ~= ver then
    if curVer ~= ver then return nil end -- (an older call's, its change long settled)
    o = { act = action, ver = ver, at = tonumber(gatedAt) or now, txn = '' }
  end
  if outcome == 'ok' and inProgress then
    redis.call('HSET', key, 'out', outValue(o.act, ver, string.format('%d', now), 'accepted', txn))
    return 'accepted'
  elseif outcome == 'unknown' then
    redis.call('HSET', key, 'out', outValue(o.act, ver, string.format('%d', o.at), 'unknown', o.txn))
    return 'unknown'
  end
  if outcome == 'ok' or outcome == 'already' then
    redis.call('HSET', key, 'seen', targetOf(o.act), 'seen_ms', string.format('%d', now))
  end
  redis.call('HDEL', key, 'out')
  return nil
end

-- The change's order is asked about no more (a poll told nothing of it):
-- its txn goes, and the card's status settles it instead.
local function outForgetTxn(key, out)
  if out and out.txn and out.txn ~= '' then
    redis.call('HSET', key, 'out', outValue(out.act, out.ver, string.format('%d', out.at), out.kind, ''))
    out.txn = ''
  end
end
