#!lua
--[[
  late - a call leaves later than its slot: hold the account's pace for that
  long too.

  The gate accounted the call at its slot, as if it left then. It may leave
  later: it must set up a new connection first (TCP, TLS), or the executor
  was late to send it. A late call followed a second later by calls on time
  would crowd that second at the carrier, so every slot not granted yet
  moves by the lateness, and the time the rate accounts for is never earlier
  than when a request really leaves. (The gate set tat past every granted
  slot, so moving tat moves exactly the calls after them.)

  Input:
    KEYS[1]  account edge state (HASH)
    ARGV[1]  how much later than its slot the call leaves, ms
  Output:
    the account's new pace (tat, ms)
]]
return redis.call('HINCRBYFLOAT', KEYS[1], 'tat', ARGV[1])
