/**
 * The steps of calls written behind: a call's end (its refund, its activity, the session no
 * longer busy), the begin of a call served from the replica's lease cache (its activity,
 * the session busy: redis-leases.ts) and the time a budget allotment gives back
 * (redis-budget-allotments.ts) are not round trips of their own but ride with the replica's
 * next awaited begin of a call in the same workspace, in that begin's script
 * (lua/call-steps-n.lua). Steps no begin has taken within `FLUSH_AFTER_MS` are sent on
 * their own, with the workspace's others, and so is every step pending when any other
 * command of this replica goes out (redis-commands.ts): whatever this replica does next
 * sees them. Another replica may see a step that much later, which changes nothing it
 * decides (a session stays busy a moment longer, or becomes busy a moment later, well
 * ahead of any deadline; a refund counts a moment later).
 *
 * Each step's promise resolves once Redis has applied it: whether the lease was still
 * there. A failed script fails every step it carried (the reservations stay charged in
 * full, the safe side; busyUntil still bounds how long the sessions count as busy).
 */
import type { LeaseKey } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";

/**
 * How long a step waits for a begin to ride with. Longer means fewer scripts: with one client
 * calling back to back, 25 ms against 10 cut serve's CPU per exec by ~9% (bench:exec-ab), and
 * Redis runs fewer; another replica sees a step that much later, far from any deadline.
 */
export const FLUSH_AFTER_MS = 25;
/** Steps carried by one script at most: its run blocks Redis for as long as it takes. */
export const MAX_STEPS_PER_SCRIPT = 32;
export const CALL_STEPS_SCRIPT = "call-steps";

/** One step put off (lua/call-steps-n.lua). */
export type CallStep =
  /** A call begun from the lease cache, with its deadline. */
  | { kind: "begin"; key: LeaseKey; now: number; busyUntil: number }
  /** A call's end, with what goes back to the budget of `day`, and its usage record to append. */
  | {
      kind: "end";
      key: LeaseKey;
      now: number;
      refund?: { day: string; milliseconds: number };
      usage?: string;
    }
  /** Time held by this replica for `workspace`'s day, given back. */
  | { kind: "refund"; workspace: string; now: number; refund: { day: string; milliseconds: number } };

interface PendingStep {
  step: CallStep;
  settle: (found: boolean) => void;
  fail: (error: unknown) => void;
}

/** A script's steps: the keys and arguments of lua/call-steps-n.lua before any begin's. */
export interface StepsOfScript {
  keys: string[];
  args: (string | number)[];
  /** Hands each step its outcome from the script's `found` flags, or the script's failure. */
  settle(found: string): void;
  fail(error: unknown): void;
}

const KIND_CODES = { begin: "b", end: "e", refund: "r" } as const;
const workspaceOf = (step: CallStep) => (step.kind === "refund" ? step.workspace : step.key.workspace);

export class RedisCallSteps {
  private readonly pending = new Map<string, PendingStep[]>();
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly commands: RedisCommands) {
    commands.sendDeferred = () => this.sendAll();
  }

  /** Puts `step` off; resolves once applied (whether its lease was there). */
  put(step: CallStep): Promise<boolean> {
    return new Promise<boolean>((settle, fail) => {
      const workspace = workspaceOf(step);
      const queue = this.pending.get(workspace);
      if (queue) queue.push({ step, settle, fail });
      else this.pending.set(workspace, [{ step, settle, fail }]);
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.sendAll();
      }, FLUSH_AFTER_MS);
    });
  }

  /** The steps of `workspace` a begin carries (at most MAX_STEPS_PER_SCRIPT), taken off the queue. */
  take(workspace: string): StepsOfScript {
    const queue = this.pending.get(workspace);
    if (!queue) return this.ofScript(workspace, []);
    const taken = queue.length > MAX_STEPS_PER_SCRIPT ? queue.splice(0, MAX_STEPS_PER_SCRIPT) : queue;
    if (taken === queue) this.pending.delete(workspace);
    // The wait is for the oldest step pending: with none left, the next one starts it afresh.
    if (this.pending.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    return this.ofScript(workspace, taken);
  }

  /** Sends every pending step now, one script per workspace (and per MAX_STEPS_PER_SCRIPT). */
  sendAll(): void {
    if (this.pending.size === 0) return;
    for (const workspace of [...this.pending.keys()]) {
      while (this.pending.has(workspace)) this.send(this.take(workspace));
    }
  }

  /** Sends what is pending and waits for every step sent so far to be applied (or to fail). */
  async flush(): Promise<void> {
    this.sendAll();
    await Promise.allSettled([...this.inFlight]);
  }

  private send(steps: StepsOfScript): void {
    const sent = this.commands
      .scriptCarryingDeferred(CALL_STEPS_SCRIPT, steps.keys, steps.args)
      .then((reply) => steps.settle((reply as [string])[0]), steps.fail);
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  private ofScript(workspace: string, pending: PendingStep[]): StepsOfScript {
    const { keys: names } = this.commands;
    // Some key of the workspace's slot where a step has no lease or no budget to name.
    const anyKey = names.slots(workspace);
    const keys = [names.deadlines(workspace), names.quiet(workspace), names.usage(workspace)];
    const args: (string | number)[] = [pending.length];
    for (const { step } of pending) {
      const refund = step.kind === "begin" ? undefined : step.refund;
      keys.push(
        step.kind === "refund" ? anyKey : names.lease(step.key),
        refund ? names.budget(workspace, refund.day) : anyKey,
      );
      // A begin's deadline, or the milliseconds an end or a refund gives back.
      const amount =
        step.kind === "begin"
          ? Math.ceil(step.busyUntil)
          : Math.max(0, Math.floor(refund?.milliseconds ?? 0));
      args.push(
        KIND_CODES[step.kind],
        step.now,
        amount,
        step.kind === "refund" ? "" : step.key.sessionId,
        (step.kind === "end" && step.usage) || "",
      );
    }
    return {
      keys,
      args,
      settle: (found) => {
        pending.forEach((entry, i) => {
          entry.settle(found[i] === "1");
        });
      },
      fail: (error) => {
        for (const entry of pending) entry.fail(error);
      },
    };
  }
}
