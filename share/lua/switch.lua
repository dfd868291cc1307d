#!lua
--[[
  switch - set the global switch stop_resume_queue_enabled, atomic with its
  audit entry (who and why). Both keys carry the {global} hash tag, so on a
  cluster they live on one node and this stays one step.

  Input:
    KEYS[1]  P:{global}:stop_resume_queue_enabled  the switch (STRING '1' / '0')
    KEYS[2]  P:{global}:admin_audit                operator audit stream
    ARGV[1]  on         '1' on / '0' off
    ARGV[2]  who
    ARGV[3]  why
    ARGV[4]  audit_max  the audit stream's cap
  Output:
    the value before ('1', '0', or false if it was never set: on)
]]
local before = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'what', 'switch',
  'value', ARGV[1] == '1' and 'on' or 'off', 'who', ARGV[2], 'why', ARGV[3])
return before
