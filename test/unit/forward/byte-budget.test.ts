import { describe, expect, it } from "vitest";
import { ByteBudget } from "../../../src/forward/byte-budget.js";

const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe("ByteBudget", () => {
  it("grants at once within the budget and takes the bytes back on release", async () => {
    const budget = new ByteBudget(100);
    const release = await budget.reserve(60);
    expect(budget.reservedBytes).toBe(60);
    release();
    release(); // twice is harmless
    expect(budget.reservedBytes).toBe(0);
  });

  it("makes a read wait while the budget is spent, then grants in arrival order", async () => {
    const budget = new ByteBudget(100);
    const first = await budget.reserve(80);
    const second = budget.reserve(30);
    const third = budget.reserve(10);
    expect(await settled(second)).toBe(false);
    // First come, first served: the small third read does not overtake the second.
    expect(await settled(third)).toBe(false);
    first();
    expect(await settled(second)).toBe(true);
    expect(await settled(third)).toBe(true);
    expect(budget.reservedBytes).toBe(40);
  });

  it("lets a read larger than the whole budget through once everything else is back", async () => {
    const budget = new ByteBudget(100);
    const small = await budget.reserve(1);
    const huge = budget.reserve(1_000);
    expect(await settled(huge)).toBe(false);
    small();
    (await huge)();
    expect(budget.reservedBytes).toBe(0);
  });

  it("gives up a wait past its timeout with a 503, letting smaller waiters behind it through", async () => {
    const budget = new ByteBudget(100);
    const stalled = await budget.reserve(50); // a holder that never gives its bytes back
    const huge = budget.reserve(100, 30);
    const small = budget.reserve(40);
    expect(await settled(small)).toBe(false); // first come, first served: behind the huge one
    await expect(huge).rejects.toMatchObject({ code: "capacity.exhausted", status: 503 });
    expect(await settled(small)).toBe(true);
    expect(budget.reservedBytes).toBe(90);
    stalled();
    (await small)();
    expect(budget.reservedBytes).toBe(0);
  });
});
