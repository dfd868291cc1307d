--[[
  clock - forward steps of the Redis server's clock (an NTP step), as a tool
  detected them and clock_step.lua recorded them in the account's edge
  (field 'steps': 'at:ms:lo:from', oldest first). A time written before a
  step is behind the clock after it by the step's size: a card's last call
  made before it would let the card's interval open that much early. Every
  check of a card's interval (gate, direct_gate, claim) counts the last
  call through clockLast.
]]

-- The steps of edge e (as edgeRead read it), flat { at, ms, at, ms, ... };
-- nil when there are none (the common case costs nothing more).
local function clockSteps(e)
  if not e.steps then return nil end
  local t = {}
  for at, ms in string.gmatch(e.steps, '(%d+):(%d+):%d+:%d+') do
    t[#t + 1] = tonumber(at)
    t[#t + 1] = tonumber(ms)
  end
  return t
end

-- A card's last call on the clock as it is now: one below a step's 'at'
-- (written on the clock before it) is moved on by the step's size, step
-- after step.
local function clockLast(steps, lastCall)
  if not steps or lastCall == 0 then return lastCall end
  for i = 1, #steps, 2 do
    if lastCall < steps[i] then lastCall = lastCall + steps[i + 1] end
  end
  return lastCall
end
