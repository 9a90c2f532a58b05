import { describe, expect, it } from "vitest";
import { ApiKeyAuthenticator } from "../../../src/auth/api-key-authenticator.js";
import {
  generateApiKey,
  hashSecret,
  looksLikeApiKey,
  parseApiKey,
  secretMatches,
} from "../../../src/auth/api-key-format.js";
import type { ApiKeyRecord } from "../../../src/store/sql/api-key-repository.js";

describe("API key format", () => {
  it("mints sp_<12 hex>_<43 base64url> keys whose hash matches only their own secret", () => {
    const one = generateApiKey();
    const two = generateApiKey();
    expect(one.key).toMatch(/^sp_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(one.prefix).not.toBe(two.prefix);
    const parsed = parseApiKey(one.key)!;
    expect(parsed.prefix).toBe(one.prefix);
    expect(one.hashedSecret).toBe(hashSecret(parsed.secret));
    // The stored hash is not the secret, and holds nothing of the key.
    expect(one.key).not.toContain(one.hashedSecret);
    expect(secretMatches(parsed.secret, one.hashedSecret)).toBe(true);
    expect(secretMatches(parseApiKey(two.key)!.secret, one.hashedSecret)).toBe(false);
  });

  it("refuses malformed keys", () => {
    const { key } = generateApiKey();
    expect(looksLikeApiKey(key)).toBe(true);
    expect(parseApiKey(`${key}x`)).toBeUndefined();
    expect(parseApiKey(key.replace("sp_", "sk_"))).toBeUndefined();
    expect(parseApiKey(key.toUpperCase())).toBeUndefined();
    expect(parseApiKey("sp_abc_def")).toBeUndefined();
    expect(secretMatches("x", "not-hex")).toBe(false);
  });
});

function fakeRepository(records: ApiKeyRecord[]) {
  const calls = { find: 0, recorded: [] as Map<string, number>[] };
  return {
    calls,
    records,
    repository: {
      async find(prefix: string) {
        calls.find += 1;
        return records.find((r) => r.prefix === prefix);
      },
      async recordLastUse(uses: ReadonlyMap<string, number>) {
        calls.recorded.push(new Map(uses));
      },
    },
  };
}

function keyRecord(workspace: string, extra: Partial<ApiKeyRecord> = {}) {
  const generated = generateApiKey();
  const record: ApiKeyRecord = {
    prefix: generated.prefix,
    workspace,
    hashedSecret: generated.hashedSecret,
    expiresAt: null,
    revokedAt: null,
    ...extra,
  };
  return { key: generated.key, record };
}

describe("ApiKeyAuthenticator", () => {
  it("authenticates a key as its workspace, reading the database once for many calls", async () => {
    const a = keyRecord("team-a");
    const { repository, calls } = fakeRepository([a.record]);
    const auth = new ApiKeyAuthenticator(repository, { cacheMs: 60_000, flushMs: 60_000 });
    for (let i = 0; i < 50; i++) {
      const caller = await auth.authenticate(a.key);
      expect(caller).toMatchObject({ workspace: "team-a", tokenId: a.record.prefix });
      expect(caller.admin).toBeUndefined();
    }
    expect(calls.find).toBe(1);
    await auth.close();
    // Last use: one write for fifty calls.
    expect(calls.recorded).toHaveLength(1);
    expect([...calls.recorded[0]!.keys()]).toEqual([a.record.prefix]);
  });

  it("refuses a wrong secret, a revoked key, an expired key and an unknown prefix with 401; only the expired key is told so", async () => {
    const good = keyRecord("team-a");
    const revoked = keyRecord("team-a", { revokedAt: new Date() });
    const expired = keyRecord("team-a", { expiresAt: new Date(Date.now() - 1000) });
    const unknown = keyRecord("team-a");
    const { repository } = fakeRepository([good.record, revoked.record, expired.record]);
    const auth = new ApiKeyAuthenticator(repository, { cacheMs: 60_000, flushMs: 60_000 });
    const wrongSecret = `sp_${good.record.prefix}_${parseApiKey(unknown.key)!.secret}`;
    for (const key of [wrongSecret, revoked.key, unknown.key, "sp_nonsense"]) {
      await expect(auth.authenticate(key)).rejects.toMatchObject({ code: "auth.invalid", status: 401 });
    }
    await expect(auth.authenticate(expired.key)).rejects.toMatchObject({ code: "auth.expired", status: 401 });
    // The secret is checked first: an expired key's prefix with a wrong secret learns nothing.
    const expiredWrongSecret = `sp_${expired.record.prefix}_${parseApiKey(unknown.key)!.secret}`;
    await expect(auth.authenticate(expiredWrongSecret)).rejects.toMatchObject({ code: "auth.invalid" });
    await auth.close();
  });

  it("sees a revocation as soon as it is invalidated, not after the cache period", async () => {
    const a = keyRecord("team-a");
    const { repository, records } = fakeRepository([a.record]);
    const auth = new ApiKeyAuthenticator(repository, { cacheMs: 3_600_000, flushMs: 60_000 });
    await auth.authenticate(a.key);
    records[0] = { ...a.record, revokedAt: new Date() };
    // Still cached: only the announcement drops it.
    await expect(auth.authenticate(a.key)).resolves.toMatchObject({ workspace: "team-a" });
    auth.invalidate(a.record.prefix);
    await expect(auth.authenticate(a.key)).rejects.toMatchObject({ code: "auth.invalid" });
    await auth.close();
  });

  it("remembers an unknown prefix briefly, and forgets it when the key's creation is announced", async () => {
    const a = keyRecord("team-a");
    const { repository, records, calls } = fakeRepository([]);
    const auth = new ApiKeyAuthenticator(repository, {
      cacheMs: 60_000,
      flushMs: 60_000,
      missCacheMs: 60_000,
    });
    for (let i = 0; i < 3; i++)
      await expect(auth.authenticate(a.key)).rejects.toMatchObject({ code: "auth.invalid" });
    expect(calls.find).toBe(1);
    records.push(a.record);
    auth.invalidate(a.record.prefix);
    await expect(auth.authenticate(a.key)).resolves.toMatchObject({ workspace: "team-a" });
    await auth.close();
  });

  it("does not cache a lookup that an invalidation overtook", async () => {
    const a = keyRecord("team-a");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let current: ApiKeyRecord = a.record;
    const auth = new ApiKeyAuthenticator(
      {
        async find() {
          const seen = current;
          await gate;
          return seen;
        },
        async recordLastUse() {},
      },
      { cacheMs: 3_600_000, flushMs: 60_000 },
    );
    const first = auth.authenticate(a.key);
    current = { ...a.record, revokedAt: new Date() };
    auth.invalidate(a.record.prefix);
    release();
    await first;
    await expect(auth.authenticate(a.key)).rejects.toMatchObject({ code: "auth.invalid" });
    await auth.close();
  });

  it("keeps last uses whose write failed for the next flush", async () => {
    const a = keyRecord("team-a");
    let fail = true;
    const written: Map<string, number>[] = [];
    const auth = new ApiKeyAuthenticator(
      {
        find: async () => a.record,
        async recordLastUse(uses) {
          if (fail) throw new Error("database down");
          written.push(new Map(uses));
        },
      },
      { cacheMs: 60_000, flushMs: 60_000 },
    );
    await auth.authenticate(a.key);
    await auth.flush();
    expect(written).toHaveLength(0);
    fail = false;
    await auth.close();
    expect(written).toHaveLength(1);
  });
});
