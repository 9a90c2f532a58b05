/**
 * Exponential back-off for a pool's warm-up: after each failed start the next warm-up
 * waits twice as long (up to a cap); one success resets it. Cold starts requested by a
 * client are not delayed by it, only counted.
 */
export class StartBackoff {
  private failures = 0;
  private notBefore = 0;

  constructor(
    private readonly baseMs = 1_000,
    private readonly maxMs = 5 * 60_000,
  ) {}

  mayStart(now: number): boolean {
    return now >= this.notBefore;
  }

  /** Records a failure; returns how long warm-up now waits. */
  failed(now: number): number {
    this.failures++;
    const delay = Math.min(this.maxMs, this.baseMs * 2 ** (this.failures - 1));
    this.notBefore = now + delay;
    return delay;
  }

  succeeded(): void {
    this.failures = 0;
    this.notBefore = 0;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}
