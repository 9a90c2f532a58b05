-- Puts a started sandbox in its pool's idle queue and ends its warm-up mark in one step, so
-- a lease waiting for a warm-up never sees it as neither warming nor idle.
-- KEYS[1]  list: the pool's idle sandboxes (pushed on the left, leased from the right)
-- KEYS[2]  sorted set: the pool's warm-up starts under way, sandbox id -> expiry
-- ARGV[1]  the sandbox's record (JSON)
-- ARGV[2]  the sandbox's id
redis.call("LPUSH", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[2])
return 1
