/**
 * The conformance suite every CoordinationStore implementation passes (docs/architecture.md,
 * "The coordination store": the memory and Redis stores implement one interface and pass one
 * shared suite). It registers vitest tests; call it from a test file with a function
 * that opens a store.
 *
 * Every test uses fresh random workspace, pool and channel names, and reads only what it
 * wrote, so the suite can run against one shared server (Redis) without a flush between
 * tests. Times are passed explicitly as `now`, based on the real clock (so an
 * implementation that also sets server-side TTLs from the same timestamps still works), with
 * live entries kept alive for minutes.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { leaseEgressOf } from "../../src/egress/session-egress.js";
import type { CoordinationStore } from "../../src/store/coordination/coordination-store.js";
import type { Lease, LeaseKey, SandboxRecord } from "../../src/store/coordination/records.js";

export interface OpenedStore {
  store: CoordinationStore;
  close(): Promise<void>;
}

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** A fresh name no other test (or earlier run on a shared server) uses. */
export function freshName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 13)}`;
}

export function describeCoordinationStore(name: string, open: () => Promise<OpenedStore>): void {
  describe(`CoordinationStore conformance: ${name}`, () => {
    let opened: OpenedStore | undefined;
    let store: CoordinationStore;
    /** The test's base time: real now, so server-side expiries derived from it are sane. */
    let t0: number;

    beforeEach(async () => {
      opened = await open();
      store = opened.store;
      t0 = Date.now();
    });

    afterEach(async () => {
      await opened?.close();
      opened = undefined;
    });

    const record = (pool: string, overrides: Partial<SandboxRecord> = {}): SandboxRecord => {
      const sandboxId = freshName("sb");
      return {
        sandboxId,
        pool,
        endpoint: `http://127.0.0.1:${40_000 + Math.floor(Math.random() * 1_000)}`,
        runtimeId: `rt-${sandboxId}`,
        innerSessionId: freshName("inner"),
        createdAt: t0,
        ...overrides,
      };
    };

    const lease = (workspace: string, overrides: Partial<Lease> = {}): Lease => ({
      sessionId: freshName("sess"),
      workspace,
      pool: "default",
      image: "sandpool/sandbox:dev",
      sandbox: record("default"),
      createdAt: t0,
      lastActivityAt: t0,
      idleTimeoutSeconds: 60,
      maxLifetimeSeconds: 3_600,
      ...overrides,
    });

    const keyOf = (l: Lease): LeaseKey => ({ workspace: l.workspace, sessionId: l.sessionId });

    /** dueLeases restricted to one workspace (other tests may share the server). */
    const dueIn = async (workspace: string, now: number) =>
      (await store.dueLeases(now, 10_000))
        .filter((key) => key.workspace === workspace)
        .map((key) => key.sessionId)
        .sort();

    describe("concurrent-session slots", () => {
      it("takes slots up to the limit, then refuses", async () => {
        const ws = freshName("ws");
        const expires = t0 + HOUR;
        expect(await store.acquireSlot(ws, "a", 2, expires, t0)).toBe(true);
        expect(await store.acquireSlot(ws, "b", 2, expires, t0)).toBe(true);
        expect(await store.acquireSlot(ws, "c", 2, expires, t0)).toBe(false);
        expect(await store.countSlots(ws, t0)).toBe(2);
      });

      it("re-acquiring a held token succeeds, even at the limit, and takes no second slot", async () => {
        const ws = freshName("ws");
        expect(await store.acquireSlot(ws, "a", 1, t0 + HOUR, t0)).toBe(true);
        expect(await store.acquireSlot(ws, "a", 1, t0 + HOUR, t0)).toBe(true);
        expect(await store.countSlots(ws, t0)).toBe(1);
        expect(await store.acquireSlot(ws, "b", 1, t0 + HOUR, t0)).toBe(false);
      });

      it("re-acquiring moves the token's expiry", async () => {
        const ws = freshName("ws");
        await store.acquireSlot(ws, "a", 1, t0 + MINUTE, t0);
        await store.acquireSlot(ws, "a", 1, t0 + HOUR, t0);
        expect(await store.countSlots(ws, t0 + 2 * MINUTE)).toBe(1);
        expect(await store.acquireSlot(ws, "b", 1, t0 + HOUR, t0 + 2 * MINUTE)).toBe(false);
      });

      it("an expired slot frees its capacity: live while now < expiresAt", async () => {
        const ws = freshName("ws");
        await store.acquireSlot(ws, "a", 1, t0 + MINUTE, t0);
        expect(await store.countSlots(ws, t0 + MINUTE - 1)).toBe(1);
        expect(await store.acquireSlot(ws, "b", 1, t0 + HOUR, t0 + MINUTE - 1)).toBe(false);
        expect(await store.countSlots(ws, t0 + MINUTE)).toBe(0);
        expect(await store.acquireSlot(ws, "b", 1, t0 + HOUR, t0 + MINUTE)).toBe(true);
        expect(await store.countSlots(ws, t0 + MINUTE)).toBe(1);
      });

      it("an expired token re-acquiring is a new slot, subject to the limit", async () => {
        const ws = freshName("ws");
        await store.acquireSlot(ws, "a", 2, t0 + MINUTE, t0);
        await store.acquireSlot(ws, "b", 2, t0 + HOUR, t0);
        // At t0 + 2 min only "b" is held: with a limit of 1 there is no room for "a".
        expect(await store.acquireSlot(ws, "a", 1, t0 + HOUR, t0 + 2 * MINUTE)).toBe(false);
        expect(await store.countSlots(ws, t0 + 2 * MINUTE)).toBe(1);
      });

      it("release frees the slot; releasing an unknown token is harmless", async () => {
        const ws = freshName("ws");
        await store.acquireSlot(ws, "a", 1, t0 + HOUR, t0);
        await store.releaseSlot(ws, "nobody");
        expect(await store.countSlots(ws, t0)).toBe(1);
        await store.releaseSlot(ws, "a");
        expect(await store.countSlots(ws, t0)).toBe(0);
        expect(await store.acquireSlot(ws, "b", 1, t0 + HOUR, t0)).toBe(true);
        await store.releaseSlot(ws, "a"); // twice
        expect(await store.countSlots(ws, t0)).toBe(1);
      });

      it("keeps each workspace's slots apart", async () => {
        const [ws1, ws2] = [freshName("ws"), freshName("ws")];
        expect(await store.acquireSlot(ws1, "a", 1, t0 + HOUR, t0)).toBe(true);
        expect(await store.acquireSlot(ws2, "a", 1, t0 + HOUR, t0)).toBe(true);
        await store.releaseSlot(ws2, "a");
        expect(await store.countSlots(ws1, t0)).toBe(1);
        expect(await store.countSlots(ws2, t0)).toBe(0);
      });

      it("counts zero for a workspace never seen", async () => {
        expect(await store.countSlots(freshName("ws"), t0)).toBe(0);
      });

      it("admits exactly `limit` of many concurrent acquires", async () => {
        const ws = freshName("ws");
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => store.acquireSlot(ws, `t${i}`, 3, t0 + HOUR, t0)),
        );
        expect(results.filter(Boolean)).toHaveLength(3);
        expect(await store.countSlots(ws, t0)).toBe(3);
      });
    });

    describe("session rate", () => {
      it("allows `limit` events in the window, then answers the wait until the oldest leaves it", async () => {
        const ws = freshName("ws");
        expect(await store.takeRate(ws, 3, MINUTE, t0)).toBe(0);
        expect(await store.takeRate(ws, 3, MINUTE, t0 + 10 * SECOND)).toBe(0);
        expect(await store.takeRate(ws, 3, MINUTE, t0 + 20 * SECOND)).toBe(0);
        expect(await store.takeRate(ws, 3, MINUTE, t0 + 25 * SECOND)).toBe(35 * SECOND);
      });

      it("slides: an event leaves the window exactly windowMs after it happened", async () => {
        const ws = freshName("ws");
        await store.takeRate(ws, 2, MINUTE, t0);
        await store.takeRate(ws, 2, MINUTE, t0 + 30 * SECOND);
        expect(await store.takeRate(ws, 2, MINUTE, t0 + MINUTE - 1)).toBe(1);
        expect(await store.takeRate(ws, 2, MINUTE, t0 + MINUTE)).toBe(0);
        // Now the window holds t0+30s and t0+60s.
        expect(await store.takeRate(ws, 2, MINUTE, t0 + MINUTE + 1)).toBe(30 * SECOND - 1);
      });

      it("a refused event is not recorded: refusals do not extend the wait", async () => {
        const ws = freshName("ws");
        await store.takeRate(ws, 1, MINUTE, t0);
        for (let i = 1; i <= 5; i++)
          expect(await store.takeRate(ws, 1, MINUTE, t0 + i * SECOND)).toBeGreaterThan(0);
        expect(await store.takeRate(ws, 1, MINUTE, t0 + MINUTE)).toBe(0);
      });

      it("counts each workspace on its own", async () => {
        const [ws1, ws2] = [freshName("ws"), freshName("ws")];
        expect(await store.takeRate(ws1, 1, MINUTE, t0)).toBe(0);
        expect(await store.takeRate(ws2, 1, MINUTE, t0)).toBe(0);
        expect(await store.takeRate(ws1, 1, MINUTE, t0)).toBeGreaterThan(0);
      });

      it("counts two events at the same millisecond as two", async () => {
        const ws = freshName("ws");
        expect(await store.takeRate(ws, 2, MINUTE, t0)).toBe(0);
        expect(await store.takeRate(ws, 2, MINUTE, t0)).toBe(0);
        expect(await store.takeRate(ws, 2, MINUTE, t0)).toBe(MINUTE);
      });

      it("admits exactly `limit` of many concurrent events", async () => {
        const ws = freshName("ws");
        const waits = await Promise.all(Array.from({ length: 10 }, () => store.takeRate(ws, 4, MINUTE, t0)));
        expect(waits.filter((w) => w === 0)).toHaveLength(4);
      });
    });

    // The read-only views explain uses: they answer what the taking methods would see, and take nothing.
    describe("read-only views (explain)", () => {
      it("countRate sees the window takeRate keeps, and records nothing", async () => {
        const ws = freshName("ws");
        expect(await store.countRate(ws, MINUTE, t0)).toEqual({ count: 0, oldestAt: null });
        await store.takeRate(ws, 3, MINUTE, t0);
        await store.takeRate(ws, 3, MINUTE, t0 + 10 * SECOND);
        for (let i = 0; i < 5; i++)
          expect(await store.countRate(ws, MINUTE, t0 + 20 * SECOND)).toEqual({ count: 2, oldestAt: t0 });
        // Still room for exactly one: the reads took none of it.
        expect(await store.takeRate(ws, 3, MINUTE, t0 + 20 * SECOND)).toBe(0);
        expect(await store.takeRate(ws, 3, MINUTE, t0 + 20 * SECOND)).toBe(40 * SECOND);
        // An event leaves the window exactly windowMs after it happened, as for takeRate.
        expect(await store.countRate(ws, MINUTE, t0 + MINUTE)).toEqual({
          count: 2,
          oldestAt: t0 + 10 * SECOND,
        });
      });

      it("countRate sees the sessions admitSession counted, per workspace", async () => {
        const [ws, other] = [freshName("ws"), freshName("ws")];
        const admission = {
          token: freshName("tok"),
          slotLimit: 5,
          slotExpiresAt: t0 + HOUR,
          now: t0,
          ratePerWindow: 5,
          rateWindowMs: MINUTE,
          budgetDay: "2030-01-15",
          budgetLimitMs: HOUR,
        };
        expect(await store.admitSession(ws, admission)).toEqual({ admitted: true });
        expect(await store.countRate(ws, MINUTE, t0 + 1)).toEqual({ count: 1, oldestAt: t0 });
        expect(await store.countRate(other, MINUTE, t0 + 1)).toEqual({ count: 0, oldestAt: null });
      });

      it("countIdle counts the idle list without taking from it", async () => {
        const pool = freshName("pool");
        expect(await store.countIdle(pool)).toBe(0);
        const [a, b] = [record(pool), record(pool)];
        await store.pushIdle(a);
        await store.pushIdle(b);
        expect(await store.countIdle(pool)).toBe(2);
        expect(await store.countIdle(pool)).toBe(2);
        expect((await store.popIdle(pool))?.sandboxId).toBe(a.sandboxId);
        expect(await store.countIdle(pool)).toBe(1);
        expect(await store.countIdle(freshName("pool"))).toBe(0);
      });
    });

    describe("execution budget", () => {
      const DAY = "2030-01-15";

      it("grants what is asked while the day's budget lasts, then what remains, then nothing", async () => {
        const ws = freshName("ws");
        expect(await store.readBudget(ws, DAY)).toBe(0);
        expect(await store.reserveBudget(ws, DAY, 1_500, 4_000)).toBe(1_500);
        expect(await store.reserveBudget(ws, DAY, 2_000, 4_000)).toBe(2_000);
        expect(await store.readBudget(ws, DAY)).toBe(3_500);
        expect(await store.reserveBudget(ws, DAY, 2_000, 4_000)).toBe(500);
        expect(await store.reserveBudget(ws, DAY, 1, 4_000)).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(4_000);
      });

      it("a refund returns unused time to the day, never below zero", async () => {
        const ws = freshName("ws");
        expect(await store.reserveBudget(ws, DAY, 3_000, 4_000)).toBe(3_000);
        expect(await store.refundBudget(ws, DAY, 2_000)).toBe(1_000);
        expect(await store.reserveBudget(ws, DAY, 5_000, 4_000)).toBe(3_000);
        expect(await store.refundBudget(ws, DAY, 0)).toBe(4_000);
        expect(await store.refundBudget(ws, DAY, 9_000)).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(0);
        // Refunding a day nothing was reserved on creates nothing.
        expect(await store.refundBudget(ws, "2030-01-16", 1_000)).toBe(0);
        expect(await store.readBudget(ws, "2030-01-16")).toBe(0);
      });

      it("an unsettled reservation stays charged", async () => {
        const ws = freshName("ws");
        await store.reserveBudget(ws, DAY, 4_000, 4_000);
        expect(await store.reserveBudget(ws, DAY, 1, 4_000)).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(4_000);
      });

      it("a budget already overspent (a lowered limit) grants nothing and keeps its total", async () => {
        const ws = freshName("ws");
        await store.reserveBudget(ws, DAY, 5_000, 10_000);
        expect(await store.reserveBudget(ws, DAY, 1_000, 2_000)).toBe(0);
        expect(await store.readBudget(ws, DAY)).toBe(5_000);
      });

      it("starts each day from zero", async () => {
        const ws = freshName("ws");
        await store.reserveBudget(ws, DAY, 1_000, 1_000);
        expect(await store.readBudget(ws, "2030-01-16")).toBe(0);
        expect(await store.reserveBudget(ws, "2030-01-16", 5, 1_000)).toBe(5);
        expect(await store.readBudget(ws, DAY)).toBe(1_000);
      });

      it("keeps workspaces apart", async () => {
        const [ws1, ws2] = [freshName("ws"), freshName("ws")];
        await store.reserveBudget(ws1, DAY, 1_000, 1_000);
        expect(await store.readBudget(ws2, DAY)).toBe(0);
        expect(await store.reserveBudget(ws2, DAY, 1_000, 1_000)).toBe(1_000);
      });

      it("never grants more than the budget to many concurrent reservations", async () => {
        const ws = freshName("ws");
        const grants = await Promise.all(
          Array.from({ length: 20 }, () => store.reserveBudget(ws, DAY, 700, 10_000)),
        );
        expect(grants.reduce((a, b) => a + b, 0)).toBe(10_000);
        expect(grants.filter((g) => g === 700)).toHaveLength(14);
        expect(grants.filter((g) => g === 200)).toHaveLength(1);
        expect(grants.filter((g) => g === 0)).toHaveLength(5);
        expect(await store.readBudget(ws, DAY)).toBe(10_000);
      });

      it("loses no refund under concurrency", async () => {
        const ws = freshName("ws");
        await store.reserveBudget(ws, DAY, 1_000, 1_000);
        await Promise.all(Array.from({ length: 20 }, () => store.refundBudget(ws, DAY, 7)));
        expect(await store.readBudget(ws, DAY)).toBe(860);
      });
    });

    describe("pool membership", () => {
      it("adds members up to maxTotal, then refuses", async () => {
        const pool = freshName("pool");
        expect(await store.addMember(pool, "s1", 2, t0 + HOUR, t0)).toBe(true);
        expect(await store.addMember(pool, "s2", 2, t0 + HOUR, t0)).toBe(true);
        expect(await store.addMember(pool, "s3", 2, t0 + HOUR, t0)).toBe(false);
        expect(await store.countMembers(pool, t0)).toBe(2);
        expect((await store.listMembers(pool, t0)).sort()).toEqual(["s1", "s2"]);
      });

      it("adding a member twice counts it once", async () => {
        const pool = freshName("pool");
        expect(await store.addMember(pool, "s1", 1, t0 + HOUR, t0)).toBe(true);
        expect(await store.addMember(pool, "s1", 1, t0 + HOUR, t0)).toBe(true);
        expect(await store.countMembers(pool, t0)).toBe(1);
      });

      it("an expired member frees its place", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "s1", 1, t0 + MINUTE, t0);
        expect(await store.countMembers(pool, t0 + MINUTE - 1)).toBe(1);
        expect(await store.addMember(pool, "s2", 1, t0 + HOUR, t0 + MINUTE - 1)).toBe(false);
        expect(await store.countMembers(pool, t0 + MINUTE)).toBe(0);
        expect(await store.addMember(pool, "s2", 1, t0 + HOUR, t0 + MINUTE)).toBe(true);
        expect(await store.listMembers(pool, t0 + MINUTE)).toEqual(["s2"]);
      });

      it("lists only unexpired members", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "short", 5, t0 + MINUTE, t0);
        await store.addMember(pool, "long", 5, t0 + HOUR, t0);
        expect((await store.listMembers(pool, t0)).sort()).toEqual(["long", "short"]);
        expect(await store.listMembers(pool, t0 + MINUTE)).toEqual(["long"]);
      });

      it("an expired member added again is a new member, subject to maxTotal", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "s1", 2, t0 + MINUTE, t0);
        await store.addMember(pool, "s2", 2, t0 + HOUR, t0);
        expect(await store.addMember(pool, "s1", 1, t0 + HOUR, t0 + 2 * MINUTE)).toBe(false);
        expect(await store.countMembers(pool, t0 + 2 * MINUTE)).toBe(1);
      });

      it("renew moves a member's expiry", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "s1", 1, t0 + MINUTE, t0);
        await store.renewMember(pool, "s1", t0 + HOUR, t0);
        expect(await store.countMembers(pool, t0 + 2 * MINUTE)).toBe(1);
        expect(await store.addMember(pool, "s2", 1, t0 + HOUR, t0 + 2 * MINUTE)).toBe(false);
      });

      it("a renewed member outlives the expiry its set had when it was added", async () => {
        // Real time: the Redis set's own expiry is the store's, and a quiet pool renews only.
        const pool = freshName("pool");
        const now = Date.now();
        await store.addMember(pool, "s1", 4, now + 200, now);
        await store.renewMember(pool, "s1", now + HOUR, now);
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(await store.countMembers(pool, Date.now())).toBe(1);
        expect(await store.addMember(pool, "s2", 1, now + HOUR, Date.now())).toBe(false);
      });

      it("renew of a member that is not there does not add it", async () => {
        const pool = freshName("pool");
        await store.renewMember(pool, "ghost", t0 + HOUR, t0);
        expect(await store.countMembers(pool, t0)).toBe(0);
        await store.addMember(pool, "s1", 1, t0 + HOUR, t0);
        await store.removeMember(pool, "s1");
        await store.renewMember(pool, "s1", t0 + HOUR, t0);
        expect(await store.countMembers(pool, t0)).toBe(0);
        expect(await store.listMembers(pool, t0)).toEqual([]);
      });

      it("remove frees the place; removing an unknown member is harmless", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "s1", 1, t0 + HOUR, t0);
        await store.removeMember(pool, "nobody");
        expect(await store.countMembers(pool, t0)).toBe(1);
        await store.removeMember(pool, "s1");
        expect(await store.countMembers(pool, t0)).toBe(0);
        expect(await store.listMembers(pool, t0)).toEqual([]);
        expect(await store.addMember(pool, "s2", 1, t0 + HOUR, t0)).toBe(true);
      });

      it("keeps pools apart; an unknown pool is empty", async () => {
        const [p1, p2] = [freshName("pool"), freshName("pool")];
        await store.addMember(p1, "s1", 1, t0 + HOUR, t0);
        expect(await store.addMember(p2, "s1", 1, t0 + HOUR, t0)).toBe(true);
        await store.removeMember(p2, "s1");
        expect(await store.listMembers(p1, t0)).toEqual(["s1"]);
        expect(await store.countMembers(freshName("pool"), t0)).toBe(0);
        expect(await store.listMembers(freshName("pool"), t0)).toEqual([]);
      });

      it("admits exactly maxTotal of many concurrent adds", async () => {
        const pool = freshName("pool");
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => store.addMember(pool, `s${i}`, 4, t0 + HOUR, t0)),
        );
        expect(results.filter(Boolean)).toHaveLength(4);
        expect(await store.countMembers(pool, t0)).toBe(4);
      });
    });

    describe("warm-up starts", () => {
      it("a warming member takes a place and is counted warming until it is pushed idle", async () => {
        const pool = freshName("pool");
        expect(await store.addMember(pool, "w1", 2, t0 + MINUTE, t0, { warming: true })).toBe(true);
        expect(await store.addMember(pool, "c1", 2, t0 + MINUTE, t0)).toBe(true);
        expect(await store.countMembers(pool, t0)).toBe(2);
        expect(await store.countWarming(pool, t0)).toBe(1); // the cold start is not warming
        expect(await store.addMember(pool, "w2", 2, t0 + MINUTE, t0, { warming: true })).toBe(false);
        expect(await store.countWarming(pool, t0)).toBe(1); // a refused start is not marked
        await store.pushIdle(record(pool, { sandboxId: "w1" }));
        expect(await store.countWarming(pool, t0)).toBe(0);
        expect(await store.countMembers(pool, t0)).toBe(2); // still a member, now idle
        expect(await store.countIdle(pool)).toBe(1);
      });

      it("removing a warming member ends its mark; marks expire with the start's deadline", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "w1", 4, t0 + MINUTE, t0, { warming: true });
        await store.addMember(pool, "w2", 4, t0 + HOUR, t0, { warming: true });
        await store.removeMember(pool, "w2");
        expect(await store.countWarming(pool, t0)).toBe(1);
        expect(await store.countWarming(pool, t0 + 2 * MINUTE)).toBe(0); // a crashed start stops counting
        expect(await store.countWarming(freshName("pool"), t0)).toBe(0);
      });

      it("a retiring mark lasts until the member is removed or the mark lapses", async () => {
        const pool = freshName("pool");
        await store.addMember(pool, "s1", 4, t0 + HOUR, t0);
        await store.addMember(pool, "s2", 4, t0 + HOUR, t0);
        await store.markRetiring(pool, "s1", t0 + MINUTE, t0);
        await store.markRetiring(pool, "s2", t0 + HOUR, t0);
        expect(await store.countRetiring(pool, t0)).toBe(2);
        expect(await store.countWarming(pool, t0)).toBe(0);
        await store.removeMember(pool, "s2");
        expect(await store.countRetiring(pool, t0)).toBe(1);
        expect(await store.countMembers(pool, t0)).toBe(1); // a mark is not a place
        expect(await store.countRetiring(pool, t0 + 2 * MINUTE)).toBe(0);
        expect(await store.countRetiring(freshName("pool"), t0)).toBe(0);
      });
    });

    describe("starts and hand-outs in flight", () => {
      const marks = async (pool: string) =>
        (await store.listInFlight(pool)).sort((a, b) => a.sandboxId.localeCompare(b.sandboxId));

      it("a start is marked in flight with its place, renewed, and ended when pushed idle", async () => {
        const pool = freshName("pool");
        const r = record(pool);
        expect(
          await store.addMember(pool, r.sandboxId, 2, t0 + MINUTE, t0, { inFlightUntil: t0 + 15 * SECOND }),
        ).toBe(true);
        expect(await store.addMember(pool, "plain", 2, t0 + MINUTE, t0)).toBe(true);
        expect(
          await store.addMember(pool, "refused", 2, t0 + MINUTE, t0, { inFlightUntil: t0 + MINUTE }),
        ).toBe(false);
        expect(await marks(pool)).toEqual([{ sandboxId: r.sandboxId, until: t0 + 15 * SECOND }]);
        await store.renewInFlight(pool, [r.sandboxId, "unmarked"], t0 + 30 * SECOND, t0 + 10 * SECOND);
        expect(await marks(pool)).toEqual([{ sandboxId: r.sandboxId, until: t0 + 30 * SECOND }]);
        expect(await store.pushIdle(r, { until: t0 + HOUR, now: t0 })).toBe(true);
        expect(await marks(pool)).toEqual([]);
        // Pushing it moved its membership: it outlives the start's minute.
        expect(await store.listMembers(pool, t0 + 2 * MINUTE)).toEqual([r.sandboxId]);
        await store.renewInFlight(pool, [r.sandboxId], t0 + HOUR, t0);
        expect(await marks(pool)).toEqual([]); // an ended mark is not set again
      });

      it("a hand-out is marked until its lease is due, by the idle lease or the cold hold", async () => {
        const pool = freshName("pool");
        const [idle, cold] = [record(pool), record(pool)];
        await store.addMember(pool, idle.sandboxId, 5, t0 + MINUTE, t0);
        await store.pushIdle(idle);
        await store.addMember(pool, cold.sandboxId, 5, t0 + MINUTE, t0, { inFlightUntil: t0 + 15 * SECOND });
        const hold = { workspace: freshName("ws"), until: t0 + HOUR, now: t0, handOverBy: t0 + 20 * SECOND };
        expect(await store.leaseIdle(pool, hold)).toEqual(idle);
        expect(await store.holdMember(pool, cold.sandboxId, hold)).toBe(true);
        const expected = [idle, cold]
          .map((r) => ({ sandboxId: r.sandboxId, until: t0 + 20 * SECOND }))
          .sort((a, b) => a.sandboxId.localeCompare(b.sandboxId));
        expect(await marks(pool)).toEqual(expected);
        await store.endInFlight(pool, idle.sandboxId);
        expect((await marks(pool)).map((m) => m.sandboxId)).toEqual([cold.sandboxId]);
      });

      it("reclaims the place of a lapsed mark, and only of a lapsed one", async () => {
        const pool = freshName("pool");
        const lapse = t0 + 15 * SECOND;
        await store.addMember(pool, "dead", 3, t0 + HOUR, t0, { warming: true, inFlightUntil: lapse });
        await store.addMember(pool, "alive", 3, t0 + HOUR, t0, { inFlightUntil: lapse });
        await store.addMember(pool, "ending", 3, t0 + HOUR, t0, { inFlightUntil: lapse });
        await store.renewInFlight(pool, ["alive"], t0 + MINUTE, t0 + 10 * SECOND);
        await store.markRetiring(pool, "ending", t0 + HOUR, t0);
        const later = t0 + 20 * SECOND;
        expect(await store.reclaimInFlight(pool, "dead", lapse - 1)).toBe(false); // not lapsed yet
        expect(await store.reclaimInFlight(pool, "dead", later)).toBe(true);
        expect(await store.reclaimInFlight(pool, "dead", later)).toBe(false); // once
        expect(await store.reclaimInFlight(pool, "alive", later)).toBe(false); // renewed
        expect(await store.reclaimInFlight(pool, "ending", later)).toBe(false); // its destroy frees it
        expect(await store.reclaimInFlight(pool, "never-marked", later)).toBe(false);
        expect((await store.listMembers(pool, later)).sort()).toEqual(["alive", "ending"]);
        expect(await store.countWarming(pool, later)).toBe(0);
        expect((await marks(pool)).map((m) => m.sandboxId)).toEqual(["alive", "ending"]);
        // The freed place is the pool's again, and the dead start cannot take it back.
        expect(await store.addMember(pool, "next", 3, t0 + HOUR, later)).toBe(true);
        expect(await store.holdMember(pool, "dead", { workspace: "w", until: t0 + HOUR, now: later })).toBe(
          false,
        );
        const late = record(pool, { sandboxId: "dead" });
        expect(await store.pushIdle(late, { until: t0 + HOUR, now: later })).toBe(false);
        expect(await store.countIdle(pool)).toBe(0);
      });

      it("removing a member ends its mark; marks keep pools apart", async () => {
        const [p1, p2] = [freshName("pool"), freshName("pool")];
        await store.addMember(p1, "s1", 2, t0 + HOUR, t0, { inFlightUntil: t0 + MINUTE });
        await store.addMember(p2, "s1", 2, t0 + HOUR, t0, { inFlightUntil: t0 + MINUTE });
        await store.removeMember(p1, "s1");
        expect(await store.listInFlight(p1)).toEqual([]);
        expect(await store.listInFlight(p2)).toEqual([{ sandboxId: "s1", until: t0 + MINUTE }]);
        expect(await store.listInFlight(freshName("pool"))).toEqual([]);
      });

      it("a lapsed mark stays listed past its member's expiry, for reconciliation to find", async () => {
        // Real time: the Redis set's own expiry is the store's.
        const pool = freshName("pool");
        const now = Date.now();
        await store.addMember(pool, "s1", 2, now + 200, now, { inFlightUntil: now + 100 });
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(await store.listInFlight(pool)).toEqual([{ sandboxId: "s1", until: now + 100 }]);
        expect(await store.reclaimInFlight(pool, "s1", Date.now())).toBe(true);
      });
    });

    describe("idle sandboxes", () => {
      it("pops in the order pushed (oldest first), then nothing", async () => {
        const pool = freshName("pool");
        const records = [record(pool), record(pool), record(pool)];
        for (const r of records) await store.pushIdle(r);
        expect(await store.popIdle(pool)).toEqual(records[0]);
        expect(await store.popIdle(pool)).toEqual(records[1]);
        await store.pushIdle(records[0]!);
        expect(await store.popIdle(pool)).toEqual(records[2]);
        expect(await store.popIdle(pool)).toEqual(records[0]);
        expect(await store.popIdle(pool)).toBeUndefined();
      });

      it("keeps every field of the record", async () => {
        const pool = freshName("pool");
        const r = record(pool, { endpoint: "http://[::1]:8080/base", createdAt: 1_234 });
        await store.pushIdle(r);
        expect(await store.listIdle(pool)).toEqual([r]);
        expect(await store.popIdle(pool)).toEqual(r);
      });

      it("lists idle sandboxes in order without taking them", async () => {
        const pool = freshName("pool");
        const records = [record(pool), record(pool)];
        for (const r of records) await store.pushIdle(r);
        expect(await store.listIdle(pool)).toEqual(records);
        expect(await store.listIdle(pool)).toEqual(records);
        expect(await store.listIdle(freshName("pool"))).toEqual([]);
      });

      it("takes one particular idle sandbox, once", async () => {
        const pool = freshName("pool");
        const records = [record(pool), record(pool), record(pool)];
        for (const r of records) await store.pushIdle(r);
        expect(await store.takeIdle(pool, records[1]!.sandboxId)).toEqual(records[1]);
        expect(await store.takeIdle(pool, records[1]!.sandboxId)).toBeUndefined();
        expect(await store.takeIdle(pool, "unknown")).toBeUndefined();
        expect(await store.listIdle(pool)).toEqual([records[0], records[2]]);
        expect(await store.popIdle(pool)).toEqual(records[0]);
      });

      it("a popped sandbox cannot be taken, and a taken one cannot be popped", async () => {
        const pool = freshName("pool");
        const [first, second] = [record(pool), record(pool)];
        await store.pushIdle(first);
        await store.pushIdle(second);
        await store.popIdle(pool);
        expect(await store.takeIdle(pool, first.sandboxId)).toBeUndefined();
        await store.takeIdle(pool, second.sandboxId);
        expect(await store.popIdle(pool)).toBeUndefined();
      });

      it("keeps pools apart", async () => {
        const [p1, p2] = [freshName("pool"), freshName("pool")];
        const r1 = record(p1);
        const r2 = record(p2);
        await store.pushIdle(r1);
        await store.pushIdle(r2);
        expect(await store.takeIdle(p2, r1.sandboxId)).toBeUndefined();
        expect(await store.popIdle(p2)).toEqual(r2);
        expect(await store.popIdle(p2)).toBeUndefined();
        expect(await store.listIdle(p1)).toEqual([r1]);
      });

      it("hands each idle sandbox to exactly one of many concurrent pops", async () => {
        const pool = freshName("pool");
        const records = [record(pool), record(pool), record(pool)];
        for (const r of records) await store.pushIdle(r);
        const popped = await Promise.all(Array.from({ length: 10 }, () => store.popIdle(pool)));
        const got = popped.filter((r) => r !== undefined).map((r) => r.sandboxId);
        expect(got.sort()).toEqual(records.map((r) => r.sandboxId).sort());
      });
    });

    describe("session admission in one step", () => {
      const admission = (
        token: string,
        overrides: Partial<Parameters<CoordinationStore["admitSession"]>[1]> = {},
      ) => ({
        token,
        slotLimit: 2,
        slotExpiresAt: t0 + HOUR,
        now: t0,
        ratePerWindow: 10,
        rateWindowMs: MINUTE,
        budgetDay: "2026-12-01",
        budgetLimitMs: 10 * SECOND,
        ...overrides,
      });

      it("takes a slot and counts the rate; refuses past the slot limit, taking nothing", async () => {
        const ws = freshName("ws");
        expect(await store.admitSession(ws, admission("a"))).toEqual({ admitted: true });
        expect(await store.admitSession(ws, admission("b"))).toEqual({ admitted: true });
        expect(await store.admitSession(ws, admission("c"))).toEqual({
          admitted: false,
          refused: "concurrent_sessions",
        });
        expect(await store.countSlots(ws, t0)).toBe(2);
        // Two sessions counted in the window, not three: 8 more fit.
        expect(await store.takeRate(ws, 10, MINUTE, t0)).toBe(0);
        for (let i = 0; i < 7; i++) await store.takeRate(ws, 10, MINUTE, t0);
        expect(await store.takeRate(ws, 10, MINUTE, t0)).toBeGreaterThan(0);
      });

      it("refuses past the rate with the wait, and then holds no slot", async () => {
        const ws = freshName("ws");
        expect(await store.admitSession(ws, admission("a", { ratePerWindow: 1 }))).toEqual({
          admitted: true,
        });
        await store.releaseSlot(ws, "a");
        const refused = await store.admitSession(
          ws,
          admission("b", { ratePerWindow: 1, now: t0 + 20 * SECOND }),
        );
        expect(refused).toEqual({ admitted: false, refused: "session_rate", waitMs: 40 * SECOND });
        expect(await store.countSlots(ws, t0 + 20 * SECOND)).toBe(0);
      });

      it("refuses once the day's budget is spent, taking nothing", async () => {
        const ws = freshName("ws");
        await store.reserveBudget(ws, "2026-12-01", 10 * SECOND, 10 * SECOND);
        expect(await store.admitSession(ws, admission("a"))).toEqual({
          admitted: false,
          refused: "exec_budget",
        });
        expect(await store.countSlots(ws, t0)).toBe(0);
        expect(await store.admitSession(ws, admission("a", { budgetDay: "2026-12-02" }))).toEqual({
          admitted: true,
        });
      });

      it("an expired slot is free again", async () => {
        const ws = freshName("ws");
        await store.admitSession(ws, admission("a", { slotLimit: 1, slotExpiresAt: t0 + MINUTE }));
        expect((await store.admitSession(ws, admission("b", { slotLimit: 1 }))).admitted).toBe(false);
        expect(await store.admitSession(ws, admission("b", { slotLimit: 1, now: t0 + MINUTE }))).toEqual({
          admitted: true,
        });
      });
    });

    describe("idle lease and member hold in one step", () => {
      it("leases the oldest idle sandbox and holds its membership until the session's end", async () => {
        const pool = freshName("pool");
        const [r1, r2] = [record(pool), record(pool)];
        for (const r of [r1!, r2!]) {
          await store.addMember(pool, r.sandboxId, 5, t0 + MINUTE, t0);
          await store.pushIdle(r);
        }
        const hold = { workspace: freshName("ws"), until: t0 + HOUR, now: t0 };
        expect(await store.leaseIdle(pool, hold)).toEqual(r1);
        expect(await store.listIdle(pool)).toEqual([r2]);
        // The leased one still counts after the idle membership's minute; the idle one not.
        expect(await store.listMembers(pool, t0 + 2 * MINUTE)).toEqual([r1!.sandboxId]);
        expect(await store.leaseIdle(pool, hold)).toEqual(r2);
        expect(await store.leaseIdle(pool, hold)).toBeUndefined();
      });

      it("of concurrent idle leases, each sandbox goes to one", async () => {
        const pool = freshName("pool");
        const records = [record(pool), record(pool), record(pool)];
        for (const r of records) await store.pushIdle(r);
        const hold = { workspace: freshName("ws"), until: t0 + HOUR, now: t0 };
        const leased = await Promise.all(Array.from({ length: 6 }, () => store.leaseIdle(pool, hold)));
        const ids = leased.filter((r) => r !== undefined).map((r) => r!.sandboxId);
        expect(ids.sort()).toEqual(records.map((r) => r.sandboxId).sort());
      });

      it("holds a cold-started member until the session's end; a non-member stays out", async () => {
        const pool = freshName("pool");
        const r = record(pool);
        await store.addMember(pool, r.sandboxId, 5, t0 + MINUTE, t0);
        const hold = { workspace: freshName("ws"), until: t0 + HOUR, now: t0 };
        expect(await store.holdMember(pool, r.sandboxId, hold)).toBe(true);
        expect(await store.holdMember(pool, "ghost", hold)).toBe(false);
        expect(await store.listMembers(pool, t0 + 2 * MINUTE)).toEqual([r.sandboxId]);
      });

      it("a lease of a held sandbox is due and listed like any other", async () => {
        const pool = freshName("pool");
        const ws = freshName("ws");
        const r = record(pool);
        await store.pushIdle(r);
        const leased = (await store.leaseIdle(pool, { workspace: ws, until: t0 + HOUR, now: t0 }))!;
        const l = lease(ws, { pool, sandbox: leased, idleTimeoutSeconds: 60 });
        await store.putLease(l);
        expect((await store.listLeases()).filter((x) => x.workspace === ws)).toEqual([l]);
        expect(await dueIn(ws, t0 + MINUTE)).toEqual([l.sessionId]);
      });
    });

    describe("parked sandboxes (reuse by their workspace)", () => {
      async function parkedOf(pool: string, owner: string) {
        const r = { ...record(pool), owner };
        await store.addMember(pool, r.sandboxId, 10, t0 + MINUTE, t0);
        expect(await store.parkIdle(r, { until: t0 + 10 * MINUTE, now: t0 })).toBe(true);
        return r;
      }

      it("leases a workspace its own parked sandbox, newest first, before any fresh one", async () => {
        const pool = freshName("pool");
        const ws = freshName("ws");
        const fresh = record(pool);
        await store.pushIdle(fresh);
        const older = await parkedOf(pool, ws);
        const newer = await parkedOf(pool, ws);
        const hold = { workspace: ws, until: t0 + HOUR, now: t0 };
        expect(await store.leaseIdle(pool, hold)).toEqual(newer);
        expect(await store.leaseIdle(pool, hold)).toEqual(older);
        expect(await store.leaseIdle(pool, hold)).toEqual(fresh);
        expect(await store.listParked(pool)).toEqual([]);
      });

      it("never gives one workspace's parked sandbox to another, nor to its own when reuse is off", async () => {
        const pool = freshName("pool");
        const mine = await parkedOf(pool, freshName("ws"));
        const other = { workspace: freshName("ws"), until: t0 + HOUR, now: t0 };
        expect(await store.leaseIdle(pool, other)).toBeUndefined();
        expect(
          await store.leaseIdle(pool, { workspace: mine.owner, until: t0 + HOUR, now: t0, reuse: false }),
        ).toBeUndefined();
        expect(await store.listParked(pool)).toEqual([mine]);
        expect(await store.countIdle(pool)).toBe(0);
      });

      it("parks only a member, keeps it counted, and ends its retiring mark", async () => {
        const pool = freshName("pool");
        const ws = freshName("ws");
        const ghost = { ...record(pool), owner: ws };
        expect(await store.parkIdle(ghost, { until: t0 + MINUTE, now: t0 })).toBe(false);
        const r = { ...record(pool), owner: ws };
        await store.addMember(pool, r.sandboxId, 10, t0 + MINUTE, t0);
        await store.markRetiring(pool, r.sandboxId, t0 + MINUTE, t0);
        expect(await store.countRetiring(pool, t0)).toBe(1);
        expect(await store.parkIdle(r, { until: t0 + 10 * MINUTE, now: t0 })).toBe(true);
        expect(await store.countRetiring(pool, t0)).toBe(0);
        expect(await store.listMembers(pool, t0 + 5 * MINUTE)).toEqual([r.sandboxId]);
      });

      it("takes one particular parked sandbox once, and pops the longest-parked", async () => {
        const pool = freshName("pool");
        const first = await parkedOf(pool, freshName("ws"));
        const second = await parkedOf(pool, freshName("ws"));
        const third = await parkedOf(pool, freshName("ws"));
        expect(await store.takeParked(pool, second.sandboxId)).toEqual(second);
        expect(await store.takeParked(pool, second.sandboxId)).toBeUndefined();
        expect(await store.popParked(pool)).toEqual(first);
        expect(await store.listParked(pool)).toEqual([third]);
      });
    });

    describe("leases", () => {
      it("stores a lease and finds it by (workspace, session id)", async () => {
        const ws = freshName("ws");
        const l = lease(ws, { busyUntil: t0 + 5 * SECOND });
        await store.putLease(l);
        expect(await store.getLease(keyOf(l))).toEqual(l);
      });

      it("finds nothing for an unknown session id", async () => {
        const ws = freshName("ws");
        await store.putLease(lease(ws));
        expect(await store.getLease({ workspace: ws, sessionId: freshName("sess") })).toBeUndefined();
      });

      it("another workspace's key finds nothing, and cannot touch or take the lease", async () => {
        const [owner, other] = [freshName("ws"), freshName("ws")];
        const l = lease(owner);
        await store.putLease(l);
        const foreign = { workspace: other, sessionId: l.sessionId };
        expect(await store.getLease(foreign)).toBeUndefined();
        expect(await store.touchLease(foreign, t0 + SECOND)).toBeUndefined();
        expect(await store.takeLease(foreign)).toBeUndefined();
        expect(await store.getLease(keyOf(l))).toEqual(l);
      });

      it("keeps two workspaces' leases with the same session id apart", async () => {
        const [ws1, ws2] = [freshName("ws"), freshName("ws")];
        const sessionId = freshName("sess");
        const l1 = lease(ws1, { sessionId, image: "one" });
        const l2 = lease(ws2, { sessionId, image: "two" });
        await store.putLease(l1);
        await store.putLease(l2);
        expect((await store.getLease(keyOf(l1)))?.image).toBe("one");
        expect((await store.getLease(keyOf(l2)))?.image).toBe("two");
        await store.takeLease(keyOf(l1));
        expect((await store.getLease(keyOf(l2)))?.image).toBe("two");
      });

      it("put replaces a lease with the same key", async () => {
        const ws = freshName("ws");
        const l = lease(ws);
        await store.putLease(l);
        await store.putLease({ ...l, idleTimeoutSeconds: 5 });
        expect((await store.getLease(keyOf(l)))?.idleTimeoutSeconds).toBe(5);
      });

      it("hands out copies: changing a returned lease does not change the stored one", async () => {
        const ws = freshName("ws");
        const l = lease(ws);
        await store.putLease(l);
        l.image = "changed after put";
        const got = (await store.getLease(keyOf(l)))!;
        expect(got.image).toBe("sandpool/sandbox:dev");
        got.lastActivityAt = 0;
        got.sandbox.endpoint = "http://evil";
        const again = (await store.getLease(keyOf(l)))!;
        expect(again.lastActivityAt).toBe(t0);
        expect(again.sandbox.endpoint).not.toBe("http://evil");
      });

      describe("touch", () => {
        it("moves lastActivityAt forward and returns the lease", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          const touched = await store.touchLease(keyOf(l), t0 + 10 * SECOND);
          expect(touched).toEqual({ ...l, lastActivityAt: t0 + 10 * SECOND });
          expect((await store.getLease(keyOf(l)))?.lastActivityAt).toBe(t0 + 10 * SECOND);
        });

        it("never moves lastActivityAt backwards", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          await store.touchLease(keyOf(l), t0 + 10 * SECOND);
          const touched = await store.touchLease(keyOf(l), t0 + 5 * SECOND);
          expect(touched?.lastActivityAt).toBe(t0 + 10 * SECOND);
          expect((await store.getLease(keyOf(l)))?.lastActivityAt).toBe(t0 + 10 * SECOND);
        });

        it("counts calls in flight: busyUntil is the latest deadline until the last call ends", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          const first = await store.touchLease(keyOf(l), t0 + SECOND, { begin: t0 + 5 * MINUTE });
          expect(first).toMatchObject({ activeCalls: 1, busyUntil: t0 + 5 * MINUTE });
          // A second, shorter call does not lower it; plain activity leaves it alone.
          const second = await store.touchLease(keyOf(l), t0 + 2 * SECOND, { begin: t0 + MINUTE });
          expect(second).toMatchObject({ activeCalls: 2, busyUntil: t0 + 5 * MINUTE });
          expect((await store.touchLease(keyOf(l), t0 + 3 * SECOND))?.busyUntil).toBe(t0 + 5 * MINUTE);
          // One call ending keeps the session busy for the other one...
          const oneEnded = await store.touchLease(keyOf(l), t0 + 4 * SECOND, { end: true });
          expect(oneEnded).toMatchObject({ activeCalls: 1, busyUntil: t0 + 5 * MINUTE });
          // ...the last one ending frees it.
          const allEnded = await store.touchLease(keyOf(l), t0 + 5 * SECOND, { end: true });
          expect(allEnded?.activeCalls).toBe(0);
          expect(allEnded?.busyUntil).toBeUndefined();
          expect((await store.getLease(keyOf(l)))?.busyUntil).toBeUndefined();
          expect((await store.getLease(keyOf(l)))?.lastActivityAt).toBe(t0 + 5 * SECOND);
        });

        it("never counts below zero calls", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          expect((await store.touchLease(keyOf(l), t0 + SECOND, { end: true }))?.activeCalls).toBe(0);
        });

        it("returns undefined for a missing lease and does not create one", async () => {
          const ws = freshName("ws");
          const key = { workspace: ws, sessionId: freshName("sess") };
          expect(await store.touchLease(key, t0, { begin: t0 + MINUTE })).toBeUndefined();
          expect(await store.getLease(key)).toBeUndefined();
          expect(await dueIn(ws, t0 + 10 * HOUR)).toEqual([]);
        });
      });

      describe("take", () => {
        it("returns the lease once, then undefined, and removes it", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          expect(await store.takeLease(keyOf(l))).toEqual(l);
          expect(await store.takeLease(keyOf(l))).toBeUndefined();
          expect(await store.getLease(keyOf(l))).toBeUndefined();
          expect(await store.touchLease(keyOf(l), t0 + SECOND)).toBeUndefined();
        });

        it("of 10 concurrent takes, exactly one wins", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          const taken = await Promise.all(Array.from({ length: 10 }, () => store.takeLease(keyOf(l))));
          const winners = taken.filter((t) => t !== undefined);
          expect(winners).toHaveLength(1);
          expect(winners[0]).toEqual(l);
        });

        it("a taken lease is no longer due nor listed", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          await store.takeLease(keyOf(l));
          expect(await dueIn(ws, t0 + 10 * HOUR)).toEqual([]);
          expect((await store.listLeases()).filter((x) => x.workspace === ws)).toEqual([]);
        });
      });

      describe("hibernation steps", () => {
        const checkpoint = (l: Lease) => ({
          kind: "memory" as const,
          bytes: 0,
          sandboxId: l.sandbox.sandboxId,
          sandboxSessionId: l.sandbox.innerSessionId,
          pool: l.pool,
          hibernatedAt: t0,
        });

        it("saves, refuses calls while saved, and resumes with a new sandbox", async () => {
          const l = lease(freshName("ws"));
          await store.putLease(l);
          const saving = {
            phase: "saving" as const,
            claimId: "c1",
            claimUntil: t0 + MINUTE,
            checkpoint: checkpoint(l),
          };
          const claimed = await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["running"],
            to: saving,
            requireIdle: true,
          });
          expect(claimed).toMatchObject({ outcome: "stepped", lease: { hibernation: saving } });
          // Another replica cannot take a held claim, nor claim again.
          const rival = await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["saving"],
            claimId: "c2",
            to: undefined,
          });
          expect(rival.outcome).toBe("elsewhere");
          const saved = { phase: "saved" as const, checkpoint: { ...checkpoint(l), bytes: 42 } };
          expect(
            (await store.stepHibernation(keyOf(l), { now: t0, from: ["saving"], claimId: "c1", to: saved }))
              .outcome,
          ).toBe("stepped");
          expect(
            (await store.beginCall(keyOf(l), { now: t0 + SECOND, busyUntil: t0 + MINUTE })).outcome,
          ).toBe("hibernated");
          const fresh = record("default");
          const resumed = await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["saved"],
            to: undefined,
            sandbox: fresh,
          });
          expect(resumed.outcome).toBe("stepped");
          const after = await store.getLease(keyOf(l));
          expect(after?.hibernation).toBeUndefined();
          expect(after?.sandbox).toEqual(fresh);
          expect(
            (await store.beginCall(keyOf(l), { now: t0 + SECOND, busyUntil: t0 + MINUTE })).outcome,
          ).toBe("started");
        });

        it("keeps a session's egress narrowing through calls, a save and a resume (an empty list stays a list)", async () => {
          const l = { ...lease(freshName("ws")), egress: { hosts: ["api.example.com"], secrets: [] } };
          await store.putLease(l);
          const read = async () => leaseEgressOf((await store.getLease(keyOf(l)))!);
          const started = await store.beginCall(keyOf(l), { now: t0 + SECOND, busyUntil: t0 + MINUTE });
          expect(started.outcome).toBe("started");
          await store.endCall(keyOf(l), { now: t0 + 2 * SECOND });
          await store.touchLease(keyOf(l), t0 + 3 * SECOND);
          expect(await read()).toEqual(l.egress);
          const saved = { phase: "saved" as const, checkpoint: checkpoint(l) };
          expect(
            (await store.stepHibernation(keyOf(l), { now: t0, from: ["running"], to: saved })).outcome,
          ).toBe("stepped");
          expect(await read()).toEqual(l.egress);
          const resumed = await store.stepHibernation(keyOf(l), {
            now: t0 + 4 * SECOND,
            from: ["saved"],
            to: undefined,
            sandbox: record("default"),
          });
          expect(resumed.outcome).toBe("stepped");
          if (resumed.outcome === "stepped") expect(leaseEgressOf(resumed.lease)).toEqual(l.egress);
          // Never "not narrowed": a session that asked for no secrets has none after a resume too.
          expect(await read()).toEqual({ hosts: ["api.example.com"], secrets: [] });
        });

        it("counts a resume as activity: its idle deadline starts anew, a failed save's return does not", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          const saved = { phase: "saved" as const, checkpoint: checkpoint(l) };
          await store.stepHibernation(keyOf(l), { now: t0 + 10 * SECOND, from: ["running"], to: saved });
          // Hibernated 50 s, then a call resumes it: 59 s after its last call.
          const resumedAt = t0 + 59 * SECOND;
          const claim = {
            phase: "restoring" as const,
            claimId: "r1",
            claimUntil: resumedAt + MINUTE,
            checkpoint: checkpoint(l),
          };
          await store.stepHibernation(keyOf(l), {
            now: resumedAt,
            from: ["saved"],
            claimId: "r1",
            to: claim,
            activity: true,
          });
          // Restored 3 s later, past the deadline counted from before the hibernation.
          await store.stepHibernation(keyOf(l), {
            now: resumedAt + 3 * SECOND,
            from: ["restoring"],
            claimId: "r1",
            to: undefined,
            sandbox: record("default"),
            activity: true,
          });
          expect((await store.getLease(keyOf(l)))?.lastActivityAt).toBe(resumedAt + 3 * SECOND);
          expect(await dueIn(ws, t0 + 61 * SECOND)).toEqual([]);
          expect(await dueIn(ws, resumedAt + 3 * SECOND + MINUTE)).toEqual([l.sessionId]);
          expect(
            (await store.beginCall(keyOf(l), { now: resumedAt + 4 * SECOND, busyUntil: t0 + 2 * MINUTE }))
              .outcome,
          ).toBe("started");

          // A save given up (back to running, no activity) leaves the last activity alone.
          const other = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(other);
          const saving = {
            phase: "saving" as const,
            claimId: "s1",
            claimUntil: t0 + MINUTE,
            checkpoint: checkpoint(other),
          };
          await store.stepHibernation(keyOf(other), { now: t0 + SECOND, from: ["running"], to: saving });
          await store.stepHibernation(keyOf(other), {
            now: t0 + 2 * SECOND,
            from: ["saving"],
            claimId: "s1",
            to: undefined,
          });
          expect((await store.getLease(keyOf(other)))?.lastActivityAt).toBe(t0);
        });

        it("keeps a refused save's reason on the running lease until a save is committed", async () => {
          const l = lease(freshName("ws"));
          await store.putLease(l);
          const saving = {
            phase: "saving" as const,
            claimId: "s1",
            claimUntil: t0 + MINUTE,
            checkpoint: checkpoint(l),
          };
          const refused = { code: "capacity.checkpoint_space", message: "the disk is full", at: t0 + SECOND };
          await store.stepHibernation(keyOf(l), { now: t0, from: ["running"], to: saving });
          const back = await store.stepHibernation(keyOf(l), {
            now: t0 + SECOND,
            from: ["saving"],
            claimId: "s1",
            to: undefined,
            refused,
          });
          expect(back).toMatchObject({ outcome: "stepped", lease: { hibernationRefused: refused } });
          expect((await store.getLease(keyOf(l)))?.hibernationRefused).toEqual(refused);
          // Calls go on; a later claim keeps it; a committed save clears it.
          expect(
            (await store.beginCall(keyOf(l), { now: t0 + 2 * SECOND, busyUntil: t0 + MINUTE })).outcome,
          ).toBe("started");
          await store.endCall(keyOf(l), { now: t0 + 3 * SECOND });
          await store.stepHibernation(keyOf(l), {
            now: t0 + 4 * SECOND,
            from: ["running"],
            to: { ...saving, claimId: "s2" },
          });
          expect((await store.getLease(keyOf(l)))?.hibernationRefused).toEqual(refused);
          await store.stepHibernation(keyOf(l), {
            now: t0 + 5 * SECOND,
            from: ["saving"],
            claimId: "s2",
            to: { phase: "saved", checkpoint: checkpoint(l) },
          });
          expect((await store.getLease(keyOf(l)))?.hibernationRefused).toBeUndefined();
        });

        it("refuses to claim a busy session, and lets anyone take over a lapsed claim", async () => {
          const l = lease(freshName("ws"));
          await store.putLease(l);
          await store.beginCall(keyOf(l), { now: t0, busyUntil: t0 + MINUTE });
          const saving = {
            phase: "saving" as const,
            claimId: "c1",
            claimUntil: t0 + SECOND,
            checkpoint: checkpoint(l),
          };
          expect(
            (
              await store.stepHibernation(keyOf(l), {
                now: t0,
                from: ["running"],
                to: saving,
                requireIdle: true,
              })
            ).outcome,
          ).toBe("busy");
          await store.endCall(keyOf(l), { now: t0 + 1 });
          expect(
            (
              await store.stepHibernation(keyOf(l), {
                now: t0 + 2,
                from: ["running"],
                to: saving,
                requireIdle: true,
              })
            ).outcome,
          ).toBe("stepped");
          const takeover = { now: t0 + 2 * SECOND, from: ["saving" as const], claimId: "c9", to: undefined };
          expect((await store.stepHibernation(keyOf(l), takeover)).outcome).toBe("stepped");
          expect((await store.getLease(keyOf(l)))?.hibernation).toBeUndefined();
        });

        it("moves the lease to the node of the sandbox it resumes on (roles edge and node)", async () => {
          const l = {
            ...lease(freshName("ws")),
            node: "node-a",
            sandbox: { ...record("default"), node: "node-a" },
          };
          await store.putLease(l);
          const saved = { phase: "saved" as const, checkpoint: { ...checkpoint(l), node: "node-a" } };
          await store.stepHibernation(keyOf(l), { now: t0, from: ["running"], to: saved });
          expect((await store.getLease(keyOf(l)))?.hibernation?.checkpoint.node).toBe("node-a");
          const elsewhere = { ...record("default"), node: "node-b" };
          await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["saved"],
            to: undefined,
            sandbox: elsewhere,
          });
          const moved = await store.getLease(keyOf(l));
          expect(moved?.node).toBe("node-b");
          expect(moved?.sandbox).toEqual(elsewhere);
          // A sandbox that names no node (one host) leaves the lease naming none.
          await store.stepHibernation(keyOf(l), { now: t0, from: ["running"], to: saved });
          await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["saved"],
            to: undefined,
            sandbox: record("default"),
          });
          expect((await store.getLease(keyOf(l)))?.node).toBeUndefined();
        });

        it("finds nothing in another workspace, nor a taken lease", async () => {
          const l = lease(freshName("ws"));
          await store.putLease(l);
          const step = { now: t0, from: ["running" as const], to: undefined };
          expect(
            (await store.stepHibernation({ workspace: freshName("ws"), sessionId: l.sessionId }, step))
              .outcome,
          ).toBe("gone");
          await store.takeLease(keyOf(l));
          expect((await store.stepHibernation(keyOf(l), step)).outcome).toBe("gone");
        });
      });

      describe("due leases", () => {
        it("is due once the idle deadline passes (deadline <= now)", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          expect(await dueIn(ws, t0 + MINUTE - 1)).toEqual([]);
          expect(await dueIn(ws, t0 + MINUTE)).toEqual([l.sessionId]);
        });

        it("is due at the lifetime deadline however recent the activity", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 600, maxLifetimeSeconds: 120 });
          await store.putLease(l);
          await store.touchLease(keyOf(l), t0 + 110 * SECOND);
          expect(await dueIn(ws, t0 + 2 * MINUTE - 1)).toEqual([]);
          expect(await dueIn(ws, t0 + 2 * MINUTE)).toEqual([l.sessionId]);
        });

        it("activity pushes the idle deadline out", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          await store.touchLease(keyOf(l), t0 + 50 * SECOND);
          expect(await dueIn(ws, t0 + 70 * SECOND)).toEqual([]);
          expect(await dueIn(ws, t0 + 110 * SECOND)).toEqual([l.sessionId]);
        });

        it("a call in flight (busyUntil) holds off the idle deadline, not the lifetime", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60, maxLifetimeSeconds: 600 });
          await store.putLease(l);
          await store.touchLease(keyOf(l), t0 + 10 * SECOND, { begin: t0 + 300 * SECOND });
          expect(await dueIn(ws, t0 + 200 * SECOND)).toEqual([]);
          expect(await dueIn(ws, t0 + 300 * SECOND)).toEqual([l.sessionId]);

          const long = lease(ws, { idleTimeoutSeconds: 60, maxLifetimeSeconds: 120 });
          await store.putLease(long);
          await store.touchLease(keyOf(long), t0 + SECOND, { begin: t0 + HOUR });
          expect(await dueIn(ws, t0 + 2 * MINUTE)).toContain(long.sessionId);
        });

        it("a busyUntil stored with the lease counts too", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60, busyUntil: t0 + 5 * MINUTE });
          await store.putLease(l);
          expect(await dueIn(ws, t0 + 4 * MINUTE)).toEqual([]);
          expect(await dueIn(ws, t0 + 5 * MINUTE)).toEqual([l.sessionId]);
        });

        it("a replaced lease is due by its new values", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          await store.putLease({ ...l, idleTimeoutSeconds: 600 });
          expect(await dueIn(ws, t0 + 2 * MINUTE)).toEqual([]);
        });

        it("lists only the due ones, each once, as keys", async () => {
          const ws = freshName("ws");
          const idle = lease(ws, { idleTimeoutSeconds: 60 });
          const old = lease(ws, { createdAt: t0 - 59 * MINUTE, lastActivityAt: t0 });
          const fresh = lease(ws, { idleTimeoutSeconds: 600 });
          for (const l of [idle, old, fresh]) await store.putLease(l);
          const due = (await store.dueLeases(t0 + 2 * MINUTE, 10_000)).filter((k) => k.workspace === ws);
          expect(due.map((k) => k.sessionId).sort()).toEqual([idle.sessionId, old.sessionId].sort());
          for (const key of due) expect(key).toEqual({ workspace: ws, sessionId: key.sessionId });
        });

        it("returns at most `limit` keys", async () => {
          const ws = freshName("ws");
          for (let i = 0; i < 5; i++) await store.putLease(lease(ws));
          expect(await store.dueLeases(t0 + HOUR, 2)).toHaveLength(2);
          expect((await dueIn(ws, t0 + HOUR)).length).toBe(5);
        });

        it("due leases stay stored until someone takes them", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          await store.dueLeases(t0 + HOUR, 10_000);
          expect(await store.getLease(keyOf(l))).toEqual(l);
        });
      });

      describe("calls in one step (beginCall, endCall)", () => {
        const budgetOf = (requestedMs: number, limitMs = 10 * SECOND) => ({
          day: "2026-12-01",
          requestedMs,
          limitMs,
        });

        it("begins a call: the lease, marked busy and touched, and the budget granted", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          const started = await store.beginCall(keyOf(l), {
            now: t0 + SECOND,
            busyUntil: t0 + 5 * MINUTE,
            budget: budgetOf(3 * SECOND),
          });
          expect(started).toEqual({
            outcome: "started",
            grantedMs: 3 * SECOND,
            lease: { ...l, lastActivityAt: t0 + SECOND, activeCalls: 1, busyUntil: t0 + 5 * MINUTE },
          });
          expect(await store.readBudget(ws, "2026-12-01")).toBe(3 * SECOND);
          // Busy: not due at its idle deadline, due at the call's.
          expect(await dueIn(ws, t0 + 2 * MINUTE)).toEqual([]);
          expect(await dueIn(ws, t0 + 5 * MINUTE)).toEqual([l.sessionId]);
        });

        it("cuts the reservation to what remains, and refuses (changing nothing) when nothing does", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          const start = (requestedMs: number) =>
            store.beginCall(keyOf(l), {
              now: t0 + SECOND,
              busyUntil: t0 + MINUTE,
              budget: budgetOf(requestedMs, 5 * SECOND),
            });
          expect(await start(4 * SECOND)).toMatchObject({ outcome: "started", grantedMs: 4 * SECOND });
          expect(await start(4 * SECOND)).toMatchObject({ outcome: "started", grantedMs: SECOND });
          expect(await start(1)).toEqual({ outcome: "budget_spent" });
          expect(await store.readBudget(ws, "2026-12-01")).toBe(5 * SECOND);
          expect((await store.getLease(keyOf(l)))?.activeCalls).toBe(2);
        });

        it("interleaved with takeLease, a call either began on the lease or found it gone, its budget with it", async () => {
          // Each pairing started in the same tick: on a store whose method awaited between its
          // read and its write, the take ran in between ("started" with no lease, budget kept).
          for (let round = 0; round < 20; round++) {
            const ws = freshName("ws");
            const l = lease(ws);
            await store.putLease(l);
            const [started, taken] = await Promise.all([
              store.beginCall(keyOf(l), { now: t0, busyUntil: t0 + MINUTE, budget: budgetOf(SECOND) }),
              store.takeLease(keyOf(l)),
            ]);
            expect(taken?.sessionId).toBe(l.sessionId);
            if (started.outcome === "started") {
              expect(started.lease.sessionId).toBe(l.sessionId);
              expect(await store.readBudget(ws, "2026-12-01")).toBe(SECOND);
            } else {
              expect(started).toEqual({ outcome: "gone" });
              expect(await store.readBudget(ws, "2026-12-01")).toBe(0);
            }
            const ended = await Promise.all([
              store.endCall(keyOf(l), { now: t0 + 1, refund: { day: "2026-12-01", milliseconds: SECOND } }),
              store.putLease(l),
            ]);
            expect(typeof ended[0]).toBe("boolean");
            expect(await store.readBudget(ws, "2026-12-01")).toBe(0);
          }
        });

        it("a call without a budget reserves nothing", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          const started = await store.beginCall(keyOf(l), { now: t0 + SECOND, busyUntil: t0 + MINUTE });
          expect(started).toMatchObject({ outcome: "started", grantedMs: 0 });
          expect(await store.readBudget(ws, "2026-12-01")).toBe(0);
        });

        it("finds nothing for an unknown or another workspace's session, and changes nothing", async () => {
          const [owner, other] = [freshName("ws"), freshName("ws")];
          const l = lease(owner);
          await store.putLease(l);
          for (const key of [
            { workspace: other, sessionId: l.sessionId },
            { workspace: owner, sessionId: freshName("sess") },
          ]) {
            expect(
              await store.beginCall(key, { now: t0, busyUntil: t0 + HOUR, budget: budgetOf(SECOND) }),
            ).toEqual({ outcome: "gone" });
            expect(await store.readBudget(key.workspace, "2026-12-01")).toBe(0);
            expect(await store.endCall(key, { now: t0 })).toBe(false);
          }
          expect(await store.getLease(keyOf(l))).toEqual(l);
          expect(await dueIn(other, t0 + 10 * HOUR)).toEqual([]);
        });

        it("says a session past its deadline is expired, reserving nothing", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          expect(
            await store.beginCall(keyOf(l), {
              now: t0 + MINUTE,
              busyUntil: t0 + HOUR,
              budget: budgetOf(SECOND),
            }),
          ).toEqual({ outcome: "expired" });
          expect(await store.readBudget(ws, "2026-12-01")).toBe(0);
          expect(await store.getLease(keyOf(l))).toEqual(l);
        });

        it("ends a call: refunds the unused time, touches, and frees the session once the last call ends", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { idleTimeoutSeconds: 60 });
          await store.putLease(l);
          const begin = () =>
            store.beginCall(keyOf(l), {
              now: t0 + SECOND,
              busyUntil: t0 + 5 * MINUTE,
              budget: budgetOf(2 * SECOND),
            });
          await begin();
          await begin();
          const refund = { day: "2026-12-01", milliseconds: 1_500 };
          expect(await store.endCall(keyOf(l), { now: t0 + 2 * SECOND, refund })).toBe(true);
          expect(await store.readBudget(ws, "2026-12-01")).toBe(2_500);
          expect(await store.getLease(keyOf(l))).toMatchObject({
            activeCalls: 1,
            busyUntil: t0 + 5 * MINUTE,
          });
          expect(await store.endCall(keyOf(l), { now: t0 + 3 * SECOND })).toBe(true);
          const ended = (await store.getLease(keyOf(l)))!;
          expect(ended).toMatchObject({ activeCalls: 0, lastActivityAt: t0 + 3 * SECOND });
          expect(ended.busyUntil).toBeUndefined();
          // Idle again: due a minute after the last activity.
          expect(await dueIn(ws, t0 + 3 * SECOND + MINUTE - 1)).toEqual([]);
          expect(await dueIn(ws, t0 + 3 * SECOND + MINUTE)).toEqual([l.sessionId]);
        });

        it("a refund never takes the day below zero, and is made even when the lease is gone", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          await store.beginCall(keyOf(l), { now: t0, busyUntil: t0 + MINUTE, budget: budgetOf(SECOND) });
          await store.takeLease(keyOf(l));
          const refund = { day: "2026-12-01", milliseconds: 5 * SECOND };
          expect(await store.endCall(keyOf(l), { now: t0 + SECOND, refund })).toBe(false);
          expect(await store.readBudget(ws, "2026-12-01")).toBe(0);
          expect(await store.getLease(keyOf(l))).toBeUndefined();
        });

        it("parallel begins together are granted no more than the budget", async () => {
          const ws = freshName("ws");
          const l = lease(ws);
          await store.putLease(l);
          const results = await Promise.all(
            Array.from({ length: 10 }, () =>
              store.beginCall(keyOf(l), { now: t0, busyUntil: t0 + MINUTE, budget: budgetOf(SECOND, 3_500) }),
            ),
          );
          const granted = results.map((r) => (r.outcome === "started" ? r.grantedMs : 0));
          expect(granted.reduce((a, b) => a + b, 0)).toBe(3_500);
          expect(results.filter((r) => r.outcome === "budget_spent")).toHaveLength(6);
          expect((await store.getLease(keyOf(l)))?.activeCalls).toBe(4);
        });
      });

      describe("quiet leases (automatic hibernation)", () => {
        /** quietLeases for the test's own workspaces (other tests may share the server), by cutoff. */
        const quietIn = async (cutoffs: Record<string, number | null>, latest = t0, limit = 100) => {
          const asked: string[] = [];
          const found = await store.quietLeases({
            latest,
            cutoff: async (workspace) => {
              if (!(workspace in cutoffs)) return null;
              asked.push(workspace);
              return cutoffs[workspace]!;
            },
            limit,
          });
          return {
            ids: found.filter((l) => l.workspace in cutoffs).map((l) => l.sessionId),
            leases: found.filter((l) => l.workspace in cutoffs),
            asked: asked.sort(),
          };
        };

        it("finds the running sessions quiet since their workspace's cutoff, oldest first", async () => {
          const [ws, other, never, busy] = [
            freshName("ws"),
            freshName("ws"),
            freshName("ws"),
            freshName("ws"),
          ];
          const oldest = lease(ws, { lastActivityAt: t0 - 50 * SECOND });
          const old = lease(ws, { lastActivityAt: t0 - 30 * SECOND });
          const recent = lease(ws, { lastActivityAt: t0 - 10 * SECOND });
          const fresh = lease(other, { lastActivityAt: t0 });
          for (const l of [recent, oldest, old, fresh, lease(never, { lastActivityAt: t0 - HOUR })]) {
            await store.putLease(l);
          }
          const found = await quietIn(
            { [ws]: t0 - 20 * SECOND, [other]: t0, [never]: null },
            t0 - 5 * SECOND,
          );
          expect(found.ids).toEqual([oldest.sessionId, old.sessionId]);
          expect(found.leases[0]).toEqual(oldest);
          // A workspace with nothing quiet since `latest` is not even asked for its cutoff.
          expect(found.asked).toEqual([never, ws].sort());
          // At most `limit` per workspace, the oldest.
          expect((await quietIn({ [ws]: t0 }, t0, 1)).ids).toEqual([oldest.sessionId]);
          // A call's deadline counts as activity: quiet only from then.
          await store.putLease(lease(busy, { lastActivityAt: t0 - HOUR, busyUntil: t0 + MINUTE }));
          expect((await quietIn({ [busy]: t0 })).ids).toEqual([]);
        });

        it("follows activity and calls: a call in flight is not quiet, its end is the new quiet start", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { lastActivityAt: t0 - MINUTE });
          await store.putLease(l);
          expect((await quietIn({ [ws]: t0 - 50 * SECOND })).ids).toEqual([l.sessionId]);
          expect(
            (await store.beginCall(keyOf(l), { now: t0 - 50 * SECOND, busyUntil: t0 + MINUTE })).outcome,
          ).toBe("started");
          expect((await quietIn({ [ws]: t0 })).ids).toEqual([]);
          await store.endCall(keyOf(l), { now: t0 - 40 * SECOND });
          expect((await quietIn({ [ws]: t0 - 45 * SECOND })).ids).toEqual([]);
          expect((await quietIn({ [ws]: t0 - 40 * SECOND })).ids).toEqual([l.sessionId]);
          await store.touchLease(keyOf(l), t0 - 20 * SECOND);
          expect((await quietIn({ [ws]: t0 - 30 * SECOND })).ids).toEqual([]);
          expect((await quietIn({ [ws]: t0 - 20 * SECOND })).ids).toEqual([l.sessionId]);
        });

        it("leaves out a session as it starts hibernating, takes it back as it runs again, and drops a taken one", async () => {
          const ws = freshName("ws");
          const l = lease(ws, { lastActivityAt: t0 - MINUTE });
          await store.putLease(l);
          const checkpoint = {
            kind: "files" as const,
            bytes: 0,
            sandboxId: l.sandbox.sandboxId,
            sandboxSessionId: l.sandbox.innerSessionId,
            pool: l.pool,
            hibernatedAt: t0,
          };
          const saving = { phase: "saving" as const, claimId: "c1", claimUntil: t0 + MINUTE, checkpoint };
          await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["running"],
            to: saving,
            requireIdle: true,
          });
          expect((await quietIn({ [ws]: t0 })).ids).toEqual([]);
          await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["saving"],
            claimId: "c1",
            to: { phase: "saved", checkpoint },
          });
          // Activity recorded on a hibernated session (a handle read) does not bring it back.
          await store.touchLease(keyOf(l), t0 - 30 * SECOND);
          expect((await quietIn({ [ws]: t0 })).ids).toEqual([]);
          await store.stepHibernation(keyOf(l), {
            now: t0,
            from: ["saved"],
            to: undefined,
            sandbox: record("default"),
          });
          expect((await quietIn({ [ws]: t0 - 30 * SECOND })).ids).toEqual([l.sessionId]);
          // A lease put hibernated (rebuilt from its usage records) is not quiet either.
          const rebuilt = lease(ws, {
            lastActivityAt: t0 - HOUR,
            hibernation: { phase: "saved", checkpoint },
          });
          await store.putLease(rebuilt);
          await store.takeLease(keyOf(l));
          expect((await quietIn({ [ws]: t0 })).ids).toEqual([]);
        });
      });

      it("lists every lease", async () => {
        const ws = freshName("ws");
        const leases = [lease(ws), lease(ws), lease(ws)];
        for (const l of leases) await store.putLease(l);
        const listed = (await store.listLeases()).filter((l) => l.workspace === ws);
        const bySession = (a: Lease, b: Lease) => a.sessionId.localeCompare(b.sessionId);
        expect(listed.sort(bySession)).toEqual([...leases].sort(bySession));
      });
    });

    describe("usage backlog", () => {
      const recordOf = (id: string, extra: Record<string, unknown> = {}) =>
        JSON.stringify({ eventId: id, sessionId: "s", kind: "exec", quantity: 1, occurredAt: t0, ...extra });
      const claimAll = (ws: string, token = "drainer-a", now = t0) =>
        store.claimUsage(ws, { token, max: 100, claimMs: MINUTE, now });

      it("keeps the records written with a lease, a call's end and a lease's take, in order", async () => {
        const ws = freshName("ws");
        const l = lease(ws);
        await store.putLease(l, recordOf("started"));
        await store.endCall(keyOf(l), { now: t0 + SECOND, usage: recordOf("call") });
        const ended = recordOf("ended", { kind: "session_ended", quantity: 0 });
        expect(await store.takeLease(keyOf(l), { record: ended, now: t0 + 5 * SECOND })).toBeDefined();
        // A second take finds nothing and appends nothing: one end record per session.
        expect(
          await store.takeLease(keyOf(l), { record: recordOf("again"), now: t0 + 6 * SECOND }),
        ).toBeUndefined();
        // A call's end is written whether its lease is there or not: the call was served.
        await store.endCall(keyOf(l), { now: t0 + 7 * SECOND, usage: recordOf("late-call") });
        await store.appendUsage(ws, [recordOf("cpu"), recordOf("memory")]);
        await store.flushCallEnds();
        const claimed = await claimAll(ws);
        expect(claimed.outcome).toBe("claimed");
        const records = claimed.outcome === "claimed" ? claimed.records.map((r) => JSON.parse(r)) : [];
        expect(records.map((r) => r.eventId)).toEqual([
          "started",
          "call",
          "ended",
          "late-call",
          "cpu",
          "memory",
        ]);
        // The end record gets the session's lifetime and its sandbox from the lease it took.
        expect(records[2]).toMatchObject({ quantity: 5 * SECOND, sandboxId: l.sandbox.sandboxId });
      });

      it("hands a claimed batch to its claimant until acknowledged, unchanged, and to no one else", async () => {
        const ws = freshName("ws");
        await store.appendUsage(ws, [recordOf("a"), recordOf("b")]);
        expect(await claimAll(ws)).toEqual({ outcome: "claimed", records: [recordOf("a"), recordOf("b")] });
        await store.appendUsage(ws, [recordOf("c")]);
        expect(await claimAll(ws, "drainer-b")).toEqual({ outcome: "busy" });
        // Claimed again (the write failed): the same batch, not what came since.
        expect(await claimAll(ws)).toEqual({ outcome: "claimed", records: [recordOf("a"), recordOf("b")] });
        expect(await store.ackUsage(ws, "drainer-b")).toBe(false);
        expect(await store.ackUsage(ws, "drainer-a")).toBe(true);
        expect(await claimAll(ws, "drainer-b")).toEqual({ outcome: "claimed", records: [recordOf("c")] });
        expect(await store.ackUsage(ws, "drainer-b")).toBe(true);
        expect(await claimAll(ws)).toEqual({ outcome: "claimed", records: [] });
      });

      it("gives a lapsed claim's batch, unchanged, to the next claimant", async () => {
        const ws = freshName("ws");
        await store.appendUsage(ws, [recordOf("a")]);
        expect(await store.claimUsage(ws, { token: "dead", max: 100, claimMs: 50, now: Date.now() })).toEqual(
          {
            outcome: "claimed",
            records: [recordOf("a")],
          },
        );
        await store.appendUsage(ws, [recordOf("b")]);
        await new Promise((resolve) => setTimeout(resolve, 80));
        expect(await claimAll(ws, "next", Date.now())).toEqual({
          outcome: "claimed",
          records: [recordOf("a")],
        });
        expect(await store.ackUsage(ws, "dead")).toBe(false);
        expect(await store.ackUsage(ws, "next")).toBe(true);
      });

      it("claims at most `max` records into a new batch", async () => {
        const ws = freshName("ws");
        await store.appendUsage(
          ws,
          ["1", "2", "3"].map((id) => recordOf(id)),
        );
        const first = await store.claimUsage(ws, { token: "d", max: 2, claimMs: MINUTE, now: t0 });
        expect(first).toEqual({ outcome: "claimed", records: [recordOf("1"), recordOf("2")] });
        await store.ackUsage(ws, "d");
        expect(await claimAll(ws, "d")).toEqual({ outcome: "claimed", records: [recordOf("3")] });
      });

      it("reports a workspace's backlog, its oldest record first, and lists the workspace while it waits", async () => {
        const ws = freshName("ws");
        expect(await store.usageBacklogSize(ws)).toEqual({ records: 0 });
        await store.appendUsage(ws, [recordOf("a"), recordOf("b")]);
        await claimAll(ws);
        await store.appendUsage(ws, [recordOf("c")]);
        expect(await store.usageBacklogSize(ws)).toEqual({ records: 3, oldest: recordOf("a") });
        await store.markUsageWaiting(ws, true);
        expect(await store.usageWorkspaces(Date.now())).toContain(ws);
        await store.ackUsage(ws, "drainer-a");
        await claimAll(ws);
        await store.ackUsage(ws, "drainer-a");
        await store.markUsageWaiting(ws, false);
        expect(await store.usageBacklogSize(ws)).toEqual({ records: 0 });
        expect(await store.usageWorkspaces(Date.now())).not.toContain(ws);
      });
    });

    describe("broadcast", () => {
      it("delivers a published message to every subscriber of the channel", async () => {
        const channel = freshName("chan");
        const first: string[] = [];
        const second: string[] = [];
        await store.subscribe(channel, (m) => first.push(m));
        await store.subscribe(channel, (m) => second.push(m));
        await store.publish(channel, "ws-1");
        await vi.waitFor(() => {
          expect(first).toEqual(["ws-1"]);
          expect(second).toEqual(["ws-1"]);
        });
      });

      it("delivers messages in the order published, empty ones included", async () => {
        const channel = freshName("chan");
        const got: string[] = [];
        await store.subscribe(channel, (m) => got.push(m));
        for (const m of ["a", "", "c"]) await store.publish(channel, m);
        await vi.waitFor(() => expect(got).toEqual(["a", "", "c"]));
      });

      it("does not deliver another channel's messages", async () => {
        const [mine, theirs] = [freshName("chan"), freshName("chan")];
        const got: string[] = [];
        await store.subscribe(mine, (m) => got.push(`mine:${m}`));
        await store.publish(theirs, "not for you");
        await store.publish(mine, "for you");
        await vi.waitFor(() => expect(got).toContain("mine:for you"));
        expect(got).toEqual(["mine:for you"]);
      });

      it("publishing to a channel nobody listens on is harmless", async () => {
        await expect(store.publish(freshName("chan"), "x")).resolves.toBeUndefined();
      });
    });
  });
}
