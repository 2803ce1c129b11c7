-- odds-gate: one gate's rules, executed atomically in Redis (the same rules as src/core).
-- KEYS[1]  the gate's hash, "og:{<scope>}:gate" (the scope is a hash tag: one Cluster slot)
-- ARGV[1]  operation: admit | defer | resume | charge | quota
-- ARGV[2]  now in ms, or "" to use Redis TIME (tests pass a virtual clock)
-- ARGV[3]  burst        ARGV[4] ms per token     ARGV[5] max pause ms
-- ARGV[6]  budget capacity ("" for no budget)
-- ARGV[7.] per operation (see below)
-- Times are Redis-clock ms. Every answer is {code, number, number}; delays are relative to
-- Redis's now, so callers never compare their own clocks with another process's.

local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local burst = tonumber(ARGV[3])
local interval = tonumber(ARGV[4])
local max_pause = tonumber(ARGV[5])
local capacity = tonumber(ARGV[6])
local SLACK = 1e-9

local s = redis.call('HMGET', key, 'tokens', 'last', 'blocked', 'paused', 'anchor', 'budget', 'quota')
local tokens = tonumber(s[1]) or burst
local last = tonumber(s[2]) or now
local blocked = tonumber(s[3]) or 0
local paused = tonumber(s[4])
local anchor = s[5]
local budget = tonumber(s[6]) or capacity
local quota = tonumber(s[7]) or 0

-- Refill, as TokenBucket::refill: nothing while an anchored burst is on its way (until its
-- response, or max_pause at most), then continuously up to the burst.
local function resume_at(at)
  if paused then
    last = math.min(math.max(at, paused), paused + max_pause)
    paused = nil
    anchor = nil
  end
end
if paused and now >= paused + max_pause then resume_at(paused + max_pause) end
if not paused and now > last then
  tokens = math.min(burst, tokens + (now - last) / interval)
  last = now
end

-- Milliseconds until a whole token (a lower bound while paused), as TokenBucket::ready_at.
local function wait_ms()
  if tokens >= 1 - SLACK then return 0 end
  return math.max(math.ceil((1 - tokens) * interval - SLACK / 2 * interval), 1)
end

local answer
if op == 'admit' then
  -- ARGV[7] the asker's request id. Quota first, then cooldown, then tokens.
  if quota > now then
    answer = {'exhausted', quota - now}
  elseif now < blocked then
    answer = {'wait', math.max(blocked - now, 1)}
  elseif tokens >= 1 - SLACK then
    -- A take from a full bucket pauses the refill until its response: the server's refill
    -- starts when the burst arrives, not when we let it go.
    local full = (not paused) and tokens >= burst - SLACK
    tokens = tokens - 1
    if full then paused = now; anchor = ARGV[7] end
    -- The third element says when the next token will be there, so the asker's next head
    -- waits for it instead of asking at once.
    answer = {'admitted', full and 1 or 0, wait_ms()}
  else
    answer = {'wait', wait_ms()}
  end
elseif op == 'defer' then
  -- ARGV[7] delay ms: extend the cooldown, never shorten it.
  blocked = math.max(blocked, now + tonumber(ARGV[7]))
  answer = {'ok', blocked - now}
elseif op == 'resume' then
  -- ARGV[7] the request id whose response came back: if it anchored, refill from now.
  if anchor == ARGV[7] then resume_at(now) end
  answer = {'ok', wait_ms()}
elseif op == 'charge' then
  -- ARGV[7] a retry's cost: spend it if the budget has it, after ARGV[8], the refunds of the
  -- successes the asker saw since its last charge (they ride along with this call).
  local cost = tonumber(ARGV[7])
  if not capacity then
    answer = {'charged', 0}
  else
    budget = math.min(capacity, budget + (tonumber(ARGV[8]) or 0))
    if budget >= cost then
      budget = budget - cost
      answer = {'charged', budget}
    else
      answer = {'refused', budget}
    end
  end
elseif op == 'quota' then
  -- ARGV[7] ms until the period ends: 0 reopens, a positive number closes until then.
  local ms = tonumber(ARGV[7])
  quota = ms > 0 and now + ms or 0
  answer = {'ok', quota}
else
  return redis.error_reply('odds-gate: unknown operation ' .. op)
end

redis.call('HSET', key, 'tokens', tostring(tokens), 'last', tostring(last),
  'blocked', tostring(blocked), 'quota', tostring(quota))
if paused then
  redis.call('HSET', key, 'paused', tostring(paused), 'anchor', anchor)
else
  redis.call('HDEL', key, 'paused', 'anchor')
end
if capacity then redis.call('HSET', key, 'budget', tostring(budget)) end
-- Idle keys expire once nothing in them can matter: the bucket is full again, the cooldown and
-- any quota closure are over, plus a minute.
local idle = math.max(burst * interval + max_pause, blocked - now, quota - now, 0) + 60000
redis.call('PEXPIRE', key, math.ceil(idle))
return {answer[1], tostring(answer[2]), tostring(answer[3] or 0)}
