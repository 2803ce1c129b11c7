-- odds-gate: one gate's state and its transitions, executed atomically in Redis. The Redis
-- encoding of src/core/authority/memory.rs (MemoryAuthority over src/core/rules/bucket.rs):
-- keep them in step, line for line; tests/parity.rs runs random operations through both and
-- compares answers.
-- KEYS[1]  the gate's hash, "og:{<scope>}:gate" (the scope is a hash tag: one Cluster slot)
-- ARGV[1]  operation: admit | resume | feedback | clear | charge | quota | read | spent
-- ARGV[2]  now in ms, or "" to use Redis TIME (tests pass a virtual clock)
-- ARGV[3]  burst        ARGV[4] ms per token (the gate's rate now)     ARGV[5] max pause ms
-- ARGV[6]  budget capacity ("" for no budget)
-- ARGV[7.] per operation (see below)
-- SLACK, READING_LEASE_MS, FIRST_READ_RECHECK_MS, EARLY_READING_MS, MOST_OF_LEFT,
-- NEW_PERIOD_MS, MIN_ASKED, SCALE_LOW and SCALE_HIGH are src/core/base/protocol.rs's: build.rs
-- heads the script with them.
-- The hash's fields: tokens, last (the last refill), burst and per_token (the rate that refill
-- ran at: a call with another rate refills at this one up to now, then switches; absent in a
-- hash from before, which then takes the rate it is called with), paused (when an anchored
-- refill paused; absent when not), anchor (the admission whose response resumes it), cooldown,
-- quota, slow (1/0), sent (requests admitted so far, every process's: the next one's number),
-- order (the order between the processes' queues: src/core/authority/order.rs's numbers, in its
-- layout), with a budget, budget, and where gates spread their quota, credits (the shared spread:
-- src/core/authority/credits.rs over src/core/rules/credits.rs's CreditBucket, its numbers).
-- Times are Redis-clock ms. Every answer is {code, number, number, number, number, burst, ms per
-- token, fair order, credits}, burst and ms per token the rate stored before the call, the fair
-- order the clock and lanes of the order after it (its first 14 numbers), credits what an
-- admission with credits or a reading says of the shared spread (c_view; "" otherwise); delays are relative to
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

local s = redis.call('HMGET', key, 'tokens', 'last', 'cooldown', 'paused', 'anchor', 'budget',
  'quota', 'slow', 'burst', 'per_token', 'sent', 'order', 'credits')
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
local o = {}
for n in string.gmatch(s[12] or '', '%S+') do o[#o + 1] = tonumber(n) end
for i = #o + 1, 46 do o[i] = 0 end

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

-- MemoryAuthority::feedback's pacing: when we hold more tokens than the server can hold now
-- (its count as of the answered request, plus one for whole tokens, plus the refill over the
-- request's `age` ms, less the requests numbered above `heard`, the highest number heard of
-- when the answer came, nil for none: they went after it), someone else is spending the key:
-- lower ours to that, and refill at half rate below 10% of the limit (back to full rate once
-- it recovers).
local function pace(limit, remaining, heard, age)
  refill()
  local after = 0
  if heard then after = math.max(sent - heard - 1, 0) end
  local most = math.max(remaining + 1 + math.max(age, 0) / per_token - after, 0)
  local drained = tokens > most
  if drained then tokens = math.min(tokens, most) end
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

-- The order between the processes' queues (src/core/authority/order.rs and fair.rs): o[1], o[2]
-- the fair clock (whole admissions, and units of 2^-32); four lanes of (lane + 1, next start in
-- two numbers) from o[3]; eight claims of (who, lane + 1 or 0, arrival, when it asks next) from
-- o[15]. Every number stays below 2^53, so a tag is exact. start_of, cost and admitted_in_order
-- are the Lua twin of the fair queuing rule, src/core/rules/fair.rs (a script cannot share its
-- code): change both together; tests/parity.rs holds them to the same answers.
local LOW = 4294967296
local function before(ah, al, bh, bl) return ah < bh or (ah == bh and al < bl) end

-- Shares::start (fair::start): a head of `lane` (lane + 1; 0 for the front) starts at its lane's next start,
-- or at the clock if that is later.
local function start_of(lane)
  if lane ~= 0 then
    for i = 0, 3 do
      local k = 3 + 3 * i
      if o[k] == lane and before(o[1], o[2], o[k + 1], o[k + 2]) then return o[k + 1], o[k + 2] end
    end
  end
  return o[1], o[2]
end

-- fair::cost: 2^32 / weight units, rounded, at least 1 and at most 2^53.
local function cost(weight)
  local c = LOW / weight
  if c < 2 ^ 52 then c = math.floor(c + 0.5) end
  return math.max(math.min(c, 2 ^ 53), 1)
end

-- Fair::admitted (fair::serve): the clock moves to the head's start, its lane's next start one
-- turn later (in the lane's place, else the first free or spent one; none left: not kept).
local function admitted_in_order(lane, weight)
  local sh, sl = start_of(lane)
  o[1], o[2] = sh, sl
  if lane == 0 then return end
  local place
  for i = 0, 3 do
    local k = 3 + 3 * i
    if o[k] == lane then place = k; break end
    if not place and (o[k] == 0 or not before(sh, sl, o[k + 1], o[k + 2])) then place = k end
  end
  if place then
    local c = cost(weight)
    local ch = math.floor(c / LOW)
    local hi, lo = sh + ch, sl + (c - ch * LOW)
    if lo >= LOW then hi, lo = hi + 1, lo - LOW end
    o[place], o[place + 1], o[place + 2] = lane, hi, lo
  end
end

-- Order::put and Order::remove: the asking process's claim.
local function claim(who, lane, since, due)
  local spot
  for j = 0, 7 do
    local b = 15 + 4 * j
    if o[b] == who then spot = b; break end
    if not spot and o[b] == 0 then spot = b end
  end
  if spot then o[spot], o[spot + 1], o[spot + 2], o[spot + 3] = who, lane, since, due end
end
local function unclaim(who)
  for j = 0, 7 do
    local b = 15 + 4 * j
    if o[b] == who then o[b], o[b + 1], o[b + 2], o[b + 3] = 0, 0, 0, 0 end
  end
end

-- The shared spread (src/core/authority/credits.rs, SharedCredits): c_read (a reading has
-- answered; saved as 2 with c_early, the bucket's early reading claimed), c_next (no reading
-- claimed before it; absent: due), the scale (src/core/rules/scale.rs, CostScale): c_scale
-- (what a credit asked at no stated cost costs; 0 or absent: 1), c_stated and c_asked (credits
-- taken at stated costs, and asked at none, since the last usable reading), and once a reading
-- made one, the bucket (src/core/rules/credits.rs, CreditBucket): c_limit, c_end (the period's
-- end), c_rate,
-- c_others, c_tokens, c_last, c_used, c_ru (drawn from the reserve), c_tss (taken since the
-- reading out was sent), c_read_at, c_read_used, c_pace. The spread's settings come with each
-- operation that needs them: c_reserve, c_burst, c_refresh.
local INF = math.huge
local function exact(n) return string.format('%.17g', n) end
local cn = {}
for n in string.gmatch(s[13] or '', '%S+') do cn[#cn + 1] = tonumber(n) end
local c_read, c_early, c_next = (cn[1] or 0) >= 1, cn[1] == 2, cn[2] or -INF
local c_bucket = cn[3] == 1
local c_scale, c_stated, c_asked = cn[4] or 0, cn[5] or 0, cn[6] or 0
if c_scale == 0 then c_scale = 1 end
local c_limit, c_end, c_rate, c_others, c_tokens, c_last, c_used, c_ru, c_tss, c_read_at,
  c_read_used, c_pace = cn[7], cn[8], cn[9], cn[10], cn[11], cn[12], cn[13], cn[14], cn[15],
  cn[16], cn[17], cn[18]
local c_reserve, c_burst, c_refresh

-- CreditBucket::spread_left, cap, refill, repace, wait, spend.
local function c_spread_left() return c_limit * (1.0 - c_reserve) - (c_used - c_ru) end
local function c_cap() return math.min(c_rate * c_burst, MOST_OF_LEFT * math.max(c_spread_left(), 0)) end
local function c_refill()
  local untl = math.min(now, c_end)
  if untl > c_last then
    c_tokens = math.min(c_tokens + (untl - c_last) * c_rate, c_cap())
    c_last = untl
  end
end
local function c_repace()
  local time_left = c_end - now
  if time_left > 0 then c_rate = math.max(c_spread_left() / time_left - c_others, 0) else c_rate = 0 end
  c_last = math.max(c_last, math.min(now, c_end))
  c_tokens = math.min(c_tokens, c_cap())
end
local function c_wait(missing)
  if c_rate <= 0 then return INF end
  local at = now + math.ceil((missing - SLACK / 2) / c_rate)
  if at > c_end then return INF end
  return at
end
local function c_spend(cost) c_used = c_used + cost; c_tss = c_tss + cost end
-- CreditBucket::start.
local function c_start(used, limit, period_end)
  c_bucket = true
  c_limit, c_end, c_rate, c_others, c_tokens, c_last = limit, period_end, 0, 0, 0, now
  c_used, c_ru, c_tss, c_read_at, c_read_used, c_pace = used, 0, 0, now, used, 0
  c_repace()
  c_tokens = math.min(c_cap(), math.max(c_rate * c_refresh, OPENING_CREDITS))
end
-- CreditBucket::next_reading.
local function c_next_reading()
  if c_end > now then return math.min(now + c_refresh, c_end) end
  return now + math.min(math.max(now - c_end, PAST_END_REREAD_MS), c_refresh)
end
-- CreditBucket::ready (predict behind nobody): the time the credits are there (now if they are).
local function c_ready(cost)
  c_refill()
  if cost > c_spread_left() + SLACK or c_used + cost > c_limit + SLACK then return INF end
  local missing = math.min(cost, c_cap()) - c_tokens
  if missing > SLACK then return c_wait(missing) end
  return now
end
local function c_reserve_holds(cost) return c_used + cost <= c_limit + SLACK end
-- CostScale::credits: what a call asking `spend` takes.
local function c_credits(spend, stated)
  if stated then return spend end
  return spend * c_scale
end
-- CostScale::learn: from a usable reading's delta (nil: a period's turn); what the calls
-- counted cost by the scale now.
local function c_learn(delta)
  local stated, asked = c_stated, c_asked
  c_stated, c_asked = 0, 0
  if not delta then return 0 end
  if asked >= MIN_ASKED then
    c_scale = math.min(math.max((delta - stated) / asked, SCALE_LOW), SCALE_HIGH)
  end
  return stated + asked * c_scale
end
-- SharedCredits::due: when the next reading may be claimed; early (a second after the first
-- reading), once a bucket (c_early: claimed), while only the first has come and MIN_ASKED
-- credits were asked at no stated cost.
local function c_due()
  if c_bucket and not c_early and not (c_pace > 0) and c_asked >= MIN_ASKED then
    return math.min(c_next, c_read_at + EARLY_READING_MS)
  end
  return c_next
end
-- SharedCredits::ask: Go ('go'), a reading claimed ('read'), or wait this many ms.
local function credits_ask(spend, stated, reserve)
  if now >= c_due() then
    c_early = c_early or now < c_next
    c_next = now + math.min(READING_LEASE_MS, c_refresh)
    if c_bucket then c_tss = 0 end
    return 'read'
  end
  local cost = c_credits(spend, stated)
  local at
  if c_bucket then
    at = c_ready(cost)
    if at > now and reserve and c_reserve_holds(cost) then at = now end
  elseif not c_read then
    at = now + FIRST_READ_RECHECK_MS
  else
    at = now
  end
  if at <= now then return 'go' end
  return math.max(math.min(at, c_due()) - now, 1)
end
-- SharedCredits::take: CreditBucket::take, or take_reserved; the call counts for the scale.
local function credits_take(spend, stated, reserve)
  if not c_bucket then return end
  local cost = c_credits(spend, stated)
  if c_ready(cost) <= now then
    c_tokens = c_tokens - cost
    c_spend(cost)
  elseif reserve and c_reserve_holds(cost) then
    c_ru = c_ru + cost
    c_spend(cost)
  end
  if stated then c_stated = c_stated + spend else c_asked = c_asked + spend end
end
-- CreditBucket::read_shared: the reading's answer corrects the bucket (or makes it) and
-- teaches the scale.
local function c_correct(used, limit, end_ms)
  if not (used and limit and end_ms) then return end
  local period_end = now + end_ms
  if not c_bucket then return c_start(used, limit, period_end) end
  used = used + c_tss
  if period_end > c_end + NEW_PERIOD_MS then
    c_learn(nil)
    return c_start(used, limit, period_end)
  end
  local delta = used - c_read_used
  local taken = c_used - c_read_used
  local ours = math.max(c_learn(delta), taken)
  c_refill()
  c_tokens = c_tokens - (ours - taken)
  local seen = now - c_read_at
  if seen > 0 then
    c_others = math.max(delta - ours, 0) / seen
    c_pace = math.max(delta, 0) / seen
  end
  c_limit, c_used, c_read_used, c_read_at, c_tss = limit, used, used, now, 0
  c_repace()
end
-- SharedCredits::spent: credits a process spent on its own (its store down), used, out of what
-- the bucket gathered meanwhile (down to empty, no debt); the scale counts again from here.
local function credits_spent(cost)
  if not c_bucket then return end
  c_refill()
  c_tokens = math.min(c_tokens, math.max(c_tokens - cost, 0))
  c_spend(cost)
  c_learn(nil)
end
-- SharedCredits::read: the answer read into the bucket; the next reading due.
local function credits_read(used, limit, end_ms)
  c_read = true
  local period = c_bucket and c_end or nil
  c_correct(used, limit, end_ms)
  -- A new bucket (the first, or a new period's) may have its early reading.
  if c_bucket and c_end ~= period then c_early = false end
  if c_bucket then c_next = c_next_reading() else c_next = now + c_refresh end
end

-- SharedCredits::view: the bucket's used, limit, credits per ms and ms to the period's end,
-- and ms until another call costing `cost` could have its credits (the next reading at the
-- latest; -1 when none was asked about), and the scale; "" before a reading made a bucket.
local function c_view(cost, is_stated)
  if not c_bucket then return '' end
  local next_ms = -1
  if cost then
    local due = c_due()
    next_ms = math.max(math.min(c_ready(c_credits(cost, is_stated)), due) - now, 0)
  end
  return table.concat({exact(c_used), exact(c_limit), exact(c_rate), exact(c_end - now),
    exact(next_ms), exact(c_scale)}, ' ')
end

-- The store hears of a new rate with the first operation that passes it, at that operation's
-- time: the gate sends nothing when its rate changes.
if burst ~= called_burst or per_token ~= called_per_token then
  -- StoreAuthority::follow: a faster allowance brings every claim's next ask forward.
  if called_per_token < per_token then
    for j = 0, 7 do
      local b = 15 + 4 * j
      if o[b] ~= 0 then o[b + 3] = math.min(o[b + 3], now + called_per_token) end
    end
  end
  retune(called_burst, called_per_token)
end

local answer
-- An admission's credits and whether their cost is stated (nil: it asks none; a reading's
-- answer tells the spread too).
local spend, stated
if op == 'admit' then
  -- ARGV[7] the (first) admission's name; ARGV[8], ARGV[9] what a response said first (""
  -- for nothing): a limit and remaining count to pace by, or `is`/`max` and a learning gate's
  -- count of tokens; ARGV[10] how many wait to go; ARGV[11] the number of the request the
  -- count answered, or with a remaining count the highest number heard of when its answer
  -- came; ARGV[12] the remaining count's request's age in ms; ARGV[13] "1" for an account
  -- call (GET /usage, /limits), which the quota does not hold. Quota first, then cooldown,
  -- then as many tokens as are there, up to that many (the answer's fourth number; the fifth
  -- is the first one's number).
  -- ARGV[14] the asking process's number ("" to ask out of order), ARGV[15] how long its head
  -- has waited, ARGV[16] its lane + 1 (0 at the front of its queue), ARGV[17] the lane's weight,
  -- ARGV[18] and ARGV[19] how long a claim outlives its time, and how soon a head behind
  -- another asks again, ARGV[20] how many wait in its queue, itself included (Order::admit).
  if ARGV[8] == 'is' or ARGV[8] == 'max' then
    recount(ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[11]))
  else
    local limit = tonumber(ARGV[8])
    local remaining = tonumber(ARGV[9])
    if limit and remaining then pace(limit, remaining, tonumber(ARGV[11]), tonumber(ARGV[12])) end
  end
  local who = tonumber(ARGV[14])
  local lane, weight, since, behind
  local want = tonumber(ARGV[10]) or 1
  if who then
    lane, weight, since = tonumber(ARGV[16]), tonumber(ARGV[17]), now - tonumber(ARGV[15])
    local grace, again = tonumber(ARGV[18]), tonumber(ARGV[19])
    for j = 0, 7 do
      local b = 15 + 4 * j
      if o[b] ~= 0 and o[b + 3] + grace < now then o[b], o[b + 1], o[b + 2], o[b + 3] = 0, 0, 0, 0 end
    end
    local mh, ml = start_of(lane)
    local fh, fl, fs, fdue
    for j = 0, 7 do
      local b = 15 + 4 * j
      if o[b] ~= 0 and o[b] ~= who then
        want = 1
        local ch, cl = start_of(o[b + 1])
        local ahead = before(ch, cl, mh, ml) or (ch == mh and cl == ml and o[b + 2] < since)
        if ahead and (not fh or before(ch, cl, fh, fl) or (ch == fh and cl == fl and o[b + 2] < fs)) then
          fh, fl, fs, fdue = ch, cl, o[b + 2], o[b + 3]
        end
      end
    end
    if fdue then
      local wait = math.max(fdue - now, again)
      claim(who, lane, since, now + wait)
      behind = {'wait', wait, 0}
    end
  end
  -- ARGV[21] the call's credits ("" for none: the gate does not spread), ARGV[22] "1" when it
  -- may draw on the reserve, ARGV[23..25] the spread's reserve, burst and refresh (ms),
  -- ARGV[26] "1" when its cost is stated (not scaled).
  spend, stated = tonumber(ARGV[21]), ARGV[26] == '1'
  if spend then
    c_reserve, c_burst, c_refresh = tonumber(ARGV[23]), tonumber(ARGV[24]), tonumber(ARGV[25])
  end
  if behind then
    answer = behind
  elseif quota > now and ARGV[13] ~= '1' then
    answer = {'exhausted', quota - now, 0}
  elseif now < cooldown then
    answer = {'wait', math.max(cooldown - now, 1), 0}
  end
  local credit = 'go'
  if not answer and spend then
    want = 1
    credit = credits_ask(spend, stated, ARGV[22] == '1')
    if credit == 'read' then
      answer = {'read', 0, 0}
    elseif credit ~= 'go' then
      answer = {'wait', credit, 0}
    end
  end
  if not answer then
    refill()
    -- TokenBucket::take_anchored: a take from a full bucket pauses the refill until its
    -- response, because the server's refill starts when the burst arrives.
    local full = tokens >= burst - SLACK
    if tokens >= 1 - SLACK then
      tokens = tokens - 1
      if full then paused = now; anchor = ARGV[7] end
      local admissions = 1
      while admissions < want and tokens >= 1 - SLACK do
        tokens = tokens - 1
        admissions = admissions + 1
      end
      if spend then credits_take(spend, stated, ARGV[22] == '1') end
      local seq = sent
      sent = sent + admissions
      answer = {'admitted', full and 1 or 0, wait_ms(), admissions, seq}
    else
      answer = {'wait', wait_ms(), 0}
    end
  end
  if who and not behind then
    if answer[1] == 'wait' then
      claim(who, lane, since, now + answer[2])
    else
      if answer[1] == 'admitted' then
        for _ = 1, answer[4] do admitted_in_order(lane, weight) end
      end
      if answer[1] == 'admitted' and tonumber(ARGV[20]) > answer[4] then
        claim(who, lane, since, now + answer[3])
      else
        unclaim(who)
      end
    end
  end
elseif op == 'resume' then
  -- ARGV[7] the admission whose response came back: if it anchored, refill from now.
  if anchor == ARGV[7] then
    anchor = nil
    resume(now)
  end
  answer = {'resumed', wait_ms(), 0}
elseif op == 'feedback' then
  -- ARGV[7] cooldown ms ("" for none), ARGV[8] limit, ARGV[9] remaining ("" for none),
  -- ARGV[10] the highest number heard of when its answer came ("" for none), ARGV[11] its
  -- request's age in ms.
  local limit = tonumber(ARGV[8])
  local remaining = tonumber(ARGV[9])
  if limit and remaining then pace(limit, remaining, tonumber(ARGV[10]), tonumber(ARGV[11])) end
  local hold = tonumber(ARGV[7])
  if hold then cooldown = math.max(cooldown, now + hold) end
  answer = {'cooldown', math.max(cooldown - now, 0), slow and 1 or 0}
elseif op == 'clear' then
  cooldown = 0
  answer = {'cooldown', 0, slow and 1 or 0}
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
elseif op == 'read' or op == 'spent' then
  -- ARGV[7..9] the spread's reserve, burst and refresh (ms); then a reading's used, limit and
  -- ms until the period ends ("" for no usable answer), or the credits spent alone.
  c_reserve, c_burst, c_refresh = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
  if op == 'read' then
    credits_read(tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]))
  else
    credits_spent(tonumber(ARGV[10]))
  end
  if c_bucket then
    answer = {'credits', c_used, c_limit, c_rate}
  else
    answer = {'credits', 0, 0, 0}
  end
