-- Adds one replica's pool counts since its last exchange and answers the deployment's totals.
-- KEYS[1]  the pool's demand hash: warmLeases, coldLeases, warmupFailures, failureAt,
--          failureMessage, failureNextAttemptAt, failureConsecutive, succeededAt
-- KEYS[2]  the pool's list of recent refill times (ms), newest first
-- ARGV[1..3]  warm leases, cold leases, failed starts to add
-- ARGV[4]  how many refill times to keep; ARGV[5] expiry of both keys (ms after now)
-- ARGV[6..9]  a failed start (at, message, next attempt at, failures in a row); at "" for none
-- ARGV[10] when a start last succeeded ("" for none); ARGV[11..] refill times to add
-- Returns  {warmLeases, coldLeases, warmupFailures, failureAt, failureMessage,
--          failureNextAttemptAt, failureConsecutive, succeededAt, {refill times}};
--          the failure fields are false when no failure was ever recorded
local hash, refills = KEYS[1], KEYS[2]
local window = tonumber(ARGV[4])
local fields = { "warmLeases", "coldLeases", "warmupFailures" }
for i = 1, 3 do
  local n = tonumber(ARGV[i])
  if n > 0 then redis.call("HINCRBY", hash, fields[i], n) end
end
-- A newer failure replaces an older one; a late exchange of an old failure changes nothing.
if ARGV[6] ~= "" and tonumber(ARGV[6]) > tonumber(redis.call("HGET", hash, "failureAt") or "0") then
  redis.call("HSET", hash, "failureAt", ARGV[6], "failureMessage", ARGV[7],
    "failureNextAttemptAt", ARGV[8], "failureConsecutive", ARGV[9])
end
if ARGV[10] ~= "" and tonumber(ARGV[10]) > tonumber(redis.call("HGET", hash, "succeededAt") or "0") then
  redis.call("HSET", hash, "succeededAt", ARGV[10])
end
if #ARGV > 10 then
  for i = 11, #ARGV do redis.call("LPUSH", refills, ARGV[i]) end
  redis.call("LTRIM", refills, 0, window - 1)
end
local ttl = tonumber(ARGV[5])
redis.call("PEXPIRE", hash, ttl)
if redis.call("EXISTS", refills) == 1 then redis.call("PEXPIRE", refills, ttl) end
local totals = redis.call("HMGET", hash, "warmLeases", "coldLeases", "warmupFailures", "failureAt",
  "failureMessage", "failureNextAttemptAt", "failureConsecutive", "succeededAt")
totals[9] = redis.call("LRANGE", refills, 0, window - 1)
return totals
