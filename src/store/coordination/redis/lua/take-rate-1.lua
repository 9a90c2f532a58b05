-- Records one event in a sliding window if fewer than `limit` happened in it.
-- KEYS[1]  sorted set of events: unique member -> time (epoch ms)
-- ARGV[1]  now (epoch ms)
-- ARGV[2]  window (ms)
-- ARGV[3]  limit
-- ARGV[4]  a unique member for this event
-- Returns  0 if recorded, else the milliseconds until the oldest event leaves the window
local key = KEYS[1]
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)
if redis.call("ZCARD", key) >= limit then
  local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
  return math.max(1, tonumber(oldest[2]) + window - now)
end
redis.call("ZADD", key, now, ARGV[4])
redis.call("PEXPIRE", key, window)
return 0
