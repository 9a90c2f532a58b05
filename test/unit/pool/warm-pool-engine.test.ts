/**
 * The warm-pool engine on its own (src/pool/warm-pool-engine.ts), around a stand-in idle set:
 * the deficit it starts and how many at once, one warm-up per pool, a failing image's
 * back-off (warm-up waits it out, a lease's start waits for it or is refused), and a
 * promised start taking a parked sandbox's place at the cap. serve's pools and a node's use
 * it through test/unit/pool/pool-warmup.test.ts and test/unit/roles/node/.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { BURST_STARTS_MAX } from "../../../src/pool/start-gate.js";
import { type IdleSet, type WarmPool, WarmPoolEngine } from "../../../src/pool/warm-pool-engine.js";
import { WarmupLimiter } from "../../../src/pool/warmup-limiter.js";

const POOL: WarmPool = { name: "p", warmupConcurrency: 2, coldStartTimeoutMs: 1_000 };

/** An idle set in memory whose starts end when the test says so. */
function standInSet(engine: WarmPoolEngine, sizes: { min: number; max: number }) {
  const state = { idle: 0, starting: 0, parked: 0, evicted: 0, fail: false, startsBegun: 0 };
  const waiting: (() => void)[] = [];
  const set: IdleSet<number> = {
    look: () => ({ idle: state.idle, starting: state.starting }),
    target: () => ({ wanted: sizes.min + engine.wantingOf(POOL.name), promised: sizes.min }),
    start: async () => {
      if (state.idle + state.starting + state.parked >= sizes.max) return undefined;
      state.starting += 1;
      state.startsBegun += 1;
      try {
        return await engine.measured(POOL, async () => {
          await new Promise<void>((resolve) => waiting.push(resolve));
          if (state.fail) throw new Error("no such image");
          return state.startsBegun;
        });
      } finally {
        state.starting -= 1;
      }
    },
    keep: () => {
      state.idle += 1;
      return true;
    },
    evictParked: async () => {
      if (state.parked === 0) return false;
      state.parked -= 1;
      state.evicted += 1;
      return true;
    },
  };
  const settle = async () => {
    for (let round = 0; round < 20; round++) await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    set,
    state,
    settle,
    async release() {
      for (let round = 0; round < 20; round++) {
        while (waiting.length > 0) waiting.shift()!();
        await settle();
      }
    },
  };
}

function quietLog() {
  const errors: string[] = [];
  const log = pino(
    { level: "error" },
    {
      write: (line: string) => errors.push((JSON.parse(line) as { msg: string }).msg),
    },
  );
  return { errors, log };
}

