-- Removes a lease and its entries in the deadline and quiet indexes, together: of several
-- callers, exactly one gets the lease, with the replicas that may hold a copy of it in their
-- cache. The one that gets it appends the session's end record to the workspace's usage
-- backlog in the same step (src/store/coordination/usage-backlog.ts), its quantity the
-- session's lifetime (now less the lease's createdAt) and its sandbox the lease's.
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index
-- KEYS[3]  the lease's copies (a set of replica ids; absent for a lease an earlier version
--          wrote, whose copies are unknown)
-- KEYS[4]  the workspace's quiet index
-- KEYS[5]  the workspace's usage backlog (a list of usage records)
-- ARGV[1]  the session id (its member in the indexes)
-- ARGV[2]  the session's end record (JSON object with a "quantity"), or "" for none
-- ARGV[3]  now (epoch ms)
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
if ARGV[2] ~= "" then
  local record, lease = cjson.decode(ARGV[2]), cjson.decode(raw)
  record.quantity = math.max(0, tonumber(ARGV[3]) - lease.createdAt)
  record.sandboxId = lease.sandbox.sandboxId
  redis.call("RPUSH", KEYS[5], cjson.encode(record))
end
local reply = { raw, known }
for _, replica in ipairs(copies) do
  reply[#reply + 1] = replica
end
return reply
