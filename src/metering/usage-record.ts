/**
 * A billing usage event as the coordination store's usage backlog keeps it
 * (src/store/coordination/usage-backlog.ts): one JSON object per event, its workspace the
 * backlog's, its time in epoch milliseconds. The id is minted here, when the usage happens,
 * so every later write of the event (a drain retried, a claim taken over) counts it once.
 */
import { createHash, randomUUID } from "node:crypto";
import type { UsageEvent, UsageKind } from "../store/sql/usage-event.js";
import type { UsageEventInput } from "./usage-sink.js";

/** An event in the backlog. */
export interface UsageRecord {
  eventId: string;
  sessionId: string;
  kind: UsageKind;
  tool?: string;
  quantity: number;
  occurredAt: number;
  detail?: Record<string, unknown>;
  sandboxId?: string;
}

/** The backlog's record of `event`, happening at `now` (its id given, or a new one). */
export function usageRecord(event: UsageEventInput, now: number): string {
  const record: UsageRecord = {
    eventId: event.eventId ?? randomUUID(),
    sessionId: event.sessionId,
    kind: event.kind,
    quantity: wholeQuantity(event.quantity),
    occurredAt: now,
  };
  if (event.tool !== undefined) record.tool = event.tool;
  if (event.detail !== undefined) record.detail = event.detail;
  if (event.sandboxId !== undefined) record.sandboxId = event.sandboxId;
  return JSON.stringify(record);
}

/** The usage event `raw` records for `workspace`; undefined when it is not a record at all. */
export function parseUsageRecord(workspace: string, raw: string): UsageEvent | undefined {
  let record: Partial<UsageRecord>;
  try {
    record = JSON.parse(raw) as Partial<UsageRecord>;
  } catch {
    return undefined;
  }
  if (
    typeof record !== "object" ||
    record === null ||
    typeof record.eventId !== "string" ||
    typeof record.sessionId !== "string" ||
    typeof record.kind !== "string" ||
    typeof record.occurredAt !== "number"
  ) {
    return undefined;
  }
  return {
    eventId: record.eventId,
    workspaceId: workspace,
    sessionId: record.sessionId,
    kind: record.kind,
    tool: record.tool ?? null,
    quantity: wholeQuantity(record.quantity),
    // Lua's cjson writes an empty object as an empty table, which reads back as [].
    detail: isObject(record.detail) ? record.detail : null,
    sandboxId: record.sandboxId ?? null,
    occurredAt: new Date(record.occurredAt),
    events: 1,
  };
}

/**
 * An event id made from what identifies the event (its workspace, session, sandbox and kind):
 * a job that records it again after a crash makes the same id, which the repository ignores.
 */
export function stableEventId(...parts: string[]): string {
  const hex = createHash("sha256").update(JSON.stringify(parts)).digest("hex");
  // UUID-shaped, version 8 (custom), RFC 4122 variant.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Whole, finite, non-negative: one bad number must not make a whole batch unwritable. */
export function wholeQuantity(quantity: number | undefined): number {
  if (quantity === undefined || !Number.isFinite(quantity)) return 0;
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(quantity)));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
