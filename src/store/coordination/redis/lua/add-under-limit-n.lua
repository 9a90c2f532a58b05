-- Adds a token to an expiring set if fewer than `limit` unexpired tokens are in it.
-- Serves session slots (per workspace; pool membership has add-member-3.lua): a holder that
-- crashes stops counting once its expiry passes, so capacity cannot leak.
-- KEYS[1]  sorted set: token -> expiry (epoch ms)
-- KEYS[2]  optional: a second sorted set the token is marked in too when held, with the
--          same expiry
-- ARGV[1]  token
-- ARGV[2]  limit
-- ARGV[3]  expiry of this token (epoch ms)
-- ARGV[4]  now (epoch ms)
-- Returns  1 if the token is held (added, or already held and its expiry updated), 0 if full

-- Adds the token to a set, which then lives as long as its longest-lived token, and no longer.
local function hold(key, token, expires_at)
  redis.call("ZADD", key, expires_at, token)
  local latest = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  redis.call("PEXPIREAT", key, math.floor(tonumber(latest[2])) + 1000)
end

local key, token = KEYS[1], ARGV[1]
local limit, expires_at, now = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
if not redis.call("ZSCORE", key, token) and redis.call("ZCARD", key) >= limit then
  return 0
end
hold(key, token, expires_at)
if KEYS[2] then
  redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
  hold(KEYS[2], token, expires_at)
end
return 1
