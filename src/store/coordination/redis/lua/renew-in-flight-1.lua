-- Moves the in-flight marks of sandboxes a replica is still starting: marks only (one ended,
-- or reclaimed by reconciliation, is not set again).
-- KEYS[1]  sorted set: the pool's starts and hand-outs in flight, sandbox id -> mark's expiry
-- ARGV[1]  the marks' new expiry (epoch ms)
-- ARGV[2]  now (epoch ms)
-- ARGV[3..] the sandbox ids
-- Returns  how many marks moved

-- Lapsed in-flight marks are kept this long past the latest one, for reconciliation to find.
local IN_FLIGHT_KEPT_MS = 86400000

local key, at, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local moved = 0
for i = 3, #ARGV do
  if redis.call("ZSCORE", key, ARGV[i]) then
    redis.call("ZADD", key, "XX", at, ARGV[i])
    moved = moved + 1
  end
end
if moved > 0 then
  local ttl = redis.call("PTTL", key)
  if ttl >= 0 and now + ttl < at + IN_FLIGHT_KEPT_MS then
    redis.call("PEXPIREAT", key, math.floor(at + IN_FLIGHT_KEPT_MS))
  end
end
return moved
