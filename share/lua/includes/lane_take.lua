--[[
  lane_take - the claim's side of the lanes (includes/lanes.lua): their due
  entries, each claimed when its command is still due in its queue. Only
  claim.lua takes from the lanes; the other scripts only add and drop.
]]
--- @include "lanes"
-- The claim's side (claim.lua): claim up to n of lane's due entries (want:
-- 'query' or 'retry'), each through claim(q, card, lane, want) when its
-- command is due in its queue q; an entry whose command left the queues is
-- dropped, one not due there yet moves to when it is. write and flush: the
-- claim's gathered writes (later.lua). Returns how many were claimed.
local function laneTake(lane, want, n, queues, now, claim, write, flush)
  local nowS, got = string.format('%d', now), 0
  while got < n do
    -- (Protected: while the account's slot moves to another master, a lane
    -- not here yet is refused; its work waits in its queue meanwhile.)
    local due = redis.pcall('ZRANGEBYSCORE', lane, '-inf', nowS, 'LIMIT', 0, string.format('%d', n - got))
    if due.err or #due == 0 then break end
    for j = 1, #due do
      local card, where = due[j], nil
      for q = 1, 3 do
        local score = redis.call('ZSCORE', queues[q], card)
        if score then where = { q, tonumber(score) }; break end
      end
      if not where then
        write('ZREM', lane, card) -- finished, frozen, or cancelled
      elseif where[2] > now then
        write('ZADD', lane, string.format('%d', where[2]), card) -- its queue says when
      elseif claim(where[1], card, lane, want) then
        got = got + 1
      end
    end
    flush()
  end
  return got
end
