-- Charges a sandbox's CPU to its workspace's day (AdmissionStore.chargeCpu): what it burned
-- since the session's last reading goes into the day's CPU total, and the day's budget
-- counter is raised to that total when below it (a day costs the larger of its calls' wall
-- time and its sandboxes' CPU). Readings only move forward, so replicas reading the same
-- sandbox charge each CPU millisecond once.
-- KEYS[1]  the workspace's last readings: session id -> CPU ms
-- KEYS[2]  the day's CPU total (ms)
-- KEYS[3]  the day's budget counter (ms)
-- ARGV[1]  session id
-- ARGV[2]  the sandbox's CPU so far (ms)
-- ARGV[3]  its baseline (ms) for a session read for the first time; -1: none, start here
-- ARGV[4]  "1": the session ended, forget its reading
-- ARGV[5]  how long the keys are kept (ms)
-- Returns  {charged ms, the day's CPU total, the day's budget counter}
local session, reading, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[5]
local last = tonumber(redis.call("HGET", KEYS[1], session) or ARGV[3])
if last < 0 then
  last = reading
end
local charged = math.max(0, reading - last)
if ARGV[4] == "1" then
  redis.call("HDEL", KEYS[1], session)
else
  redis.call("HSET", KEYS[1], session, math.max(last, reading))
  redis.call("PEXPIRE", KEYS[1], ttl)
end
local cpu_day = redis.call("INCRBY", KEYS[2], charged)
if redis.call("PTTL", KEYS[2]) < 0 then
  redis.call("PEXPIRE", KEYS[2], ttl)
end
local used = tonumber(redis.call("GET", KEYS[3]) or "0")
if cpu_day > used then
  used = cpu_day
  redis.call("SET", KEYS[3], used, "KEEPTTL")
  if redis.call("PTTL", KEYS[3]) < 0 then
    redis.call("PEXPIRE", KEYS[3], ttl)
  end
end
return { charged, cpu_day, used }
