/**
 * The warm pool through the gateway (docs/architecture.md, "Session lifecycle"): `minIdle`
 * ready sandboxes, a lease pops one and warm-up refills it, a dry pool cold-starts, a full
 * pool refuses with 503 and gives the slot back, sandboxes are never reused, and a pool whose
 * image cannot start backs off instead of spinning.
 */
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { PoolManager } from "../../../src/pool/pool-manager.js";
import type { PoolSpec, SandboxRuntime } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import type { EditablePolicyFields } from "../../../src/store/sql/policy-row.js";
import type { Answer } from "../../support/contract-client.js";
import { startTestGateway, TEST_IMAGE, type TestGateway } from "../../support/gateway-harness.js";
import { processExists } from "../../support/sandbox-server.js";
import { waitFor } from "../../support/wait-for.js";

const POOL = "default";
const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

function sessionIdOf(answer: Answer): string {
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

async function leaseOf(harness: TestGateway, sessionId: string) {
  const lease = (await harness.store.listLeases()).find((l) => l.sessionId === sessionId);
  if (!lease) throw new Error(`no lease for ${sessionId}`);
  return lease;
}

const idleIds = async (harness: TestGateway) =>
  (await harness.store.listIdle(POOL)).map((record) => record.sandboxId);

async function metricsText(harness: TestGateway): Promise<string> {
  const res = await fetch(`${harness.url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

function leaseCount(text: string, start: "warm" | "cold"): number {
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`sandpool_lease_duration_seconds_count{pool="${POOL}",start="${start}"}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

async function setPolicy(
  harness: TestGateway,
  workspace: string,
  fields: Partial<EditablePolicyFields>,
): Promise<void> {
  await harness.gateway.policyRepository.put(workspace, fields, "pool-test");
  harness.gateway.services.policies.invalidate(workspace);
}

describe("a warm pool", () => {
  const MIN_IDLE = 2;
  let harness: TestGateway;
  beforeAll(async () => {
    harness = await startTestGateway({
      pools: [{ name: POOL, image: TEST_IMAGE, minIdle: MIN_IDLE, maxTotal: 5 }],
    });
  });
  afterAll(() => harness.close());

  it("holds min_idle ready sandboxes after start", async () => {
    const idle = await harness.store.listIdle(POOL);
    expect(idle).toHaveLength(MIN_IDLE);
    for (const record of idle) expect(processExists(Number(record.runtimeId))).toBe(true);
  });

  it("leases an idle sandbox and warm-up refills the pool", async () => {
    await waitFor(async () => (await idleIds(harness)).length === MIN_IDLE, 10_000, "a full pool");
    const before = await idleIds(harness);
    const warmBefore = leaseCount(await metricsText(harness), "warm");
    const client = await harness.client(freshWorkspace("warm"));
    const id = sessionIdOf(await client.createSession());
    const leased = (await leaseOf(harness, id)).sandbox.sandboxId;
    expect(before).toContain(leased);
    expect(await idleIds(harness)).not.toContain(leased);
    await waitFor(async () => (await idleIds(harness)).length === MIN_IDLE, 10_000, "the refill");
    const after = await idleIds(harness);
    expect(after).not.toContain(leased);
    expect(after.filter((sandboxId) => !before.includes(sandboxId))).toHaveLength(1);
    expect(leaseCount(await metricsText(harness), "warm")).toBe(warmBefore + 1);
    await client.destroy(id);
  });

  it("gives each session a sandbox of its own and never reuses one", async () => {
    const client = await harness.client(freshWorkspace("reuse"));
    const first = sessionIdOf(await client.createSession());
    const second = sessionIdOf(await client.createSession());
    const firstLease = await leaseOf(harness, first);
    const secondLease = await leaseOf(harness, second);
    expect(firstLease.sandbox.sandboxId).not.toBe(secondLease.sandbox.sandboxId);
    expect(firstLease.sandbox.runtimeId).not.toBe(secondLease.sandbox.runtimeId);
    await client.destroy(second);

    expect((await client.putFile(first, "top secret", { path: "secret.txt" })).status).toBe(201);
    await client.run(first, "code_execution", { code: "left_behind = 42" });
    expect((await client.destroy(first)).status).toBe(204);
    const pid = Number(firstLease.sandbox.runtimeId);
    await waitFor(() => !processExists(pid), 10_000, "the first sandbox to be destroyed");

    const third = sessionIdOf(await client.createSession());
    const thirdLease = await leaseOf(harness, third);
    expect([firstLease.sandbox.sandboxId, secondLease.sandbox.sandboxId]).not.toContain(
      thirdLease.sandbox.sandboxId,
    );
    expect((await client.getFile(third, "secret.txt")).status).toBe(404);
    expect((await client.listFiles(third)).body).toMatchObject({ files: [] });
    const probe = await client.run(third, "code_execution", { code: "print('left_behind' in globals())" });
    expect(probe.stdout).toBe("False\n");
    // Ended sandboxes never go back to the pool.
    const idle = await idleIds(harness);
    expect(idle).not.toContain(firstLease.sandbox.sandboxId);
    expect(idle).not.toContain(secondLease.sandbox.sandboxId);
    await client.destroy(third);
  });

  it("destroys an ended session's sandbox even when its retiring mark cannot be set", async () => {
    const client = await harness.client(freshWorkspace("mark"));
    const id = sessionIdOf(await client.createSession());
    const pid = Number((await leaseOf(harness, id)).sandbox.runtimeId);
    const markRetiring = harness.store.markRetiring;
    harness.store.markRetiring = async () => {
      throw new Error("the store refused the mark");
    };
    try {
      expect((await client.destroy(id)).status).toBe(204);
      await waitFor(() => !processExists(pid), 10_000, "the sandbox to be destroyed");
    } finally {
      harness.store.markRetiring = markRetiring;
    }
  });
});

describe("a pool with no idle sandboxes", () => {
  const MAX_TOTAL = 2;
  let harness: TestGateway;
  beforeAll(async () => {
    harness = await startTestGateway({
      pools: [{ name: POOL, image: TEST_IMAGE, minIdle: 0, maxTotal: MAX_TOTAL }],
    });
  });
  afterAll(() => harness.close());

  it("cold-starts a sandbox for a session", async () => {
    expect(await harness.store.listIdle(POOL)).toEqual([]);
    const client = await harness.client(freshWorkspace("cold"));
    const id = sessionIdOf(await client.createSession());
    expect((await client.run(id, "code_execution", { code: "print('cold')" })).stdout).toBe("cold\n");
    const text = await metricsText(harness);
    expect(leaseCount(text, "cold")).toBe(1);
    expect(leaseCount(text, "warm")).toBe(0);
    expect(await harness.store.listIdle(POOL)).toEqual([]); // minIdle 0: nothing is refilled
    await client.destroy(id);
    await waitFor(
      async () => (await harness.store.listMembers(POOL, Date.now())).length === 0,
      10_000,
      "an empty pool",
    );
  });

  it("refuses with 503 at max_total, leasing nothing and giving the slot back", async () => {
    const workspace = freshWorkspace("capacity");
    // One more concurrent session than the pool can hold: a leaked slot would show as a 429.
    await setPolicy(harness, workspace, { maxConcurrentSessions: MAX_TOTAL + 1 });
    const client = await harness.client(workspace);
    const open = [sessionIdOf(await client.createSession()), sessionIdOf(await client.createSession())];

    for (let attempt = 0; attempt < 3; attempt++) {
      const refused = await client.createSession();
      expect(refused.status, refused.text).toBe(503);
      expect((refused.body as { detail: { code: string } }).detail.code).toBe("capacity.exhausted");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await harness.store.countSlots(workspace, Date.now())).toBe(MAX_TOTAL);
    }
    expect((await harness.store.listLeases()).map((l) => l.sessionId).sort()).toEqual([...open].sort());
    expect(await harness.store.listMembers(POOL, Date.now())).toHaveLength(MAX_TOTAL);

    // Right after a DELETE the workspace creates again: while the destroy job is still to
    // free the place (held back here), the lease waits for it instead of refusing.
    const pools = harness.gateway.services.pools;
    const retire = pools.retire;
    let retired = false;
    pools.retire = async (record) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await retire.call(pools, record);
      retired = true;
    };
    let again: string;
    try {
      expect((await client.destroy(open[0]!)).status).toBe(204);
      expect(retired).toBe(false);
      const created = await client.createSession();
      expect(created.status, created.text).toBe(201);
      expect(retired).toBe(true); // served once the place was free, not before
      again = sessionIdOf(created);
    } finally {
      pools.retire = retire;
    }
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(MAX_TOTAL);
    await client.destroy(again);
    await client.destroy(open[1]!);
  });
});

describe("a pool whose image cannot start", () => {
  const spec: PoolSpec = {
    name: "broken",
    image: "sandpool/broken:1",
    resourceClass: "standard",
    minIdle: 1,
    maxTotal: 4,
    warmupConcurrency: 1,
    coldStartTimeoutMs: 1_000,
  };

  function brokenPool(options: { failures?: number } = {}) {
    let clock = 0;
    const attempts: number[] = [];
    const runtime: SandboxRuntime = {
      kind: "process",
      isolated: false,
      start: async () => {
        attempts.push(clock);
        if (options.failures === undefined || attempts.length <= options.failures)
          throw new Error("image cannot start");
        return { runtimeId: `rt-${attempts.length}`, endpoint: "http://127.0.0.1:9" };
      },
      destroy: async () => undefined,
      list: async () => [],
      close: async () => undefined,
    };
    const client = { createInnerSession: async () => "inner" } as unknown as SandboxClient;
    const store = new MemoryCoordinationStore();
    const metrics = new GatewayMetrics({ processMetrics: false });
    const pools = new PoolManager({
      pools: [spec],
      store,
      runtime,
      client,
      metrics,
      log: pino({ level: "silent" }),
      now: () => clock,
    });
    const failures = async () =>
      (await metrics.warmupFailures.get()).values.find((v) => v.labels.pool === spec.name)?.value ?? 0;
    return {
      pools,
      store,
      attempts,
      failures,
      /** Runs the warm-up job every 100 ms of fake time until `until`. */
      async tickUntil(until: number) {
        for (; clock <= until; clock += 100) await pools.warm(spec);
      },
      setClock(at: number) {
        clock = at;
      },
    };
  }

  it("tries less and less often, counting each failure", async () => {
    const pool = brokenPool();
    await pool.tickUntil(20_000);
    const gaps = pool.attempts.slice(1).map((at, i) => at - pool.attempts[i]!);
    expect(pool.attempts[0]).toBe(0);
    expect(gaps).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(await pool.failures()).toBe(pool.attempts.length);
    // A failed start gives its place in the pool back.
    expect(await pool.store.listMembers(spec.name, 0)).toEqual([]);
    expect(await pool.store.listIdle(spec.name)).toEqual([]);
  });

  it("refuses a cold start with 503 capacity.exhausted and Retry-After, counting it", async () => {
    const pool = brokenPool();
    await pool.tickUntil(0);
    const error = await pool.pools
      .lease(spec, { workspace: "w", until: 3_600_000, now: 0 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandpoolError);
    expect((error as SandpoolError).code).toBe("capacity.exhausted");
    expect((error as SandpoolError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(pool.attempts).toHaveLength(2); // a client's cold start is not held back by the back-off
    expect(await pool.failures()).toBe(2);
    expect(await pool.store.listMembers(spec.name, 0)).toEqual([]);
  });

  it("starts normally again after one success", async () => {
    const pool = brokenPool({ failures: 3 });
    await pool.tickUntil(3_000); // failures at 0, 1000, 3000
    expect(pool.attempts).toEqual([0, 1_000, 3_000]);
    await pool.tickUntil(7_000); // the fourth attempt, at 7000, succeeds
    expect(pool.attempts).toEqual([0, 1_000, 3_000, 7_000]);
    expect(await pool.store.listIdle(spec.name)).toHaveLength(1);
    expect(await pool.failures()).toBe(3);
  });
});

describe("a pool whose idle sandboxes sit for a long time", () => {
  // Idle sandboxes count against max_total through an expiring membership
  // (IDLE_MEMBERSHIP_MS, 10 minutes). The gateway runs the warm-up job every tick; here it
  // is driven on a fake clock, with leases taken the way SessionLifecycle.create takes them.
  const spec: PoolSpec = {
    name: "quiet",
    image: TEST_IMAGE,
    resourceClass: "standard",
    minIdle: 2,
    maxTotal: 2,
    warmupConcurrency: 2,
    coldStartTimeoutMs: 1_000,
  };

  it("still never runs more than max_total sandboxes", async () => {
    let clock = 0;
    const running = new Set<string>();
    let started = 0;
    const runtime: SandboxRuntime = {
      kind: "process",
      isolated: false,
      start: async () => {
        const runtimeId = `rt-${++started}`;
        running.add(runtimeId);
        return { runtimeId, endpoint: "http://127.0.0.1:9" };
      },
      destroy: async (runtimeId) => {
        running.delete(runtimeId);
      },
      list: async () => [],
      close: async () => undefined,
    };
    const store = new MemoryCoordinationStore();
    const pools = new PoolManager({
      pools: [spec],
      store,
      runtime,
      client: { createInnerSession: async () => "inner" } as unknown as SandboxClient,
      metrics: new GatewayMetrics({ processMetrics: false }),
      log: pino({ level: "silent" }),
      now: () => clock,
    });
    const lease = async () => {
      const hold = { workspace: "w", until: clock + 3_600_000 + 60_000, now: clock };
      // A warm lease holds its pool place as it pops; a cold one is held afterwards.
      const leased = await pools.lease(spec, hold);
      if (!leased.warm) await pools.holdMembership(leased.record, hold);
      await pools.warm(spec);
      return leased;
    };

    await pools.warmAll();
    expect(running.size).toBe(2);
    // Twelve quiet minutes, the warm-up job ticking every second.
    for (; clock <= 12 * 60_000; clock += 1_000) await pools.warm(spec);
    expect(running.size).toBe(2);

    await lease();
    await lease();
    for (let tick = 0; tick < 5; tick++, clock += 1_000) await pools.warm(spec);
    expect(running.size, "sandboxes started and not destroyed").toBeLessThanOrEqual(spec.maxTotal);
    await expect(lease()).rejects.toMatchObject({ code: "capacity.exhausted" });
  });
});
