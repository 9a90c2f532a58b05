-- Adds execution milliseconds to a workspace's counter for one day.
-- KEYS[1]  the day's counter
-- ARGV[1]  milliseconds to add
-- ARGV[2]  how long the counter is kept (ms): past the end of its day
-- Returns  the new total
local total = redis.call("INCRBY", KEYS[1], ARGV[1])
if redis.call("PTTL", KEYS[1]) < 0 then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return total
