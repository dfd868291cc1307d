#!lua
--[[
  sweep_device - inspect and repair ONE device's evaluation state.

    device_stale_claim    claimed, lease expired long ago: released, due now
    device_missing_entry  scenes waiting but the device is in no queue: due now

  Input:
    KEYS[1]  P:device_eval:{d*}:queue         device queue of the shard
    KEYS[2]  P:device_eval:{d*}:dev:*         device state (HASH)
    KEYS[3]  P:device_eval:{d*}:dev:*:scenes  the device's scenes (SET)
    ARGV[1]  device  device id
    ARGV[2]  grace   grace ms
  Output:
    the finding's name, or false
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = rcall('HMGET', KEYS[2], 'claim', 'lease_until')
if h[1] and (tonumber(h[2]) or 0) < now - tonumber(ARGV[2]) then
  rcall('HDEL', KEYS[2], 'claim', 'lease_until')
  rcall('ZADD', KEYS[1], now, ARGV[1])
  return 'device_stale_claim'
end
if rcall('SCARD', KEYS[3]) > 0 and not rcall('ZSCORE', KEYS[1], ARGV[1]) then
  rcall('ZADD', KEYS[1], now, ARGV[1])
  return 'device_missing_entry'
end
return false
