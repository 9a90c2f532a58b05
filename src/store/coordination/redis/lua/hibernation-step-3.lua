-- Moves a session one step through hibernation (records.ts: hibernationStepRefusal says
-- when a step may be taken; this repeats it, atomically).
-- The session leaves its workspace's quiet index as it stops running a sandbox (saving,
-- saved, restoring) and comes back as it runs again, quiet since its last activity.
-- A resume is activity: without it a session hibernated for most of its idle timeout would
-- come back already past its deadline, and the reaper would end it as its call waits.
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's quiet index: running session id -> quiet since (epoch ms)
-- KEYS[3]  the workspace's deadline index: session id -> deadline (epoch ms)
-- ARGV[1]  now (epoch ms)
-- ARGV[2]  the phases it may be in, comma-separated ("running": no hibernation)
-- ARGV[3]  the claim the caller holds ("" : none)
-- ARGV[4]  "1": refuse while a call is in flight
-- ARGV[5]  the hibernation after the step, JSON ("": running again)
-- ARGV[6]  the session's new sandbox, JSON ("": unchanged); the lease's node becomes its node
-- ARGV[7]  the session id (its member in the indexes)
-- ARGV[8]  "1": the step is the session's activity (a resume): last activity becomes now and
--          its deadline moves (the same deadline as leaseDeadline() in records.ts)
-- ARGV[9]  a refused save's reason, JSON ("": none); kept as hibernationRefused, which a
--          committed save ("saved") clears
-- Returns  {"stepped", lease JSON}, {"elsewhere", lease JSON}, {"busy"} or {"gone"}
local raw = redis.call("GET", KEYS[1])
if not raw then
  return { "gone" }
end
local lease = cjson.decode(raw)
local now = tonumber(ARGV[1])
local h = lease.hibernation
local phase = h and h.phase or "running"
local allowed = false
for p in string.gmatch(ARGV[2], "[^,]+") do
  if p == phase then
    allowed = true
  end
end
if not allowed then
  return { "elsewhere", raw }
end
if h and h.claimUntil and h.claimUntil > now and h.claimId ~= ARGV[3] then
  return { "elsewhere", raw }
end
if ARGV[4] == "1" and (lease.activeCalls or 0) > 0 and (lease.busyUntil or 0) > now then
  return { "busy" }
end
if ARGV[5] == "" then
  lease.hibernation = nil
else
  lease.hibernation = cjson.decode(ARGV[5])
end
if ARGV[6] ~= "" then
  lease.sandbox = cjson.decode(ARGV[6])
  -- A session resumed on another node is served there from now on (nil on one host).
  lease.node = lease.sandbox.node
end
if ARGV[8] == "1" then
  lease.lastActivityAt = math.max(lease.lastActivityAt, now)
  local idle = math.max(lease.lastActivityAt + lease.idleTimeoutSeconds * 1000, lease.busyUntil or 0)
  redis.call("ZADD", KEYS[3], math.min(idle, lease.createdAt + lease.maxLifetimeSeconds * 1000), ARGV[7])
end
if ARGV[9] ~= "" then
  lease.hibernationRefused = cjson.decode(ARGV[9])
elseif lease.hibernation and lease.hibernation.phase == "saved" then
  lease.hibernationRefused = nil
end
local updated = cjson.encode(lease)
redis.call("SET", KEYS[1], updated, "KEEPTTL")
if lease.hibernation then
  redis.call("ZREM", KEYS[2], ARGV[7])
else
  -- The same time as quietSince() in records.ts.
  redis.call("ZADD", KEYS[2], math.max(lease.lastActivityAt, lease.busyUntil or 0), ARGV[7])
end
return { "stepped", updated }
