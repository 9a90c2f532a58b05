-- Claims a node that stopped heart-beating, for exactly one edge: that edge ends its
-- sessions. A heartbeat that arrived meanwhile (the node is back) makes the claim fail; a
-- node that returns and is lost again can be claimed again (the claim names its last beat).
-- KEYS[1]  sorted set: node id -> last heartbeat (epoch ms)
-- KEYS[2]  hash: node id -> the heartbeat it was last claimed lost at
-- ARGV[1]  node id
-- ARGV[2]  cutoff (epoch ms): a heartbeat older than this is lost
-- Returns  1 if this caller claimed the node, else 0
local beat = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not beat or tonumber(beat) >= tonumber(ARGV[2]) then
  return 0
end
if redis.call("HGET", KEYS[2], ARGV[1]) == beat then
  return 0
end
redis.call("HSET", KEYS[2], ARGV[1], beat)
return 1
