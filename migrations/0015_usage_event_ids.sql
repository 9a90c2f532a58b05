-- Every call and transfer event id the drainer has written (issue 45). A merged usage_events
-- row takes the id of its first event only, so an event written again in another batch (a
-- replica's usage journal replayed, an append retried) is recognised here and counted once.
CREATE TABLE usage_event_ids (
  event_id uuid PRIMARY KEY,
  seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_event_ids_seen_at ON usage_event_ids (seen_at);
