/**
 * The bytes of sandbox answers the gateway holds in memory at once, across every call: a
 * cap per answer bounds one call, this bounds them all (32 calls in flight per workspace,
 * times many workspaces, times 16 MiB would not). A read reserves its bytes before it
 * starts and waits, first come first served, while the budget is spent; waiting leaves the
 * answer in the sandbox's socket (backpressure), so a wait costs time, never memory. A wait
 * is bounded too: a holder that never gives its bytes back (a stalled stream) must not make
 * every other call wait forever, so a waiter gives up with a 503 (the gateway is at capacity;
 * the sandbox did nothing wrong, so its session lives on).
 */
import { SandpoolError } from "../contract/error-codes.js";

interface Waiter {
  bytes: number;
  grant: () => void;
}

export class ByteBudget {
  private available: number;
  private readonly waiting: Waiter[] = [];

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
   * Not granted within `timeoutMs`, it rejects with `capacity.exhausted` and leaves the queue.
   */
  async reserve(bytes: number, timeoutMs = Number.POSITIVE_INFINITY): Promise<() => void> {
    const wanted = Math.min(Math.max(0, bytes), this.totalBytes);
    if (this.waiting.length === 0 && wanted <= this.available) {
      this.available -= wanted;
    } else {
      await this.wait(wanted, timeoutMs);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.available += wanted;
      this.grantWaiting();
    };
  }

  private wait(bytes: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        grant: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = Number.isFinite(timeoutMs)
        ? setTimeout(
            () => {
              this.waiting.splice(this.waiting.indexOf(waiter), 1);
              // A large waiter giving up at the head can let smaller ones behind it through.
              this.grantWaiting();
              reject(
                new SandpoolError("capacity.exhausted", "the gateway is holding as many answers as it may", {
                  retryAfterSeconds: 1,
                }),
              );
            },
            Math.max(0, timeoutMs),
          )
        : undefined;
      this.waiting.push(waiter);
    });
  }

  private grantWaiting(): void {
    while (this.waiting.length > 0 && this.waiting[0]!.bytes <= this.available) {
      const next = this.waiting.shift()!;
      this.available -= next.bytes;
      next.grant();
    }
  }
}
