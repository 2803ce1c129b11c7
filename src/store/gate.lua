-- odds-gate: one gate's state and its transitions, executed atomically in Redis. The Redis
-- encoding of src/core/authority/memory.rs (MemoryAuthority over src/core/rules/bucket.rs):
-- keep them in step, line for line; tests/parity.rs runs random operations through both and
-- compares answers.
-- KEYS[1]  the gate's hash, "og:{<scope>}:gate" (the scope is a hash tag: one Cluster slot)
-- ARGV[1]  operation: admit | resume | observe | clear | charge | quota
-- ARGV[2]  now in ms, or "" to use Redis TIME (tests pass a virtual clock)
-- ARGV[3]  burst        ARGV[4] ms per token (the gate's rate now)     ARGV[5] max pause ms
-- ARGV[6]  budget capacity ("" for no budget)
-- ARGV[7.] per operation (see below)
-- The hash's fields: tokens, last (the last refill), burst and per_token (the rate that refill
-- ran at: a call with another rate refills at this one up to now, then switches; absent in a
-- hash from before, which then takes the rate it is called with), paused (when an anchored
-- refill paused; absent when not), anchor (the admission whose response resumes it), cooldown,
-- quota, slow (1/0), sent (requests admitted so far, every process's: the next one's number)
-- and, with a budget, budget.
-- Times are Redis-clock ms. Every answer is {code, number, number, number, number, burst, ms per
-- token}, the last two the rate stored before the call; delays are relative to
-- Redis's now, so callers never compare their own clocks with another process's. Numbers are
-- stored with 17 significant digits, so the state round-trips exactly.

local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local called_burst = tonumber(ARGV[3])
local called_per_token = tonumber(ARGV[4])
local max_pause = tonumber(ARGV[5])
local capacity = tonumber(ARGV[6])
local SLACK = 1e-9

local s = redis.call('HMGET', key, 'tokens', 'last', 'cooldown', 'paused', 'anchor', 'budget',
  'quota', 'slow', 'burst', 'per_token', 'sent')
local burst = tonumber(s[9]) or called_burst
local per_token = tonumber(s[10]) or called_per_token
-- The rate as stored before this call: learning gates of other processes follow it.
local stored_burst, stored_per_token = burst, per_token
local tokens = tonumber(s[1]) or burst
local last = tonumber(s[2]) or now
local cooldown = tonumber(s[3]) or 0
local paused = tonumber(s[4])
local anchor = s[5]
local budget = tonumber(s[6]) or capacity
local quota = tonumber(s[7]) or 0
local slow = s[8] == '1'
local sent = tonumber(s[11]) or 0

-- TokenBucket::interval: the refill runs at half rate while slow.
local function interval()
  if slow then return per_token * 2 end
  return per_token
end

-- TokenBucket::resume: a paused refill restarts at `at` (within the pause's bounds).
local function resume(at)
  if paused then
    last = math.min(math.max(at, paused), paused + max_pause)
    paused = nil
  end
end

-- TokenBucket::refill: nothing while an anchored burst is on its way (until its response, or
-- max_pause at most), then continuously up to the burst.
local function refill()
  if paused then
    if now < paused + max_pause then return end
    resume(paused + max_pause)
  end
  if now > last then
    tokens = math.min(tokens + (now - last) / interval(), burst)
    last = now
  end
end

-- MemoryAuthority::wait_ms: ms until a whole token, at least 1; 0 when one is there.
local function wait_ms()
  refill()
  local missing = 1 - tokens
  if missing <= SLACK then return 0 end
  return math.max(math.ceil(missing * interval() - SLACK / 2 * interval()), 1)
end

-- MemoryAuthority::observe's pacing: when the server knows of fewer tokens than we do, someone
-- else is spending the key: lower ours to its count, and refill at half rate below 10% of the
-- limit (back to full rate once it recovers).
local function pace(limit, remaining)
  refill()
  local drained = tokens > remaining + 1
  if drained then tokens = math.min(tokens, remaining + 1) end
  local low = remaining < 0.1 * limit
  if (low and drained) or ((not low) and slow) then slow = low end
end

-- TokenBucket::retune with a count (MemoryAuthority::tune): a learning gate's count of the
-- tokens the key held when the server answered request number `at`, `is` that many or at most
-- (`max`) that many, less the requests admitted after it (by any process); the server's count
-- takes the place of a paused refill.
local function recount(kind, n, at)
  n = math.max(n - math.max(sent - at - 1, 0), 0)
  refill()
  paused = nil
  anchor = nil
  last = math.max(last, now)
  if kind == 'is' then tokens = n else tokens = math.min(tokens, n) end
  tokens = math.min(tokens, burst)
end

-- TokenBucket::retune without a count (MemoryAuthority::tune): follows a learned allowance
-- from now: the refill so far at the rate the bucket last refilled at, then the new rate,
-- never holding more than its burst.
local function retune(new_burst, new_per_token)
  refill()
  burst = new_burst
  per_token = new_per_token
  tokens = math.min(tokens, burst)
end

-- The store hears of a new rate with the first operation that passes it, at that operation's
-- time: the gate sends nothing when its rate changes.
if burst ~= called_burst or per_token ~= called_per_token then
  retune(called_burst, called_per_token)
end

local answer
if op == 'admit' then
  -- ARGV[7] the (first) admission's name; ARGV[8], ARGV[9] what a response said first (""
  -- for nothing): a limit and remaining count to pace by, or `is`/`max` and a learning gate's
  -- count of tokens; ARGV[10] how many wait to go; ARGV[11] the number of the request the
  -- count answered; ARGV[12] "1" for an account call (GET /usage, /limits), which the quota
  -- does not hold. Quota first, then cooldown, then as many tokens as are there, up to that
  -- many (the answer's fourth number; the fifth is the first one's number).
  if ARGV[8] == 'is' or ARGV[8] == 'max' then
    recount(ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[11]))
  else
    local limit = tonumber(ARGV[8])
    local remaining = tonumber(ARGV[9])
    if limit and remaining then pace(limit, remaining) end
  end
  if quota > now and ARGV[12] ~= '1' then
    answer = {'exhausted', quota - now, 0}
  elseif now < cooldown then
    answer = {'wait', math.max(cooldown - now, 1), 0}
  else
    refill()
    -- TokenBucket::take_anchored: a take from a full bucket pauses the refill until its
    -- response, because the server's refill starts when the burst arrives.
    local full = tokens >= burst - SLACK
    if tokens >= 1 - SLACK then
      tokens = tokens - 1
      if full then paused = now; anchor = ARGV[7] end
      local want, taken = tonumber(ARGV[10]) or 1, 1
      while taken < want and tokens >= 1 - SLACK do
        tokens = tokens - 1
        taken = taken + 1
      end
      local seq = sent
      sent = sent + taken
      answer = {'admitted', full and 1 or 0, wait_ms(), taken, seq}
    else
      answer = {'wait', wait_ms(), 0}
    end
  end
