import { describe, expect, it } from "vitest";
import { PendingWork } from "../../../src/deferred/pending-work.js";

describe("PendingWork", () => {
  it("drains only once everything tracked has finished, failures included", async () => {
    const pending = new PendingWork();
    let finish!: () => void;
    pending.track(new Promise<void>((resolve) => (finish = resolve)));
    pending.track(Promise.reject(new Error("reported by the work itself")));
    let drained = false;
    const draining = pending.drained().then(() => (drained = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(drained).toBe(false);
    finish();
    await draining;
    expect(drained).toBe(true);
    expect(pending.size).toBe(0);
  });
});