else
  return redis.error_reply('odds-gate: unknown operation ' .. op)
end
local view = ''
if spend or op == 'read' or op == 'spent' then view = c_view(spend, stated) end

local order = {}
for i = 1, 46 do order[i] = exact(o[i]) end
redis.call('HSET', key, 'tokens', exact(tokens), 'last', exact(last), 'cooldown', exact(cooldown),
  'quota', exact(quota), 'slow', slow and '1' or '0', 'burst', exact(burst),
  'per_token', exact(per_token), 'sent', exact(sent), 'order', table.concat(order, ' '))
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
if c_read or c_next > -INF then
  local c = {c_read and (c_early and 2 or 1) or 0, c_next, c_bucket and 1 or 0, c_scale, c_stated, c_asked}
  if c_bucket then
    for _, n in ipairs({c_limit, c_end, c_rate, c_others, c_tokens, c_last, c_used, c_ru, c_tss,
      c_read_at, c_read_used, c_pace}) do c[#c + 1] = n end
  end
  for i = 1, #c do c[i] = exact(c[i]) end
  redis.call('HSET', key, 'credits', table.concat(c, ' '))
end
-- Idle keys expire once nothing in them can matter: the bucket is full again, the cooldown and
-- any quota closure are over, plus a minute.
local idle = math.max(burst * interval() + max_pause, cooldown - now, quota - now, 0) + 60000
redis.call('PEXPIRE', key, math.ceil(idle))
return {answer[1], exact(answer[2]), exact(answer[3]), exact(answer[4] or 0),
  exact(answer[5] or 0), exact(stored_burst), exact(stored_per_token),
  table.concat(order, ' ', 1, 14), view}
