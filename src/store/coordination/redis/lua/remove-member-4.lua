-- Frees a sandbox's place in its pool, and ends its warm-up, retiring or in-flight mark if it
-- had one.
-- KEYS[1]  sorted set: the pool's members, sandbox id -> expiry
-- KEYS[2]  sorted set: the pool's warm-up starts under way, sandbox id -> expiry
-- KEYS[3]  sorted set: the pool's sandboxes waiting to be destroyed, sandbox id -> expiry
-- KEYS[4]  sorted set: the pool's starts and hand-outs in flight, sandbox id -> mark's expiry
-- ARGV[1]  the sandbox's id
for _, key in ipairs(KEYS) do
  redis.call("ZREM", key, ARGV[1])
end
return 1
