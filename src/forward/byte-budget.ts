/**
 * The bytes of sandbox answers the gateway holds in memory at once, across every call: a
 * cap per answer bounds one call, this bounds them all (32 calls in flight per workspace,
 * times many workspaces, times 16 MiB would not). A read reserves its bytes before it
 * starts and waits, first come first served, while the budget is spent; waiting leaves the
 * answer in the sandbox's socket (backpressure), so a wait costs time, never memory.
 */
export class ByteBudget {
  private available: number;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  constructor(readonly totalBytes: number) {
    this.available = totalBytes;
  }

  /** Bytes reserved right now (for tests and metrics). */
  get reservedBytes(): number {
    return this.totalBytes - this.available;
  }

  /**
   * Reserves `bytes` (at most the whole budget, so a large read waits for all others rather
   * than forever) and resolves with the function that gives them back; calling it twice is harmless.
   */
  async reserve(bytes: number): Promise<() => void> {
    const wanted = Math.min(Math.max(0, bytes), this.totalBytes);
    if (this.waiting.length === 0 && wanted <= this.available) {
      this.available -= wanted;
    } else {
      await new Promise<void>((grant) => this.waiting.push({ bytes: wanted, grant }));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.available += wanted;
      this.grantWaiting();
    };
  }

  private grantWaiting(): void {
    while (this.waiting.length > 0 && this.waiting[0]!.bytes <= this.available) {
      const next = this.waiting.shift()!;
      this.available -= next.bytes;
      next.grant();
    }
  }
}
