-- Records activity on a lease: last activity never moves backwards; a call in flight
-- sets how long the session is busy.
-- KEYS[1]  the lease (JSON string)
-- ARGV[1]  now (epoch ms)
-- ARGV[2]  busy until (epoch ms), or "" to leave it as it is
-- Returns  the updated lease JSON, or false when the lease is gone
local raw = redis.call("GET", KEYS[1])
if not raw then
  return false
end
local lease = cjson.decode(raw)
lease.lastActivityAt = math.max(lease.lastActivityAt, tonumber(ARGV[1]))
if ARGV[2] ~= "" then
  lease.busyUntil = tonumber(ARGV[2])
end
local updated = cjson.encode(lease)
redis.call("SET", KEYS[1], updated, "KEEPTTL")
return updated
