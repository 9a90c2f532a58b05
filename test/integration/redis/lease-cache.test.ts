/**
 * The per-replica lease cache and budget allotments of the Redis store
 * (src/store/coordination/redis/lease-cache.ts, redis-budget-allotments.ts), on a real
 * Redis with two stores on one prefix as two replicas: a session's later calls start from
 * the replica's copy with no round trip, Redis still sees every begin and end, an end on any
 * replica drops every copy, a copy near its session's deadline is not used, and the day's
 * budget is never overspent, however two replicas share it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { CallStart, Lease } from "../../../src/store/coordination/records.js";
import { LEASE_CACHE_MARGIN_MS } from "../../../src/store/coordination/redis/lease-cache.js";
import { RETURN_AFTER_MS } from "../../../src/store/coordination/redis/redis-budget-allotments.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { fresh, keyOf, leaseIn } from "../../support/lease-fixture.js";
import { redisAvailable, redisUrl, startPrivateRedis } from "../../support/redis.js";
import { waitFor } from "../../support/wait-for.js";

const available = await redisAvailable();
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
const DAY = "2026-12-01";
/** Large enough for allotments: 8 calls' time (16 s) held at a time. */
const budget = { day: DAY, requestedMs: 2_000, limitMs: 3_600_000 };

const start = (ask: CallStart["budget"] = budget): CallStart => ({
  now: Date.now(),
  busyUntil: Date.now() + 60_000,
  ...(ask ? { budget: ask } : {}),
});

