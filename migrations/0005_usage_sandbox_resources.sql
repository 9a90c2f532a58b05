-- What a sandbox really used, read from its cgroup when its session ends: CPU time
-- (sandbox_cpu, milliseconds) and the most memory it held at once (sandbox_memory_peak,
-- bytes; only where the engine reports a peak). The session's lifetime stays on
-- session_ended (milliseconds, measured by the gateway from lease to end).
ALTER TABLE usage_events DROP CONSTRAINT usage_events_kind_check;
ALTER TABLE usage_events ADD CONSTRAINT usage_events_kind_check CHECK (
  kind IN ('session_created', 'session_ended', 'exec', 'file_in', 'file_out', 'denied',
           'sandbox_cpu', 'sandbox_memory_peak')
);
