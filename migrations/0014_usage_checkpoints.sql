-- A hibernated session's checkpoint is metered (checkpoint_saved, bytes): src/hibernate/.
ALTER TABLE usage_events DROP CONSTRAINT usage_events_kind_check;
ALTER TABLE usage_events ADD CONSTRAINT usage_events_kind_check CHECK (
  kind IN ('session_created', 'session_ended', 'exec', 'file_in', 'file_out', 'denied',
           'sandbox_cpu', 'sandbox_memory_peak', 'checkpoint_saved')
);
