#!lua
--[[
  device_recheck - after a card request's command is written, ask for one
  more evaluation of the card's device if one may have raced with it.

  sr-enqueue judges a card on its device's facts as read, then writes; it
  does not take the device lock. An evaluation of the device (dev-eval)
  that ran between that read and this write judged the card on newer
  facts (the device disabled meanwhile) and its command was just replaced
  by this request's, judged on the older ones. Such an evaluation was
  claimed after the read (the claim counter 'seq' moved), or was claimed
  already when the card's facts were read. Then the device is asked for
  again, as device_enqueue does (scene 'device'), and judged on the facts
  as they are now; otherwise nothing is written.

  Input:
    KEYS[1]  P:device_eval:{d*}:queue         device queue of the shard (ZSET device -> due ms)
    KEYS[2]  P:device_eval:{d*}:dev:*         device state (HASH ver, claim, lease_until, seq)
    KEYS[3]  P:device_eval:{d*}:dev:*:scenes  the device's pending scenes (SET)
    ARGV[1]  device   device id
    ARGV[2]  seq      the device's 'seq' when the card's facts were read ('' none)
    ARGV[3]  claimed  '1' if the device was claimed then, else '0'
  Output:
    the device's new version (integer) when it was asked for again, else 0
  All keys share the shard's hash tag {dN}.
]]
local rcall = redis.call
local seq = rcall('HGET', KEYS[2], 'seq') or ''
if seq == ARGV[2] and ARGV[3] ~= '1' then return 0 end
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
rcall('ZADD', KEYS[1], 'LT', now, ARGV[1])
local ver = rcall('HINCRBY', KEYS[2], 'ver', 1)
rcall('SADD', KEYS[3], 'device')
return ver
