/**
 * This replica's recycles under way (a sandbox being scrubbed for its workspace's next
 * session), per pool and workspace. A lease that finds none of its workspace's sandboxes
 * parked and no fresh one idle waits for one of them rather than cold-start: a scrub takes
 * tens of milliseconds, a container start half a second or more (and the engine starts about
 * two a second). Only this replica's recycles are seen: a lease on another replica cold-starts
 * as before.
 */
export class RecyclesInFlight {
  private readonly counts = new Map<string, number>();
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Counts one recycle of `workspace`'s sandbox in `pool`; the returned function ends it (once). */
  begin(pool: string, workspace: string): () => void {
    const key = keyOf(pool, workspace);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
      const waiting = this.waiters.get(key);
      this.waiters.delete(key);
      for (const wake of waiting ?? []) wake();
    };
  }

  count(pool: string, workspace: string): number {
    return this.counts.get(keyOf(pool, workspace)) ?? 0;
  }

  /**
   * Waits until one of `workspace`'s recycles in `pool` ends (parked, or failed and destroyed),
   * at most `ms`. False at once when none is under way, or when `ms` passed first.
   */
  waitForOne(pool: string, workspace: string, ms: number): Promise<boolean> {
    const key = keyOf(pool, workspace);
    if (ms <= 0 || !this.counts.has(key)) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiting = this.waiters.get(key) ?? new Set<() => void>();
      this.waiters.set(key, waiting);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiting.delete(wake);
        if (waiting.size === 0 && this.waiters.get(key) === waiting) this.waiters.delete(key);
        resolve(false);
      }, ms);
      waiting.add(wake);
    });
  }
}

function keyOf(pool: string, workspace: string): string {
  return `${pool}\u0000${workspace}`;
}
