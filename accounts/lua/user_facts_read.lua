-- user_facts_read.lua: what authentication needs of a user, from Redis, in one round trip
-- (accounts/user_facts.py; docs/decisions/0720-user-facts-in-redis.md).
--
-- KEYS[1] user-facts:U         HASH as the database last showed it: active (1/0), gen (the
--                              token generation), pw (the token's password digest), name
--                              (username), staff (1/0), super (1/0)
-- KEYS[2] user-facts-lease:U   token a database lookup must show to write the facts back
-- ARGV[1] a fresh lease token   ARGV[2] its life (ms), used when the facts are missing
--
-- Returns {1, active, gen, pw, name, staff, super} when Redis holds the facts, else
-- {0, lease}: look the user up in the database, then write the facts back
-- (user_facts_write.lua) showing this lease. A change of the user deletes both keys.

assert(#KEYS == 2, 'user_facts_read.lua takes 2 keys')
local facts = redis.call('HMGET', KEYS[1], 'active', 'gen', 'pw', 'name', 'staff', 'super')
if facts[1] then
  return {1, facts[1], facts[2], facts[3], facts[4], facts[5], facts[6]}
end
local lease = redis.call('GET', KEYS[2])
if not lease then
  lease = ARGV[1]
  redis.call('SET', KEYS[2], lease, 'PX', tonumber(ARGV[2]))
end
return {0, lease}
