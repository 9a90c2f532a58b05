/**
 * The CPU meter's rules on a memory store, with sandbox CPU readings the test sets: what is
 * charged, and which sessions are stopped once a day is spent (only those still running
 * code, only in the spent workspace).
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { BURNING_MS, BURNING_SHARE, CpuMeter } from "../../../src/admission/cpu-meter.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import type { Lease } from "../../../src/store/coordination/records.js";
import { deployment } from "../policy/deployment.js";
import { admissionOnClock } from "./admission-clock.js";

function lease(workspace: string, sessionId: string, cpuBaseMs?: number): Lease {
  return {
    sessionId,
    workspace,
    pool: "default",
    image: "img",
    sandbox: {
      sandboxId: `sb-${sessionId}`,
      pool: "default",
      endpoint: "unix:/nowhere",
      runtimeId: `rt-${sessionId}`,
      innerSessionId: "inner",
      createdAt: 0,
      ...(cpuBaseMs === undefined ? {} : { cpuBaseMs }),
    },
    createdAt: 0,
    lastActivityAt: 0,
    idleTimeoutSeconds: 600,
    maxLifetimeSeconds: 3600,
  };
}

function meterOver(leases: Lease[], execSecondsPerDay: number) {
  const clock = admissionOnClock({ execSecondsPerDay });
  const cpuMs = new Map<string, number>();
  const ended: string[] = [];
  const live = new Set(leases.map((l) => l.sessionId));
  const meter = new CpuMeter({
    store: { listLeases: async () => leases.filter((l) => live.has(l.sessionId)) },
    admission: clock.admission,
    policies: {
      forWorkspace: async (workspace) =>
        effectivePolicy(workspace, deployment({ execSecondsPerDay }), undefined),
    },
    usageOf: async (sandbox) => {
      const ms = cpuMs.get(sandbox.runtimeId);
      return ms === undefined ? undefined : { cpuSeconds: ms / 1000 };
    },
    end: async (key) => {
      ended.push(key.sessionId);
      return live.delete(key.sessionId);
    },
    log: pino({ level: "silent" }),
    now: clock.now,
  });
  return {
    meter,
    ended,
    clock,
    setCpu: (sessionId: string, ms: number) => cpuMs.set(`rt-${sessionId}`, ms),
  };
}

describe("CpuMeter", () => {
  it("charges CPU from each sandbox's baseline, and what was charged is not charged again", async () => {
    const { meter, clock, setCpu } = meterOver([lease("ws", "a", 700), lease("ws", "b")], 100);
    setCpu("a", 1_700);
    setCpu("b", 5_000); // no baseline: its first reading is where it starts
    expect(await meter.tick()).toEqual({ read: 2, chargedMs: 1_000, stopped: 0 });
    expect(await meter.tick()).toEqual({ read: 2, chargedMs: 0, stopped: 0 });
    setCpu("b", 5_600);
    expect((await meter.tick()).chargedMs).toBe(600);
    const day = (await import("../../../src/admission/admission.js")).budgetDay(clock.now());
    expect(await clock.store.readBudget("ws", day)).toBe(1_600);
  });

  it("once the day is spent, stops the sessions still running code and leaves idle ones", async () => {
    const { meter, ended, setCpu } = meterOver(
      [lease("ws", "spinner", 0), lease("ws", "idle", 0), lease("other", "theirs", 0)],
      2,
    );
    setCpu("spinner", 0);
    setCpu("idle", 0);
    setCpu("theirs", 0);
    await meter.tick();
    setCpu("spinner", 2_500); // past the 2 s budget
    setCpu("idle", BURNING_MS - 1); // an idle server's few milliseconds
    setCpu("theirs", 1_500); // another workspace, within its own budget
    expect(await meter.tick()).toMatchObject({ stopped: 1 });
    expect(ended).toEqual(["spinner"]);
  });

  it("leaves a sandbox burning a little all along (gVisor's kernel) alone, however late the tick", async () => {
    const { meter, ended, setCpu, clock } = meterOver([lease("ws", "idle", 0), lease("ws", "spinner", 0)], 2);
    setCpu("idle", 0);
    setCpu("spinner", 0);
    await meter.tick();
    clock.advance(20_000); // a tick delayed on a loaded machine
    setCpu("idle", 400); // 2% of a CPU: more than BURNING_MS, far below BURNING_SHARE
    setCpu("spinner", 15_000); // three quarters of a CPU, past the 2 s budget
    expect(await meter.tick()).toMatchObject({ stopped: 1 });
    expect(ended).toEqual(["spinner"]);
    expect(400).toBeGreaterThan(BURNING_MS);
    expect(400).toBeLessThan(BURNING_SHARE * 20_000);
  });

  it("does not stop work while the day still has budget", async () => {
    const { meter, ended, setCpu } = meterOver([lease("ws", "busy", 0)], 10);
    setCpu("busy", 9_000);
    expect(await meter.tick()).toMatchObject({ chargedMs: 9_000, stopped: 0 });
    expect(ended).toEqual([]);
  });

  it("joins a tick asked for while one runs instead of reading every sandbox twice", async () => {
    const { meter, setCpu } = meterOver([lease("ws", "a", 0)], 10);
    setCpu("a", 300);
    const [one, two] = await Promise.all([meter.tick(), meter.tick()]);
    expect(one).toBe(two);
    expect(one.chargedMs).toBe(300);
  });
});
