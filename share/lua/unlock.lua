#!lua
--[[
  unlock - release a lock only if we still hold it (compare and delete).

  A lock is a plain key set with SET NX PX token; deleting it blindly could
  release a lock that expired and was taken by someone else meanwhile.

  Input:
    KEYS[1]  P:device:*:lock  the lock key
    ARGV[1]  token  our token
  Output:
    1 released, 0 not ours (expired, or held by another)
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