describe.skipIf(!available)("the lease cache and budget allotments", () => {
  let admin: Redis;
  const opened: RedisCoordinationStore[] = [];
  const replica = async (url = redisUrl) => {
    const store = await RedisCoordinationStore.connect({ url, prefix });
    opened.push(store);
    return store;
  };

  beforeAll(() => {
    admin = new Redis(redisUrl);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  afterAll(async () => {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
  });

  /** A new session in a workspace of its own, with one call begun on `store` (which now holds a copy). */
  async function withCopy(store: RedisCoordinationStore): Promise<Lease> {
    const lease = leaseIn(fresh("ws"));
    await store.putLease(lease);
    await store.beginCall(keyOf(lease), start());
    return lease;
  }

  const leaseKey = (l: Lease) => `${prefix}{ws:${l.workspace}}:lease:${l.sessionId}`;
  const stored = async (l: Lease) => JSON.parse((await admin.get(leaseKey(l)))!) as Lease;
  const budgetUsed = async (workspace: string) =>
    Number((await admin.get(`${prefix}{ws:${workspace}}:budget:${DAY}`)) ?? 0);

  /** The scripts Redis runs on `workspace`'s keys while `work` runs (their inner commands left out). */
  async function scriptsDuring(workspace: string, work: () => Promise<void>): Promise<number> {
    const monitor = await new Redis(redisUrl).monitor();
    let scripts = 0;
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (!source.includes("lua") && args.some((arg) => arg.includes(`{ws:${workspace}}:`))) scripts++;
    });
    try {
      await work();
      await new Promise((resolve) => setTimeout(resolve, 100));
      return scripts;
    } finally {
      monitor.disconnect();
    }
  }

  it("starts a session's later calls from the replica's copy, and Redis still sees every begin and end", async () => {
    const store = await replica();
    const lease = leaseIn(fresh("ws"));
    await store.putLease(lease);
    let lastEnd = 0;
    const scripts = await scriptsDuring(lease.workspace, async () => {
      const ends: Promise<boolean>[] = [];
      for (let i = 0; i < 20; i++) {
        const started = await store.beginCall(keyOf(lease), start());
        expect(started).toMatchObject({ outcome: "started", grantedMs: 2_000 });
        lastEnd = Date.now() + i; // later with every call, however fast they go
        // Each call is charged 500 ms of its 2 s. Not waited on, as the gateway does not.
        ends.push(store.endCall(keyOf(lease), { now: lastEnd, refund: { day: DAY, milliseconds: 1_500 } }));
      }
      expect(await Promise.all(ends)).toEqual(ends.map(() => true));
    });
    // One awaited begin for the first call; the rest were written behind, many steps to a
    // script (without the cache: one script for every begin, 20 at least).
    expect(scripts).toBeLessThanOrEqual(4);
    expect(await stored(lease)).toMatchObject({ activeCalls: 0, lastActivityAt: lastEnd });
    // The first begin held 8 calls' time for later ones; it goes back when the store closes,
    // and then what is used is what the calls were charged.
    expect(await budgetUsed(lease.workspace)).toBeGreaterThan(20 * 500);
    await store.close();
    expect(await budgetUsed(lease.workspace)).toBe(20 * 500);
  });

  it("marks the session busy in Redis a moment after a begin from the copy", async () => {
    const store = await replica();
    const lease = await withCopy(store);
    const busyUntil = Date.now() + 30 * 60_000; // past its idle timeout (10 min)
    const started = await store.beginCall(keyOf(lease), { ...start(), busyUntil });
    expect(started.outcome).toBe("started");
    await waitFor(async () => (await stored(lease)).activeCalls === 2, 2_000, "both begins in Redis");
    expect((await stored(lease)).busyUntil).toBe(busyUntil);
    const deadlines = `${prefix}{ws:${lease.workspace}}:deadlines`;
    expect(Number(await admin.zscore(deadlines, lease.sessionId))).toBe(busyUntil);
  });

  it("drops the copy when a begin from it finds the lease gone", async () => {
    const store = await replica();
    const lease = await withCopy(store);
    // Removed behind the replica's back (no end announced): the copy still serves once...
    await admin.del(leaseKey(lease));
    expect((await store.beginCall(keyOf(lease), start())).outcome).toBe("started");
    // ...until that begin reaches Redis and finds nothing.
    await waitFor(
      async () => (await store.beginCall(keyOf(lease), start())).outcome === "gone",
      2_000,
      "the copy dropped",
    );
  });

  it("drops every replica's copy when one of them ends the session", async () => {
    const [one, two] = [await replica(), await replica()];
    const lease = leaseIn(fresh("ws"));
    await one.putLease(lease);
    // Replica two's copy, from its first begin; its next one is served from it.
    expect((await two.beginCall(keyOf(lease), start())).outcome).toBe("started");
    expect((await two.beginCall(keyOf(lease), start())).outcome).toBe("started");
    // That begin reached Redis while the lease was there: it drops nothing.
    await waitFor(async () => (await stored(lease)).activeCalls === 2, 2_000, "both begins in Redis");
    expect(await one.takeLease(keyOf(lease))).toMatchObject({ sessionId: lease.sessionId });
    // Well within the copy's own lifetime (5 s), and before any begin of replica two could
    // have found the lease gone: the broadcast dropped the copy.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await two.beginCall(keyOf(lease), start())).outcome).toBe("gone");
  });

  it("tells the ending replica whether another replica may still hold a copy", async () => {
    const [one, two] = [await replica(), await replica()];
    // Created and called on one replica only: nothing stale can serve it elsewhere.
    const alone = await withCopy(one);
    await one.beginCall(keyOf(alone), start());
    const takenAlone = await one.takeLease(keyOf(alone));
    expect(takenAlone).toMatchObject({ sessionId: alone.sessionId });
    expect(takenAlone?.copiedElsewhere).toBeUndefined();
    // Called through replica two as well: two took a copy, whichever replica ends it.
    const shared = await withCopy(one);
    expect((await two.beginCall(keyOf(shared), start())).outcome).toBe("started");
    expect((await one.takeLease(keyOf(shared)))?.copiedElsewhere).toBe(true);
    // Created on one, ended on two, which never began a call: one's copy may be stale.
    const created = leaseIn(fresh("ws"));
    await one.putLease(created);
    expect((await two.takeLease(keyOf(created)))?.copiedElsewhere).toBe(true);
    // Written by an earlier version (no record of copies): unknown, so treated as copied.
    const legacy = leaseIn(fresh("ws"));
    await one.putLease(legacy);
    const copiesKey = (await admin.keys(`${prefix}*lease-copies:${legacy.sessionId}`))[0]!;
    await admin.del(copiesKey);
    expect((await one.takeLease(keyOf(legacy)))?.copiedElsewhere).toBe(true);
    // The record goes with the lease.
    for (const ended of [alone, shared, created])
      expect(await admin.keys(`${prefix}*lease-copies:${ended.sessionId}`)).toEqual([]);
  });

  it("keeps another workspace's calls away from a copy", async () => {
    const store = await replica();
    const lease = await withCopy(store);
    const intruder = { workspace: fresh("ws"), sessionId: lease.sessionId };
    expect((await store.beginCall(intruder, start())).outcome).toBe("gone");
  });

  it("does not use a copy whose session is close to its idle deadline: the awaited begin decides", async () => {
    const store = await replica();
    const lease = leaseIn(fresh("ws"), Math.floor(LEASE_CACHE_MARGIN_MS / 1000) - 1);
    await store.putLease(lease);
    expect((await store.beginCall(keyOf(lease), start())).outcome).toBe("started");
    await admin.del(leaseKey(lease));
    // A copy in use would say started.
    expect((await store.beginCall(keyOf(lease), start())).outcome).toBe("gone");
  });

  it("gives the time it holds back to Redis once the workspace is quiet", async () => {
    const store = await replica();
    const lease = await withCopy(store);
    // The call's 2 s and 8 calls' more.
    expect(await budgetUsed(lease.workspace)).toBe(18_000);
    await store.endCall(keyOf(lease), { now: Date.now(), refund: { day: DAY, milliseconds: 1_900 } });
    await waitFor(
      async () => (await budgetUsed(lease.workspace)) === 100,
      3 * RETURN_AFTER_MS + 1_000,
      "the allotment given back",
    );
  });

  it("never lets two replicas together spend more than the day's budget", async () => {
    const [one, two] = [await replica(), await replica()];
    const workspace = fresh("ws");
    const [mine, theirs] = [leaseIn(workspace), leaseIn(workspace)];
    await one.putLease(mine);
    await two.putLease(theirs);
    // 40 calls' worth: each replica holds up to 8 calls' time (a sixteenth of the budget).
    const ask = { day: DAY, requestedMs: 1_000, limitMs: 40_000 };
    const sides = [
      { store: one, lease: mine, granted: 0, spent: false },
      { store: two, lease: theirs, granted: 0, spent: false },
    ];
    for (let round = 0; round < 200 && sides.some((side) => !side.spent); round++) {
      for (const side of sides.filter((s) => !s.spent)) {
        const started = await side.store.beginCall(keyOf(side.lease), start(ask));
        if (started.outcome === "budget_spent") {
          side.spent = true;
          continue;
        }
        expect(started.outcome).toBe("started");
        if (started.outcome !== "started") continue;
        side.granted += started.grantedMs;
        // Charged in full: nothing given back.
        await side.store.endCall(keyOf(side.lease), { now: Date.now() });
      }
    }
    expect(sides.every((side) => side.spent)).toBe(true);
    // Both replicas had their share, and together exactly the budget: none held back at the end.
    expect(sides.every((side) => side.granted > 0)).toBe(true);
    expect(sides[0]!.granted + sides[1]!.granted).toBe(ask.limitMs);
    expect(await budgetUsed(workspace)).toBe(ask.limitMs);
  });

  it("grants a call it has no copy for from the time it holds, rather than refuse it", async () => {
    const [one, two] = [await replica(), await replica()];
    const workspace = fresh("ws");
    const [mine, other] = [leaseIn(workspace), leaseIn(workspace)];
    await one.putLease(mine);
    const ask = { day: DAY, requestedMs: 1_000, limitMs: 40_000 };
    await one.beginCall(keyOf(mine), start(ask)); // holds 2.5 s more for later calls
    // The rest of the day's budget spent elsewhere.
    await admin.set(`${prefix}{ws:${workspace}}:budget:${DAY}`, String(ask.limitMs), "KEEPTTL");
    // A session replica one has no copy of (made through replica two).
    await two.putLease(other);
    expect(await one.beginCall(keyOf(other), start(ask))).toMatchObject({
      outcome: "started",
      grantedMs: 1_000,
    });
  });

  it("serves nothing from a copy while it cannot hear the ends, and again once subscribed", async () => {
    const redis = await startPrivateRedis();
    const privateAdmin = new Redis(redis.url);
    try {
      const store = await replica(redis.url);
      const lease = await withCopy(store);
      // The replica's subscription drops: it may miss an end from now on.
      await privateAdmin.call("CLIENT", "KILL", "TYPE", "pubsub");
      await new Promise((resolve) => setTimeout(resolve, 50));
      await privateAdmin.del(leaseKey(lease));
      expect((await store.beginCall(keyOf(lease), start())).outcome).toBe("gone");
      // Subscribed again, the cache serves calls again.
      await waitFor(
        async () =>
          Number(((await privateAdmin.pubsub("NUMSUB", `${prefix}leases-ended`)) as [string, number])[1]) >=
          1,
        5_000,
        "the subscription back",
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const again = await withCopy(store);
      await privateAdmin.del(leaseKey(again));
      expect((await store.beginCall(keyOf(again), start())).outcome).toBe("started");
    } finally {
      privateAdmin.disconnect();
      await Promise.all(opened.splice(0).map((store) => store.close()));
      await redis.stop();
    }
  });
});
