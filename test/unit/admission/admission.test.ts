import { describe, expect, it } from "vitest";
import { budgetDay } from "../../../src/admission/admission.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { deployment } from "../policy/deployment.js";
import { admissionOnClock, HOUR, NOON } from "./admission-clock.js";

const setup = admissionOnClock;

async function refusal(promise: Promise<unknown>): Promise<SandpoolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandpoolError);
  return error as SandpoolError;
}

describe("budgetDay", () => {
  it("is the UTC date", () => {
    expect(budgetDay(NOON)).toBe("2030-01-15");
    expect(budgetDay(Date.UTC(2030, 0, 15, 23, 59, 59, 999))).toBe("2030-01-15");
    expect(budgetDay(Date.UTC(2030, 0, 16))).toBe("2030-01-16");
  });

  it("names each day right, however the days asked for come and go", () => {
    const days = [16, 15, 15, 17, 1, 31].map((day) => Date.UTC(2030, 0, day, 6));
    for (const at of [...days, ...days.reverse()]) {
      expect(budgetDay(at)).toBe(new Date(at).toISOString().slice(0, 10));
      expect(budgetDay(at - 6 * 3_600_000)).toBe(new Date(at).toISOString().slice(0, 10));
      expect(budgetDay(at - 6 * 3_600_000 - 1)).toBe(new Date(at - 86_400_000).toISOString().slice(0, 10));
    }
    expect(budgetDay(-1)).toBe("1969-12-31");
  });
});

