-- Frees the place of a sandbox whose in-flight mark lapsed: the replica that was starting it
-- or handing it out stopped renewing the mark (it died), so no one will ever push it idle or
-- record its lease. Checked again here, in the step that frees it, so a mark its replica
-- renewed after reconciliation read it is left alone.
-- KEYS[1]  sorted set: the pool's starts and hand-outs in flight, sandbox id -> mark's expiry
-- KEYS[2]  sorted set: the pool's members, sandbox id -> expiry
-- KEYS[3]  sorted set: the pool's warm-up starts under way
-- KEYS[4]  sorted set: the pool's sandboxes waiting to be destroyed, sandbox id -> expiry
-- ARGV[1]  the sandbox id
-- ARGV[2]  now (epoch ms)
-- Returns  1 when its place was freed, 0 when left as it is
local id, now = ARGV[1], tonumber(ARGV[2])
local mark = redis.call("ZSCORE", KEYS[1], id)
if not mark or tonumber(mark) > now then
  return 0
end
-- Its session ended and its destroy is queued: that frees the place (and ends the mark).
local retiring = redis.call("ZSCORE", KEYS[4], id)
if retiring and tonumber(retiring) > now then
  return 0
end
for _, key in ipairs(KEYS) do
  redis.call("ZREM", key, id)
end
return 1
