/**
 * Work a route lets run on after its answer (an Execute's settlement): one per gateway, made
 * where it is wired (src/gateway/) and given to the handlers that defer work, so that closing
 * the gateway waits for it before the usage sink and the store go.
 */
export class PendingWork {
  readonly #running = new Set<Promise<unknown>>();

  /** Runs `work` on; its failure is the work's own to report (it is only awaited here). */
  track(work: Promise<unknown>): void {
    const tracked = work.catch(() => undefined).finally(() => this.#running.delete(tracked));
    this.#running.add(tracked);
  }

  get size(): number {
    return this.#running.size;
  }

  /** Resolves once everything tracked so far has finished. */
  async drained(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running]);
  }
}
