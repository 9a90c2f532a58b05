/**
 * One claimed batch of usage records as the rows written for it: calls and transfers of one
 * session, kind and tool merged into one row (quantity summed, `events` counted), so a busy
 * session writes a row per batch, not a row per call. A batch is frozen once claimed
 * (src/store/coordination/usage-backlog.ts), so the rows made from it, their ids included,
 * are the same however often it is written: a merged row takes the id of its first event,
 * and lists every event's id and quantity (`parts`), so an event met again in a later batch
 * (a usage journal replayed, an append retried) counts once (usage-repository.ts). An event
 * id met twice in the batch counts once.
 */
import type { UsageEvent, UsageKind } from "../store/sql/usage-event.js";
import { parseUsageRecord, wholeQuantity } from "./usage-record.js";

const MERGEABLE = new Set<UsageKind>(["exec", "file_in", "file_out"]);

export interface MergedBatch {
  rows: UsageEvent[];
  /** Records that were not usage records at all (dropped). */
  unreadable: number;
}

export function mergeUsageBatch(workspace: string, records: readonly string[]): MergedBatch {
  const rows: UsageEvent[] = [];
  const merged = new Map<string, UsageEvent>();
  const seen = new Set<string>();
  let unreadable = 0;
  for (const raw of records) {
    const event = parseUsageRecord(workspace, raw);
    if (!event) {
      unreadable++;
      continue;
    }
    if (seen.has(event.eventId)) continue;
    seen.add(event.eventId);
    const key = MERGEABLE.has(event.kind)
      ? JSON.stringify([event.sessionId, event.kind, event.tool ?? null])
      : undefined;
    const into = key === undefined ? undefined : merged.get(key);
    if (into) {
      into.quantity = wholeQuantity(into.quantity + event.quantity);
      into.events = (into.events ?? 1) + 1;
      into.parts!.push({ eventId: event.eventId, quantity: event.quantity });
      continue;
    }
    rows.push(event);
    if (key === undefined) continue;
    event.parts = [{ eventId: event.eventId, quantity: event.quantity }];
    merged.set(key, event);
  }
  return { rows, unreadable };
}
