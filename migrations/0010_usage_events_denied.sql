-- The audit of refused calls (GET /admin/v1/audit?kind=denied) reads a workspace's denied
-- events newest first; refusals are a small share of all events, so a partial index serves
-- that read without growing with every exec.
CREATE INDEX usage_events_denied ON usage_events (workspace_id, occurred_at DESC) WHERE kind = 'denied';
