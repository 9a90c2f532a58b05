/**
 * Usage events buffered in memory and written to Postgres in batches: every second, or
 * sooner when a batch fills. Each event gets its id when it happens, and the repository
 * ignores ids it already has, so a batch retried after a failed write counts once. While
 * the database is away events wait (up to a bound, past which the oldest are dropped and
 * said so in the log) rather than slowing requests.
 *
 * Calls and transfers of one session, tool and kind that happen while a record waits are
 * merged into it (quantity summed, `events` counted): a busy session writes a row per
 * flush, not a row per call. So are identical refusals (`denied`: same session, operation,
 * code and principal), so a client hammering a quota cannot flood the table.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageEvent, UsageKind } from "../store/sql/usage-event.js";
import type { UsageEventInput, UsageSink } from "./usage-sink.js";

export interface UsageWriter {
  insert(events: readonly UsageEvent[]): Promise<number>;
}

const BATCH_SIZE = 500;
const MERGEABLE = new Set<UsageKind>(["exec", "file_in", "file_out"]);
const MAX_BUFFERED = 100_000;

export class BufferedUsageSink implements UsageSink {
  private buffer: UsageEvent[] = [];
  /** Records still waiting in the buffer that later calls of the same kind merge into. */
  private readonly open = new Map<string, UsageEvent>();
  private flushing: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly writer: UsageWriter,
    private readonly log: Logger,
    flushEveryMs = 1_000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  record(event: UsageEventInput): void {
    const mergeKey = mergeKeyOf(event);
    const waiting = mergeKey === undefined ? undefined : this.open.get(mergeKey);
    if (waiting) {
      waiting.quantity = sanitizeQuantity(waiting.quantity + (event.quantity ?? 0));
      waiting.events = (waiting.events ?? 1) + 1;
      return;
    }
    const record: UsageEvent = {
      eventId: randomUUID(),
      workspaceId: event.workspace,
      sessionId: event.sessionId,
      kind: event.kind,
      tool: event.tool ?? null,
      quantity: sanitizeQuantity(event.quantity),
      detail: event.detail ?? null,
      sandboxId: event.sandboxId ?? null,
      occurredAt: new Date(),
      events: 1,
    };
    this.buffer.push(record);
    if (mergeKey !== undefined) this.open.set(mergeKey, record);
    this.enforceBound();
    if (this.buffer.length >= BATCH_SIZE) void this.flush();
  }

  /** Writes everything buffered; concurrent callers share one flush. */
  flush(): Promise<void> {
    this.flushing ??= this.writeAll().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async writeAll(): Promise<void> {
    while (this.buffer.length > 0) {
      // The batch leaves the buffer while it is written, so events recorded (or dropped
      // for the bound) meanwhile never shift what a successful write removes.
      const batch = this.buffer.splice(0, BATCH_SIZE);
      this.open.clear(); // what is written (or retried) is final: later calls start new records
      try {
        await this.writer.insert(batch);
      } catch (error) {
        if (error instanceof SandpoolError && error.code === "request.malformed") {
          // A batch the store refuses as malformed would be refused forever: set it aside.
          this.log.error({ err: error, dropped: batch.length }, "usage events refused as malformed: dropped");
          continue;
        }
        this.buffer.unshift(...batch);
        this.enforceBound();
        this.log.warn({ err: error, waiting: this.buffer.length }, "usage flush failed; will retry");
        return;
      }
    }
  }

  private enforceBound(): void {
    if (this.buffer.length <= MAX_BUFFERED) return;
    const dropped = this.buffer.splice(0, this.buffer.length - MAX_BUFFERED);
    this.open.clear();
    this.log.error({ dropped: dropped.length }, "usage buffer full: oldest events dropped");
  }
}

/** The key of the waiting record an event merges into, or undefined when it stands alone. */
function mergeKeyOf(event: UsageEventInput): string | undefined {
  if (MERGEABLE.has(event.kind))
    return JSON.stringify([event.workspace, event.sessionId, event.kind, event.tool ?? null]);
  if (event.kind === "denied") {
    const { operation, code, principal } = event.detail ?? {};
    return JSON.stringify([event.workspace, event.sessionId, event.kind, operation, code, principal]);
  }
  return undefined;
}

/** Whole, finite, non-negative: one bad number must not make a whole batch unwritable. */
function sanitizeQuantity(quantity: number | undefined): number {
  if (quantity === undefined || !Number.isFinite(quantity)) return 0;
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(quantity)));
}
