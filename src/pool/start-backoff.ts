/**
 * Exponential back-off for a pool's warm-up: after a failed start the next warm-up waits
 * twice as long as the last time (up to a cap); one success resets it. A step is one round
 * of attempts: failures that land while the pool is already waiting (starts begun together,
 * a client's cold start) record their reason but neither lengthen the wait nor count as a
 * step, so a failing image is logged once per step, not once per start. Cold starts
 * requested by a client are not delayed by it, only counted.
 */

/** A pool's last failed start, and when warm-up tries again. Epoch milliseconds. */
export interface StartFailure {
  message: string;
  at: number;
  nextAttemptAt: number;
  consecutiveFailures: number;
}

export interface BackoffStep {
  /** How long warm-up now waits, from `now`. */
  delayMs: number;
  /** True when this failure began a new step (log it); false when it landed during a wait. */
  newStep: boolean;
}

/** A start failure's message kept for operators: one line, bounded. */
const MAX_MESSAGE_CHARS = 500;

export class StartBackoff {
  private failures = 0;
  private notBefore = 0;
  private last: StartFailure | undefined;
  private succeededAt: number | undefined;

  constructor(
    private readonly baseMs = 1_000,
    private readonly maxMs = 5 * 60_000,
  ) {}

  mayStart(now: number): boolean {
    return now >= this.notBefore;
  }

  /** Records a failure and its reason; a failure during a wait keeps the wait as it is. */
  failed(now: number, reason = ""): BackoffStep {
    const message = oneLine(reason);
    if (this.failures > 0 && now < this.notBefore) {
      this.last = { ...this.last!, message, at: now };
      return { delayMs: this.notBefore - now, newStep: false };
    }
    this.failures++;
    const delayMs = Math.min(this.maxMs, this.baseMs * 2 ** (this.failures - 1));
    this.notBefore = now + delayMs;
    this.last = { message, at: now, nextAttemptAt: this.notBefore, consecutiveFailures: this.failures };
    return { delayMs, newStep: true };
  }

  succeeded(now = Date.now()): void {
    this.failures = 0;
    this.notBefore = 0;
    this.last = undefined;
    this.succeededAt = now;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  /** The failure this pool is backing off from; undefined once a start succeeded. */
  get lastFailure(): StartFailure | undefined {
    return this.last ? { ...this.last } : undefined;
  }

  /** When a start last succeeded, if one did. */
  get lastSuccessAt(): number | undefined {
    return this.succeededAt;
  }
}

function oneLine(reason: string): string {
  const line = reason.replace(/\s+/g, " ").trim();
  return line.length > MAX_MESSAGE_CHARS ? `${line.slice(0, MAX_MESSAGE_CHARS - 1)}…` : line;
}
