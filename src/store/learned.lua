-- odds-gate: what the learning gates of one credential share across a fleet, in one hash: the
-- first limiter bucket the credential's answers named ("first"), the bucket each route draws
-- from ("r:" .. route), and each gate's estimate ("e:" .. scope, "<burst> <per second>"). A
-- process that starts, or makes a gate anew, begins from there; a process that finds nothing
-- learns as if alone. The hash expires after a day without news.
-- KEYS[1]  "og:{<credential scope>}:learned" (the scope is a hash tag, as the gate's key)
-- ARGV[1]  put: ARGV[2..] field, value, field, value ...; answers 'ok'
--          get: answers every field and value, flat
local key = KEYS[1]
if ARGV[1] == 'put' then
  for i = 2, #ARGV - 1, 2 do
    redis.call('HSET', key, ARGV[i], ARGV[i + 1])
  end
  redis.call('PEXPIRE', key, 86400000)
  return 'ok'
elseif ARGV[1] == 'get' then
  return redis.call('HGETALL', key)
end
return redis.error_reply('odds-gate: unknown operation ' .. tostring(ARGV[1]))
