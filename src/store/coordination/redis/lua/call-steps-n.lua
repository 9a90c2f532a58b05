-- The steps of one workspace's calls this replica has put off since its last command for
-- them, then (optionally) the beginning of a new call, in one step: a call's end, and the
-- begin of a call served from the replica's lease cache, ride with the next script instead
-- of costing a round trip of their own (redis-call-steps.ts).
--
-- A step is one of:
--   "b"  a call begun from the cache: records the activity, counts the call in and raises
--        busyUntil to its deadline (the replica already reserved its budget);
--   "e"  a call's end: gives back the unused part of its reservation (the day's total never
--        drops below zero), records the activity, counts the call out (the last one clears
--        busyUntil);
--   "r"  time a replica held for the workspace and gives back (a budget allotment).
-- Every step on a lease moves the session in the workspace's deadline index and, while it
-- runs a sandbox, in its quiet index (automatic hibernation). An end's usage record (the
-- call's execution time or bytes moved) is appended to the workspace's usage backlog,
-- whether its lease is still there or not: the call was served
-- (src/store/coordination/usage-backlog.ts).
--
-- The begin finds the lease (an unknown key and another workspace's find the same
-- nothing), refuses one past its deadline, reserves the call's execution time against the
-- day's budget (cut to what remains, refused when nothing does: then the begin changes
-- nothing), marks the session busy until the call's deadline and moves it in the index.
--
-- KEYS[1]             the workspace's deadline index: session id -> deadline (epoch ms)
-- KEYS[2]             the workspace's quiet index: running session id -> quiet since (epoch ms)
-- KEYS[3]             the workspace's usage backlog (a list of usage records)
-- KEYS[2k+2], [2k+3]  step k (k = 1..S): its lease (JSON string; any key of the slot for
--                     "r"), the budget counter of the day its time is given back to (any
--                     key of the slot when none is)
-- KEYS[2S+4..2S+7]    the begin, when there is one: the lease, the day's budget counter, the
--                     day's CPU total (the day has used the larger of the two; any key of
--                     the slot for both when no budget is reserved), the lease's copies (the
--                     replicas that may serve its calls from their lease cache)
-- ARGV[1]             S, the number of steps
-- ARGV[5k-3 .. 5k+1]  step k: its kind ("b", "e", "r"), now (epoch ms), the call's deadline
--                     ("b") or the milliseconds to give back ("e", "r"; 0: none), session id,
--                     the usage record to append ("e"; "" for none)
-- ARGV[5S+2 ..]       the begin: now, the call's deadline (how long it may hold the session
--                     off idling out), milliseconds to reserve (0: none), the day's budget
--                     (ms), how long a new day's counter is kept (ms), the session id, the
--                     beginning replica's id (it keeps a copy of the lease it gets back)
-- Returns  {found} for steps alone, else {found, "gone"}, {found, "expired"},
--          {found, "spent"}, {found, "hibernated"} or {found, "started", updated lease JSON,
--          ms granted}, where
--          found has one character per step: "1" when its lease was still there (always
--          for "r"), else "0"
local index, quiet, usage = KEYS[1], KEYS[2], KEYS[3]
local steps = tonumber(ARGV[1])

local function deadline_of(l)
  -- The same deadline as leaseDeadline() in records.ts.
  local idle = math.max(l.lastActivityAt + l.idleTimeoutSeconds * 1000, l.busyUntil or 0)
  return math.min(idle, l.createdAt + l.maxLifetimeSeconds * 1000)
end

