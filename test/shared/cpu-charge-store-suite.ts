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
        // Forgotten: a reading after the end starts over (as a new session on a new sandbox would).
        expect((await store.chargeCpu(ws, { sessionId: "s", cpuMs: 6_000, day: DAY })).chargedMs).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(400);
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
