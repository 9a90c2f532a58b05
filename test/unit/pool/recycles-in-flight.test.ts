/**
 * A lease that finds its workspace's sandboxes all being scrubbed waits for one
 * (src/pool/recycles-in-flight.ts, SandboxReuse.waitForRecycle) instead of cold-starting:
 * woken when one ends, at once false when none is under way, never past its bound, and never
 * for another workspace's or another pool's scrub.
 */
import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { RecyclesInFlight } from "../../../src/pool/recycles-in-flight.js";
import { EXPECTED_RECYCLE_MS, SandboxReuse } from "../../../src/pool/sandbox-reuse.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";

/** A sandbox of pool "p", fresh (no owner yet). */
const record = {
  sandboxId: "sb",
  pool: "p",
  endpoint: "unix:/s",
  runtimeId: "0:c",
  innerSessionId: "i",
  createdAt: 1_000,
};

describe("RecyclesInFlight", () => {
  it("wakes a waiter when one of its workspace's recycles ends, and only then", async () => {
    const recycles = new RecyclesInFlight();
    const end = recycles.begin("p", "a");
    const other = recycles.begin("p", "b");
    const elsewhere = recycles.begin("q", "a");
    let woken = false;
    const waiting = recycles.waitForOne("p", "a", 5_000).then((result) => {
      woken = true;
      return result;
    });
    other();
    elsewhere();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woken).toBe(false);
    end();
    expect(await waiting).toBe(true);
    expect(recycles.count("p", "a")).toBe(0);
  });

  it("answers false at once when none is under way, and after its bound otherwise", async () => {
    const recycles = new RecyclesInFlight();
    expect(await recycles.waitForOne("p", "a", 5_000)).toBe(false);
    const end = recycles.begin("p", "a");
    const started = Date.now();
    expect(await recycles.waitForOne("p", "a", 50)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(await recycles.waitForOne("p", "a", 0)).toBe(false);
    end();
    end(); // twice is once
    expect(recycles.count("p", "a")).toBe(0);
  });
});

describe("SandboxReuse.waitForRecycle", () => {
  it("is woken once the scrubbed sandbox is parked, so the lease that looks again takes it", async () => {
    const store = new MemoryCoordinationStore();
    let finishScrub: (id: string) => void = () => {};
    const reuse = new SandboxReuse({
      store,
      runtime: { recyclable: true },
      client: { recycleSandbox: () => new Promise<string>((resolve) => (finishScrub = resolve)) },
      log: pino({ level: "silent" }),
      now: () => 1_000,
    });
    await store.addMember("p", "sb", 10, 61_000, 1_000);
    const parking = reuse.park(record, "team-a");
    expect(await reuse.waitForRecycle("p", "team-b", 1_000)).toBe(false);
    const waiting = reuse.waitForRecycle("p", "team-a", 5_000);
    await new Promise((resolve) => setTimeout(resolve, 10));
    finishScrub("next");
    expect(await waiting).toBe(true);
    expect(await parking).toBe(true);
    expect(await store.leaseIdle("p", { workspace: "team-a", until: 2_000, now: 1_000 })).toMatchObject({
      sandboxId: "sb",
      owner: "team-a",
    });
  });
});

describe("SandboxReuse.expect (a session's end announcing its sandbox's scrub)", () => {
  function reuseWith(scrub: () => Promise<string>) {
    const store = new MemoryCoordinationStore();
    const reuse = new SandboxReuse({
      store,
      runtime: { recyclable: true },
      client: { recycleSandbox: scrub },
      log: pino({ level: "silent" }),
      now: () => 1_000,
    });
    return { store, reuse };
  }

  it("counts the scrub from the end, before the settle job begins it, and once through the park", async () => {
    let finishScrub: (id: string) => void = () => {};
    const { store, reuse } = reuseWith(() => new Promise<string>((resolve) => (finishScrub = resolve)));
    await store.addMember("p", "sb", 10, 61_000, 1_000);
    expect(reuse.recyclingFor("p", "team-a")).toBe(false);
    reuse.expect(record, "team-a");
    reuse.expect(record, "team-a"); // said twice, counted once
    expect(reuse.recyclingFor("p", "team-a")).toBe(true);
    expect(reuse.recyclingFor("p", "team-b")).toBe(false);
    const waiting = reuse.waitForRecycle("p", "team-a", 5_000);
    // The settle job takes the announced scrub up: the count does not double, and the waiter
    // wakes only once the sandbox is parked.
    const parking = reuse.park(record, "team-a");
    let woken = false;
    void waiting.then(() => (woken = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(woken).toBe(false);
    finishScrub("next");
    expect(await waiting).toBe(true);
    expect(await parking).toBe(true);
    expect(reuse.recyclingFor("p", "team-a")).toBe(false);
  });

  it("ends the count when the sandbox may not be reused after all", async () => {
    const { reuse } = reuseWith(async () => "next");
    reuse.expect(record, "team-a");
    expect(await reuse.park({ ...record, neverReuse: true }, "team-a")).toBe(false);
    expect(reuse.recyclingFor("p", "team-a")).toBe(false);
    // Nor is one that may never be reused announced at all.
    reuse.expect({ ...record, neverReuse: true }, "team-a");
    expect(reuse.recyclingFor("p", "team-a")).toBe(false);
  });

  it("lapses when no settle job takes it up here (the job ran on another replica)", async () => {
    vi.useFakeTimers();
    try {
      const { reuse } = reuseWith(async () => "next");
      reuse.expect(record, "team-a");
      vi.advanceTimersByTime(EXPECTED_RECYCLE_MS - 1);
      expect(reuse.recyclingFor("p", "team-a")).toBe(true);
      vi.advanceTimersByTime(1);
      expect(reuse.recyclingFor("p", "team-a")).toBe(false);
      // A later end of the same sandbox is announced afresh.
      reuse.expect(record, "team-a");
      expect(reuse.recyclingFor("p", "team-a")).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