elseif op == 'resume' then
  -- ARGV[7] the admission whose response came back: if it anchored, refill from now.
  if anchor == ARGV[7] then
    anchor = nil
    resume(now)
  end
  answer = {'resumed', wait_ms(), 0}
elseif op == 'observe' then
  -- ARGV[7] cooldown ms ("" for none), ARGV[8] limit, ARGV[9] remaining ("" for none).
  local limit = tonumber(ARGV[8])
  local remaining = tonumber(ARGV[9])
  if limit and remaining then pace(limit, remaining) end
  local hold = tonumber(ARGV[7])
  if hold then cooldown = math.max(cooldown, now + hold) end
  answer = {'observed', math.max(cooldown - now, 0), slow and 1 or 0}
elseif op == 'clear' then
  cooldown = 0
  answer = {'observed', 0, slow and 1 or 0}
elseif op == 'charge' then
  -- ARGV[7] a retry's cost, ARGV[8] refunds to credit first (successes since the last charge).
  local cost = tonumber(ARGV[7])
  if not capacity then
    answer = {'charged', 0, 0}
  else
    budget = math.min(budget + tonumber(ARGV[8]), capacity)
    if budget >= cost then
      budget = budget - cost
      answer = {'charged', budget, 0}
    else
      answer = {'refused', budget, 0}
    end
  end
elseif op == 'quota' then
  -- ARGV[7] ms until the period ends: 0 reopens, a positive number closes until then.
  local ms = tonumber(ARGV[7])
  if ms > 0 then quota = now + ms else quota = 0 end
  answer = {'quota', math.max(quota - now, 0), 0}
else
  return redis.error_reply('odds-gate: unknown operation ' .. op)
end

local function exact(n) return string.format('%.17g', n) end
redis.call('HSET', key, 'tokens', exact(tokens), 'last', exact(last), 'cooldown', exact(cooldown),
  'quota', exact(quota), 'slow', slow and '1' or '0', 'burst', exact(burst),
  'per_token', exact(per_token), 'sent', exact(sent))
if paused then
  redis.call('HSET', key, 'paused', exact(paused))
else
  redis.call('HDEL', key, 'paused')
end
if anchor then
  redis.call('HSET', key, 'anchor', anchor)
else
  redis.call('HDEL', key, 'anchor')
end
if capacity then redis.call('HSET', key, 'budget', exact(budget)) end
-- Idle keys expire once nothing in them can matter: the bucket is full again, the cooldown and
-- any quota closure are over, plus a minute.
local idle = math.max(burst * interval() + max_pause, cooldown - now, quota - now, 0) + 60000
redis.call('PEXPIRE', key, math.ceil(idle))
return {answer[1], exact(answer[2]), exact(answer[3]), exact(answer[4] or 0),
  exact(answer[5] or 0), exact(stored_burst), exact(stored_per_token)}
