-- Puts a started sandbox in its pool's idle queue and ends its warm-up and in-flight marks in
-- one step, so a lease waiting for a warm-up never sees it as neither warming nor idle; or, the
-- same way, a scrubbed one in the pool's parked list, ending its retiring mark. Given
-- a member expiry, only a member is queued (one whose place reconciliation reclaimed, its
-- replica having stalled past its in-flight mark, is not), its expiry moved in the same step.
-- KEYS[1]  list: the pool's idle sandboxes (pushed on the left, leased from the right), or its
--          parked ones (leased newest first, by their owner)
-- KEYS[2]  sorted set: the mark that ends: the pool's warm-up starts under way (idle), or its
--          sandboxes waiting to be destroyed or recycled (parked), sandbox id -> expiry
-- KEYS[3]  sorted set: the pool's members, sandbox id -> expiry
-- KEYS[4]  sorted set: the pool's starts and hand-outs in flight, sandbox id -> mark's expiry
-- ARGV[1]  the sandbox's record (JSON)
-- ARGV[2]  the sandbox's id
-- ARGV[3]  its member expiry (epoch ms); empty: queue it whether or not it is a member
-- ARGV[4]  now (epoch ms)
-- Returns  1 when queued, 0 when it is not a member
if ARGV[3] ~= "" then
  if not redis.call("ZSCORE", KEYS[3], ARGV[2]) then
    return 0
  end
  local at, now = tonumber(ARGV[3]), tonumber(ARGV[4])
  redis.call("ZADD", KEYS[3], "XX", at, ARGV[2])
  -- The set lives at least as long as its member now does.
  local ttl = redis.call("PTTL", KEYS[3])
  if ttl == -1 or (ttl >= 0 and now + ttl < at + 1000) then
    redis.call("PEXPIREAT", KEYS[3], math.floor(at) + 1000)
  end
end
redis.call("LPUSH", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[2])
redis.call("ZREM", KEYS[4], ARGV[2])
return 1
