/**
 * The pool-count exchange every coordination store implements (pool-demand-exchange.ts):
 * additions sum, a replica's delta of zero reads the totals, the refill window keeps the
 * newest, a newer failure replaces an older one and a later success clears it, pools apart.
 */
import { describe, expect, it } from "vitest";
import type {
  PoolDemandDelta,
  PoolDemandExchange,
} from "../../src/store/coordination/pool-demand-exchange.js";
import { freshName } from "./coordination-store-suite.js";

const nothing: PoolDemandDelta = { warmLeases: 0, coldLeases: 0, warmupFailures: 0, refillMs: [] };

export function describePoolDemandExchange(name: string, open: () => Promise<PoolDemandExchange[]>): void {
  describe(`pool demand exchange: ${name}`, () => {
    it("starts at zero and sums what every replica adds", async () => {
      const [one, two] = await open();
      const pool = freshName("pool");
      expect(await one!.exchangePoolDemand(pool, nothing, 10)).toEqual({
        warmLeases: 0,
        coldLeases: 0,
        warmupFailures: 0,
        refillMs: [],
        startFailure: null,
      });
      await one!.exchangePoolDemand(pool, { ...nothing, warmLeases: 3, coldLeases: 1 }, 10);
      const after = await two!.exchangePoolDemand(pool, { ...nothing, warmLeases: 2, warmupFailures: 4 }, 10);
      expect(after).toMatchObject({ warmLeases: 5, coldLeases: 1, warmupFailures: 4 });
      expect(await one!.exchangePoolDemand(pool, nothing, 10)).toMatchObject({
        warmLeases: 5,
        coldLeases: 1,
        warmupFailures: 4,
      });
    });

    it("keeps the newest refill times, newest first, at most the window", async () => {
      const [one, two] = await open();
      const pool = freshName("pool");
      await one!.exchangePoolDemand(pool, { ...nothing, refillMs: [100, 200, 300] }, 4);
      const totals = await two!.exchangePoolDemand(pool, { ...nothing, refillMs: [400.4, 500] }, 4);
      expect(totals.refillMs).toEqual([500, 400, 300, 200]);
      expect((await one!.exchangePoolDemand(pool, nothing, 2)).refillMs).toEqual([500, 400]);
    });

    it("keeps the newest start failure until a later success", async () => {
      const [one, two] = await open();
      const pool = freshName("pool");
      const failure = { message: "no such image", at: 2_000, nextAttemptAt: 3_000, consecutiveFailures: 1 };
      await one!.exchangePoolDemand(pool, { ...nothing, startFailure: failure }, 10);
      // An older failure sent late changes nothing.
      const older = { ...failure, message: "older", at: 1_000 };
      expect(
        (await two!.exchangePoolDemand(pool, { ...nothing, startFailure: older }, 10)).startFailure,
      ).toEqual(failure);
      // A success before the failure does not clear it; one after does.
      expect(
        (await two!.exchangePoolDemand(pool, { ...nothing, startSucceededAt: 1_500 }, 10)).startFailure,
      ).toEqual(failure);
      expect(
        (await two!.exchangePoolDemand(pool, { ...nothing, startSucceededAt: 2_500 }, 10)).startFailure,
      ).toBeNull();
      // Failing again later: shown again.
      const later = { ...failure, message: "disk full", at: 4_000, consecutiveFailures: 2 };
      expect(
        (await one!.exchangePoolDemand(pool, { ...nothing, startFailure: later }, 10)).startFailure,
      ).toEqual(later);
    });

    it("keeps pools apart", async () => {
      const [one] = await open();
      const a = freshName("pool");
      const b = freshName("pool");
      await one!.exchangePoolDemand(a, { ...nothing, warmLeases: 7, refillMs: [10] }, 10);
      expect(await one!.exchangePoolDemand(b, nothing, 10)).toMatchObject({ warmLeases: 0, refillMs: [] });
    });
  });
}
