-- Acknowledges a claimed usage batch as written (src/store/coordination/usage-backlog.ts):
-- the batch and the claim go, if the claim is still the caller's.
-- KEYS[1]  the workspace's claimed batch (a list of usage records)
-- KEYS[2]  the workspace's claim (a string: the claimant's token, expiring)
-- ARGV[1]  the claimant's token
-- Returns  1 when acknowledged, 0 when the claim was no longer the caller's
if redis.call("GET", KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call("DEL", KEYS[1], KEYS[2])
return 1
