--[[
  late - a call leaves later than its slot: hold the account's pace for that
  long too.

  The gate accounted the call at its slot, as if it left then. It may leave
  later: it must set up a new connection first (TCP, TLS), or the executor
  was late to send it. Every later slot moves by that much, so the time the
  rate accounts for is never earlier than when a request really leaves, and
  no second at the carrier holds more than qps arrivals. (The gate set tat
  past this call's slot, so moving tat moves exactly the calls after it.)

  Input:
    KEYS[1]  account edge state (HASH)
    ARGV[1]  how much later than its slot the call leaves, ms
  Output:
    the account's new pace (tat, ms)
]]
return redis.call('HINCRBYFLOAT', KEYS[1], 'tat', ARGV[1])
