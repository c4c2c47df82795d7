-- throttle_take.lua: count one attempt in every bucket, or in none. Each bucket counts the
-- attempts of its last `period` (a sliding window): a burst across a minute's edge meets the
-- same limit as one inside it.
--
-- KEYS[i]        bucket i's log: a sorted set of the attempts it counts, scored by time (ms)
-- ARGV[1]        now, ms
-- ARGV[2]        this attempt's member (unique): what a refund removes
-- ARGV[2+i]      bucket i's limit
-- ARGV[2+n+i]    bucket i's period, ms (the log expires a period after its last attempt)
--
-- Returns {0, 0} when every bucket counted fewer than its limit (the attempt is added to
-- each), else {i, wait}: i the 1-based index of the first bucket at its limit, wait the ms
-- until enough of its attempts leave the period for one more, and nothing is added: a login
-- attempt the (username, IP) lockout refused must not count against the account's ceiling,
-- or one address could lock the account for its owner everywhere.

local n = #KEYS
local now = tonumber(ARGV[1])
for i = 1, n do
  local limit = tonumber(ARGV[2 + i])
  local period = tonumber(ARGV[2 + n + i])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - period)
  local count = redis.call('ZCARD', KEYS[i])
  if count >= limit then
    local leaving = redis.call('ZRANGE', KEYS[i], count - limit, count - limit, 'WITHSCORES')
    return {i, tonumber(leaving[2]) + period - now}
  end
end
for i = 1, n do
  redis.call('ZADD', KEYS[i], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 + n + i]))
end
return {0, 0}
