/**
 * Moves the usage backlog (src/store/coordination/usage-backlog.ts) to Postgres. Every
 * replica runs it; of several, one at a time works on a workspace (its claim). Per
 * workspace: claim a batch, merge it into rows (merge-usage.ts), write them (the repository
 * ignores event ids it has), acknowledge; until nothing waits. A drainer that dies between
 * the write and the acknowledgement leaves the batch to the next one, which writes the same
 * rows with the same ids: nothing lost, nothing counted twice. While Postgres is away the
 * records wait in the backlog, whose size and age the drain reports each round.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageBacklog } from "../store/coordination/usage-backlog.js";
import type { UsageEvent } from "../store/sql/usage-event.js";
import { mergeUsageBatch } from "./merge-usage.js";

export interface UsageRowWriter {
  insert(events: readonly UsageEvent[]): Promise<number>;
}

export type DrainBacklog = Pick<
  UsageBacklog,
  "claimUsage" | "ackUsage" | "usageWorkspaces" | "usageBacklogSize" | "markUsageWaiting"
>;

export interface UsageDrainerOptions {
  /** Records claimed at once. */
  batchSize?: number;
  /** How long a claim lasts: another drainer takes the batch over after that. */
  claimMs?: number;
  /** Batches written per workspace in one round at most (the others' turn comes first). */
  maxBatchesPerRound?: number;
  now?: () => number;
}

/** The backlog as the last round left it. */
export interface UsageBacklogReport {
  /** Records waiting (claimed ones included), over every workspace. */
  records: number;
  /** How long the oldest record has waited (ms); 0 when none waits. */
  oldestAgeMs: number;
  /** Whether the last round wrote everything it claimed (false: Postgres refused, or a store failed). */
  healthy: boolean;
}

const BATCH_SIZE = 1_000;
const CLAIM_MS = 30_000;
const MAX_BATCHES_PER_ROUND = 20;

export class UsageDrainer {
  private readonly token = randomUUID();
  private readonly batchSize: number;
  private readonly claimMs: number;
  private readonly maxBatches: number;
  private readonly now: () => number;
  private running: Promise<UsageBacklogReport> | undefined;
  private report: UsageBacklogReport = { records: 0, oldestAgeMs: 0, healthy: true };

  constructor(
    private readonly backlog: DrainBacklog,
    private readonly writer: UsageRowWriter,
    private readonly log: Logger,
    options: UsageDrainerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? BATCH_SIZE;
    this.claimMs = options.claimMs ?? CLAIM_MS;
    this.maxBatches = options.maxBatchesPerRound ?? MAX_BATCHES_PER_ROUND;
    this.now = options.now ?? Date.now;
  }

  /** The backlog as the last round left it. */
  get lastReport(): UsageBacklogReport {
    return this.report;
  }

  /** One round over every workspace with a backlog; concurrent callers share it. */
  drain(): Promise<UsageBacklogReport> {
    this.running ??= this.round().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async round(): Promise<UsageBacklogReport> {
    let healthy = true;
    let records = 0;
    let oldest: number | undefined;
    const workspaces = await this.backlog.usageWorkspaces(this.now());
    for (const workspace of workspaces) {
      try {
        if (!(await this.drainWorkspace(workspace))) healthy = false;
      } catch (error) {
        healthy = false;
        this.log.warn({ err: error, workspace }, "usage drain failed; the backlog waits");
      }
      try {
        const size = await this.backlog.usageBacklogSize(workspace);
        records += size.records;
        const at = size.oldest === undefined ? undefined : occurredAtOf(size.oldest);
        if (at !== undefined) oldest = Math.min(oldest ?? at, at);
        // A backlog left over is found again after its workspace's leases are gone.
        await this.backlog.markUsageWaiting(workspace, size.records > 0);
      } catch (error) {
        healthy = false;
        this.log.warn({ err: error, workspace }, "could not read a usage backlog's size");
      }
    }
    this.report = {
      records,
      oldestAgeMs: oldest === undefined ? 0 : Math.max(0, this.now() - oldest),
      healthy,
    };
    return this.report;
  }

  /** Writes the workspace's batches; true when they were written (or another drainer has them). */
  private async drainWorkspace(workspace: string): Promise<boolean> {
    for (let batch = 0; batch < this.maxBatches; batch++) {
      const claimed = await this.backlog.claimUsage(workspace, {
        token: this.token,
        max: this.batchSize,
        claimMs: this.claimMs,
        now: this.now(),
      });
      if (claimed.outcome === "busy" || claimed.records.length === 0) return true;
      const { rows, unreadable } = mergeUsageBatch(workspace, claimed.records);
      if (unreadable > 0)
        this.log.error({ workspace, dropped: unreadable }, "unreadable usage records: dropped");
      if (!(await this.write(workspace, rows))) return false;
      // A batch claimed before (frozen) may be shorter than what waits behind it: claim on.
      await this.backlog.ackUsage(workspace, this.token);
    }
    return true;
  }

  private async write(workspace: string, rows: UsageEvent[]): Promise<boolean> {
    if (rows.length === 0) return true;
    try {
      await this.writer.insert(rows);
      return true;
    } catch (error) {
      if (error instanceof SandpoolError && error.code === "request.malformed") {
        // A batch the store refuses as malformed would be refused forever: set it aside.
        this.log.error(
          { err: error, workspace, dropped: rows.length },
          "usage rows refused as malformed: dropped",
        );
        return true;
      }
      this.log.warn({ err: error, workspace, rows: rows.length }, "usage write failed; the backlog waits");
      return false;
    }
  }
}

/** When the record `raw` happened (epoch ms), if it says. */
function occurredAtOf(raw: string): number | undefined {
  try {
    const at = (JSON.parse(raw) as { occurredAt?: unknown }).occurredAt;
    return typeof at === "number" ? at : undefined;
  } catch {
    return undefined;
  }
}
