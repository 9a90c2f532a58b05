-- Records activity on a lease: last activity never moves backwards; a call that begins
-- counts in and raises busyUntil to its deadline, the last call that ends clears it. The
-- lease's new deadline goes into its workspace's deadline index (what the reaper reads) and,
-- while it runs a sandbox, its quiet-since time into the quiet index (automatic hibernation).
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index: session id -> deadline (epoch ms)
-- KEYS[3]  the workspace's quiet index: running session id -> quiet since (epoch ms)
-- ARGV[1]  now (epoch ms)
-- ARGV[2]  "begin", "end", or "" for plain activity
-- ARGV[3]  with "begin": the call's deadline (epoch ms)
-- ARGV[4]  the session id (its member in the indexes)
-- Returns  the updated lease JSON, or false when the lease is gone
local raw = redis.call("GET", KEYS[1])
if not raw then
  return false
end
local lease = cjson.decode(raw)
lease.lastActivityAt = math.max(lease.lastActivityAt, tonumber(ARGV[1]))
if ARGV[2] == "begin" then
  lease.activeCalls = (lease.activeCalls or 0) + 1
  lease.busyUntil = math.max(lease.busyUntil or 0, tonumber(ARGV[3]))
elseif ARGV[2] == "end" then
  lease.activeCalls = math.max(0, (lease.activeCalls or 0) - 1)
  if lease.activeCalls == 0 then
    lease.busyUntil = nil
  end
end
local updated = cjson.encode(lease)
redis.call("SET", KEYS[1], updated, "KEEPTTL")
-- The same deadline as leaseDeadline() in records.ts.
local idle = math.max(lease.lastActivityAt + lease.idleTimeoutSeconds * 1000, lease.busyUntil or 0)
local deadline = math.min(idle, lease.createdAt + lease.maxLifetimeSeconds * 1000)
redis.call("ZADD", KEYS[2], deadline, ARGV[4])
-- The same time as quietSince() in records.ts; a hibernated session has no entry.
if not lease.hibernation then
  redis.call("ZADD", KEYS[3], math.max(lease.lastActivityAt, lease.busyUntil or 0), ARGV[4])
end
return updated
