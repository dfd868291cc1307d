--[[
  cold - a call is about to leave on a new connection: hold the account's
  pace for the connection's setup time.

  The gate accounted the call at its slot, as if it left then; a connection
  still to be set up (TCP, TLS) makes it leave up to ARGV[1] ms later. Every
  later slot moves that much later, so the time the rate accounts for is
  never earlier than when a request really leaves, and no second at the
  carrier holds more than qps arrivals. (The gate set tat past this call's
  slot, so moving tat moves exactly the calls after it.)

  Input:
    KEYS[1]  account edge state (HASH)
    ARGV[1]  the setup time, ms
  Output:
    the account's new pace (tat, ms)
]]
return redis.call('HINCRBYFLOAT', KEYS[1], 'tat', ARGV[1])
