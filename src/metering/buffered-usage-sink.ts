/**
 * Usage events buffered in memory and written to Postgres in batches: every second, or
 * sooner when a batch fills. Each event gets its id when it happens, and the repository
 * ignores ids it already has, so a batch retried after a failed write counts once. While
 * the database is away events wait (up to a bound, past which the oldest are dropped and
 * said so in the log) rather than slowing requests.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageEvent } from "../store/sql/usage-event.js";
import type { UsageEventInput, UsageSink } from "./usage-sink.js";

export interface UsageWriter {
  insert(events: readonly UsageEvent[]): Promise<number>;
}

const BATCH_SIZE = 500;
const MAX_BUFFERED = 100_000;

export class BufferedUsageSink implements UsageSink {
  private buffer: UsageEvent[] = [];
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
    this.buffer.push({
      eventId: randomUUID(),
      workspaceId: event.workspace,
      sessionId: event.sessionId,
      kind: event.kind,
      tool: event.tool ?? null,
      quantity: sanitizeQuantity(event.quantity),
      detail: event.detail ?? null,
      sandboxId: event.sandboxId ?? null,
      occurredAt: new Date(),
    });
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
    this.log.error({ dropped: dropped.length }, "usage buffer full: oldest events dropped");
  }
}

/** Whole, finite, non-negative: one bad number must not make a whole batch unwritable. */
function sanitizeQuantity(quantity: number | undefined): number {
  if (quantity === undefined || !Number.isFinite(quantity)) return 0;
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(quantity)));
}
