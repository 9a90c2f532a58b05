-- Marks a sandbox whose session ended as waiting to be destroyed: its place in the pool frees
-- when the destroy job removes it, and a lease that finds the pool at its cap waits for that.
-- KEYS[1]  sorted set: the pool's sandboxes waiting to be destroyed, sandbox id -> expiry
-- ARGV[1]  the sandbox's id
-- ARGV[2]  when the mark lapses (epoch ms): a destroy that never ends is not waited on forever
-- ARGV[3]  now (epoch ms)
local key = KEYS[1]
redis.call("ZREMRANGEBYSCORE", key, "-inf", ARGV[3])
redis.call("ZADD", key, ARGV[2], ARGV[1])
-- The set lives as long as its longest-lived mark, and no longer.
local latest = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", key, math.floor(tonumber(latest[2])) + 1000)
return 1
