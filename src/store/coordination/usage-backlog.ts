/**
 * The usage backlog: billing records (opaque strings to the store, src/metering/usage-record.ts)
 * kept per workspace with the coordination state, so a call's usage is as durable as the
 * lease state it changed. The records of an Execute or a file call ride with the call's end
 * (`CallEnd.usage`), a session's start and end with its lease's write and take (`putLease`,
 * `takeLease`); other records are appended on their own. A drainer on any replica moves them
 * to Postgres (src/metering/usage-drainer.ts).
 *
 * Draining is claim, write, acknowledge: a claim freezes the oldest records of the workspace
 * into its claimed batch (a batch already claimed and not acknowledged is handed out again,
 * unchanged, once its claim has lapsed), so a drainer that dies mid-way leaves a batch the
 * next one writes again with the same event ids, which the repository ignores.
 */

export interface UsageClaim {
  /** The claimant's token: the claim is its own until `now + claimMs`. */
  token: string;
  /** Records frozen into a new batch at most. */
  max: number;
  claimMs: number;
  now: number;
}

export type ClaimedUsage =
  /** The batch (possibly empty: nothing waits) is the claimant's until it acknowledges it. */
  | { outcome: "claimed"; records: string[] }
  /** Another claimant's claim has not lapsed. */
  | { outcome: "busy" };

export interface UsageBacklogSize {
  /** Records waiting, claimed ones included. */
  records: number;
  /** The oldest record waiting (the claimed batch's first, else the queue's), undefined when none. */
  oldest?: string;
}

export interface UsageBacklog {
  /** Appends records to the workspace's backlog, in order. */
  appendUsage(workspace: string, records: readonly string[]): Promise<void>;
  claimUsage(workspace: string, claim: UsageClaim): Promise<ClaimedUsage>;
  /** Drops the claimed batch if `token` still holds the claim; false when it does not. */
  ackUsage(workspace: string, token: string): Promise<boolean>;
  /** Workspaces that may have records waiting (a superset is fine). */
  usageWorkspaces(now: number): Promise<string[]>;
  usageBacklogSize(workspace: string): Promise<UsageBacklogSize>;
  /**
   * Remembers (`waiting` true) or forgets a workspace whose backlog outlasts its leases (a
   * drain that could not write everything): `usageWorkspaces` lists it until then.
   */
  markUsageWaiting(workspace: string, waiting: boolean): Promise<void>;
  /** Sends the ends of calls this replica has put off (and their usage), and waits for them. */
  flushCallEnds(): Promise<void>;
}
