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

  /** Resolves to which of `waits` have resolved so far, after `ms`. */
  async function settledAfter(ms: number, waits: Promise<void>[]): Promise<boolean[]> {
    const done = waits.map(() => false);
    for (const [i, wait] of waits.entries()) {
      void wait.then(() => {
        done[i] = true;
      });
    }
    await new Promise((resolve) => setTimeout(resolve, ms));
    return done;
  }
  const LONG = { pollMs: 10_000, maxWaitMs: 10_000 };

  /** A gate of one start at a time: two waiters queue behind its start, whose end wakes the first. */
  async function firstOfTwoWoken() {
    const gate = new StartGate(engine(1));
    const end = gate.began("a");
    const [t1, t2] = [gate.ticket(), gate.ticket()];
    const first = gate.waitForTurn("a", t1, LONG);
    const second = gate.waitForTurn("a", t2, LONG);
    end();
    await first;
    return { gate, t1, t2, second };
  }

  it("a start's end wakes only the longest-waiting lease, and a served one passes the turn on", async () => {
    const gate = new StartGate(engine(1));
    const end = gate.began("a");
    const [t1, t2, t3] = [gate.ticket(), gate.ticket(), gate.ticket()];
    // Out of order on purpose: the ticket, not the call, decides the place.
    const waits = [
      gate.waitForTurn("a", t2, LONG),
      gate.waitForTurn("a", t1, LONG),
      gate.waitForTurn("a", t3, LONG),
    ];
    end();
    expect(await settledAfter(20, waits)).toEqual([false, true, false]);
    gate.passOn("a");
    expect(await settledAfter(20, waits)).toEqual([true, true, false]);
    gate.passOn("a");
    expect(await settledAfter(20, waits)).toEqual([true, true, true]);
  });

  it("lets the woken waiter start, not a newcomer, while others wait", async () => {
    const { gate, t1, t2, second } = await firstOfTwoWoken();
    expect(gate.mayStart("a")).toBe(false); // a newcomer queues behind the second
    expect(gate.mayStart("a", t2)).toBe(false); // the second's turn has not come
    expect(gate.mayStart("a", t1)).toBe(true);
    gate.passOn("a");
    await second;
    expect(gate.mayStart("a")).toBe(true);
  });

  it("a waiter that waits again keeps its place ahead of later ones", async () => {
    const gate = new StartGate(engine(1));
    const end = gate.began("a");
    const [t1, t2] = [gate.ticket(), gate.ticket()];
    const later = gate.waitForTurn("a", t2, LONG);
    await (async () => {
      const first = gate.waitForTurn("a", t1, LONG);
      gate.passOn("a");
      await first;
    })();
    const again = gate.waitForTurn("a", t1, LONG);
    end();
    expect(await settledAfter(20, [again, later])).toEqual([true, false]);
    gate.passOn("a");
    await later;
  });

  it("only the longest-waiting lease polls (for other replicas' starts); every waiter gives up at its deadline", async () => {
    const gate = new StartGate(engine(1));
    gate.began("a");
    const started = performance.now();
    const first = gate.waitForTurn("a", gate.ticket(), { pollMs: 40, maxWaitMs: 10_000 });
    const second = gate.waitForTurn("a", gate.ticket(), { pollMs: 10_000, maxWaitMs: 10_000 });
    const third = gate.waitForTurn("a", gate.ticket(), { pollMs: 10_000, maxWaitMs: 60 });
    expect(await settledAfter(45, [first, second, third])).toEqual([true, false, false]);
    await third;
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    expect(await settledAfter(20, [second])).toEqual([false]);
  });

  it("gives turns round the workspaces: another tenant's lease is not served after a whole burst", async () => {
    const gate = new StartGate(engine(1));
    const end = () => gate.began("a")();
    gate.began("a");
    const burst = [1, 2, 3].map(() => gate.waitForTurn("a", gate.ticket(), { key: "tenant-a", ...LONG }));
    const other = gate.waitForTurn("a", gate.ticket(), { key: "tenant-b", ...LONG });
    const waits = [...burst, other];
    end();
    expect(await settledAfter(10, waits)).toEqual([true, false, false, false]);
    end();
    expect(await settledAfter(10, waits)).toEqual([true, false, false, true]);
    end();
    expect(await settledAfter(10, waits)).toEqual([true, true, false, true]);
    gate.passOn("a");
    await Promise.all(waits);
  });

  it("a given turn lets its waiter start until it leaves; a newcomer waits while others do", async () => {
    const { gate, t1, second } = await firstOfTwoWoken();
    expect(gate.mayStart("a", t1)).toBe(true);
    gate.leave("a", t1);
    expect(gate.mayStart("a", t1)).toBe(false);
    gate.passOn("a");
    await second;
  });
});
