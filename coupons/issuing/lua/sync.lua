-- sync.lua: record what the database showed after a database-path decision (SPEC section 15).
-- Every count here is a floor: counts never go down, so any count the database showed is at
-- most the count now, and a fact only ever rises: a late, older snapshot changes nothing.
-- (A count Redis holds above the database's can only come from outside this code, a restored
-- database say: the scheduled reconcile lowers it (lower.lua), `manage.py
-- rebuild_coupon_counters` resets a template's facts. A template id the restored database
-- hands out again has another incarnation I, so none of its counts.)
--
-- KEYS[1] coupon:claimed:{T}:I       KEYS[2] coupon:peruser:{T}:I:U
-- KEYS[3] coupon:terms:{T}           KEYS[4] coupon:terms-lease:{T}
-- KEYS[5] coupon:terms-fence:{T}     the lowest terms version that may still be written
-- ARGV[1] claimed_count seen (-1: not seen)      ARGV[2] the user's count seen (-1: not seen)
-- ARGV[3] fact TTL (ms): the keys go once the claim window is over
-- ARGV[4] lease token ('' : no terms to write)   ARGV[5] terms version (updated_at, ms)
-- ARGV[6] total  ARGV[7] per_user_limit  ARGV[8] valid_from (ms)  ARGV[9] valid_until (ms)
-- ARGV[10] row (JSON)   ARGV[11] when the terms expire (unix ms): the lease of the read
-- ARGV[12] paused (1/0)  ARGV[13] new customers only (1/0)  ARGV[14] claimable by id (1/0)
-- ARGV[15] the incarnation I
--
-- The terms are written only by the claim holding the current lease (a staff change deletes
-- it, so does a flush), with a version at or above the fence and above the stored one.
-- Returns 1 when the terms were written, else 0.

assert(#KEYS == 5, 'sync.lua takes 5 keys')
local ttl = tonumber(ARGV[3])

local function record(key, seen)
  if seen > tonumber(redis.call('GET', key) or '-1') then
    redis.call('SET', key, seen, 'PX', ttl)
  end
end

record(KEYS[1], tonumber(ARGV[1]))
record(KEYS[2], tonumber(ARGV[2]))

if ARGV[4] == '' or redis.call('GET', KEYS[4]) ~= ARGV[4] then
  return 0
end
local version = tonumber(ARGV[5])
local fence = tonumber(redis.call('GET', KEYS[5]) or '-1')
local stored = tonumber(redis.call('HGET', KEYS[3], 'version') or '-1')
if version < fence or version <= stored then
  return 0
end
redis.call('HSET', KEYS[3], 'version', version, 'total', ARGV[6], 'limit', ARGV[7],
  'from', ARGV[8], 'until', ARGV[9], 'row', ARGV[10], 'paused', ARGV[12], 'newonly', ARGV[13],
  'byid', ARGV[14], 'inc', ARGV[15])
redis.call('PEXPIREAT', KEYS[3], tonumber(ARGV[11]))
return 1
