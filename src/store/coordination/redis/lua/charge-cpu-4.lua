-- Charges a sandbox's CPU to its workspace's day (AdmissionStore.chargeCpu): what it burned
-- since the session's last reading goes into the day's CPU total. The day has used the
-- larger of that total and its calls' wall time (the budget counter, which this leaves as
-- it is). Readings only move forward, so replicas reading the same sandbox charge each CPU
-- millisecond once; a session's final reading leaves a mark, so a reading taken before its
-- end but arriving after it charges nothing (it would start again from the baseline).
-- KEYS[1]  the workspace's last readings: session id -> CPU ms
-- KEYS[2]  the day's CPU total (ms)
-- KEYS[3]  the day's budget counter (ms of wall time reserved), read only
-- KEYS[4]  the session's end mark
-- ARGV[1]  session id
-- ARGV[2]  the sandbox's CPU so far (ms); -1: unknown (a final reading that could not be taken)
-- ARGV[3]  its baseline (ms) for a session read for the first time; -1: none, start here
-- ARGV[4]  "1": the session ended, forget its reading
-- ARGV[5]  how long the keys are kept (ms)
-- ARGV[6]  how long the end mark is kept (ms)
-- Returns  {charged ms, the day's CPU total, the day's use: the larger of the two counters}
local session, reading, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[5]
local final = ARGV[4] == "1"
local charged = 0
if redis.call("EXISTS", KEYS[4]) == 0 and reading >= 0 then
  local last = tonumber(redis.call("HGET", KEYS[1], session) or ARGV[3])
  if last < 0 then
    last = reading
  end
  charged = math.max(0, reading - last)
  if not final then
    redis.call("HSET", KEYS[1], session, math.max(last, reading))
    redis.call("PEXPIRE", KEYS[1], ttl)
  end
end
if final then
  redis.call("HDEL", KEYS[1], session)
  redis.call("SET", KEYS[4], "1", "PX", ARGV[6])
end
local cpu_day = redis.call("INCRBY", KEYS[2], charged)
if redis.call("PTTL", KEYS[2]) < 0 then
  redis.call("PEXPIRE", KEYS[2], ttl)
end
local wall = tonumber(redis.call("GET", KEYS[3]) or "0")
return { charged, cpu_day, math.max(wall, cpu_day) }
