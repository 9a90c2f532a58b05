-- Takes one particular sandbox out of a pool's idle or parked list (draining, reconciliation).
-- KEYS[1]  the pool's idle (or parked) list of JSON sandbox records
-- ARGV[1]  the sandbox id
-- Returns  the record's JSON, or false when it is not idle (already leased or gone)
local records = redis.call("LRANGE", KEYS[1], 0, -1)
for _, record in ipairs(records) do
  if cjson.decode(record).sandboxId == ARGV[1] then
    redis.call("LREM", KEYS[1], 1, record)
    return record
  end
end
return false
