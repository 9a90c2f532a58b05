/**
 * Where usage events go. The gateway records an event for every session start and end,
 * every call (with its execution time) and every file moved; a sink gives each one an
 * idempotency key at once, so a flush that is retried after a crash never counts twice.
 */
import type { UsageKind } from "../store/sql/usage-event.js";

/** A denied record's `sessionId` when the call named no session (CreateSession). */
export const NO_SESSION = "-";

export interface UsageEventInput {
  workspace: string;
  sessionId: string;
  kind: UsageKind;
  tool?: string;
  /** Milliseconds for calls and sessions, bytes for files. */
  quantity?: number;
  detail?: Record<string, unknown>;
  /** The sandbox that served the session (session start and end). */
  sandboxId?: string;
  /** The event's id when it has one already (a record written again); else the sink mints one. */
  eventId?: string;
}

export interface UsageSink {
  record(event: UsageEventInput): void;
  /** Writes out whatever is buffered. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
