-- Ends a call on a session, in one step: gives back the unused part of its reservation
-- (the day's total never drops below zero), records the activity, counts the call out (the
-- last one clears busyUntil) and moves the session in its workspace's deadline index.
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index: session id -> deadline (epoch ms)
-- KEYS[3]  the budget counter of the day the time was reserved on
-- ARGV[1]  now (epoch ms)
-- ARGV[2]  milliseconds to give back (0: none)
-- ARGV[3]  the session id (its member in the index)
-- Returns  1 when the lease was still there, 0 when it is gone (the refund is made anyway)
local refund = tonumber(ARGV[2])
if refund > 0 then
  local used = tonumber(redis.call("GET", KEYS[3]) or "-1")
  if used >= 0 then
    redis.call("SET", KEYS[3], math.max(0, used - refund), "KEEPTTL")
  end
end
local raw = redis.call("GET", KEYS[1])
if not raw then
  return 0
end
local lease = cjson.decode(raw)
lease.lastActivityAt = math.max(lease.lastActivityAt, tonumber(ARGV[1]))
lease.activeCalls = math.max(0, (lease.activeCalls or 0) - 1)
if lease.activeCalls == 0 then
  lease.busyUntil = nil
end
redis.call("SET", KEYS[1], cjson.encode(lease), "KEEPTTL")
-- The same deadline as leaseDeadline() in records.ts.
local idle = math.max(lease.lastActivityAt + lease.idleTimeoutSeconds * 1000, lease.busyUntil or 0)
local deadline = math.min(idle, lease.createdAt + lease.maxLifetimeSeconds * 1000)
redis.call("ZADD", KEYS[2], deadline, ARGV[3])
return 1
