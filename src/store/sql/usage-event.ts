/**
 * One durable usage record, as the metering buffer hands it to the store. The producer
 * mints `eventId` (a UUID) when the usage happens, so a batch flushed twice counts once.
 */
import { z } from "zod";

export const usageKinds = [
  "session_created",
  "session_ended",
  "exec",
  "file_in",
  "file_out",
  "denied",
  /** CPU milliseconds a sandbox used over its session, from its cgroup (at session end). */
  "sandbox_cpu",
  /** The most memory in bytes a sandbox held at once, from its cgroup (at session end). */
  "sandbox_memory_peak",
  /** A session hibernated: its checkpoint's bytes (src/hibernate/). */
  "checkpoint_saved",
] as const;
export type UsageKind = (typeof usageKinds)[number];

export const usageEventSchema = z.strictObject({
  eventId: z.guid(),
  workspaceId: z.string().min(1),
  sessionId: z.string().min(1),
  kind: z.enum(usageKinds),
  tool: z.string().min(1).nullish(),
  /**
   * Milliseconds for `exec`, `session_ended` (the session's lifetime) and `sandbox_cpu`;
   * bytes for `file_in`, `file_out`, `sandbox_memory_peak` and `checkpoint_saved`; 0 otherwise.
   */
  quantity: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  detail: z.record(z.string(), z.unknown()).nullish(),
  /** How many calls or transfers this record stands for (merged within one flush). */
  events: z.number().int().min(1).default(1),
  /** The sandbox that served the session, on session_created and session_ended. */
  sandboxId: z.string().min(1).nullish(),
  occurredAt: z.date(),
  /**
   * The calls or transfers a record stands for, each with its id and quantity: the
   * repository counts each once, whatever batch it comes in (usage_event_ids).
   */
  parts: z
    .array(
      z.strictObject({ eventId: z.guid(), quantity: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) }),
    )
    .optional(),
});

export type UsageEvent = z.input<typeof usageEventSchema>;

export interface UsageSummaryRow {
  kind: UsageKind;
  tool: string | null;
  /** Number of events. */
  count: number;
  /** Sum of their quantities. */
  quantity: number;
}
