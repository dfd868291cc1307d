-- bench/yardstick.lua - the EVALSHA yardstick of bench/core.sh and
-- bench/instructions.sh: the Redis work of one new command (read its hash,
-- a new version, write it, queue it, audit it), run by redis-benchmark as
--   EVALSHA sha 3 bk:{a}:card:__rand_int__ bk:{a}:q bk:{a}:audit \
--     package_expired package_expired bench __rand_int__
local v = redis.call('HMGET', KEYS[1], 'action', 'ver', 'confirming', 'last_call', 'prio', 'frozen', 'lease_until')
local nv = redis.call('HINCRBY', KEYS[1], 'ver', 1)
redis.call('HSET', KEYS[1], 'action', 'stop', 'reason', ARGV[1], 'scene', ARGV[2], 'source', ARGV[3], 'prio', 1)
redis.call('ZADD', KEYS[2], 1, ARGV[4])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000000, '*', 'card', ARGV[4], 'ver_before', 0, 'ver_after', nv,
  'event', 'queued', 'action', 'stop', 'reason', ARGV[1], 'scene', ARGV[2], 'source', ARGV[3])
return nv
