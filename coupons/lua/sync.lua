-- sync.lua (SyncCouponCounts): overwrite the counters with the database facts, each guarded by
-- its own monotonic version, after every database decision.
--
-- KEYS[1] coupon:claimed:{T}            KEYS[2] coupon:peruser:{T}:U
-- KEYS[3] coupon:version:{T}            KEYS[4] coupon:peruser-version:{T}:U
-- ARGV[1] db_claimed   the template's claimed_count as the transaction left it
-- ARGV[2] db_user      the user's claim count on T as the transaction left it
-- ARGV[3] per-user TTL in milliseconds: the per-user keys expire once the window has ended
--
-- A snapshot is applied when it is at least as new as the stored version (missing = -1).
-- Equal counts: a rejected or failed insert left the count unchanged, and applying the equal
-- snapshot is what removes the INCR the claim script leaked. The two versions are independent,
-- so a late snapshot of the total never blocks the repair of this user's own counter.
--
-- Returns {total_applied, user_applied}, each 1 or 0.

local function apply(counter_key, version_key, db_count)
  local version = tonumber(redis.call('GET', version_key) or '-1')
  if db_count >= version then
    redis.call('SET', counter_key, db_count)
    redis.call('SET', version_key, db_count)
    return 1
  end
  return 0
end

local total_applied = apply(KEYS[1], KEYS[3], tonumber(ARGV[1]))
local user_applied = apply(KEYS[2], KEYS[4], tonumber(ARGV[2]))
-- Memory follows live templates: the user's keys go once the claim window is over.
-- (PEXPIRE on a missing key does nothing.)
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[3]))
return {total_applied, user_applied}
