-- Usage rolled up per UTC day, so a report over months reads a few rows, and raw usage_events
-- can be pruned after retention.usageEventsDays without losing the totals. One row per
-- workspace, day, kind, tool and image ('' where the event has none: a primary key cannot
-- hold null). The image is the session's (from its session_created event).
CREATE TABLE usage_daily (
  workspace_id text NOT NULL,
  day_start timestamptz NOT NULL,
  kind text NOT NULL,
  tool text NOT NULL DEFAULT '',
  image text NOT NULL DEFAULT '',
  events bigint NOT NULL CHECK (events >= 0),
  quantity bigint NOT NULL CHECK (quantity >= 0),
  -- The largest single quantity (sandbox_memory_peak is a peak, not a sum).
  quantity_max bigint NOT NULL CHECK (quantity_max >= 0),
  PRIMARY KEY (workspace_id, day_start, kind, tool, image)
);

-- How far the rollup has gone: every day starting before rolled_until is in usage_daily, and
-- only such days' raw events may be pruned. One row (id = 1).
CREATE TABLE usage_rollup_state (
  id integer PRIMARY KEY CHECK (id = 1),
  rolled_until timestamptz NOT NULL
);

-- The rollup finds each event's image through its session's session_created event.
CREATE INDEX usage_events_workspace_session ON usage_events (workspace_id, session_id);
