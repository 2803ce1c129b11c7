-- odds-gate: one request's entry in the fleet's shared cache and the claim on its fetch, in one
-- hash. The Redis encoding of src/core/rules/shared_cache.rs (claim and put); Redis's clock is
-- the one time base, and answers give times relative to it.
-- KEYS[1]  "og:{<credential scope>}:cache:<hash of URL and Accept>" (the scope is a hash tag, as
--          the gate's key)
-- ARGV[1]  get: ARGV[2] claimant, ARGV[3] lease ms. A fresh entry answers
--          {'fresh', ms fresh left, ms since put, status, status text, headers, body, age};
--          else, while another's claim holds, {'wait', ms left of it}; else the claimant
--          claims the fetch: {'lead', lease ms}.
--          put: ARGV[2] claimant, ARGV[3] fresh ms, ARGV[4] keep ms (fresh and stale),
--          ARGV[5..9] status, status text, headers (JSON), body (base64), age: stores the
--          entry for keep ms and releases any claim; answers 'ok'.
--          release: ARGV[2] claimant: releases its claim (nothing to put); answers 'ok'.
-- Fields: fresh_until, put_at, status, text, headers, body, age; lead, lease_until.
-- Tests only: an argument after an operation's own (ARGV[4] of get, ARGV[10] of put) is now in
-- ms, a virtual clock (tests/parity_cache.rs); production never passes one: Redis TIME.
local key = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[op == 'put' and 10 or 4])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function n(x) return string.format('%.17g', x) end
if op == 'get' then
  local s = redis.call('HMGET', key, 'fresh_until', 'lead', 'lease_until')
  local fresh_until = tonumber(s[1]) or 0
  if now < fresh_until then
    local e = redis.call('HMGET', key, 'put_at', 'status', 'text', 'headers', 'body', 'age')
    return {'fresh', n(fresh_until - now), n(now - (tonumber(e[1]) or now)), e[2], e[3], e[4], e[5], e[6]}
  end
  local lease_until = tonumber(s[3]) or 0
  if s[2] and lease_until > now then
    return {'wait', n(lease_until - now)}
  end
  local lease = tonumber(ARGV[3])
  redis.call('HSET', key, 'lead', ARGV[2], 'lease_until', n(now + lease))
  if redis.call('PTTL', key) < lease then
    redis.call('PEXPIRE', key, math.ceil(lease))
  end
  return {'lead', n(lease)}
elseif op == 'put' then
  redis.call('DEL', key)
  redis.call('HSET', key, 'fresh_until', n(now + tonumber(ARGV[3])), 'put_at', n(now),
    'status', ARGV[5], 'text', ARGV[6], 'headers', ARGV[7], 'body', ARGV[8], 'age', ARGV[9])
  redis.call('PEXPIRE', key, math.max(1, math.ceil(tonumber(ARGV[4]))))
  return 'ok'
elseif op == 'release' then
  if redis.call('HGET', key, 'lead') == ARGV[2] then
    redis.call('HDEL', key, 'lead', 'lease_until')
  end
  return 'ok'
end
return redis.error_reply('odds-gate: unknown operation ' .. tostring(ARGV[1]))