describe("Admission", () => {
  describe("concurrent sessions", () => {
    it("admits up to the slot limit, then refuses with 429 and Retry-After 1", async () => {
      const t = setup({ maxConcurrentSessions: 2, sessionsPerMinute: 100 });
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      await t.admission.admitSession(t.policy, "s2", t.now() + HOUR);
      const error = await refusal(t.admission.admitSession(t.policy, "s3", t.now() + HOUR));
      expect(error.code).toBe("quota.concurrent_sessions");
      expect(error.status).toBe(429);
      expect(error.retryAfterSeconds).toBe(1);
      expect(error.message).toContain("2");
      expect(await t.store.countSlots("ws", t.now())).toBe(2);
    });

    it("a released session frees its slot", async () => {
      const t = setup({ maxConcurrentSessions: 1, sessionsPerMinute: 100 });
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      await refusal(t.admission.admitSession(t.policy, "s2", t.now() + HOUR));
      await t.admission.releaseSession("ws", "s1");
      await t.admission.admitSession(t.policy, "s2", t.now() + HOUR);
      expect(await t.store.countSlots("ws", t.now())).toBe(1);
    });

    it("a slot whose holder vanished ages out at its expiry", async () => {
      const t = setup({ maxConcurrentSessions: 1, sessionsPerMinute: 100 });
      await t.admission.admitSession(t.policy, "s1", t.now() + 60_000);
      t.advance(59_999);
      await refusal(t.admission.admitSession(t.policy, "s2", t.now() + HOUR));
      t.advance(1);
      await t.admission.admitSession(t.policy, "s2", t.now() + HOUR);
    });

    it("counts each workspace on its own", async () => {
      const t = setup({ maxConcurrentSessions: 1, sessionsPerMinute: 100 });
      const other = effectivePolicy("other", deployment({ maxConcurrentSessions: 1 }), undefined);
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      await t.admission.admitSession(other, "s1", t.now() + HOUR);
      expect(await t.store.countSlots("other", t.now())).toBe(1);
    });

    it("a refused session does not use up the rate", async () => {
      const t = setup({ maxConcurrentSessions: 1, sessionsPerMinute: 2 });
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      await refusal(t.admission.admitSession(t.policy, "s2", t.now() + HOUR));
      await t.admission.releaseSession("ws", "s1");
      await t.admission.admitSession(t.policy, "s2", t.now() + HOUR);
    });
  });

  describe("session rate", () => {
    it("admits `sessionsPerMinute` creations a minute, then refuses with the wait", async () => {
      const t = setup({ maxConcurrentSessions: 100, sessionsPerMinute: 3 });
      for (const id of ["s1", "s2", "s3"]) {
        await t.admission.admitSession(t.policy, id, t.now() + HOUR);
        t.advance(10_000);
      }
      // The first creation leaves the window 60 s after it: 30 s from now.
      const error = await refusal(t.admission.admitSession(t.policy, "s4", t.now() + HOUR));
      expect(error.code).toBe("quota.session_rate");
      expect(error.status).toBe(429);
      expect(error.retryAfterSeconds).toBe(30);
    });

    it("gives the slot back when the rate refuses", async () => {
      const t = setup({ maxConcurrentSessions: 100, sessionsPerMinute: 1 });
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      await refusal(t.admission.admitSession(t.policy, "s2", t.now() + HOUR));
      expect(await t.store.countSlots("ws", t.now())).toBe(1);
    });

    it("rounds the wait up to whole seconds, at least 1", async () => {
      const t = setup({ maxConcurrentSessions: 100, sessionsPerMinute: 1 });
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      t.advance(59_999);
      expect(
        (await refusal(t.admission.admitSession(t.policy, "s2", t.now() + HOUR))).retryAfterSeconds,
      ).toBe(1);
      // 1.5 s left -> 2
      t.set(NOON + 58_500);
      expect(
        (await refusal(t.admission.admitSession(t.policy, "s3", t.now() + HOUR))).retryAfterSeconds,
      ).toBe(2);
    });

    it("admits again once the window slides past the oldest creation", async () => {
      const t = setup({ maxConcurrentSessions: 100, sessionsPerMinute: 2 });
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
      t.advance(30_000);
      await t.admission.admitSession(t.policy, "s2", t.now() + HOUR);
      await refusal(t.admission.admitSession(t.policy, "s3", t.now() + HOUR));
      t.advance(30_000);
      await t.admission.admitSession(t.policy, "s3", t.now() + HOUR);
      await refusal(t.admission.admitSession(t.policy, "s4", t.now() + HOUR));
    });
  });

  describe("execution budget", () => {
    const day = "2030-01-15";

    it("reserves what a call asks while the day's budget lasts, then what remains", async () => {
      const t = setup({ execSecondsPerDay: 10 });
      const first = await t.admission.reserveExec(t.policy, 6_000);
      expect(first).toEqual({ workspace: "ws", day, grantedMs: 6_000 });
      expect((await t.admission.reserveExec(t.policy, 6_000)).grantedMs).toBe(4_000);
      expect(await t.store.readBudget("ws", day)).toBe(10_000);
      const error = await refusal(t.admission.reserveExec(t.policy, 1_000));
      expect(error.code).toBe("quota.exec_budget");
      expect(error.status).toBe(429);
      expect(error.retryAfterSeconds).toBe(12 * 3600);
    });

    it("settles with the wall time measured, rounded up, never more than granted nor below zero", async () => {
      const t = setup({ execSecondsPerDay: 10 });
      const reservation = await t.admission.reserveExec(t.policy, 5_000);
      expect(await t.admission.settleExec(reservation, 1_200.2)).toBe(1_201);
      expect(await t.store.readBudget("ws", day)).toBe(1_201);

      const overran = await t.admission.reserveExec(t.policy, 2_000);
      expect(await t.admission.settleExec(overran, 9_000)).toBe(2_000);
      expect(await t.store.readBudget("ws", day)).toBe(3_201);

      const nothing = await t.admission.reserveExec(t.policy, 2_000);
      expect(await t.admission.settleExec(nothing, -50)).toBe(0);
      expect(await t.store.readBudget("ws", day)).toBe(3_201);
    });

    it("settles on the day the time was reserved, even when the call ends on the next", async () => {
      const t = setup({ execSecondsPerDay: 10 });
      t.set(Date.UTC(2030, 0, 15, 23, 59, 59));
      const reservation = await t.admission.reserveExec(t.policy, 5_000);
      t.set(Date.UTC(2030, 0, 16, 0, 0, 3));
      await t.admission.settleExec(reservation, 4_000);
      expect(await t.store.readBudget("ws", day)).toBe(4_000);
      expect(await t.store.readBudget("ws", "2030-01-16")).toBe(0);
    });

    it("Retry-After counts down to midnight UTC, rounded up", async () => {
      const t = setup({ execSecondsPerDay: 1 });
      t.set(Date.UTC(2030, 0, 15, 23, 59, 58, 500));
      await t.admission.reserveExec(t.policy, 1_000);
      expect((await refusal(t.admission.reserveExec(t.policy, 1))).retryAfterSeconds).toBe(2);
      t.set(Date.UTC(2030, 0, 15, 0, 0, 0));
      expect((await refusal(t.admission.reserveExec(t.policy, 1))).retryAfterSeconds).toBe(86_400);
    });

    it("a new UTC day starts a new budget", async () => {
      const t = setup({ execSecondsPerDay: 1 });
      t.set(Date.UTC(2030, 0, 15, 23, 59, 59));
      await t.admission.reserveExec(t.policy, 5_000);
      await refusal(t.admission.reserveExec(t.policy, 1));
      await refusal(t.admission.checkExecBudget(t.policy));
      t.set(Date.UTC(2030, 0, 16, 0, 0, 0));
      await t.admission.checkExecBudget(t.policy);
      expect((await t.admission.reserveExec(t.policy, 5_000)).grantedMs).toBe(1_000);
    });

    it("refuses a new session once the budget is spent, holding no slot and no rate", async () => {
      const t = setup({ execSecondsPerDay: 1, maxConcurrentSessions: 1, sessionsPerMinute: 1 });
      await t.admission.reserveExec(t.policy, 1_000);
      const error = await refusal(t.admission.admitSession(t.policy, "s1", t.now() + HOUR));
      expect(error.code).toBe("quota.exec_budget");
      expect(await t.store.countSlots("ws", t.now())).toBe(0);
      t.advance(12 * HOUR);
      await t.admission.admitSession(t.policy, "s1", t.now() + HOUR);
    });

    it("budgets each workspace on its own", async () => {
      const t = setup({ execSecondsPerDay: 1 });
      const other = effectivePolicy("other", deployment({ execSecondsPerDay: 1 }), undefined);
      await t.admission.reserveExec(other, 5_000);
      await t.admission.checkExecBudget(t.policy);
      expect((await t.admission.reserveExec(t.policy, 500)).grantedMs).toBe(500);
    });
  });
});
