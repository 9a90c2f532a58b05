/**
 * Automatic hibernation (SessionLifecycle.hibernateIdle) on two replicas sharing a real
 * Redis: a round reads the workspaces' quiet indexes (`{ws:W}:quiet`), never every lease
 * (listLeases throws here), and hibernates exactly the sessions idle for their workspace's
 * `hibernateAfterIdleSeconds`, each once however many replicas run the round; a call begun
 * on the other replica keeps its session running, a resumed session is back in the index,
 * and an entry whose lease aged out (no replica took it) is dropped. The sandbox steps
 * stand in (a save that records its session); the leases, claims and indexes are Redis's.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HibernationSandboxes } from "../../../src/hibernate/hibernation-sandboxes.js";
import { SessionHibernation } from "../../../src/hibernate/session-hibernation.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import type { EffectivePolicy } from "../../../src/policy/effective-policy.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { SessionLifecycle, type SessionLifecycleDeps } from "../../../src/session/session-lifecycle.js";
import type { Lease, LeaseKey, SandboxRecord } from "../../../src/store/coordination/records.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import { waitFor } from "../../support/wait-for.js";

const available = await redisAvailable();
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
const SECOND = 1_000;
const pool = { name: "default", image: "img", coldStartTimeoutMs: 1_000 } as PoolSpec;
const tag = randomBytes(3).toString("hex");
/** Each workspace's `hibernateAfterIdleSeconds`. */
const AFTER: Record<string, number | null> = {
  [`fast-${tag}`]: 5,
  [`slow-${tag}`]: 60,
  [`never-${tag}`]: null,
};
const [FAST, SLOW, NEVER] = Object.keys(AFTER) as [string, string, string];

interface Replica {
  store: RedisCoordinationStore;
  sessions: SessionLifecycle;
  hibernation: SessionHibernation;
}

