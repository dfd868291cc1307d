--[[
  alert - one alert per cause until it is acknowledged (sr-admin alerts --ack)
  or resolved (its cause goes away): no storms. The open-alerts HASH maps a
  cause ('failures:CARD', 'breaker:ACCOUNT', ...) to the alert's stream id;
  the stream keeps the last 10,000 alerts.
]]

-- Raise the alert (the stream entry's fields) unless its cause is open.
-- Returns the new alert's id, or nil when it was already open.
local function alertOnce(openKey, alertKey, cause, fields)
  if redis.call('HEXISTS', openKey, cause) == 1 then return nil end
  local id = redis.call('XADD', alertKey, 'MAXLEN', '~', 10000, '*', unpack(fields))
  redis.call('HSET', openKey, cause, id)
  return id
end
