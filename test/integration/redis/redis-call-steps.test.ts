/**
 * The ends of calls written behind (src/store/coordination/redis/redis-call-steps.ts), on a
 * real Redis: an end rides with the workspace's next begin in one script, goes alone a
 * moment later when no begin comes, is sent ahead of any other command of the replica (so
 * the replica's next read sees it), is written before the store closes, and fails with the
 * script that carried it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Lease } from "../../../src/store/coordination/records.js";
import { MAX_STEPS_PER_SCRIPT } from "../../../src/store/coordination/redis/redis-call-steps.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { fresh, keyOf, leaseIn } from "../../support/lease-fixture.js";
import { redisAvailable, redisUrl, startPrivateRedis } from "../../support/redis.js";
import { waitFor } from "../../support/wait-for.js";

const available = await redisAvailable();
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
const DAY = "2026-12-01";
// A day's budget too small for a replica to hold time for later calls (an allotment is at
// most a sixteenth of it, and must cover a call: redis-budget-allotments.ts), so every
// begin with a budget is awaited here and the figures are the calls' own.
const budget = { day: DAY, requestedMs: 2_000, limitMs: 30_000 };
/** A budget large enough for allotments: most begins are then served from the lease cache. */
const roomyBudget = { ...budget, limitMs: 3_600_000 };

