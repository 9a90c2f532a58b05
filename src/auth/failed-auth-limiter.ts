/**
 * Slows down credential guessing: once a source has failed authentication `maxFailures` times
 * in a fixed window, it is refused (429 `auth.rate_limited`) until the window ends, before any
 * verification work is done. Only failures count, so a busy, well-behaved client is never
 * limited. Memory is bounded: past `maxSources` the least recently seen source is forgotten.
 *
 * Sources are opaque strings chosen by the caller (the gateway uses the client address and a
 * fingerprint of the presented credential).
 */
import { createHash } from "node:crypto";

export interface FailedAuthLimiterOptions {
  maxFailures?: number;
  windowMs?: number;
  maxSources?: number;
  now?: () => number;
}

export interface FailedAuthVerdict {
  limited: boolean;
  /** Whole seconds until the window ends (at least 1) when limited, else 0. */
  retryAfterSeconds: number;
}

interface Window {
  startedAt: number;
  failures: number;
}

export class FailedAuthLimiter {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #maxSources: number;
  readonly #now: () => number;
  // A Map iterates in insertion order; re-inserting on every touch makes its first key the
  // least recently seen, which is the one to evict.
  readonly #windows = new Map<string, Window>();

  constructor(options: FailedAuthLimiterOptions = {}) {
    this.#maxFailures = options.maxFailures ?? 20;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#maxSources = options.maxSources ?? 10_000;
    this.#now = options.now ?? Date.now;
    if (this.#maxFailures < 1 || this.#windowMs < 1 || this.#maxSources < 1)
      throw new RangeError("maxFailures, windowMs and maxSources must be positive");
  }

  /** Call before verifying a credential from `source`. */
  check(source: string): FailedAuthVerdict {
    const window = this.#current(source);
    if (window === undefined || window.failures < this.#maxFailures)
      return { limited: false, retryAfterSeconds: 0 };
    // A limited source that keeps knocking stays the most recently seen, so a flood of other
    // sources cannot push it out and reset its count.
    this.#touch(source, window);
    const remainingMs = window.startedAt + this.#windowMs - this.#now();
    return { limited: true, retryAfterSeconds: Math.max(1, Math.ceil(remainingMs / 1000)) };
  }

  recordFailure(source: string): void {
    const window = this.#current(source) ?? { startedAt: this.#now(), failures: 0 };
    window.failures += 1;
    this.#touch(source, window);
  }

  /** Sources currently remembered (for tests and metrics). */
  get size(): number {
    return this.#windows.size;
  }

  #current(source: string): Window | undefined {
    const window = this.#windows.get(source);
    if (window === undefined) return undefined;
    if (this.#now() - window.startedAt < this.#windowMs) return window;
    this.#windows.delete(source);
    return undefined;
  }

  #touch(source: string, window: Window): void {
    this.#windows.delete(source);
    this.#windows.set(source, window);
    while (this.#windows.size > this.#maxSources) {
      const oldest = this.#windows.keys().next().value;
      if (oldest === undefined) break;
      this.#windows.delete(oldest);
    }
  }
}

/**
 * A stable, non-reversible name for a presented credential: the limiter and any log line can
 * refer to it without holding the token. 128 bits of SHA-256 is ample to tell tokens apart.
 */
export function credentialFingerprint(credential: string): string {
  // A call's credential is named twice in a row (the failed-attempt limiter, then the
  // verified-token cache): the second time is the last answer, not a second hash.
  if (credential !== lastCredential) {
    lastFingerprint = createHash("sha256").update(credential).digest("hex").slice(0, 32);
    lastCredential = credential;
  }
  return lastFingerprint;
}

let lastCredential: string | undefined;
let lastFingerprint = "";
