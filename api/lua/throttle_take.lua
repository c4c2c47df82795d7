-- throttle_take.lua: count one request in every bucket, or in none.
--
-- KEYS[i]        the current fixed window of bucket i (throttle:<scope>:<identity>:<window>)
-- ARGV[i]        bucket i's limit
-- ARGV[#KEYS+i]  bucket i's period, seconds (the key expires with its window)
--
-- Returns 0 when every bucket was under its limit (each is incremented), else the 1-based
-- index of the first bucket at its limit, and nothing is incremented: a login attempt the
-- (username, IP) lockout refused must not count against the account's ceiling, or one
-- address could lock the account for its owner everywhere.

local n = #KEYS
for i = 1, n do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count >= tonumber(ARGV[i]) then
    return i
  end
end
for i = 1, n do
  if redis.call('INCR', KEYS[i]) == 1 then
    redis.call('EXPIRE', KEYS[i], tonumber(ARGV[n + i]))
  end
end
return 0
