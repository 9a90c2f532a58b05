/**
 * Authenticates `sp_<prefix>_<secret>` keys without a database round trip per call: a key's
 * record (workspace, hash, expiry, revocation) is read once and kept in process, and dropped
 * the moment any replica announces a change to it on API_KEYS_CHANNEL (revocation, creation),
 * so a revoked key stops everywhere within the pub/sub delay. `cacheMs` only bounds how long a
 * lost announcement could matter. Unknown prefixes are remembered too (briefly), so a flood of
 * made-up keys costs one query each at most per `missCacheMs`, and the failed-attempt limiter
 * catches the rest.
 *
 * Last use is gathered in memory and written every `flushMs` (one row update per key used),
 * never on the call's path.
 */
import type { Logger } from "pino";
import type { ApiKeyRecord, ApiKeyRepository } from "../store/sql/api-key-repository.js";
import { parseApiKey, secretMatches } from "./api-key-format.js";
import { AuthRefusal } from "./auth-refusal.js";
import type { BearerAuthenticator, Caller } from "./principal.js";

export const API_KEYS_CHANNEL = "sandpool:api-keys-changed";

export interface ApiKeyAuthenticatorOptions {
  cacheMs: number;
  flushMs: number;
  missCacheMs?: number;
  maxEntries?: number;
  log?: Logger;
  now?: () => number;
}

interface Cached {
  record: ApiKeyRecord | undefined;
  until: number;
}

export class ApiKeyAuthenticator implements BearerAuthenticator {
  readonly #records = new Map<string, Cached>();
  readonly #loading = new Map<string, Promise<ApiKeyRecord | undefined>>();
  readonly #uses = new Map<string, number>();
  readonly #timer: NodeJS.Timeout;
  readonly #now: () => number;
  #flushing: Promise<void> = Promise.resolve();
  // Bumped by every invalidation: a lookup that started before one must not cache what it read.
  #generation = 0;

  constructor(
    private readonly repository: Pick<ApiKeyRepository, "find" | "recordLastUse">,
    private readonly options: ApiKeyAuthenticatorOptions,
  ) {
    this.#now = options.now ?? Date.now;
    this.#timer = setInterval(() => void this.flush(), options.flushMs);
    this.#timer.unref();
  }

  /** Takes a bare token (the `Authorization` header's credential), already known to start with `sp_`. */
  async authenticate(token: string | undefined): Promise<Caller> {
    const parsed = token === undefined ? undefined : parseApiKey(token);
    if (parsed === undefined) throw new AuthRefusal("malformed", "not a well-formed sandpool API key");
    const record = await this.#record(parsed.prefix);
    // Constant-time comparison: what must not leak is how much of a secret matched (the prefix is public).
    if (record === undefined || !secretMatches(parsed.secret, record.hashedSecret))
      throw new AuthRefusal("unknown_key", "unknown API key or wrong secret");
    const now = this.#now();
    if (record.revokedAt !== null) throw new AuthRefusal("revoked_key", "API key revoked");
    if (record.expiresAt !== null && record.expiresAt.getTime() <= now)
      throw new AuthRefusal("expired_key", "API key expired");
    this.#uses.set(record.prefix, now);
    return {
      workspace: record.workspace,
      subject: `apikey:${record.prefix}`,
      tokenId: record.prefix,
      // A key without expiry is re-judged at least every cache period by whoever caches callers.
      expiresAt: Math.floor((record.expiresAt?.getTime() ?? now + this.options.cacheMs) / 1000),
    };
  }

  /** Forgets what is known of a key (an announcement from any replica), or of every key. */
  invalidate(prefix?: string): void {
    this.#generation += 1;
    if (prefix === undefined || prefix === "") this.#records.clear();
    else this.#records.delete(prefix);
  }

  /** Writes the last uses gathered so far; a failure keeps them for the next flush. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#uses.size === 0) return;
      const uses = new Map(this.#uses);
      this.#uses.clear();
      try {
        await this.repository.recordLastUse(uses);
      } catch (error) {
        for (const [prefix, at] of uses) if (!this.#uses.has(prefix)) this.#uses.set(prefix, at);
        this.options.log?.warn({ err: error }, "could not record API keys' last use; will retry");
      }
    });
    return this.#flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }

  async #record(prefix: string): Promise<ApiKeyRecord | undefined> {
    const now = this.#now();
    const cached = this.#records.get(prefix);
    if (cached !== undefined && cached.until > now) return cached.record;
    // Concurrent first calls with one key share one query.
    let loading = this.#loading.get(prefix);
    if (loading === undefined) {
      loading = this.repository.find(prefix).finally(() => this.#loading.delete(prefix));
      this.#loading.set(prefix, loading);
      const generation = this.#generation;
      const record = await loading;
      if (generation !== this.#generation) return record;
      const ttl = record === undefined ? (this.options.missCacheMs ?? 5_000) : this.options.cacheMs;
      if (this.#records.size >= (this.options.maxEntries ?? 10_000))
        this.#records.delete(this.#records.keys().next().value!);
      this.#records.set(prefix, { record, until: now + ttl });
      return record;
    }
    return loading;
  }
}
