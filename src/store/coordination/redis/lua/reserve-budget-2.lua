-- Reserves execution milliseconds against a workspace's budget for one day, in one step,
-- so calls admitted at the same moment cannot together overshoot it. The day has used the
-- larger of its calls' wall time (KEYS[1]) and its sandboxes' CPU (KEYS[2], charge-cpu).
-- KEYS[1]  the day's counter of wall time reserved
-- KEYS[2]  the day's CPU total (ms)
-- ARGV[1]  milliseconds requested (a positive integer)
-- ARGV[2]  the day's budget (ms)
-- ARGV[3]  how long the counter is kept (ms): past the end of its day
-- Returns  the milliseconds granted: min(requested, remaining); 0 (nothing reserved) when none remain
local used = math.max(tonumber(redis.call("GET", KEYS[1]) or "0"), tonumber(redis.call("GET", KEYS[2]) or "0"))
local remaining = tonumber(ARGV[2]) - used
if remaining <= 0 then
  return 0
end
local granted = math.min(tonumber(ARGV[1]), remaining)
if granted <= 0 then
  return 0
end
redis.call("INCRBY", KEYS[1], granted)
if redis.call("PTTL", KEYS[1]) < 0 then
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
end
return granted
