/**
 * Sessions and pools at run time through the admin API, on a real dev gateway: listing
 * sessions (all, or one workspace's, never another's), ending one (sandbox destroyed, slot
 * freed, usage closed, audited), 404 for unknown sessions and pools, pool status with the
 * sizes in force, resizes validated (422), persisted, audited and obeyed by the next start,
 * the effective minIdle beside the configured one, the deployment's counts and a failing
 * pool's last start error, and every route refused to a workspace token (403) and to no
 * token (401).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AdminRequestOptions, adminRequest } from "../../support/admin-api.js";
import type { Answer } from "../../support/contract-client.js";
import {
  startTestGateway,
  TEST_IMAGE,
  type TestGateway,
  testAdminToken,
} from "../../support/gateway-harness.js";
import { waitFor } from "../../support/sandbox-server.js";

let harness: TestGateway;
let adminToken: string;
beforeAll(async () => {
  harness = await startTestGateway({
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE, maxConcurrentSessions: 3 },
    // Demand off: the resize test counts what warm-up starts, which the burst reserve of the
    // earlier tests' quick leases would raise (src/pool/pool-demand.ts).
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 4, demand: false }],
  });
  adminToken = await testAdminToken("alice");
});
afterAll(() => harness?.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** The admin API of the test's gateway, with its admin token unless told otherwise. */
const api = (method: string, path: string, options?: AdminRequestOptions) =>
  adminRequest(harness.url, adminToken, method, path, options);

