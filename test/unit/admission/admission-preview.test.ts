/**
 * Admission previews (src/admission/admission-preview.ts) and a pool's capacity: for every state
 * of the quotas, the preview refuses with the code, message and Retry-After the real
 * admission then throws, and reading takes nothing (the real call still gets what the
 * preview said). The capacity answers warm, cold or exhausted as the pool's counts say.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { budgetDay } from "../../../src/admission/admission.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import type { SandboxClient } from "../../../src/forward/sandbox-client.js";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { PoolManager } from "../../../src/pool/pool-manager.js";
import type { PoolSpec, SandboxRuntime } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import { admissionOnClock, HOUR, NOON } from "./admission-clock.js";

const setup = admissionOnClock;

/** The real admission's answer: undefined when admitted, else its error. */
async function admit(s: ReturnType<typeof setup>, token: string): Promise<SandpoolError | undefined> {
  try {
    await s.admission.admitSession(s.policy, token, NOON + HOUR);
    return undefined;
  } catch (error) {
    if (error instanceof SandpoolError) return error;
    throw error;
  }
}

/** Previews twice (reading must take nothing), then checks the real admission agrees. */
async function expectAgreement(s: ReturnType<typeof setup>, token: string): Promise<string | undefined> {
  await s.admission.previewSession(s.policy);
  const preview = await s.admission.previewSession(s.policy);
  const real = await admit(s, token);
  expect(preview.refusal?.code).toBe(real?.code);
  expect(preview.refusal?.message).toBe(real?.message);
  expect(preview.refusal?.retryAfterSeconds).toBe(real?.retryAfterSeconds);
  return real?.code;
}

describe("Admission.previewSession", () => {
  it("admits while every check passes, and says what is used of each limit", async () => {
    const s = setup({ maxConcurrentSessions: 3, sessionsPerMinute: 10, execSecondsPerDay: 60 });
    await admit(s, "a");
    const preview = await s.admission.previewSession(s.policy);
    expect(preview.refusal).toBeUndefined();
    expect(preview.checks.map(({ rule, allowed, used, limit }) => ({ rule, allowed, used, limit }))).toEqual([
      { rule: "quota.exec_budget", allowed: true, used: 0, limit: 60 },
      { rule: "quota.concurrent_sessions", allowed: true, used: 1, limit: 3 },
      { rule: "quota.session_rate", allowed: true, used: 1, limit: 10 },
    ]);
    expect(await expectAgreement(s, "b")).toBeUndefined();
  });

  it("refuses at the slot limit as admitSession does, and takes no slot", async () => {
    const s = setup({ maxConcurrentSessions: 1 });
    expect(await expectAgreement(s, "a")).toBeUndefined();
    expect(await expectAgreement(s, "b")).toBe("quota.concurrent_sessions");
    expect(await s.store.countSlots("ws", NOON)).toBe(1);
  });

  it("refuses past the rate with the same Retry-After, and records nothing", async () => {
    const s = setup({ sessionsPerMinute: 1 });
    expect(await expectAgreement(s, "a")).toBeUndefined();
    await s.admission.releaseSession("ws", "a");
    s.advance(20_000);
    expect(await expectAgreement(s, "b")).toBe("quota.session_rate");
    s.advance(40_000);
    expect(await expectAgreement(s, "c")).toBeUndefined();
  });

  it("refuses once the day's budget is spent, before the slots, as the store does", async () => {
    const s = setup({ maxConcurrentSessions: 1, execSecondsPerDay: 1 });
    await admit(s, "a");
    await s.store.reserveBudget("ws", budgetDay(NOON), 1_000, 1_000);
    expect(await expectAgreement(s, "b")).toBe("quota.exec_budget");
  });
});

describe("Admission.previewExec", () => {
  it("grants what is asked while it remains, then what remains, then refuses, reserving nothing", async () => {
    const s = setup({ execSecondsPerDay: 10 });
    expect((await s.admission.previewExec(s.policy, 4_000)).grantedMs).toBe(4_000);
    await s.store.reserveBudget("ws", budgetDay(NOON), 7_000, 10_000);
    expect((await s.admission.previewExec(s.policy, 4_000)).grantedMs).toBe(3_000);
    expect(await s.store.readBudget("ws", budgetDay(NOON))).toBe(7_000);
    await s.store.reserveBudget("ws", budgetDay(NOON), 3_000, 10_000);
    const spent = await s.admission.previewExec(s.policy, 4_000);
    expect(spent.grantedMs).toBe(0);
    expect(spent.check).toMatchObject({ allowed: false, used: 10, limit: 10 });
    expect(spent.check.refusal?.code).toBe("quota.exec_budget");
  });
});

describe("PoolManager.capacity", () => {
  const pool: PoolSpec = {
    name: "p",
    image: "img",
    resourceClass: "standard",
    minIdle: 0,
    maxTotal: 2,
    warmupConcurrency: 1,
    coldStartTimeoutMs: 1_000,
    egress: false,
  };
  const store = new MemoryCoordinationStore();
  const pools = new PoolManager({
    pools: [pool],
    store,
    runtime: {} as SandboxRuntime,
    client: {} as SandboxClient,
    metrics: new GatewayMetrics({ processMetrics: false }),
    log: pino({ level: "silent" }),
  });
  const record = (sandboxId: string) => ({
    sandboxId,
    pool: "p",
    endpoint: "http://127.0.0.1:1",
    runtimeId: sandboxId,
    innerSessionId: "i",
    createdAt: Date.now(),
  });

  it("answers a cold start below maxTotal, a warm lease with an idle sandbox, exhausted at maxTotal", async () => {
    expect(await pools.capacity(pool)).toMatchObject({ outcome: "cold", idle: 0, members: 0, maxTotal: 2 });
    const later = Date.now() + HOUR;
    await store.addMember("p", "a", 2, later, Date.now());
    await store.pushIdle(record("a"));
    expect(await pools.capacity(pool)).toMatchObject({ outcome: "warm", idle: 1, members: 1 });
    expect(await store.countIdle("p")).toBe(1);
    await store.popIdle("p");
    await store.addMember("p", "b", 2, later, Date.now());
    expect(await pools.capacity(pool)).toMatchObject({ outcome: "exhausted", idle: 0, members: 2 });
  });
});