-- Each lease is decoded once and written once, however many of the steps touch it (a
-- session's last call ending and its next beginning, as one client calls after another).
local leases, changed_keys, session_of = {}, {}, {}
local function lease_at(key)
  local lease = leases[key]
  if lease == nil then
    local raw = redis.call("GET", key)
    lease = raw and cjson.decode(raw) or false
    leases[key] = lease
  end
  return lease or nil
end
local function changed(key, session)
  if not session_of[key] then
    changed_keys[#changed_keys + 1] = key
  end
  session_of[key] = session
end
-- Writes every lease changed, with its deadline; returns their JSON by key.
local function commit()
  local written = {}
  for _, key in ipairs(changed_keys) do
    local lease = leases[key]
    written[key] = cjson.encode(lease)
    redis.call("SET", key, written[key], "KEEPTTL")
    redis.call("ZADD", index, deadline_of(lease), session_of[key])
    if not lease.hibernation then
      -- The same time as quietSince() in records.ts.
      redis.call("ZADD", quiet, math.max(lease.lastActivityAt, lease.busyUntil or 0), session_of[key])
    end
  end
  return written
end
local function give_back(budget_key, milliseconds)
  if milliseconds <= 0 then
    return
  end
  local used = tonumber(redis.call("GET", budget_key) or "-1")
  if used >= 0 then
    redis.call("SET", budget_key, math.max(0, used - milliseconds), "KEEPTTL")
  end
end

local found = {}
for k = 1, steps do
  local lease_key, budget_key = KEYS[2 * k + 2], KEYS[2 * k + 3]
  local kind, now, amount, session =
    ARGV[5 * k - 3], tonumber(ARGV[5 * k - 2]), tonumber(ARGV[5 * k - 1]), ARGV[5 * k]
  if kind ~= "b" then
    give_back(budget_key, amount)
  end
  if ARGV[5 * k + 1] ~= "" then
    redis.call("RPUSH", usage, ARGV[5 * k + 1])
  end
  local lease = kind ~= "r" and lease_at(lease_key)
  if kind == "r" then
    found[k] = "1"
  elseif lease then
    lease.lastActivityAt = math.max(lease.lastActivityAt, now)
    if kind == "b" then
      lease.activeCalls = (lease.activeCalls or 0) + 1
      lease.busyUntil = math.max(lease.busyUntil or 0, amount)
    else
      lease.activeCalls = math.max(0, (lease.activeCalls or 0) - 1)
      if lease.activeCalls == 0 then
        lease.busyUntil = nil
      end
    end
    changed(lease_key, session)
    found[k] = "1"
  else
    found[k] = "0"
  end
end
found = table.concat(found)
if #KEYS == 2 * steps + 3 then
  commit()
  return { found }
end

local lease_key, budget_key = KEYS[2 * steps + 4], KEYS[2 * steps + 5]
local at = 5 * steps + 1
local now = tonumber(ARGV[at + 1])
local lease = lease_at(lease_key)
if not lease then
  commit()
  return { found, "gone" }
end
if deadline_of(lease) <= now then
  commit()
  return { found, "expired" }
end
-- A hibernated session (or one being saved or restored) has no sandbox to call: the caller
-- resumes it first (src/hibernate/session-hibernation.ts), then begins again.
if lease.hibernation then
  commit()
  return { found, "hibernated" }
end
local granted = 0
local requested = tonumber(ARGV[at + 3])
if requested > 0 then
  local used = math.max(
    tonumber(redis.call("GET", budget_key) or "0"),
    tonumber(redis.call("GET", KEYS[2 * steps + 6]) or "0")
  )
  granted = math.min(requested, tonumber(ARGV[at + 4]) - used)
  if granted <= 0 then
    commit()
    return { found, "spent" }
  end
  redis.call("INCRBY", budget_key, granted)
  if redis.call("PTTL", budget_key) < 0 then
    redis.call("PEXPIRE", budget_key, ARGV[at + 5])
  end
end
lease.lastActivityAt = math.max(lease.lastActivityAt, now)
lease.activeCalls = (lease.activeCalls or 0) + 1
lease.busyUntil = math.max(lease.busyUntil or 0, tonumber(ARGV[at + 2]))
changed(lease_key, ARGV[at + 6])
local copies = KEYS[2 * steps + 7]
redis.call("SADD", copies, ARGV[at + 7])
local ttl = redis.call("PTTL", lease_key)
if ttl > 0 then
  redis.call("PEXPIRE", copies, ttl)
end
return { found, "started", commit()[lease_key], granted }