async function openSession(workspace: string): Promise<string> {
  const client = await harness.client(workspace);
  const answer = await client.createSession({});
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

interface SessionItem {
  id: string;
  workspace: string;
  image: string;
  pool: string;
  created: string;
  lastActivity: string;
  expires: string;
}
const items = <T>(answer: Answer) => (answer.body as { items: T[] }).items;
const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("admin sessions", () => {
  it("lists running sessions, all or one workspace's, never another's", async () => {
    const a = freshWorkspace("list-a");
    const b = freshWorkspace("list-b");
    const idA = await openSession(a);
    const idB = await openSession(b);

    const mine = await api("GET", `/sessions?workspace=${a}`);
    expect(mine.status, mine.text).toBe(200);
    expect(Object.keys(mine.body as object)).toEqual(["items"]);
    expect(items<SessionItem>(mine)).toHaveLength(1);
    const [item] = items<SessionItem>(mine);
    expect(item).toMatchObject({ id: idA, workspace: a, image: TEST_IMAGE, pool: "default" });
    const lease = await harness.store.getLease({ workspace: a, sessionId: idA });
    expect(item).toMatchObject({ sandboxId: lease!.sandbox.sandboxId, runtimeId: lease!.sandbox.runtimeId });
    expect(item!.created).toMatch(isoDate);
    expect(item!.lastActivity).toMatch(isoDate);
    expect(Date.parse(item!.expires)).toBeGreaterThan(Date.now());

    const all = items<SessionItem>(await api("GET", "/sessions"));
    expect(all.map((session) => session.id)).toEqual(expect.arrayContaining([idA, idB]));
    expect(items<SessionItem>(await api("GET", `/sessions?workspace=${b}`)).map((s) => s.id)).toEqual([idB]);
    expect(items(await api("GET", `/sessions?workspace=${freshWorkspace("nobody")}`))).toEqual([]);

    const bad = await api("GET", "/sessions?workspace=..%2Fetc");
    expect(bad.status).toBe(422);
    expect((bad.body as { detail: { code: string } }).detail.code).toBe("request.malformed");
    for (const id of [idA, idB]) expect((await api("DELETE", `/sessions/${id}`)).status).toBe(200);
  });

  it("ends a session through the lifecycle: sandbox destroyed, slot freed, usage closed, audited", async () => {
    const workspace = freshWorkspace("end");
    const id = await openSession(workspace);
    const client = await harness.client(workspace);
    const lease = await harness.store.getLease({ workspace, sessionId: id });
    expect(lease).toBeDefined();
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(1);

    const ended = await api("DELETE", `/sessions/${id}`);
    expect(ended.status, ended.text).toBe(200);
    expect((ended.body as { ended: SessionItem }).ended).toMatchObject({ id, workspace, pool: "default" });

    // The client sees it gone, the slot is free, the sandbox leaves the pool (destroyed).
    expect((await client.getSession(id)).status).toBe(404);
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(0);
    await waitFor(
      async () =>
        !(await harness.store.listMembers("default", Date.now())).includes(lease!.sandbox.sandboxId),
      5_000,
    );
    const services = harness.gateway.services;
    const usage = await services.usageSummary!(
      workspace,
      new Date(Date.now() - 60_000),
      new Date(Date.now() + 1_000),
    );
    expect(usage.find((row) => row.kind === "session_ended")?.count).toBe(1);
    const audit = await services.adminAudit!.list({ target: id });
    expect(audit).toEqual([
      expect.objectContaining({ actor: "alice", action: "session.end", target: id, workspace }),
    ]);

    // Ended once: the second time it is unknown.
    expect((await api("DELETE", `/sessions/${id}`)).status).toBe(404);
  });

  it("ends a session named with its workspace, and not through another workspace", async () => {
    const workspace = freshWorkspace("scoped");
    const id = await openSession(workspace);
    const wrong = await api("DELETE", `/sessions/${id}?workspace=${freshWorkspace("other")}`);
    expect(wrong.status).toBe(404);
    expect((wrong.body as { detail: { code: string } }).detail.code).toBe("session.not_found");
    expect(await harness.store.getLease({ workspace, sessionId: id })).toBeDefined();
    expect((await api("DELETE", `/sessions/${id}?workspace=${workspace}`)).status).toBe(200);
    expect(await harness.store.getLease({ workspace, sessionId: id })).toBeUndefined();
  });

  it("answers 404 session.not_found for an unknown session", async () => {
    for (const path of ["/sessions/no-such-session", `/sessions/${"x".repeat(300)}`]) {
      const answer = await api("DELETE", path);
      expect(answer.status, answer.text).toBe(404);
      expect(answer.body).toEqual({ detail: { code: "session.not_found", message: expect.any(String) } });
    }
  });
});

interface PoolItem {
  name: string;
  image: string;
  minIdle: number;
  maxTotal: number;
  configured: { minIdle: number; maxTotal: number };
  override: { minIdle: number | null; maxTotal: number | null; updatedBy: string } | null;
  idle: number;
  parked: number;
  leased: number;
  starting: number;
  members: number;
  warmupFailures: number;
  warmLeases: number;
  coldLeases: number;
  warmHitRate: number | null;
  effectiveMinIdle: number;
  demand: boolean;
  leaseDemand: { leasesPerSecond: number; refillSecondsP95: number | null };
  thisReplica: { warmLeases: number; coldLeases: number; warmupFailures: number };
  lastStartError: { message: string; at: string; nextAttemptAt: string; consecutiveFailures: number } | null;
}

describe("admin pools", () => {
  it("lists every pool with its sizes and what it holds", async () => {
    const workspace = freshWorkspace("pools");
    const id = await openSession(workspace);
    const answer = await api("GET", "/pools");
    expect(answer.status, answer.text).toBe(200);
    expect(Object.keys(answer.body as object)).toEqual(["items", "serverErrors"]);
    const [pool] = items<PoolItem>(answer);
    expect(pool).toMatchObject({
      name: "default",
      image: TEST_IMAGE,
      configured: { minIdle: 1, maxTotal: 4 },
      warmupFailures: 0,
    });
    expect(pool!.leased).toBe((await harness.store.listLeases()).length);
    expect(pool!.leased).toBeGreaterThanOrEqual(1);
    expect(pool!.idle + pool!.parked + pool!.leased + pool!.starting).toBe(pool!.members);
    expect(pool!.warmLeases + pool!.coldLeases).toBeGreaterThanOrEqual(1);
    expect(pool!.warmHitRate).toBe(pool!.warmLeases / (pool!.warmLeases + pool!.coldLeases));
    // The effective minimum beside the configured one: demand may raise it, within the sizes.
    expect(pool!.demand).toBe(false);
    expect(pool!.effectiveMinIdle).toBeGreaterThanOrEqual(pool!.minIdle);
    expect(pool!.effectiveMinIdle).toBeLessThanOrEqual(pool!.maxTotal);
    expect(pool!.leaseDemand.leasesPerSecond).toBeGreaterThanOrEqual(0);
    // A sandbox was started (the warm-up at least): its refill time is measured.
    expect(pool!.leaseDemand.refillSecondsP95).toBeGreaterThan(0);
    // The counts are the deployment's (here one replica's, exchanged before answering).
    expect(pool!.thisReplica).toEqual({
      warmLeases: pool!.warmLeases,
      coldLeases: pool!.coldLeases,
      warmupFailures: 0,
      reusedLeases: 0,
    });
    expect(pool!.lastStartError).toBeNull();
    // The same figures on /metrics, as of the exchange the answer made.
    const metrics = await (await fetch(`${harness.url}/metrics`)).text();
    const gauge = (name: string) =>
      Number(metrics.match(new RegExp(`^${name}\\{pool="default"\\} (\\S+)$`, "m"))?.[1]);
    expect(gauge("sandpool_pool_effective_min_idle")).toBe(pool!.effectiveMinIdle);
    expect(gauge("sandpool_pool_warm_hit_ratio")).toBeCloseTo(pool!.warmHitRate!, 6);
    expect(gauge("sandpool_pool_lease_rate")).toBeGreaterThanOrEqual(0);
    await api("DELETE", `/sessions/${id}`);
  });

  it("refuses invalid sizes with 422, every problem listed, and changes nothing", async () => {
    const cases: unknown[] = [
      {},
      { minIdle: -1 },
      { maxTotal: 0 },
      { minIdle: 1.5 },
      { maxTotal: "3" },
      { maxTotal: 100_000 },
      { minIdle: 4, maxTotal: 3 },
      { minIdle: 5 }, // above the configured maxTotal of 4
      { minIdle: 1, size: 3 },
      [1, 2],
    ];
    for (const body of cases) {
      const answer = await api("PATCH", "/pools/default", { body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body).toMatchObject({
        detail: { code: "request.malformed", problems: expect.any(Array) },
      });
    }
    const both = await api("PATCH", "/pools/default", { body: { minIdle: -1, maxTotal: 0 } });
    expect((both.body as { detail: { problems: string[] } }).detail.problems).toHaveLength(2);
    const [pool] = items<PoolItem>(await api("GET", "/pools"));
    expect(pool).toMatchObject({ minIdle: 1, maxTotal: 4, override: null });
  });

  it("answers 404 for an unknown pool", async () => {
    const answer = await api("PATCH", "/pools/no-such-pool", { body: { minIdle: 1 } });
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ detail: { code: "request.not_found", message: expect.any(String) } });
  });

  it("resizes a pool: persisted, audited, obeyed by the warm-up and the cap, and reset by null", async () => {
    const services = harness.gateway.services;
    const grown = await api("PATCH", "/pools/default", { body: { minIdle: 2 } });
    expect(grown.status, grown.text).toBe(200);
    expect(grown.body).toMatchObject({
      name: "default",
      minIdle: 2,
      maxTotal: 4,
      configured: { minIdle: 1, maxTotal: 4 },
      override: { minIdle: 2, maxTotal: null, updatedBy: "alice" },
    });
    // The warm-up follows: two idle sandboxes wait.
    await waitFor(async () => (await harness.store.listIdle("default")).length === 2, 10_000);

    // The cap follows too: at maxTotal 2 (both idle), a third session finds no room.
    const capped = await api("PATCH", "/pools/default", { body: { maxTotal: 2 } });
    expect(capped.body).toMatchObject({ minIdle: 2, maxTotal: 2 });
    const workspace = freshWorkspace("cap");
    const ids = [await openSession(workspace), await openSession(workspace)];
    const client = await harness.client(workspace);
    const refused = await client.createSession({});
    expect(refused.status, refused.text).toBe(503);
    for (const id of ids) expect((await api("DELETE", `/sessions/${id}`)).status).toBe(200);

    // Persisted (a restart reads it back) and audited, with the sizes before and after.
    expect(await harness.gateway.services.poolSizes!.view("default")).toMatchObject({
      minIdle: 2,
      maxTotal: 2,
    });
    const audit = await services.adminAudit!.list({ target: "default" });
    expect(audit[0]).toMatchObject({
      actor: "alice",
      action: "pool.resize",
      detail: { before: { minIdle: 2, maxTotal: 4 }, after: { minIdle: 2, maxTotal: 2 } },
    });

    const reset = await api("PATCH", "/pools/default", { body: { minIdle: null, maxTotal: null } });
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body).toMatchObject({
      minIdle: 1,
      maxTotal: 4,
      override: { minIdle: null, maxTotal: null },
    });
    // Back to a steady pool for the next tests: the surplus is leased away or kept, none is starting.
    let last: PoolItem | undefined;
    await waitFor(async () => {
      [last] = items<PoolItem>(await api("GET", "/pools"));
      return last!.starting === 0 && last!.idle >= 1 && last!.leased === 0;
    }, 10_000).catch((error: Error) => {
      throw new Error(`${error.message}: last seen ${JSON.stringify(last)}`);
    });
  });
});

