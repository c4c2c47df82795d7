-- claim.lua: advisory claim counter for one coupon template (Redis never decides a claim).
--
-- KEYS[1] coupon:claimed:{T}                total claims counted for template T
-- KEYS[2] coupon:peruser:{T}:U              claims counted for user U on T
-- KEYS[3] coupon:version:{T}                MySQL claimed count KEYS[1] was last synced to
-- KEYS[4] coupon:peruser-version:{T}:U      MySQL user count KEYS[2] was last synced to
-- ARGV[1] now, ARGV[3] valid_from, ARGV[4] valid_until   integer milliseconds, inclusive window
-- ARGV[2] total, ARGV[5] per_user_limit
-- ARGV[6] db_claimed, ARGV[7] db_user       the database facts: floors for every counter
-- ARGV[8] per-user TTL, milliseconds        the per-user keys expire once the window has ended
--
-- Returns 0 claimed (both counters incremented), 1 sold out, 2 not in window (nothing
-- written), 3 per-user limit reached.

local now = tonumber(ARGV[1])
local total = tonumber(ARGV[2])
local valid_from = tonumber(ARGV[3])
local valid_until = tonumber(ARGV[4])
local per_user_limit = tonumber(ARGV[5])
local db_claimed = tonumber(ARGV[6])
local db_user = tonumber(ARGV[7])
local per_user_ttl = tonumber(ARGV[8])

if now < valid_from or now > valid_until then
  return 2
end

-- A missing key counts as -1, so a lost or stale counter is rebuilt from the database.
local function lift(key, floor)
  local current = tonumber(redis.call('GET', key) or '-1')
  if current < floor then
    redis.call('SET', key, floor)
    return floor
  end
  return current
end

-- Memory follows live templates: the user's keys go once the claim window is over.
-- (PEXPIRE on a missing key does nothing.)
local function expire_per_user_keys()
  redis.call('PEXPIRE', KEYS[2], per_user_ttl)
  redis.call('PEXPIRE', KEYS[4], per_user_ttl)
end

lift(KEYS[3], db_claimed)
lift(KEYS[4], db_user)

if lift(KEYS[1], db_claimed) >= total then
  expire_per_user_keys()
  return 1
end
local user_count = lift(KEYS[2], db_user)
expire_per_user_keys()
if user_count >= per_user_limit then
  return 3
end

redis.call('INCR', KEYS[1])
redis.call('INCR', KEYS[2])
return 0
