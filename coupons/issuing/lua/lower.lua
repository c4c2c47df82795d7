-- lower.lua: the scheduled reconcile (coupons/issuing/reconcile.py) lowers counts
-- Redis holds above the database's (a database restored from an older backup, say). Never
-- raises one: Redis never admits, so a count lower than the database's is always safe (a
-- claim that commits meanwhile and is lowered past records its floor again with the next).
--
-- KEYS[i] a count key of one template (coupon:claimed:{T}:I, coupon:peruser:{T}:I:U)
-- ARGV[i] the count the database showed for KEYS[i]
-- Returns how many were lowered (each keeps its expiry).

local lowered = 0
for i, key in ipairs(KEYS) do
  local held = redis.call('GET', key)
  if held and tonumber(held) > tonumber(ARGV[i]) then
    redis.call('SET', key, ARGV[i], 'KEEPTTL')
    lowered = lowered + 1
  end
end
return lowered