describe("admin pools: a pool whose sandboxes cannot start", () => {
  let broken: TestGateway;
  beforeAll(async () => {
    broken = await startTestGateway({
      pools: [
        { name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2 },
        // No sandbox listens within 1 ms: every start fails, and warm-up backs off.
        {
          name: "broken",
          image: TEST_IMAGE,
          resourceClass: "tiny",
          minIdle: 1,
          maxTotal: 2,
          coldStartTimeoutMs: 1,
        },
      ],
    });
  });
  afterAll(() => broken?.close());

  it("says why, when it tries again, and how many starts failed", async () => {
    const list = async () => {
      const res = await fetch(`${broken.url}/admin/v1/pools`, {
        headers: { authorization: `Bearer ${adminToken}` },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { items: PoolItem[] }).items;
    };
    let pool: PoolItem | undefined;
    await waitFor(async () => {
      pool = (await list()).find((item) => item.name === "broken");
      return pool?.lastStartError !== null;
    }, 10_000);
    const error = pool!.lastStartError!;
    expect(error.message).toMatch(/\S/);
    expect(error.consecutiveFailures).toBeGreaterThanOrEqual(1);
    expect(Date.parse(error.nextAttemptAt)).toBeGreaterThan(Date.parse(error.at));
    expect(error.at).toMatch(isoDate);
    expect(pool!.warmupFailures).toBeGreaterThanOrEqual(1);
    expect(pool).toMatchObject({ idle: 0, effectiveMinIdle: 1 });
    // The healthy pool says nothing.
    expect((await list()).find((item) => item.name === "default")?.lastStartError).toBeNull();
  });
});

describe("admin sessions and pools: who may call", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/sessions"],
    ["GET", "/sessions?workspace=team-a"],
    ["DELETE", "/sessions/anything"],
    ["DELETE", "/sessions/anything?workspace=team-a"],
    ["GET", "/pools"],
    ["PATCH", "/pools/default", { minIdle: 1 }],
  ];

  it("refuses a workspace token with 403 and no token with 401 on every route", async () => {
    const workspace = freshWorkspace("intruder");
    const id = await openSession(workspace);
    const workspaceToken = await harness.token(workspace);
    for (const [method, path, body] of [...routes, ["DELETE", `/sessions/${id}`] as [string, string]]) {
      const forbidden = await api(method, path, { token: workspaceToken, body });
      expect(forbidden.status, `${method} ${path}`).toBe(403);
      expect((forbidden.body as { detail: { code: string } }).detail.code).toBe("auth.forbidden");
      const anonymous = await api(method, path, { token: null, body });
      expect(anonymous.status, `${method} ${path}`).toBe(401);
    }
    // Nothing happened: the session still runs, the pool keeps its sizes.
    expect(await harness.store.getLease({ workspace, sessionId: id })).toBeDefined();
    expect(items<PoolItem>(await api("GET", "/pools"))[0]).toMatchObject({ minIdle: 1, maxTotal: 4 });
    await api("DELETE", `/sessions/${id}`);
  });
});
