-- Admits a new session in one step: the day's execution budget is not spent, a
-- concurrent-session slot is free (taken for `token`), and the session rate allows one
-- more (recorded). A refusal takes nothing.
-- KEYS[1]  the workspace's slots: token -> expiry (epoch ms)
-- KEYS[2]  the workspace's session-rate window: unique member -> time (epoch ms)
-- KEYS[3]  today's budget counter (ms of wall time reserved)
-- KEYS[4]  today's CPU total (ms): the day has used the larger of the two
-- ARGV[1]  token (the session id)
-- ARGV[2]  concurrent-session limit
-- ARGV[3]  expiry of the slot (epoch ms)
-- ARGV[4]  now (epoch ms)
-- ARGV[5]  sessions allowed in the window
-- ARGV[6]  the window (ms)
-- ARGV[7]  a unique member for this session in the window
-- ARGV[8]  the day's budget (ms)
-- Returns  {"admitted"}, {"budget"}, {"slots"}, or {"rate", ms until one would be allowed}
local slots, rate, budget = KEYS[1], KEYS[2], KEYS[3]
local token, limit, expires_at, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local rate_limit, window = tonumber(ARGV[5]), tonumber(ARGV[6])
local used = math.max(tonumber(redis.call("GET", budget) or "0"), tonumber(redis.call("GET", KEYS[4]) or "0"))
if used >= tonumber(ARGV[8]) then
  return { "budget" }
end
redis.call("ZREMRANGEBYSCORE", slots, "-inf", now)
local held = redis.call("ZSCORE", slots, token)
if not held and redis.call("ZCARD", slots) >= limit then
  return { "slots" }
end
redis.call("ZREMRANGEBYSCORE", rate, "-inf", now - window)
if redis.call("ZCARD", rate) >= rate_limit then
  local oldest = redis.call("ZRANGE", rate, 0, 0, "WITHSCORES")
  return { "rate", math.max(1, tonumber(oldest[2]) + window - now) }
end
redis.call("ZADD", rate, now, ARGV[7])
redis.call("PEXPIRE", rate, window)
redis.call("ZADD", slots, expires_at, token)
-- The set lives as long as its longest-lived token, and no longer.
local latest = redis.call("ZRANGE", slots, -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", slots, math.floor(tonumber(latest[2])) + 1000)
return { "admitted" }
