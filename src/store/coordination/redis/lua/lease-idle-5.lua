-- Leases a sandbox of a pool, in one step: the workspace's own parked sandbox (one that served
-- an earlier session of it and was scrubbed, newest first) when reuse is asked for and there is
-- one, else the oldest idle (fresh) sandbox. Takes it off its list, keeps
-- it counted against the pool until `until`, records the leasing workspace among the pool's
-- holders (how the reaper finds the workspaces that have sessions), and marks it in flight
-- until its lease is due to be recorded (a replica that dies before that leaves a mark that
-- lapses, and reconciliation frees the place, instead of a place held for the session's life).
-- KEYS[1]  the pool's idle list of JSON sandbox records (pushed left, popped right)
-- KEYS[2]  the pool's members: sandbox id -> expiry (epoch ms)
-- KEYS[3]  the pool's holders: workspace -> until when it may hold a session (epoch ms)
-- KEYS[4]  the pool's starts and hand-outs in flight: sandbox id -> mark's expiry (epoch ms)
-- ARGV[1]  until (epoch ms): the session's slot expiry
-- ARGV[2]  the workspace
-- ARGV[3]  now (epoch ms)
-- KEYS[5]  the pool's parked sandboxes, JSON records with their `owner` (pushed left: newest first)
-- ARGV[4]  the in-flight mark's expiry (epoch ms); 0: no mark
-- ARGV[5]  "1": take the workspace's own parked sandbox first; else fresh ones only
-- Returns  the record's JSON, or false when the pool has none for the workspace

-- Lapsed in-flight marks are kept this long past the latest one, for reconciliation to find.
local IN_FLIGHT_KEPT_MS = 86400000

local raw
if ARGV[5] == "1" then
  -- A few hundred at most (the pool's maxTotal): the scan stays short.
  for _, parked in ipairs(redis.call("LRANGE", KEYS[5], 0, -1)) do
    if cjson.decode(parked).owner == ARGV[2] then
      redis.call("LREM", KEYS[5], 1, parked)
      raw = parked
      break
    end
  end
end
if not raw then
  raw = redis.call("RPOP", KEYS[1])
end
if not raw then
  return false
end
local until_ms, now, hand_over_by = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
-- A key's expiry follows its longest-held entry (a set whose expiry passed is gone).
local function keep_until(key, at)
  local ttl = redis.call("PTTL", key)
  if ttl == -1 or (ttl >= 0 and now + ttl < at + 1000) then
    redis.call("PEXPIREAT", key, math.floor(at) + 1000)
  end
end
local sandbox_id = cjson.decode(raw).sandboxId
if redis.call("ZADD", KEYS[2], "XX", "CH", until_ms, sandbox_id) == 1 then
  keep_until(KEYS[2], until_ms)
end
redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", now)
redis.call("ZADD", KEYS[3], "GT", until_ms, ARGV[2])
keep_until(KEYS[3], until_ms)
if hand_over_by > 0 then
  redis.call("ZADD", KEYS[4], hand_over_by, sandbox_id)
  keep_until(KEYS[4], hand_over_by + IN_FLIGHT_KEPT_MS)
end
return raw
