/**
 * The usage sink of a gateway whose billing usage goes through the coordination store's
 * usage backlog (src/store/coordination/usage-backlog.ts) and from there to Postgres by the
 * drainer (usage-drainer.ts). The records of calls, transfers and sessions ride with the
 * store's own writes (the call's end, the lease's write and take: src/session/); what comes
 * here is the rest (a sandbox's CPU and memory, a checkpoint, a call's record whose end could
 * not be written), appended to the backlog at once, and kept and retried while the store is
 * away. Refusals (`denied`) stay best-effort: buffered in memory and written in batches
 * (buffered-usage-sink.ts), as a flood of them must not fill the backlog. With a usage journal
 * (usage-journal.ts), each record is journaled as it is recorded, so a replica killed before
 * its append leaves it for another replica to replay.
 */
import type { Logger } from "pino";
import type { UsageBacklog } from "../store/coordination/usage-backlog.js";
import type { UsageDrainer } from "./usage-drainer.js";
import type { JournalEntry, UsageJournal } from "./usage-journal.js";
import { usageRecord } from "./usage-record.js";
import type { UsageEventInput, UsageSink } from "./usage-sink.js";

/** A record waiting to be appended, and its journal entry. */
interface Outgoing {
  record: string;
  entry: JournalEntry | undefined;
}

/** How long an append that failed waits before it is tried again. */
const RETRY_AFTER_MS = 1_000;

export class DurableUsageSink implements UsageSink {
  /** Records not yet appended, per workspace, oldest first, with their journal entries. */
  private readonly outbox = new Map<string, Outgoing[]>();
  private sending: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly backlog: Pick<UsageBacklog, "appendUsage" | "flushCallEnds">,
    private readonly drainer: Pick<UsageDrainer, "drain">,
    /** Where refusals go. */
    private readonly refusals: UsageSink,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly journal?: Pick<UsageJournal, "append">,
  ) {}

  record(event: UsageEventInput): void {
    if (event.kind === "denied") {
      this.refusals.record(event);
      return;
    }
    const waiting = this.outbox.get(event.workspace);
    const record = usageRecord(event, this.now());
    const outgoing: Outgoing = { record, entry: this.journal?.append(event.workspace, record) };
    if (waiting) waiting.push(outgoing);
    else this.outbox.set(event.workspace, [outgoing]);
    if (!this.retry) void this.send();
  }

  /**
   * Everything recorded so far, and the ends of calls this replica has put off, in the
   * backlog, then one drain round and the refusals: what a read of usage right after waits for.
   */
  async flush(): Promise<void> {
    await this.send();
    await this.backlog.flushCallEnds();
    await this.drainer.drain();
    await this.refusals.flush();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.retry = undefined;
    try {
      await this.send();
    } finally {
      await this.refusals.close();
    }
    const left = [...this.outbox.values()].reduce((sum, records) => sum + records.length, 0);
    if (left === 0) return;
    if (this.journal)
      this.log.warn(
        { waiting: left },
        "usage records could not reach the store before shutdown: the journal keeps them",
      );
    else this.log.error({ lost: left }, "usage records could not reach the store before shutdown");
  }

  /** Appends what waits; concurrent callers share the attempt (and wait for what it sends). */
  private send(): Promise<void> {
    this.sending ??= this.appendAll().finally(() => {
      this.sending = undefined;
    });
    return this.sending;
  }

  private async appendAll(): Promise<void> {
    // A turn of the event loop first: the records of one turn go in one append.
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const [workspace, records] of [...this.outbox]) {
      this.outbox.delete(workspace);
      try {
        await this.backlog.appendUsage(
          workspace,
          records.map((outgoing) => outgoing.record),
        );
        for (const outgoing of records) outgoing.entry?.applied();
      } catch (error) {
        // Kept, ahead of anything recorded meanwhile. An append whose reply was lost may be
        // made twice: its records keep their ids, which count once (merge-usage.ts, the repository).
        this.outbox.set(workspace, [...records, ...(this.outbox.get(workspace) ?? [])]);
        this.log.warn({ err: error, waiting: records.length }, "could not append usage records; will retry");
        this.retryLater();
        return;
      }
    }
    if (this.outbox.size > 0) await this.appendAll();
  }

  private retryLater(): void {
    if (this.retry || this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.send();
    }, RETRY_AFTER_MS);
    this.retry.unref();
  }
}
