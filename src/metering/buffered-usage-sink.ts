/**
 * Usage events buffered in memory and written to Postgres in batches: every second, or
 * sooner when a batch fills. Each event gets its id when it happens, and the repository
 * ignores ids it already has, so a batch retried after a failed write counts once. While
 * the database is away events wait rather than slowing requests.
 *
 * Two queues, written in this order: billing events (sessions, calls, transfers, sandbox
 * usage), which are never dropped, and refusals (`denied`, refusal-buffer.ts),
 * merged per workspace, operation, code and second and bounded: a flood of refusals while
 * the database is slow can only crowd out older refusals, never a usage record.
 *
 * Calls and transfers of one session, tool and kind that happen while a record waits (not
 * yet sent to the database) are merged into it (quantity summed, `events` counted): a busy
 * session writes a row per flush, not a row per call, and while the database is away the
 * billing queue grows with the sessions, not with their calls.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageEvent, UsageKind } from "../store/sql/usage-event.js";
import { RefusalBuffer } from "./refusal-buffer.js";
import type { UsageEventInput, UsageSink } from "./usage-sink.js";

export interface UsageWriter {
  insert(events: readonly UsageEvent[]): Promise<number>;
}

export interface BufferedUsageSinkOptions {
  /** The most refusal rows waiting for the database; past it the oldest refusals are dropped. */
  maxRefusalsWaiting?: number;
}

const BATCH_SIZE = 500;
const MERGEABLE = new Set<UsageKind>(["exec", "file_in", "file_out"]);
const MAX_REFUSALS_WAITING = 10_000;
/** The billing queue's size is logged each time it passes another multiple of this. */
const BACKLOG_WARN_STEP = 10_000;

export class BufferedUsageSink implements UsageSink {
  /** Billing events waiting, oldest first; never dropped. */
  private billing: UsageEvent[] = [];
  /** Billing records not yet sent to the database, which later calls of the same kind merge into. */
  private readonly open = new Map<string, UsageEvent>();
  private readonly refusals: RefusalBuffer;
  private flushing: Promise<void> | undefined;
  private flushingEverything = false;
  private backlogWarnedAt = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly writer: UsageWriter,
    private readonly log: Logger,
    flushEveryMs = 1_000,
    options: BufferedUsageSinkOptions = {},
  ) {
    this.refusals = new RefusalBuffer(options.maxRefusalsWaiting ?? MAX_REFUSALS_WAITING, log);
    // The timer writes the refusals of seconds already over: each second's are one row per code.
    this.timer = setInterval(() => void this.write(false), flushEveryMs);
    this.timer.unref();
  }

  record(event: UsageEventInput): void {
    if (event.kind === "denied") {
      this.refusals.add(event, new Date());
      if (this.refusals.size >= BATCH_SIZE) void this.write(false);
      return;
    }
    const mergeKey = mergeKeyOf(event.workspace, event.sessionId, event.kind, event.tool ?? null);
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
    this.billing.push(record);
    if (mergeKey !== undefined) this.open.set(mergeKey, record);
    this.warnOfBacklog();
    if (this.billing.length >= BATCH_SIZE) void this.write(false);
  }

  /** Writes everything buffered, the current second's refusals too; concurrent callers share one flush. */
  flush(): Promise<void> {
    return this.write(true);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private write(everything: boolean): Promise<void> {
    // A flush of everything asked for during a partial one makes that one write everything.
    if (everything) this.flushingEverything = true;
    this.flushing ??= this.writeAll().finally(() => {
      this.flushing = undefined;
      this.flushingEverything = false;
    });
    return this.flushing;
  }

  /** Billing first, all of it; then refusals. A failed write stops the flush: the next one retries. */
  private async writeAll(): Promise<void> {
    while (this.billing.length > 0) {
      // The batch leaves the queue while it is written, so events recorded meanwhile never
      // shift what a successful write removes.
      const batch = this.billing.splice(0, BATCH_SIZE);
      // What is sent is final (a failed write may still have stored it): later calls start new records.
      for (const record of batch) {
        const key = mergeKeyOf(record.workspaceId, record.sessionId, record.kind, record.tool ?? null);
        if (key !== undefined && this.open.get(key) === record) this.open.delete(key);
      }
      if (!(await this.insert(batch))) {
        this.billing.unshift(...batch);
        return;
      }
    }
    // What waits now, no more: a flood arriving while these are written waits for the next flush.
    for (let left = this.refusals.size; left > 0; ) {
      const batch = this.refusals.take(Math.min(BATCH_SIZE, left), new Date(), this.flushingEverything);
      if (batch.length === 0) return;
      left -= batch.length;
      if (!(await this.insert(batch))) {
        this.refusals.giveBack(batch);
        return;
      }
    }
  }

  /** True when the batch is written (or set aside for good); false when it should be retried. */
  private async insert(batch: UsageEvent[]): Promise<boolean> {
    try {
      await this.writer.insert(batch);
      return true;
    } catch (error) {
      if (error instanceof SandpoolError && error.code === "request.malformed") {
        // A batch the store refuses as malformed would be refused forever: set it aside.
        this.log.error({ err: error, dropped: batch.length }, "usage events refused as malformed: dropped");
        return true;
      }
      this.log.warn(
        { err: error, waiting: this.billing.length + batch.length, refusalsWaiting: this.refusals.size },
        "usage flush failed; will retry",
      );
      return false;
    }
  }

  /** Billing events are never dropped: a growing queue is said loudly instead. */
  private warnOfBacklog(): void {
    const step = Math.floor(this.billing.length / BACKLOG_WARN_STEP);
    if (step <= this.backlogWarnedAt) {
      if (step < this.backlogWarnedAt) this.backlogWarnedAt = step;
      return;
    }
    this.backlogWarnedAt = step;
    this.log.warn(
      { waiting: this.billing.length },
      "usage events are piling up: the database is not taking them",
    );
  }
}

/** The key of the waiting record a billing event merges into, or undefined when it stands alone. */
function mergeKeyOf(workspace: string, sessionId: string, kind: UsageKind, tool: string | null) {
  return MERGEABLE.has(kind) ? JSON.stringify([workspace, sessionId, kind, tool]) : undefined;
}

/** Whole, finite, non-negative: one bad number must not make a whole batch unwritable. */
function sanitizeQuantity(quantity: number | undefined): number {
  if (quantity === undefined || !Number.isFinite(quantity)) return 0;
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(quantity)));
}
