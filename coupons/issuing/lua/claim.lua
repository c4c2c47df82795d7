-- claim.lua: screen one claim in Redis, in one round trip (SPEC section 15). Redis may REFUSE
-- here on facts the database confirmed; it never admits: "may have room" sends the claim to
-- the database, which alone issues a coupon.
--
-- KEYS[1] coupon:terms:{T}           HASH of the template's terms as the database last showed
--                                    them: version (updated_at, ms), total, limit, from, until
--                                    (ms, inclusive), row (JSON for the 201's summary), inc
--                                    (the template's incarnation, I)
-- KEYS[2] coupon:terms-lease:{T}     token a database-path claim must show to write the terms
-- KEYS[3] coupon:claimed:{T}:        + I: claimed_count as the database showed it (a floor)
-- KEYS[4] coupon:peruser:{T}:        + I:U: user U's coupons of T as the database showed them
--                                    (a floor). KEYS[3] and KEYS[4] name the count keys
--                                    without the incarnation, which only the terms know; the
--                                    keys built from them share the {T} hash tag, so they are
--                                    in the slot of the declared keys (Redis Cluster)
-- KEYS[5] coupon:throttle:{T}:U:W    user U's claims of T in throttle window W
-- ARGV[1] now (ms)   ARGV[2] throttle limit   ARGV[3] throttle period (s)
-- ARGV[4] a fresh lease token, ARGV[5] its life (ms), used when the terms are missing
-- ARGV[6] the user id U
--
-- Returns {code, ...}, the codes named once in Python: coupons.issuing.screen_answers.ScreenAnswer.
--   {4}                     throttled (counted before anything else)
--   {7}                     not claimable by id (`byid` 0: hidden, or single-use codes only):
--                           "not found", before any refusal that would show the template
--   {2} not in window, {6} paused, {1} sold out, {3} per-user limit reached: refusals on
--                           confirmed facts, in the claim rule's order (coupons.rules.
--                           claim_state): window, paused, audience, total, per-user limit.
--                           A new-customers template (`newonly`) is refused on its window and
--                           pause only: the audience comes next and is the user's fact, which
--                           only the database knows, so the database decides the rest.
--   {0, row, user}          may have room: ask the database (user: the floor, or -1)
--   {5, lease}              the terms are missing (or were written before incarnations):
--                           ask the database, then write them back (sync.lua) showing this
--                           lease

assert(#KEYS == 5, 'claim.lua takes 5 keys')
local now = tonumber(ARGV[1])

local hits = redis.call('INCR', KEYS[5])
if hits == 1 then
  redis.call('EXPIRE', KEYS[5], tonumber(ARGV[3]))
end
if hits > tonumber(ARGV[2]) then
  return {4}
end

local terms = redis.call('HMGET', KEYS[1], 'total', 'limit', 'from', 'until', 'row', 'paused',
  'newonly', 'byid', 'inc')
if not terms[1] or not terms[9] then
  local lease = redis.call('GET', KEYS[2])
  if not lease then
    lease = ARGV[4]
    redis.call('SET', KEYS[2], lease, 'PX', tonumber(ARGV[5]))
  end
  return {5, lease}
end
local incarnation = terms[9]
local user = tonumber(redis.call('GET', KEYS[4] .. incarnation .. ':' .. ARGV[6]) or '-1')

if terms[8] == '0' then
  return {7}
end
if now < tonumber(terms[3]) or now > tonumber(terms[4]) then
  return {2}
end
if terms[6] == '1' then
  return {6}
end
if terms[7] == '1' then
  return {0, terms[5], user}
end
local claimed = redis.call('GET', KEYS[3] .. incarnation)
if claimed and tonumber(claimed) >= tonumber(terms[1]) then
  return {1}
end
if user >= tonumber(terms[2]) then
  return {3}
end
return {0, terms[5], user}
