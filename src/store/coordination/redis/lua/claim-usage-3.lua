-- Claims a workspace's usage backlog for a drainer (src/store/coordination/usage-backlog.ts):
-- unless another claimant's claim is live, the claim becomes the caller's, and the batch
-- already claimed (a drainer that died or was slow left it: handed out again unchanged, so
-- its records are written with the same ids) or, when there is none, the oldest records of
-- the queue moved into a new batch, are returned.
-- KEYS[1]  the workspace's usage backlog (a list of usage records, oldest first)
-- KEYS[2]  the workspace's claimed batch (a list of usage records)
-- KEYS[3]  the workspace's claim (a string: the claimant's token, expiring)
-- ARGV[1]  the claimant's token
-- ARGV[2]  records moved into a new batch at most
-- ARGV[3]  how long the claim lasts (ms)
-- Returns  {"busy"}, or {"claimed", record...} (no record: nothing waits, and no claim is
--          kept)
local holder = redis.call("GET", KEYS[3])
if holder and holder ~= ARGV[1] then
  return { "busy" }
end
local batch = redis.call("LRANGE", KEYS[2], 0, -1)
if #batch == 0 then
  local max = tonumber(ARGV[2])
  batch = redis.call("LRANGE", KEYS[1], 0, max - 1)
  if #batch == 0 then
    -- Nothing waits: no claim is kept.
    redis.call("DEL", KEYS[3])
    return { "claimed" }
  end
  redis.call("RPUSH", KEYS[2], unpack(batch))
  redis.call("LTRIM", KEYS[1], #batch, -1)
end
redis.call("SET", KEYS[3], ARGV[1], "PX", ARGV[3])
local reply = { "claimed" }
for _, record in ipairs(batch) do
  reply[#reply + 1] = record
end
return reply
