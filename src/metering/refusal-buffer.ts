/**
 * Refusals (usage events of kind `denied`) waiting to be written, kept apart from billing
 * events so that neither can crowd out the other. Refusals are merged per workspace,
 * operation, code and wall-clock second, whatever ids the client put in its calls: a client
 * hammering `GET /sessions/<random id>` writes one row a second per code, not one a call. A
 * merged row keeps what an operator needs: the first refusal's session id and principal (as
 * samples), how many refusals it stands for, and how many distinct sessions and principals
 * they named (counted up to DISTINCT_COUNTED).
 *
 * While the database is away the buffer holds at most `bound` rows; past that the oldest
 * refusals are dropped (and said so in the log). Billing events are never dropped for them:
 * they wait in a queue of their own (src/metering/buffered-usage-sink.ts).
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { UsageEvent } from "../store/sql/usage-event.js";
import { NO_SESSION, type UsageEventInput } from "./usage-sink.js";

/** Distinct session ids (and principals) are counted up to this many per row: a bounded set in memory. */
export const DISTINCT_COUNTED = 100;
const DROP_REPORT_MS = 10_000;

/** A row of the current second that later refusals still merge into. */
interface OpenRow {
  row: UsageEvent;
  sessions: Set<string>;
  principals: Set<string>;
}

export class RefusalBuffer {
  /** Rows waiting to be written, oldest first. */
  private waiting: UsageEvent[] = [];
  /** The current second's rows by merge key; emptied when the second turns. */
  private readonly open = new Map<string, OpenRow>();
  private openSecond = Number.NaN;
  /** Dropped since the last report, and when that was. */
  private droppedRows = 0;
  private droppedRefusals = 0;
  private reportedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly bound: number,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.waiting.length;
  }

  add(event: UsageEventInput, now: Date): void {
    this.roll(now);
    const detail = event.detail ?? {};
    const operation = String(detail.operation ?? "unmatched");
    const code = String(detail.code ?? "");
    // Only what the gateway decided is in the key: never the ids the client chose.
    const key = JSON.stringify([event.workspace, operation, code]);
    const principal = typeof detail.principal === "string" ? detail.principal : null;
    const open = this.open.get(key);
    if (open) {
      open.row.events = (open.row.events ?? 1) + 1;
      countDistinct(open.sessions, event.sessionId === NO_SESSION ? undefined : event.sessionId);
      countDistinct(open.principals, principal ?? undefined);
      open.row.detail = {
        ...open.row.detail,
        sessions: open.sessions.size,
        principals: open.principals.size,
      };
      return;
    }
    const sessions = new Set<string>();
    const principals = new Set<string>();
    countDistinct(sessions, event.sessionId === NO_SESSION ? undefined : event.sessionId);
    countDistinct(principals, principal ?? undefined);
    const row: UsageEvent = {
      eventId: randomUUID(),
      workspaceId: event.workspace,
      // The first refusal's session: a sample of what the merged ones named.
      sessionId: event.sessionId,
      kind: "denied",
      tool: null,
      quantity: 0,
      detail: { ...detail, operation, code, principal, sessions: sessions.size, principals: principals.size },
      sandboxId: null,
      occurredAt: now,
      events: 1,
    };
    this.waiting.push(row);
    this.open.set(key, { row, sessions, principals });
    this.enforceBound();
  }

  /**
   * Takes up to `max` rows to write, oldest first: the rows of seconds already over, or
   * (`everything`) the current second's too, which later refusals then no longer merge into.
   */
  take(max: number, now: Date, everything: boolean): UsageEvent[] {
    this.roll(now);
    this.reportDropped(now.getTime());
    let count = 0;
    while (count < max && count < this.waiting.length) {
      if (!everything && secondOf(this.waiting[count]!.occurredAt) === this.openSecond) break;
      count++;
    }
    if (count === 0) return [];
    if (everything) this.open.clear();
    return this.waiting.splice(0, count);
  }

  /** Puts back rows whose write failed, ahead of the rest: they may be stored already, so they stay as they are. */
  giveBack(rows: UsageEvent[]): void {
    this.waiting.unshift(...rows);
    this.enforceBound();
  }

  /** A new second: its refusals start rows of their own. */
  private roll(now: Date): void {
    const second = secondOf(now);
    if (second === this.openSecond) return;
    this.open.clear();
    this.openSecond = second;
  }

  private enforceBound(): void {
    if (this.waiting.length <= this.bound) return;
    const dropped = this.waiting.splice(0, this.waiting.length - this.bound);
    // A dropped row of the current second must not be merged into any more.
    const gone = new Set(dropped);
    for (const [key, open] of this.open) if (gone.has(open.row)) this.open.delete(key);
    this.droppedRows += dropped.length;
    this.droppedRefusals += dropped.reduce((sum, row) => sum + (row.events ?? 1), 0);
    this.reportDropped(Date.now());
  }

  /** Says what was dropped, at most once per DROP_REPORT_MS: a flood must not become a flood of log lines. */
  private reportDropped(now: number): void {
    if (this.droppedRows === 0 || now - this.reportedAt < DROP_REPORT_MS) return;
    this.log.error(
      { droppedRows: this.droppedRows, droppedRefusals: this.droppedRefusals },
      "refusal audit buffer full: oldest refusals dropped (usage records are kept)",
    );
    this.reportedAt = now;
    this.droppedRows = 0;
    this.droppedRefusals = 0;
  }
}

function secondOf(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}

function countDistinct(seen: Set<string>, value: string | undefined): void {
  if (value !== undefined && seen.size < DISTINCT_COUNTED) seen.add(value);
}
