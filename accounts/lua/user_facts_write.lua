-- user_facts_write.lua: write back what a database lookup showed of a user (after
-- user_facts_read.lua answered {0, lease}).
--
-- KEYS[1] user-facts:U   KEYS[2] user-facts-lease:U
-- ARGV[1] the lease the read handed out   ARGV[2] when the facts expire (unix ms): the lease
-- life after the database read began   ARGV[3..8] active, gen, pw, name, staff, super
--
-- Written only while the lease is the one handed out before the lookup began: a change of
-- the user deletes it (before and after its commit), so a lookup that may have read the
-- user before the change writes nothing. Returns 1 when written, else 0.

assert(#KEYS == 2, 'user_facts_write.lua takes 2 keys')
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'active', ARGV[3], 'gen', ARGV[4], 'pw', ARGV[5], 'name', ARGV[6],
  'staff', ARGV[7], 'super', ARGV[8])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[2]))
return 1
