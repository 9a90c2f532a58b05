-- Begins a call on a session, in one step: finds the lease (an unknown key and another
-- workspace's find the same nothing), refuses one past its deadline, reserves the call's
-- execution time against the day's budget (cut to what remains, refused when nothing
-- does: then nothing else changes), marks the session busy until the call's deadline and
-- moves it in its workspace's deadline index.
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index: session id -> deadline (epoch ms)
-- KEYS[3]  the day's budget counter (untouched when ARGV[3] is 0)
-- ARGV[1]  now (epoch ms)
-- ARGV[2]  the call's deadline (epoch ms): how long it may hold the session off idling out
-- ARGV[3]  milliseconds to reserve (0: the call reserves no budget)
-- ARGV[4]  the day's budget (ms)
-- ARGV[5]  how long a new day's counter is kept (ms): past the end of its day
-- ARGV[6]  the session id (its member in the index)
-- Returns  {"gone"}, {"expired"}, {"spent"}, or {"started", updated lease JSON, ms granted}
local raw = redis.call("GET", KEYS[1])
if not raw then
  return { "gone" }
end
local lease = cjson.decode(raw)
local now = tonumber(ARGV[1])
local function deadline_of(l)
  -- The same deadline as leaseDeadline() in records.ts.
  local idle = math.max(l.lastActivityAt + l.idleTimeoutSeconds * 1000, l.busyUntil or 0)
  return math.min(idle, l.createdAt + l.maxLifetimeSeconds * 1000)
end
if deadline_of(lease) <= now then
  return { "expired" }
end
local granted = 0
local requested = tonumber(ARGV[3])
if requested > 0 then
  local used = tonumber(redis.call("GET", KEYS[3]) or "0")
  granted = math.min(requested, tonumber(ARGV[4]) - used)
  if granted <= 0 then
    return { "spent" }
  end
  redis.call("INCRBY", KEYS[3], granted)
  if redis.call("PTTL", KEYS[3]) < 0 then
    redis.call("PEXPIRE", KEYS[3], ARGV[5])
  end
end
lease.lastActivityAt = math.max(lease.lastActivityAt, now)
lease.activeCalls = (lease.activeCalls or 0) + 1
lease.busyUntil = math.max(lease.busyUntil or 0, tonumber(ARGV[2]))
local updated = cjson.encode(lease)
redis.call("SET", KEYS[1], updated, "KEEPTTL")
redis.call("ZADD", KEYS[2], deadline_of(lease), ARGV[6])
return { "started", updated, granted }