describe("the warm-pool engine", () => {
  it("starts what the idle set lacks, no more at once than the pool's warm-up concurrency, one warm-up at a time", async () => {
    const engine = new WarmPoolEngine({ log: quietLog().log });
    const stand = standInSet(engine, { min: 3, max: 10 });
    const warming = engine.warm(POOL, stand.set);
    await engine.warm(POOL, stand.set); // a second call wakes the first and returns at once
    await stand.settle();
    expect(stand.state.starting).toBe(2);
    await stand.release();
    await warming;
    expect(stand.state.idle).toBe(3);
    expect(stand.state.startsBegun).toBe(3);
  });

  it("keeps to the machine's share across pools", async () => {
    const engine = new WarmPoolEngine({ log: quietLog().log, limiter: new WarmupLimiter(1) });
    const stand = standInSet(engine, { min: 3, max: 10 });
    const warming = engine.warm(POOL, stand.set);
    await stand.settle();
    expect(stand.state.starting).toBe(1);
    await stand.release();
    await warming;
    expect(stand.state.idle).toBe(3);
  });

  it("backs a failing image off: one log line per step, no warm-up during the wait, reset by a success", async () => {
    let clock = 0;
    const { log, errors } = quietLog();
    const failures: string[] = [];
    const engine = new WarmPoolEngine({
      log,
      now: () => clock,
      onStartFailure: (name) => failures.push(name),
    });
    const stand = standInSet(engine, { min: 2, max: 10 });
    stand.state.fail = true;
    const warming = engine.warm(POOL, stand.set);
    await stand.release();
    await warming;
    // Two starts failed together: one step, one line; the run stopped.
    expect(failures).toEqual(["p", "p"]);
    expect(errors).toEqual(["sandbox start failed; starts back off"]);
    expect(engine.mayWarm(POOL.name)).toBe(false);
    clock = 500;
    await engine.warm(POOL, stand.set);
    expect(stand.state.startsBegun).toBe(2);
    clock = 1_000;
    stand.state.fail = false;
    const again = engine.warm(POOL, stand.set);
    await stand.release();
    await again;
    expect(stand.state.idle).toBe(2);
    expect(engine.backoffOf(POOL.name).lastFailure).toBeUndefined();
  });

  it("waits for the deployment's back-off too", async () => {
    const engine = new WarmPoolEngine({
      log: quietLog().log,
      now: () => 5_000,
      sharedFailure: () => ({ message: "x", at: 4_000, nextAttemptAt: 8_000, consecutiveFailures: 3 }),
    });
    const stand = standInSet(engine, { min: 1, max: 10 });
    await engine.warm(POOL, stand.set);
    expect(stand.state.startsBegun).toBe(0);
  });

  it("at the cap, a start the pool promised takes a parked sandbox's place; one it did not stops", async () => {
    const engine = new WarmPoolEngine({ log: quietLog().log });
    const stand = standInSet(engine, { min: 1, max: 2 });
    stand.state.parked = 2;
    const warming = engine.warm(POOL, stand.set);
    await stand.release();
    await warming;
    expect(stand.state).toMatchObject({ evicted: 1, parked: 1, idle: 1 });
    // A lease waiting elsewhere wants one more: it takes only a free place.
    await engine.whileWanting(POOL, stand.set, async () => {
      await stand.settle();
      expect(stand.state.starting).toBe(0);
    });
    expect(stand.state).toMatchObject({ evicted: 1, parked: 1, idle: 1 });
  });

  it("lets a lease's start wait out the back-off, and refuses one whose wait would pass its deadline", async () => {
    const engine = new WarmPoolEngine({ log: quietLog().log });
    await expect(
      engine.startInTurn(POOL, "", async () => {
        throw new Error("no such image");
      }),
    ).rejects.toMatchObject({ code: "capacity.exhausted" });
    const began = Date.now();
    expect(await engine.startInTurn(POOL, "", async () => "started")).toBe("started");
    expect(Date.now() - began).toBeGreaterThanOrEqual(900);
    // Failing again: the next try is 1 s away, past a lease's deadline of half a second.
    await expect(engine.startInTurn(POOL, "", async () => Promise.reject(new Error("x")))).rejects.toThrow();
    const hurried = { ...POOL, coldStartTimeoutMs: 500 };
    await expect(engine.startInTurn(hurried, " on this node", async () => "never")).rejects.toThrow(
      "starts on this node did not keep up",
    );
  });

  it("lets a lease wait its turn at the gate past the cold-start deadline, up to startQueueTimeoutMs", async () => {
    /** A fresh engine whose gate is full of starts held until `end()`, and one lease queued behind them. */
    const queuedBehindBurst = (pool: WarmPool) => {
      const engine = new WarmPoolEngine({ log: quietLog().log });
      const holding: (() => void)[] = [];
      const burst = Array.from({ length: BURST_STARTS_MAX }, () =>
        engine.startInTurn(
          pool,
          " on this node",
          () => new Promise<string>((resolve) => holding.push(() => resolve("held"))),
        ),
      );
      const queued = engine
        .startInTurn(pool, " on this node", async () => "queued")
        .catch((error: Error) => error.message);
      return { queued, end: () => Promise.all(holding.map((end) => end())).then(() => Promise.all(burst)) };
    };
    const patient = queuedBehindBurst({ ...POOL, coldStartTimeoutMs: 100, startQueueTimeoutMs: 5_000 });
    const impatient = queuedBehindBurst({ ...POOL, coldStartTimeoutMs: 60_000, startQueueTimeoutMs: 150 });
    // Three cold-start deadlines of the patient pool pass while the burst holds its gate.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await Promise.all([patient.end(), impatient.end()]);
    expect(await patient.queued).toBe("queued");
    expect(await impatient.queued).toMatch(/starts on this node did not keep up: .*startQueueTimeoutMs/);
  });
});
