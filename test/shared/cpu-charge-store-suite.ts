/**
 * The part of the CoordinationStore conformance suite about charging sandbox CPU
 * (AdmissionStore.chargeCpu), run by every implementation's test file beside
 * describeCoordinationStore: a day is charged the larger of its calls' wall time and its
 * sandboxes' CPU, each CPU millisecond once whoever reads it.
 */
import { describe, expect, it } from "vitest";
import type { CoordinationStore } from "../../src/store/coordination/coordination-store.js";
import { freshName } from "./coordination-store-suite.js";

const DAY = "2026-12-03";

export function describeCpuCharging(
  name: string,
  open: () => Promise<{ store: CoordinationStore; close(): Promise<void> }>,
): void {
  describe(`CPU charging: ${name}`, () => {
    const withStore = async (test: (store: CoordinationStore) => Promise<void>) => {
      const opened = await open();
      try {
        await test(opened.store);
      } finally {
        await opened.close();
      }
    };

    it("charges from the baseline, each millisecond once, and raises the budget counter to the day's CPU", () =>
      withStore(async (store) => {
        const ws = freshName("ws");
        // 300 ms of wall time reserved by calls.
        expect(await store.reserveBudget(ws, DAY, 300, 10_000)).toBe(300);
        const first = await store.chargeCpu(ws, { sessionId: "s1", cpuMs: 1_250, baseMs: 1_000, day: DAY });
        expect(first).toEqual({ chargedMs: 250, cpuDayMs: 250, usedMs: 300 });
        // Another replica reads the same sandbox a little later, then an older reading arrives.
        const second = await store.chargeCpu(ws, { sessionId: "s1", cpuMs: 1_900, baseMs: 1_000, day: DAY });
        expect(second).toEqual({ chargedMs: 650, cpuDayMs: 900, usedMs: 900 });
        const stale = await store.chargeCpu(ws, { sessionId: "s1", cpuMs: 1_500, baseMs: 1_000, day: DAY });
        expect(stale).toEqual({ chargedMs: 0, cpuDayMs: 900, usedMs: 900 });
        expect(await store.readBudget(ws, DAY)).toBe(900);
        // Past the budget, a call finds nothing left to reserve.
        await store.chargeCpu(ws, { sessionId: "s2", cpuMs: 9_500, baseMs: 0, day: DAY });
        expect(await store.readBudget(ws, DAY)).toBe(10_400);
        expect(await store.reserveBudget(ws, DAY, 100, 10_000)).toBe(0);
      }));

    it("starts at the first reading without a baseline, and forgets a session's reading with its final one", () =>
      withStore(async (store) => {
        const ws = freshName("ws");
        expect((await store.chargeCpu(ws, { sessionId: "s", cpuMs: 5_000, day: DAY })).chargedMs).toBe(0);
        expect(
          (await store.chargeCpu(ws, { sessionId: "s", cpuMs: 5_400, day: DAY, final: true })).chargedMs,
        ).toBe(400);
        // A reading taken before the end but arriving after it charges nothing.
        expect((await store.chargeCpu(ws, { sessionId: "s", cpuMs: 6_000, day: DAY })).chargedMs).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(400);
      }));

    it("never charges a session twice when a meter reading arrives after its final one", () =>
      withStore(async (store) => {
        const ws = freshName("ws");
        await store.chargeCpu(ws, { sessionId: "s", cpuMs: 1_500, baseMs: 1_000, day: DAY });
        await store.chargeCpu(ws, { sessionId: "s", cpuMs: 2_000, baseMs: 1_000, day: DAY, final: true });
        // The meter read 1,900 ms before the end; its charge lands after: the baseline must not count again.
        const late = await store.chargeCpu(ws, { sessionId: "s", cpuMs: 1_900, baseMs: 1_000, day: DAY });
        expect(late.chargedMs).toBe(0);
        expect(late.cpuDayMs).toBe(1_000);
        // A final reading that could not be taken forgets the session all the same.
        await store.chargeCpu(ws, { sessionId: "t", cpuMs: 500, baseMs: 0, day: DAY });
        expect((await store.chargeCpu(ws, { sessionId: "t", day: DAY, final: true })).chargedMs).toBe(0);
        expect(
          (await store.chargeCpu(ws, { sessionId: "t", cpuMs: 900, baseMs: 0, day: DAY })).chargedMs,
        ).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(1_500);
      }));

    it("charges a day the larger of its wall time and its CPU, never their sum", () =>
      withStore(async (store) => {
        const ws = freshName("ws");
        await store.chargeCpu(ws, { sessionId: "s", cpuMs: 4_000, baseMs: 0, day: DAY });
        expect(await store.readBudget(ws, DAY)).toBe(4_000);
        // Wall time of calls that burned no CPU: within the CPU already charged, it adds nothing.
        expect(await store.reserveBudget(ws, DAY, 3_000, 10_000)).toBe(3_000);
        expect(await store.readBudget(ws, DAY)).toBe(4_000);
        // Past it, wall time counts: 3,000 + 2,000 of wall against 4,000 of CPU.
        expect(await store.reserveBudget(ws, DAY, 2_000, 10_000)).toBe(2_000);
        expect(await store.readBudget(ws, DAY)).toBe(5_000);
        // A reservation is cut to what the larger counter leaves.
        await store.chargeCpu(ws, { sessionId: "s", cpuMs: 9_000, baseMs: 0, day: DAY });
        expect(await store.reserveBudget(ws, DAY, 5_000, 10_000)).toBe(1_000);
        // And a new session is refused once the CPU alone has spent the day.
        await store.chargeCpu(ws, { sessionId: "s", cpuMs: 10_000, baseMs: 0, day: DAY });
        const now = Date.now();
        const verdict = await store.admitSession(ws, {
          token: "next",
          slotLimit: 10,
          slotExpiresAt: now + 60_000,
          now,
          ratePerWindow: 10,
          rateWindowMs: 60_000,
          budgetDay: DAY,
          budgetLimitMs: 10_000,
        });
        expect(verdict).toMatchObject({ admitted: false, refused: "exec_budget" });
      }));

    it("refuses a call's begin once the day's CPU alone has spent it", () =>
      withStore(async (store) => {
        const ws = freshName("ws");
        const now = Date.now();
        const key = { workspace: ws, sessionId: freshName("session") };
        await store.putLease({
          ...key,
          pool: "default",
          image: "img",
          sandbox: {
            sandboxId: freshName("sb"),
            pool: "default",
            endpoint: "unix:/nowhere",
            runtimeId: "rt",
            innerSessionId: "inner",
            createdAt: now,
          },
          createdAt: now,
          lastActivityAt: now,
          idleTimeoutSeconds: 600,
          maxLifetimeSeconds: 3_600,
        });
        const budget = { day: DAY, requestedMs: 1_000, limitMs: 5_000 };
        const first = await store.beginCall(key, { now, busyUntil: now + 2_000, budget });
        expect(first.outcome).toBe("started");
        await store.endCall(key, { now, refund: { day: DAY, milliseconds: 1_000 } });
        await store.chargeCpu(ws, { sessionId: key.sessionId, cpuMs: 5_000, baseMs: 0, day: DAY });
        const refused = await store.beginCall(key, { now, busyUntil: now + 2_000, budget });
        expect(refused.outcome).toBe("budget_spent");
      }));

    it("keeps workspaces and days apart", () =>
      withStore(async (store) => {
        const [a, b] = [freshName("ws"), freshName("ws")];
        await store.chargeCpu(a, { sessionId: "s", cpuMs: 2_000, baseMs: 0, day: DAY });
        expect(await store.readBudget(a, DAY)).toBe(2_000);
        expect(await store.readBudget(b, DAY)).toBe(0);
        expect(await store.readBudget(a, "2026-12-04")).toBe(0);
        // The next day's CPU counts from the last reading, not from the sandbox's start.
        const next = await store.chargeCpu(a, { sessionId: "s", cpuMs: 2_100, baseMs: 0, day: "2026-12-04" });
        expect(next).toEqual({ chargedMs: 100, cpuDayMs: 100, usedMs: 100 });
      }));
  });
}
