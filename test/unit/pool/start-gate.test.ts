/**
 * The start gate: a lease starts a sandbox only while the engine absorbs another start, and a
 * lease that waits is woken by the next start's end (or its poll), whichever comes first.
 */
import { describe, expect, it } from "vitest";
import { BURST_STARTS_MAX, StartGate } from "../../../src/pool/start-gate.js";

const engine = (absorbs: number | undefined) => ({
  concurrency: (configured: number) => Math.min(configured, absorbs ?? configured),
});

describe("StartGate", () => {
  it("lets starts in up to what the engine absorbs, per pool", () => {
    const gate = new StartGate(engine(3));
    const ends = [gate.began("a"), gate.began("a")];
    expect(gate.mayStart("a")).toBe(true);
    ends.push(gate.began("a"));
    expect(gate.count("a")).toBe(3);
    expect(gate.mayStart("a")).toBe(false);
    expect(gate.mayStart("b")).toBe(true);
    ends[0]!();
    ends[0]!(); // a second call of the same end changes nothing
    expect(gate.count("a")).toBe(2);
    expect(gate.mayStart("a")).toBe(true);
  });

  it("before the engine's rate is known, holds to BURST_STARTS_MAX", () => {
    const gate = new StartGate(engine(undefined));
    for (let i = 0; i < BURST_STARTS_MAX; i++) gate.began("a");
    expect(gate.mayStart("a")).toBe(false);
  });

  it("wakes every waiter at the next start's end, long before the poll", async () => {
    const gate = new StartGate(engine(1));
    const end = gate.began("a");
    const started = performance.now();
    const waiters = Promise.all([gate.waitForNextEnd("a", 10_000), gate.waitForNextEnd("a", 10_000)]);
    setTimeout(end, 20);
    await waiters;
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(gate.mayStart("a")).toBe(true);
  });

  it("gives up waiting after the poll when nothing ends here (another replica's start may have)", async () => {
    const gate = new StartGate(engine(1));
    gate.began("a");
    const started = performance.now();
    await gate.waitForNextEnd("a", 30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });
});
