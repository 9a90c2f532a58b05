-- Moves a pool member's expiry, a member only (a removed one is not added back), and keeps the
-- set alive at least as long: ZADD alone leaves the key's own expiry where the last add put it,
-- so a quiet pool's renewed members would vanish with the key and stop counting against it.
-- KEYS[1]  sorted set: the pool's members, sandbox id -> expiry (epoch ms)
-- ARGV[1]  the sandbox's id
-- ARGV[2]  its new expiry (epoch ms)
-- ARGV[3]  now (epoch ms)
local key, at, now = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call("ZADD", key, "XX", "CH", at, ARGV[1]) == 1 then
  local ttl = redis.call("PTTL", key)
  if ttl == -1 or (ttl >= 0 and now + ttl < at + 1000) then
    redis.call("PEXPIREAT", key, math.floor(at) + 1000)
  end
end
return 1