describe.skipIf(!available)("the ends of calls, written behind", () => {
  let store: RedisCoordinationStore;
  let admin: Redis;

  beforeAll(() => {
    admin = new Redis(redisUrl);
  });
  afterEach(async () => {
    await store?.close();
  });
  afterAll(async () => {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
  });

  /** A lease with one call begun on it, 2 s of budget reserved. */
  async function busyLease(workspace: string, ask = budget): Promise<Lease> {
    const lease = leaseIn(workspace);
    await store.putLease(lease);
    const started = await store.beginCall(keyOf(lease), {
      now: Date.now(),
      busyUntil: Date.now() + 60_000,
      budget: ask,
    });
    expect(started.outcome).toBe("started");
    return lease;
  }
  const end = (lease: Lease) =>
    store.endCall(keyOf(lease), { now: Date.now(), refund: { day: DAY, milliseconds: 1_500 } });
  /** The lease as Redis holds it, read from another connection. */
  const stored = async (lease: Lease) =>
    JSON.parse((await admin.get(`${prefix}{ws:${lease.workspace}}:lease:${lease.sessionId}`))!) as Lease;

  it("an end rides with the workspace's next begin: one script for both, the end applied first", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const ws = fresh("ws");
    const [first, second] = [await busyLease(ws), leaseIn(ws)];
    await store.putLease(second);
    const monitor = await new Redis(redisUrl).monitor();
    const scripts: string[][] = [];
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (!source.includes("lua") && args.some((arg) => arg.includes(`{ws:${ws}}:lease:`)))
        scripts.push(args);
    });
    try {
      const ended = end(first);
      const started = await store.beginCall(keyOf(second), {
        now: Date.now(),
        busyUntil: Date.now() + 60_000,
        budget,
      });
      expect(await ended).toBe(true);
      // Both calls' 2 s reserved, the first's 1.5 s given back before the second reserved.
      expect(started).toMatchObject({ outcome: "started", grantedMs: 2_000 });
      expect(await store.readBudget(ws, DAY)).toBe(2_500);
      await waitFor(() => scripts.length >= 1, 2_000);
      expect(scripts).toHaveLength(1);
      expect(scripts[0]!.filter((arg) => arg.includes(":lease:"))).toEqual([
        `${prefix}{ws:${ws}}:lease:${first.sessionId}`,
        `${prefix}{ws:${ws}}:lease:${second.sessionId}`,
      ]);
      expect(await stored(first)).toMatchObject({ activeCalls: 0 });
      expect((await stored(first)).busyUntil).toBeUndefined();
    } finally {
      monitor.disconnect();
    }
  });

  it("a session's end and its next begin in one script leave it as the two steps in turn would", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const lease = await busyLease(fresh("ws"));
    const endedAt = Date.now() + 1_000;
    const ended = store.endCall(keyOf(lease), { now: endedAt, refund: { day: DAY, milliseconds: 1_500 } });
    const busyUntil = Date.now() + 20 * 60_000; // past its idle timeout (10 min)
    const started = await store.beginCall(keyOf(lease), { now: endedAt + 1, busyUntil, budget });
    expect(await ended).toBe(true);
    const expected = { ...lease, lastActivityAt: endedAt + 1, activeCalls: 1, busyUntil };
    expect(started).toEqual({ outcome: "started", lease: expected, grantedMs: 2_000 });
    expect(await stored(lease)).toEqual(expected);
    // Its deadline is the new call's: busy until then, though it would idle out sooner.
    const deadlines = `${prefix}{ws:${lease.workspace}}:deadlines`;
    expect(Number(await admin.zscore(deadlines, lease.sessionId))).toBe(busyUntil);
    expect(await store.readBudget(lease.workspace, DAY)).toBe(2_500);
  });

  it("an end no begin takes is applied alone a moment later", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const lease = await busyLease(fresh("ws"));
    const ended = end(lease);
    expect(await ended).toBe(true);
    expect(await stored(lease)).toMatchObject({ activeCalls: 0 });
    expect(await admin.get(`${prefix}{ws:${lease.workspace}}:budget:${DAY}`)).toBe("500");
  });

  it("is sent ahead of the replica's next command: a read right after the end sees it", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const lease = await busyLease(fresh("ws"));
    const ended = end(lease);
    expect(await store.readBudget(lease.workspace, DAY)).toBe(500);
    expect(await store.getLease(keyOf(lease))).toMatchObject({ activeCalls: 0 });
    await ended;
  });

  it("a begin carries only its own workspace's ends; another's wait for their own turn", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const [mine, theirs] = [await busyLease(fresh("ws")), await busyLease(fresh("ws"))];
    const theirEnd = end(theirs);
    await store.beginCall(keyOf(mine), { now: Date.now(), busyUntil: Date.now() + 60_000, budget });
    expect(await theirEnd).toBe(true);
    expect(await stored(theirs)).toMatchObject({ activeCalls: 0 });
    expect(await stored(mine)).toMatchObject({ activeCalls: 2 });
  });

  it(`more ends than one script carries (${MAX_STEPS_PER_SCRIPT}) are all applied`, async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const ws = fresh("ws");
    const leases: Lease[] = [];
    for (let i = 0; i < 2 * MAX_STEPS_PER_SCRIPT + 3; i++) leases.push(await busyLease(ws, roomyBudget));
    expect(await Promise.all(leases.map(end))).toEqual(leases.map(() => true));
    for (const lease of leases) expect(await stored(lease)).toMatchObject({ activeCalls: 0 });
    // Every reservation but 500 ms of each given back, once the store has given back the
    // time it held for later calls.
    await store.close();
    expect(Number(await admin.get(`${prefix}{ws:${ws}}:budget:${DAY}`))).toBe(leases.length * 500);
  });

  it("an end of a lease that is gone says so, and still gives the time back", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const lease = await busyLease(fresh("ws"));
    await store.takeLease(keyOf(lease));
    expect(await end(lease)).toBe(false);
    expect(await store.readBudget(lease.workspace, DAY)).toBe(500);
  });

  it("the ends put off are written before the store closes", async () => {
    store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    const lease = await busyLease(fresh("ws"));
    const ended = end(lease);
    await store.close();
    expect(await ended).toBe(true);
    expect(await stored(lease)).toMatchObject({ activeCalls: 0 });
  });

  it("an end whose script fails fails as the store being unavailable", async () => {
    const redis = await startPrivateRedis();
    try {
      store = await RedisCoordinationStore.connect({ url: redis.url, prefix, commandTimeoutMs: 500 });
      const lease = await busyLease(fresh("ws"));
      await redis.stop();
      await expect(end(lease)).rejects.toMatchObject({ code: "store.unavailable" });
    } finally {
      await redis.stop();
    }
  });
});
