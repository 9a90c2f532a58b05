/**
 * A lease that finds its workspace's sandboxes all being scrubbed waits for one
 * (src/pool/recycles-in-flight.ts, SandboxReuse.waitForRecycle) instead of cold-starting:
 * woken when one ends, at once false when none is under way, never past its bound, and never
 * for another workspace's or another pool's scrub.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { RecyclesInFlight } from "../../../src/pool/recycles-in-flight.js";
import { SandboxReuse } from "../../../src/pool/sandbox-reuse.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";

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
    const record = {
      sandboxId: "sb",
      pool: "p",
      endpoint: "unix:/s",
      runtimeId: "0:c",
      innerSessionId: "i",
      createdAt: 1_000,
    };
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
