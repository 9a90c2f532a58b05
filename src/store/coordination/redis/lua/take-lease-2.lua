-- Removes a lease and its entry in the deadline index, together: of several callers,
-- exactly one gets the lease.
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index
-- ARGV[1]  the session id (its member in the index)
-- Returns  the lease JSON, or false when it was already gone
local raw = redis.call("GETDEL", KEYS[1])
redis.call("ZREM", KEYS[2], ARGV[1])
return raw or false
