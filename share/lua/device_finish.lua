#!lua
--[[
  device_finish - end one evaluation of a device.

  The processed scenes (the claim's snapshot) are removed; the device leaves
  the queue only if its version is still the one the claim saw. A request
  that came in during the evaluation moved the version: the device stays,
  due now, for exactly one more pass. 'retry' (the device lock was busy)
  keeps everything and makes the device due again after ARGV[5] ms.

  Input:
    KEYS[1]  P:device_eval:{d*}:queue         device queue of the shard
    KEYS[2]  P:device_eval:{d*}:dev:*         device state (HASH)
    KEYS[3]  P:device_eval:{d*}:dev:*:scenes  the device's pending scenes (SET)
    ARGV[1]  device   device id
    ARGV[2]  token    claim token
    ARGV[3]  version  claimed version
    ARGV[4]  how      done | retry
    ARGV[5]  delay    retry delay ms
    ARGV[6..] scenes  the scenes of the claim's snapshot
  Output:
    { 'done', ver } | { 'again', ver } | { 'retry', ver } | { 'lost', ver }
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local queue, key, scenes = KEYS[1], KEYS[2], KEYS[3]
local dev, token, ver = ARGV[1], ARGV[2], ARGV[3]
local h = rcall('HMGET', key, 'claim', 'ver')
local cur = tonumber(h[2]) or 0

if h[1] ~= token then return { 'lost', cur } end
rcall('HDEL', key, 'claim', 'lease_until')
if ARGV[4] == 'retry' then
  rcall('ZADD', queue, now + tonumber(ARGV[5]), dev)
  return { 'retry', cur }
end
if #ARGV >= 6 then rcall('SREM', scenes, unpack(ARGV, 6)) end
if h[2] == ver then
  rcall('ZREM', queue, dev)
  return { 'done', cur }
end
rcall('ZADD', queue, now, dev)
return { 'again', cur }
