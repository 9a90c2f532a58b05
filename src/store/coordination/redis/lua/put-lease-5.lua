-- Stores a lease with its deadline in its workspace's deadline index and, running, its
-- quiet-since time in the workspace's quiet index, together, and records the replica writing
-- it as one that holds a copy in its lease cache; a new session's start record goes to the
-- workspace's usage backlog in the same step (src/store/coordination/usage-backlog.ts).
-- KEYS[1]  the lease (JSON string)
-- KEYS[2]  the workspace's deadline index: session id -> deadline (epoch ms)
-- KEYS[3]  the lease's copies: the ids of replicas that may serve calls from a cached copy
-- KEYS[4]  the workspace's quiet index: running session id -> quiet since (epoch ms)
-- KEYS[5]  the workspace's usage backlog (a list of usage records)
-- ARGV[1]  the lease JSON
-- ARGV[2]  when the key expires (epoch ms): past the session's maximum lifetime
-- ARGV[3]  the lease's deadline (epoch ms)
-- ARGV[4]  the session id (its member in the indexes)
-- ARGV[5]  the writing replica's id
-- ARGV[6]  since when it has been quiet (epoch ms), or "" when it runs no sandbox (hibernated)
-- ARGV[7]  the usage record to append, or "" for none
-- Returns  1
redis.call("SET", KEYS[1], ARGV[1], "PXAT", ARGV[2])
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[4])
redis.call("SADD", KEYS[3], ARGV[5])
redis.call("PEXPIREAT", KEYS[3], ARGV[2])
if ARGV[6] == "" then
  redis.call("ZREM", KEYS[4], ARGV[4])
else
  redis.call("ZADD", KEYS[4], ARGV[6], ARGV[4])
end
if ARGV[7] ~= "" then
  redis.call("RPUSH", KEYS[5], ARGV[7])
end
return 1
