-- Records a workspace among a pool's holders until `until` (never shortening a longer
-- hold), for a lease stored without a lease of the pool (a lease rebuilt by reconciliation).
-- KEYS[1]  the pool's holders: workspace -> until when it may hold a session (epoch ms)
-- ARGV[1]  the workspace
-- ARGV[2]  until (epoch ms)
-- ARGV[3]  now (epoch ms)
-- Returns  1
local until_ms, now = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
redis.call("ZADD", KEYS[1], "GT", until_ms, ARGV[1])
local ttl = redis.call("PTTL", KEYS[1])
if ttl == -1 or (ttl >= 0 and now + ttl < until_ms + 1000) then
  redis.call("PEXPIREAT", KEYS[1], math.floor(until_ms) + 1000)
end
return 1
