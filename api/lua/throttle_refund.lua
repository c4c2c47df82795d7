-- throttle_refund.lua: give back what throttle_take.lua counted (a login that succeeded is
-- not a failure).
--
-- KEYS[i]  the logs throttle_take.lua added the attempt to
-- ARGV[1]  the attempt's member
--
-- Removes the attempt from each log that still holds it (one that left the period, or a
-- log that expired, is left alone). Returns how many were removed.

local refunded = 0
for i = 1, #KEYS do
  refunded = refunded + redis.call('ZREM', KEYS[i], ARGV[1])
end
return refunded
