-- Keeps a leased sandbox counted against its pool until `until` (when it is a member) and
-- records the leasing workspace among the pool's holders (how the reaper finds the
-- workspaces that have sessions).
-- KEYS[1]  the pool's members: sandbox id -> expiry (epoch ms)
-- KEYS[2]  the pool's holders: workspace -> until when it may hold a session (epoch ms)
-- ARGV[1]  the sandbox id
-- ARGV[2]  until (epoch ms)
-- ARGV[3]  the workspace
-- ARGV[4]  now (epoch ms)
-- Returns  1
local until_ms, now = tonumber(ARGV[2]), tonumber(ARGV[4])
-- A key's expiry follows its longest-held entry (a set whose expiry passed is gone).
local function keep_until(key, at)
  local ttl = redis.call("PTTL", key)
  if ttl == -1 or (ttl >= 0 and now + ttl < at + 1000) then
    redis.call("PEXPIREAT", key, math.floor(at) + 1000)
  end
end
if redis.call("ZADD", KEYS[1], "XX", "CH", until_ms, ARGV[1]) == 1 then
  keep_until(KEYS[1], until_ms)
end
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
redis.call("ZADD", KEYS[2], "GT", until_ms, ARGV[3])
keep_until(KEYS[2], until_ms)
return 1
