--[[
  edge_answer - the account's edge (includes/edge.lua) after a carrier's
  answer: the effective rate lowered (edgeLower), the breaker's count
  (edgeResult), and what they keep in memory saved once per batch
  (edgeWindowSave, edgeLatency, edgeLatencySave). Part of edge.lua, which
  includes it at its end: it uses edge.lua's functions.
]]

-- The carrier's answer to a call paced since the last lowering: refused
-- for rate (429, a throttle code, too frequent) or not. Lowers the
-- effective rate by s.aimd_beta when the refusals are the carrier's limit,
-- not its noise. A carrier refuses some calls at random (a busy node, a
-- shared quota), a few in a hundred whatever the rate; were each pair of
-- them a lowering, such noise would hold the rate at two thirds of the
-- limit. Calls over a real limit are refused at a share that grows with the
-- excess (half of them at twice the limit). So, at the configured rate, the
-- answers are counted in blocks of N = max(30, 5 qps) (rq_n, of them rq_ref
-- refused), and the rate is lowered once a block holds K = max(3,
-- s.aimd_noise * N) refusals: a lone refusal never, a steady share under
-- s.aimd_noise almost never (2% of 100 reach 10 once in ~20000 blocks), a
-- carrier refusing half the calls within 2 K answers. Once the carrier has
-- shown a limit below the configured one (the rate is lowered and not yet
-- back), it is probed near that limit, where the share refused is small by
-- nature: a second refusal within a window (ref_at) lowers it again.
-- Once per episode: a refused call whose slot was granted before the last
-- lowering (gatedAt <= low_at) was paced at the old rate, and for a window
-- after a lowering the carrier still counts the calls before it: neither
-- tells anything new, and neither is counted. The counts are kept in e;
-- edgeWindowSave writes them once per batch. Returns from, to; or nil.
local function edgeLower(key, e, qps, now, gatedAt, refused, s)
  local low = tonumber(e.low_at) or 0
  if qps <= 0 or gatedAt <= low or now - low < s.window then return nil end
  local cur = edgeRate(e, qps, now, s)
  if cur < qps then
    if not refused then return nil end
    local last = tonumber(e.ref_at) or 0
    redis.call('HSET', key, 'ref_at', now)
    e.ref_at = now
    if now - last > s.window then return nil end
  else
    local n, r = (tonumber(e.rq_n) or 0) + 1, (tonumber(e.rq_ref) or 0) + (refused and 1 or 0)
    local N = math.max(30, math.ceil(5 * qps))
    local K = math.max(3, math.ceil(s.aimd_noise * N))
    e.rq_dirty = true
    if r < K then
      if n >= N then n, r = 0, 0 end
      e.rq_n, e.rq_ref = n, r
      return nil
    end
    e.rq_n, e.rq_ref = 0, 0
  end
  local new = math.max(math.min(1, qps), cur * s.aimd_beta)
  redis.call('HSET', key, 'eff', fmt3(new), 'eff_at', now, 'low_at', now)
  e.eff, e.eff_at, e.low_at = new, now, now
  return cur, new
end

-- One result's verdict on the account, for the breaker: 'fail' (a 5xx, an
-- unknown result, a call that could not be sent, an authentication that
-- failed), or 'ok' (the carrier answered). The window opens the breaker when
-- it holds s.brk_failures failures that are at least s.brk_ratio of its
-- results; an authentication failure opens it at once (force). The probe's
-- result closes it, or reopens it for twice the cool-down (up to
-- s.brk_cool_max). Returns 'opened', 'reopened', 'closed' or nil. e is kept
-- in step with what is written: a batch reads the edge once. The window's
-- counts are kept in e only; edgeWindowSave writes them, once per batch.
local function edgeResult(key, e, id, verdict, now, s, why, force)
  local open = e.brk_until ~= nil
  if open then
    if e.brk_probe ~= id then return nil end -- results of calls before it opened
    if verdict == 'ok' then
      redis.call('HDEL', key, 'brk_until', 'brk_since', 'brk_why', 'brk_cool', 'brk_probe',
        'brk_probe_until', 'brk_manual', 'win_start', 'win_n', 'win_fail')
      e.brk_until, e.brk_since, e.brk_why, e.brk_cool, e.brk_probe = nil, nil, nil, nil, nil
      e.brk_probe_until, e.brk_manual, e.win_start, e.win_n, e.win_fail = nil, nil, nil, nil, nil
      e.win_dirty = nil
      return 'closed'
    end
    local cool = math.min((tonumber(e.brk_cool) or s.brk_cool) * 2, s.brk_cool_max)
    redis.call('HSET', key, 'brk_until', now + cool, 'brk_cool', cool, 'brk_why', why)
    redis.call('HDEL', key, 'brk_probe', 'brk_probe_until')
    e.brk_until, e.brk_cool, e.brk_why, e.brk_probe, e.brk_probe_until = now + cool, cool, why, nil, nil
    return 'reopened'
  end
  local start, n, fails = tonumber(e.win_start) or 0, tonumber(e.win_n) or 0,
    tonumber(e.win_fail) or 0
  if now - start > s.brk_window then start, n, fails = now, 0, 0 end
  n = n + 1
  if verdict == 'fail' then fails = fails + 1 end
  if force or (fails >= s.brk_failures and fails >= s.brk_ratio * n) then
    redis.call('HSET', key, 'brk_until', now + s.brk_cool, 'brk_since', now, 'brk_cool', s.brk_cool,
      'brk_why', why)
    redis.call('HDEL', key, 'win_start', 'win_n', 'win_fail', 'brk_probe', 'brk_probe_until')
    e.brk_until, e.brk_since, e.brk_cool, e.brk_why = now + s.brk_cool, now, s.brk_cool, why
    e.win_start, e.win_n, e.win_fail, e.brk_probe, e.brk_probe_until = nil, nil, nil, nil, nil
    e.win_dirty = nil
    return 'opened'
  end
  e.win_start, e.win_n, e.win_fail, e.win_dirty = start, n, fails, true
  return nil
end

-- The breaker's window as edgeResult left it in e, and the answers
-- edgeLower counted, written once.
local function edgeWindowSave(key, e)
  if e.rq_dirty then
    redis.call('HSET', key, 'rq_n', digits(e.rq_n), 'rq_ref', digits(e.rq_ref))
    e.rq_dirty = nil
  end
  if not e.win_dirty then return end
  redis.call('HSET', key, 'win_start', digits(e.win_start), 'win_n', digits(e.win_n),
    'win_fail', digits(e.win_fail))
  e.win_dirty = nil
end

-- How long a call is out, from its gate to its result (ms, 'lat'): a
-- moving average over results (a tenth each), kept in e; edgeLatencySave
-- writes it once per batch. The claim counts it: claims in flight at the
-- carrier are not claims waiting for a slot.
local function edgeLatency(e, ms)
  if ms < 0 then return end
  local lat = tonumber(e.lat)
  e.lat = lat and lat + (ms - lat) / 10 or ms
  e.lat_dirty = true
end

local function edgeLatencySave(key, e)
  if not e.lat_dirty then return end
  redis.call('HSET', key, 'lat', digits(e.lat))
  e.lat_dirty = nil
end
