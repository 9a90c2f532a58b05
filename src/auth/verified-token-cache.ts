/**
 * Remembers tokens that passed verification, so a client sending the same bearer token on
 * every call pays for the signature check once, not per request: a WebCrypto verification
 * runs on libuv's thread pool, and that hop alone cost more than the rest of a warm lease.
 *
 * What is cached is the verdict on one exact token (keyed by its fingerprint), never on a
 * workspace or a key: a different token, even for the same caller, is verified afresh.
 * An entry is used until the earlier of the token's `exp` and `maxAgeMs` after it was
 * verified, so a key removed from a JWKS stops its tokens within `maxAgeMs`. Refusals are
 * not cached: the failed-attempt limiter deals with those.
 */
import { credentialFingerprint } from "./failed-auth-limiter.js";
import type { BearerAuthenticator, Caller } from "./principal.js";

export interface VerifiedTokenCacheOptions {
  /** How long a verdict is reused at most; 0 turns the cache off. */
  maxAgeMs: number;
  /** Tokens remembered at once; the oldest verdict goes first. */
  maxEntries?: number;
  now?: () => number;
}

interface Verdict {
  caller: Caller;
  usableUntil: number;
}

export class CachingAuthenticator implements BearerAuthenticator {
  private readonly verdicts = new Map<string, Verdict>();
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly inner: BearerAuthenticator,
    options: VerifiedTokenCacheOptions,
  ) {
    this.maxAgeMs = options.maxAgeMs;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async authenticate(authorization: string | undefined): Promise<Caller> {
    if (this.maxAgeMs <= 0 || authorization === undefined) return this.inner.authenticate(authorization);
    const key = credentialFingerprint(authorization);
    const now = this.now();
    const known = this.verdicts.get(key);
    if (known !== undefined) {
      if (known.usableUntil > now) return { ...known.caller };
      this.verdicts.delete(key);
    }
    const caller = await this.inner.authenticate(authorization);
    const usableUntil = Math.min(now + this.maxAgeMs, caller.expiresAt * 1000);
    if (usableUntil > now) this.remember(key, { caller: { ...caller }, usableUntil });
    return caller;
  }

  private remember(key: string, verdict: Verdict): void {
    // Maps iterate in insertion order, so the first key is the oldest verdict.
    if (this.verdicts.size >= this.maxEntries) this.verdicts.delete(this.verdicts.keys().next().value!);
    this.verdicts.set(key, verdict);
  }
}
