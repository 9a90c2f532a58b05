/**
 * The memory store's building blocks: a set of tokens that expire (a workspace's slots, a
 * pool's members and marks), as the Redis store's sorted sets scored by expiry, and the
 * map lookup that creates what it does not find.
 */

/** token -> expiry, with expired entries dropped whenever the set is read. */
export class ExpiringSet {
  private readonly entries = new Map<string, number>();

  live(now: number): number {
    for (const [token, expiresAt] of this.entries) if (expiresAt <= now) this.entries.delete(token);
    return this.entries.size;
  }

  add(token: string, limit: number, expiresAt: number, now: number): boolean {
    const live = this.live(now); // an expired token is not held, even if not yet purged
    if (this.entries.has(token)) {
      this.entries.set(token, expiresAt);
      return true;
    }
    if (live >= limit) return false;
    this.entries.set(token, expiresAt);
    return true;
  }

  /** Whether the token is in the set, expired or not: an expired one not yet purged has no successor. */
  contains(token: string): boolean {
    return this.entries.has(token);
  }

  has(token: string, now: number): boolean {
    const expiresAt = this.entries.get(token);
    return expiresAt !== undefined && expiresAt > now;
  }

  renew(token: string, expiresAt: number): void {
    if (this.entries.has(token)) this.entries.set(token, expiresAt);
  }

  delete(token: string): void {
    this.entries.delete(token);
  }

  tokens(): string[] {
    return [...this.entries.keys()];
  }
}

/** The map's value for `key`, created (and kept) when there is none. */
export function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}
