/**
 * One run per key at a time: callers arriving while a run for their key is under way get its
 * outcome instead of starting another (every call on a hibernated session waits for the one
 * resume). The key is free again once the run settles, success or failure.
 */
export class SingleFlight<T> {
  private readonly running = new Map<string, Promise<T>>();

  run(key: string, work: () => Promise<T>): Promise<T> {
    const existing = this.running.get(key);
    if (existing) return existing;
    const started = (async () => {
      try {
        return await work();
      } finally {
        this.running.delete(key);
      }
    })();
    this.running.set(key, started);
    return started;
  }

  get inFlight(): number {
    return this.running.size;
  }
}
