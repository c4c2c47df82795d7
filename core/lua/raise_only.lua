-- raise_only.lua: set a number only upward (core/redis_scripts.py RAISE_ONLY_SCRIPT).
--
-- KEYS[1] the number (a string of digits; missing counts as none)
-- ARGV[1] the value to raise it to
--
-- Two writers that raise it out of order leave the higher value, so a key that holds less
-- than what any writer once wrote lost writes: its Redis went back in time (a snapshot
-- restored, a lagging replica promoted). Returns the value it holds afterwards.

assert(#KEYS == 1, 'raise_only.lua takes 1 key')
local current = tonumber(redis.call('GET', KEYS[1]))
local wanted = tonumber(ARGV[1])
if current == nil or wanted > current then
  redis.call('SET', KEYS[1], ARGV[1])
  return wanted
end
return current
