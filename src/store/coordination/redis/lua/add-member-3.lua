-- Counts a sandbox against its pool if fewer than `limit` unexpired members are in it, and
-- marks the start in the same step: warming (a warm-up start, which a lease that finds the
-- pool at its cap waits for) and in flight (renewed by the starting replica while it works;
-- a mark left to lapse is what reconciliation reclaims).
-- KEYS[1]  sorted set: the pool's members, sandbox id -> expiry (epoch ms)
-- KEYS[2]  sorted set: the pool's warm-up starts under way, sandbox id -> expiry
-- KEYS[3]  sorted set: the pool's starts and hand-outs in flight, sandbox id -> mark's expiry
-- ARGV[1]  the sandbox id
-- ARGV[2]  limit
-- ARGV[3]  the member's expiry (epoch ms)
-- ARGV[4]  now (epoch ms)
-- ARGV[5]  "1": mark it warming
-- ARGV[6]  the in-flight mark's expiry (epoch ms); 0: no mark
-- Returns  1 if counted (added, or already a member and its expiry moved), 0 if full

-- Lapsed in-flight marks are kept this long past the latest one, for reconciliation to find.
local IN_FLIGHT_KEPT_MS = 86400000

-- Adds the token to a set, which then lives as long as its longest-lived token, and no longer.
local function hold(key, token, expires_at)
  redis.call("ZADD", key, expires_at, token)
  local latest = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  redis.call("PEXPIREAT", key, math.floor(tonumber(latest[2])) + 1000)
end

local members, token = KEYS[1], ARGV[1]
local limit, expires_at, now = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local in_flight_until = tonumber(ARGV[6])
redis.call("ZREMRANGEBYSCORE", members, "-inf", now)
if not redis.call("ZSCORE", members, token) and redis.call("ZCARD", members) >= limit then
  return 0
end
hold(members, token, expires_at)
if ARGV[5] == "1" then
  redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
  hold(KEYS[2], token, expires_at)
end
if in_flight_until > 0 then
  redis.call("ZADD", KEYS[3], in_flight_until, token)
  local ttl = redis.call("PTTL", KEYS[3])
  local keep = in_flight_until + IN_FLIGHT_KEPT_MS
  if ttl < 0 or now + ttl < keep then
    redis.call("PEXPIREAT", KEYS[3], math.floor(keep))
  end
end
return 1
