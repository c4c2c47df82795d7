-- terms.lua: a staff change of a template's terms (SPEC section 15: a change that makes room
-- takes effect before the staff call returns).
--
-- KEYS[1] coupon:terms:{T}   KEYS[2] coupon:terms-lease:{T}   KEYS[3] coupon:terms-fence:{T}
-- ARGV[1] fence: the lowest terms version that may be written from now on
-- ARGV[2] fence TTL (ms)
-- ARGV[3..13] optional, the new terms to publish: version, total, limit, from (ms),
--          until (ms), row (JSON), when they expire (unix ms), paused (1/0), new customers
--          only (1/0), claimable by id (1/0), the template's incarnation
--
-- Before the change commits (fence = the old version + 1, no terms): drops the cached terms
-- and the lease, so no claim that read the old row can write it back, and raises the fence,
-- so none can whose lease outlived a flush. After the commit (fence = the new version, with
-- the terms): the same, then the new terms, unless a later change raised the fence past them.
-- Returns 1 when terms were written, else 0.

assert(#KEYS == 3, 'terms.lua takes 3 keys')
local fence = tonumber(ARGV[1])
local stored_fence = tonumber(redis.call('GET', KEYS[3]) or '-1')
if fence > stored_fence then
  redis.call('SET', KEYS[3], fence, 'PX', tonumber(ARGV[2]))
else
  fence = stored_fence
end
redis.call('DEL', KEYS[2])
if not ARGV[3] then
  redis.call('DEL', KEYS[1])
  return 0
end
if tonumber(ARGV[3]) < fence then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'version', ARGV[3], 'total', ARGV[4], 'limit', ARGV[5],
  'from', ARGV[6], 'until', ARGV[7], 'row', ARGV[8], 'paused', ARGV[10], 'newonly', ARGV[11],
  'byid', ARGV[12], 'inc', ARGV[13])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[9]))
return 1
