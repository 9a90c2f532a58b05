-- Session start and end events name the sandbox that served the session, and the start
-- event carries the lease (in detail.lease). If Redis loses its state, reconciliation finds
-- a running sandbox's open session here and rebuilds its lease and slot.
ALTER TABLE usage_events ADD COLUMN sandbox_id text;

CREATE INDEX usage_events_sandbox_idx ON usage_events (sandbox_id) WHERE sandbox_id IS NOT NULL;