describe.skipIf(!available)("automatic hibernation on two replicas (Redis)", () => {
  const saved: string[] = [];
  let replicas: [Replica, Replica];
  let admin: Redis;

  const record = (): SandboxRecord => ({
    sandboxId: `sb-${randomBytes(4).toString("hex")}`,
    pool: "default",
    endpoint: "http://127.0.0.1:9",
    runtimeId: "rt",
    innerSessionId: "inner",
    createdAt: Date.now(),
  });

  const replica = async (): Promise<Replica> => {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    // A round must not list every lease: that is what the quiet index is for.
    const guarded = new Proxy(store, {
      get(target, name, receiver) {
        if (name === "listLeases") return () => Promise.reject(new Error("listed every lease"));
        const value = Reflect.get(target, name, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const log = pino({ level: "silent" });
    const metrics = new GatewayMetrics({ processMetrics: false });
    const usage = { record: () => undefined } as never;
    const sandboxes = {
      pool: () => pool,
      kindOf: () => "files",
      holderOf: () => undefined,
      save: async ({ key }: { key: LeaseKey }) => {
        saved.push(key.sessionId);
        return { kind: "files", bytes: 42 };
      },
      committed: async () => true,
      restore: async () => record(),
      retire: async () => undefined,
      deleteCheckpoint: async () => undefined,
      reconcile: async () => 0,
    } as unknown as HibernationSandboxes;
    const hibernation = new SessionHibernation({
      leases: guarded,
      sandboxes,
      boundsOf: async () => ({}),
      settleSandbox: async () => undefined,
      sandboxLost: async () => undefined,
      metrics,
      usage,
      log,
    });
    const policies = {
      forWorkspace: async (workspace: string) =>
        ({ hibernateAfterIdleSeconds: AFTER[workspace] ?? null }) as EffectivePolicy,
    };
    const sessions = new SessionLifecycle({
      store: guarded,
      policies,
      hibernation,
      metrics,
      usage,
      log,
    } as unknown as SessionLifecycleDeps);
    return { store, sessions, hibernation };
  };

  beforeAll(async () => {
    admin = new Redis(redisUrl);
    replicas = [await replica(), await replica()];
  });

  afterAll(async () => {
    for (const { store } of replicas ?? []) await store.close();
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
  });

  const put = async (workspace: string, idleFor: number): Promise<Lease> => {
    const now = Date.now();
    const lease: Lease = {
      sessionId: `s-${randomBytes(6).toString("hex")}`,
      workspace,
      pool: "default",
      image: "img",
      sandbox: record(),
      createdAt: now - 2 * 60 * SECOND,
      lastActivityAt: now - idleFor,
      idleTimeoutSeconds: 3_600,
      maxLifetimeSeconds: 7_200,
    };
    await replicas[0].store.putLease(lease);
    return lease;
  };
  const keyOf = (lease: Lease): LeaseKey => ({ workspace: lease.workspace, sessionId: lease.sessionId });
  const phaseOf = async (lease: Lease) =>
    (await replicas[0].store.getLease(keyOf(lease)))?.hibernation?.phase ?? "running";
  const quietScore = (lease: Lease) =>
    admin.zscore(`${prefix}{ws:${lease.workspace}}:quiet`, lease.sessionId);

  it("hibernates exactly the sessions idle past their workspace's time, once, and no busy one", async () => {
    const fastIdle = await put(FAST, 10 * SECOND);
    const fastActive = await put(FAST, 1 * SECOND);
    const fastBusy = await put(FAST, 30 * SECOND);
    const slowIdle = await put(SLOW, 30 * SECOND);
    const slowOld = await put(SLOW, 90 * SECOND);
    const neverOld = await put(NEVER, 3_600 * SECOND);
    // A call begun on the other replica, still in flight.
    const now = Date.now();
    const call = await replicas[1].store.beginCall(keyOf(fastBusy), {
      now: now - 20 * SECOND,
      busyUntil: now + 60 * SECOND,
    });
    expect(call.outcome).toBe("started");
    // A lease that aged out without being taken (its replica died): only its entry is left.
    const aged = await put(FAST, 60 * SECOND);
    await admin.del(`${prefix}{ws:${FAST}}:lease:${aged.sessionId}`);
    expect(await quietScore(aged)).not.toBeNull();

    // Both replicas run the round at once: each due session is saved by one of them.
    await Promise.all(replicas.map(({ sessions }) => sessions.hibernateIdle()));
    expect([...saved].sort()).toEqual([fastIdle.sessionId, slowOld.sessionId].sort());
    for (const lease of [fastIdle, slowOld]) expect(await phaseOf(lease)).toBe("saved");
    for (const lease of [fastActive, fastBusy, slowIdle, neverOld])
      expect(await phaseOf(lease)).toBe("running");
    // Hibernated sessions left the index; the aged-out entry was dropped.
    expect(await quietScore(fastIdle)).toBeNull();
    expect(await quietScore(aged)).toBeNull();

    // The call ends (written behind on its replica): quiet from its end, due on the next round.
    await replicas[1].store.endCall(keyOf(fastBusy), { now: now - 10 * SECOND });
    await waitFor(async () => Number(await quietScore(fastBusy)) === now - 10 * SECOND, 5_000, "the end");
    expect(await replicas[0].sessions.hibernateIdle()).toBe(1);
    expect(await phaseOf(fastBusy)).toBe("saved");
    expect(saved).toHaveLength(3);
  });

  it("takes a resumed session back into the index, quiet from its next activity", async () => {
    const lease = await put(FAST, 10 * SECOND);
    expect(await replicas[0].sessions.hibernateIdle()).toBeGreaterThanOrEqual(1);
    expect(await phaseOf(lease)).toBe("saved");
    const resumed = await replicas[1].hibernation.resume(keyOf(lease));
    expect(resumed.lease.hibernation).toBeUndefined();
    // Its resume is its last activity (issue 40): quiet from then, not from before it was saved.
    expect(resumed.lease.lastActivityAt).toBeGreaterThan(lease.lastActivityAt);
    expect(Number(await quietScore(lease))).toBe(resumed.lease.lastActivityAt);
    // The call that resumed it begins and ends: it is not idle any more.
    const at = Date.now();
    await replicas[1].store.beginCall(keyOf(lease), { now: at, busyUntil: at + 30 * SECOND });
    await replicas[1].store.endCall(keyOf(lease), { now: at });
    await waitFor(async () => Number(await quietScore(lease)) === at, 5_000, "the call's end");
    const before = saved.length;
    await Promise.all(replicas.map(({ sessions }) => sessions.hibernateIdle()));
    expect(saved.slice(before)).not.toContain(lease.sessionId);
    expect(await phaseOf(lease)).toBe("running");
  });
});
