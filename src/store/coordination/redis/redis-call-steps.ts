/**
 * The ends of calls, written behind: a call's end (its refund, its activity, the session no
 * longer busy) is not a round trip of its own but rides with the replica's next begin of a
 * call in the same workspace, in that begin's script (lua/call-steps-n.lua). An end no begin
 * has taken within `FLUSH_AFTER_MS` is sent on its own, with the workspace's others, and so
 * is every end pending when any other command of this replica goes out (redis-commands.ts):
 * whatever this replica does next sees it. Another replica may see an end that much later,
 * which changes nothing it decides (a session stays busy a moment longer; a refund counts
 * a moment later).
 *
 * `end()` resolves once Redis has applied the end: whether the lease was still there. A
 * failed script fails every end it carried (the reservations stay charged in full, the
 * safe side; busyUntil still bounds how long the sessions count as busy).
 */
import type { CallEnd, LeaseKey } from "../records.js";
import type { RedisCommands } from "./redis-commands.js";

/** How long an end waits for a begin to ride with. */
export const FLUSH_AFTER_MS = 2;
/** Ends carried by one script at most: its run blocks Redis for as long as it takes. */
export const MAX_ENDS_PER_SCRIPT = 32;
export const CALL_STEPS_SCRIPT = "call-steps";

interface PendingEnd {
  key: LeaseKey;
  end: CallEnd;
  settle: (found: boolean) => void;
  fail: (error: unknown) => void;
}

/** A script's ends: the keys and arguments of lua/call-steps-n.lua before any begin's. */
export interface EndsOfScript {
  keys: string[];
  args: (string | number)[];
  /** Hands each end its outcome from the script's `found` flags, or the script's failure. */
  settle(found: string): void;
  fail(error: unknown): void;
}

export class RedisCallEnds {
  private readonly pending = new Map<string, PendingEnd[]>();
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly commands: RedisCommands) {
    commands.sendDeferred = () => this.sendAll();
  }

  /** Puts off `end` of the call on `key`; resolves once applied (whether the lease was there). */
  end(key: LeaseKey, end: CallEnd): Promise<boolean> {
    return new Promise<boolean>((settle, fail) => {
      const queue = this.pending.get(key.workspace);
      if (queue) queue.push({ key, end, settle, fail });
      else this.pending.set(key.workspace, [{ key, end, settle, fail }]);
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.sendAll();
      }, FLUSH_AFTER_MS);
    });
  }

  /** The ends of `workspace` a begin carries (at most MAX_ENDS_PER_SCRIPT), taken off the queue. */
  take(workspace: string): EndsOfScript {
    const queue = this.pending.get(workspace);
    if (!queue) return this.ofScript(workspace, []);
    const taken = queue.length > MAX_ENDS_PER_SCRIPT ? queue.splice(0, MAX_ENDS_PER_SCRIPT) : queue;
    if (taken === queue) this.pending.delete(workspace);
    // The wait is for the oldest end pending: with none left, the next one starts it afresh.
    if (this.pending.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    return this.ofScript(workspace, taken);
  }

  /** Sends every pending end now, one script per workspace (and per MAX_ENDS_PER_SCRIPT). */
  sendAll(): void {
    if (this.pending.size === 0) return;
    for (const workspace of [...this.pending.keys()]) {
      while (this.pending.has(workspace)) this.send(this.take(workspace));
    }
  }

  /** Sends what is pending and waits for every end sent so far to be applied (or to fail). */
  async flush(): Promise<void> {
    this.sendAll();
    await Promise.allSettled([...this.inFlight]);
  }

  private send(ends: EndsOfScript): void {
    const sent = this.commands
      .scriptCarryingDeferred(CALL_STEPS_SCRIPT, ends.keys, ends.args)
      .then((reply) => ends.settle((reply as [string])[0]), ends.fail);
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  private ofScript(workspace: string, ends: PendingEnd[]): EndsOfScript {
    const { keys: names } = this.commands;
    const keys = [names.deadlines(workspace)];
    const args: (string | number)[] = [ends.length];
    for (const { key, end } of ends) {
      const refund = end.refund;
      // Some key of the workspace's slot when there is nothing to give back.
      keys.push(
        names.lease(key),
        refund ? names.budget(key.workspace, refund.day) : names.slots(key.workspace),
      );
      args.push(end.now, refund ? Math.max(0, Math.floor(refund.milliseconds)) : 0, key.sessionId);
    }
    return {
      keys,
      args,
      settle: (found) => {
        ends.forEach((pending, i) => {
          pending.settle(found[i] === "1");
        });
      },
      fail: (error) => {
        for (const pending of ends) pending.fail(error);
      },
    };
  }
}
