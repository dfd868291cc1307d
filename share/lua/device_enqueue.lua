#!lua
--[[
  device_enqueue - ask for an evaluation of all the cards of one device.

  Requests for one device merge: the earliest due time wins (ZADD LT, which
  also adds a device not yet queued), every request bumps the device's
  version, and its scene joins the device's scene set. dev-eval snapshots
  version and scenes when it claims the device, and removes the device only
  if the version did not move meanwhile, so a request that arrives during an
  evaluation causes exactly one more pass.

  Input:
    KEYS[1]  P:device_eval:{d*}:queue         device queue of the shard (ZSET device -> due ms)
    KEYS[2]  P:device_eval:{d*}:dev:*         device state (HASH ver, claim, lease_until)
    KEYS[3]  P:device_eval:{d*}:dev:*:scenes  the device's pending scenes (SET)
    ARGV[1]  device  device id
    ARGV[2]  scene
  Output:
    the device's new version (integer)
  All keys share the shard's hash tag {dN}.
]]
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
rcall('ZADD', KEYS[1], 'LT', now, ARGV[1])
local ver = rcall('HINCRBY', KEYS[2], 'ver', 1)
rcall('SADD', KEYS[3], ARGV[2])
return ver
