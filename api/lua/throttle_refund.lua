-- throttle_refund.lua: give back what throttle_take.lua counted (a login that succeeded is
-- not a failure).
--
-- KEYS[i]  the windows throttle_take.lua incremented
--
-- Decrements each key that still holds a positive count; a window that has expired is left
-- alone (a DECR would create it at -1, with no expiry). Returns how many were decremented.

local refunded = 0
for i = 1, #KEYS do
  local count = tonumber(redis.call('GET', KEYS[i]) or '0')
  if count > 0 then
    redis.call('DECR', KEYS[i])
    refunded = refunded + 1
  end
end
return refunded
