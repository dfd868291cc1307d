#!lua
--[[
  lock_extend - extend a lock's hold only if we still hold it (compare and
  extend).

  The direct path holds a device lock while its calls run, which may take
  longer than any fixed hold; it extends the hold while it works. Extending
  blindly could lengthen a lock that expired and was taken by someone else
  meanwhile.

  Input:
    KEYS[1]  P:device:*:lock  the lock key
    ARGV[1]  token  our token
    ARGV[2]  px     the new hold, ms
  Output:
    1 extended, 0 not ours (expired, or held by another)
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
