-- Retention reads usage_events by time alone: the oldest event (min(occurred_at)), each day's
-- rollup and each prune batch. Without this index every one of them scans the whole table,
-- which on a large table outlasts the statement timeout, so retention never got anywhere.
CREATE INDEX usage_events_occurred_at ON usage_events (occurred_at);
