-- Gives back the unused part of a reservation; the day's total never drops below zero.
-- KEYS[1]  the day's counter
-- ARGV[1]  milliseconds to give back (>= 0)
-- Returns  the new total (0 when the counter is gone)
local used = tonumber(redis.call("GET", KEYS[1]) or "-1")
if used < 0 then
  return 0
end
local total = math.max(0, used - tonumber(ARGV[1]))
redis.call("SET", KEYS[1], total, "KEEPTTL")
return total
