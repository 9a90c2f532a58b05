-- Removes a lease and its entries in the deadline and quiet indexes, together: of several
-- callers, exactly one gets the lease, with the replicas that may hold a copy of it in their
-- cache.
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index
-- KEYS[3]  the lease's copies (a set of replica ids; absent for a lease an earlier version
--          wrote, whose copies are unknown)
-- KEYS[4]  the workspace's quiet index
-- ARGV[1]  the session id (its member in the indexes)
-- Returns  {lease JSON, "1" when its copies are known, replica id...}, or false when it was
--          already gone
local raw = redis.call("GETDEL", KEYS[1])
redis.call("ZREM", KEYS[2], ARGV[1])
redis.call("ZREM", KEYS[4], ARGV[1])
local copies = redis.call("SMEMBERS", KEYS[3])
local known = redis.call("DEL", KEYS[3]) == 1 and "1" or "0"
if not raw then
  return false
end
local reply = { raw, known }
for _, replica in ipairs(copies) do
  reply[#reply + 1] = replica
end
return reply
