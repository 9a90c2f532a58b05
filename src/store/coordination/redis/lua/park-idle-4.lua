-- Parks a scrubbed sandbox that served a session of its `owner` workspace, for that workspace's
-- next lease, in one step: only while it is still a member (its place not reclaimed), its
-- expiry moved; its retiring and in-flight marks end, as its place is no longer turning over.
-- KEYS[1]  list: the pool's parked sandboxes, JSON records (pushed on the left: newest first)
-- KEYS[2]  sorted set: the pool's members, sandbox id -> expiry
-- KEYS[3]  sorted set: the pool's members waiting to be destroyed (retiring), sandbox id -> expiry
-- KEYS[4]  sorted set: the pool's starts and hand-outs in flight, sandbox id -> mark's expiry
-- ARGV[1]  the sandbox's record (JSON)
-- ARGV[2]  the sandbox's id
-- ARGV[3]  its member expiry (epoch ms)
-- ARGV[4]  now (epoch ms)
-- Returns  1 when parked, 0 when it is not a member
if not redis.call("ZSCORE", KEYS[2], ARGV[2]) then
  return 0
end
local at, now = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call("ZADD", KEYS[2], "XX", at, ARGV[2])
local ttl = redis.call("PTTL", KEYS[2])
if ttl == -1 or (ttl >= 0 and now + ttl < at + 1000) then
  redis.call("PEXPIREAT", KEYS[2], math.floor(at) + 1000)
end
redis.call("LPUSH", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[3], ARGV[2])
redis.call("ZREM", KEYS[4], ARGV[2])
return 1
