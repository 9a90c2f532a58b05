-- Keeps a leased sandbox counted against its pool until `until` (when it is a member) and
-- records the leasing workspace among the pool's holders (how the reaper finds the
-- workspaces that have sessions); marks it in flight until its lease is due to be recorded.
-- KEYS[1]  the pool's members: sandbox id -> expiry (epoch ms)
-- KEYS[2]  the pool's holders: workspace -> until when it may hold a session (epoch ms)
-- KEYS[3]  the pool's starts and hand-outs in flight: sandbox id -> mark's expiry (epoch ms)
-- ARGV[1]  the sandbox id
-- ARGV[2]  until (epoch ms)
-- ARGV[3]  the workspace
-- ARGV[4]  now (epoch ms)
-- ARGV[5]  the in-flight mark's expiry (epoch ms); 0: no mark
-- Returns  1, or 0 when it is not a member (its place was reclaimed): nothing is held then

-- Lapsed in-flight marks are kept this long past the latest one, for reconciliation to find.
local IN_FLIGHT_KEPT_MS = 86400000

local until_ms, now, hand_over_by = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- A key's expiry follows its longest-held entry (a set whose expiry passed is gone).
local function keep_until(key, at)
  local ttl = redis.call("PTTL", key)
  if ttl == -1 or (ttl >= 0 and now + ttl < at + 1000) then
    redis.call("PEXPIREAT", key, math.floor(at) + 1000)
  end
end
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then
  return 0
end
redis.call("ZADD", KEYS[1], "XX", until_ms, ARGV[1])
keep_until(KEYS[1], until_ms)
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
redis.call("ZADD", KEYS[2], "GT", until_ms, ARGV[3])
keep_until(KEYS[2], until_ms)
if hand_over_by > 0 then
  redis.call("ZADD", KEYS[3], hand_over_by, ARGV[1])
  keep_until(KEYS[3], hand_over_by + IN_FLIGHT_KEPT_MS)
end
return 1
