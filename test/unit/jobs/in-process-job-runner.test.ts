import type { Logger } from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { InProcessJobRunner } from "../../../src/jobs/in-process-job-runner.js";

function fakeLog() {
  const log = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() };
  return { log, logger: log as unknown as Logger };
}

/** A promise with its resolve/reject outside, for handlers the test finishes by hand. */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run (no timers move). */
async function settle() {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

/** Whether `promise` settles without any timer moving. */
async function settlesNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await settle();
  return settled;
}

describe("InProcessJobRunner", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe("one-off jobs", () => {
    it("runs the handler with the payload", async () => {
      const { logger } = fakeLog();
      const runner = new InProcessJobRunner(logger);
      const handler = vi.fn(async (_payload: { id: number }) => {});
      runner.register("job", handler);
      await runner.enqueue("job", { id: 7 });
      await settle();
      expect(handler).toHaveBeenCalledExactlyOnceWith({ id: 7 });
      await runner.close();
    });

    it("refuses a job name nobody registered", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      await expect(runner.enqueue("nope", {})).rejects.toThrow("nope");
    });

    it("retries a failed job after the back-off, doubling it each time, until it succeeds", async () => {
      const { log, logger } = fakeLog();
      const runner = new InProcessJobRunner(logger);
      const calls: number[] = [];
      let failures = 3;
      runner.register(
        "job",
        async () => {
          calls.push(Date.now());
          if (failures-- > 0) throw new Error("transient");
        },
        { attempts: 5, backoffMs: 100 },
      );
      const start = Date.now();
      await runner.enqueue("job", null);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(calls.map((t) => t - start)).toEqual([0, 100, 300, 700]);
      expect(log.warn).toHaveBeenCalledTimes(3);
      expect(log.warn.mock.calls.map((call) => call[0].attempt)).toEqual([1, 2, 3]);
      expect(log.error).not.toHaveBeenCalled();
      await runner.close();
    });

    it("gives up after `attempts` tries: logs it once as an error and stops", async () => {
      const { log, logger } = fakeLog();
      const runner = new InProcessJobRunner(logger);
      const handler = vi.fn(async () => {
        throw new Error("permanent");
      });
      runner.register("job", handler, { attempts: 3, backoffMs: 10 });
      await runner.enqueue("job", { id: 1 });
      await vi.advanceTimersByTimeAsync(10_000);
      expect(handler).toHaveBeenCalledTimes(3);
      expect(log.warn).toHaveBeenCalledTimes(2);
      expect(log.error).toHaveBeenCalledTimes(1);
      expect(log.error.mock.calls[0]![0]).toMatchObject({ job: "job", attempt: 3 });
      expect(log.error.mock.calls[0]![0].err.message).toBe("permanent");
      await vi.advanceTimersByTimeAsync(60_000);
      expect(handler).toHaveBeenCalledTimes(3);
      await runner.close();
    });

    it("uses the defaults of 5 attempts from 500 ms", async () => {
      const { logger } = fakeLog();
      const runner = new InProcessJobRunner(logger);
      const calls: number[] = [];
      runner.register("job", async () => {
        calls.push(Date.now());
        throw new Error("x");
      });
      const start = Date.now();
      await runner.enqueue("job", null);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(calls.map((t) => t - start)).toEqual([0, 500, 1_500, 3_500, 7_500]);
      await runner.close();
    });

    it("runs jobs side by side", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      const gates = [deferred(), deferred()];
      const started: number[] = [];
      runner.register<number>("job", async (n) => {
        started.push(n);
        await gates[n]!.promise;
      });
      await runner.enqueue("job", 0);
      await runner.enqueue("job", 1);
      await settle();
      expect(started).toEqual([0, 1]);
      for (const gate of gates) gate.resolve();
      await runner.close();
    });
  });

  describe("schedules", () => {
    it("runs a scheduled job every interval once started", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      const handler = vi.fn(async () => {});
      runner.register("tick", handler);
      runner.schedule("tick", 1_000);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(handler).not.toHaveBeenCalled();
      await runner.start();
      await vi.advanceTimersByTimeAsync(3_500);
      expect(handler).toHaveBeenCalledTimes(3);
      expect(handler).toHaveBeenCalledWith(undefined);
      await runner.close();
    });

    it("never overlaps two runs of one schedule: ticks during a slow run are skipped", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      let running = 0;
      let most = 0;
      let runs = 0;
      const gates: ReturnType<typeof deferred>[] = [];
      runner.register("slow", async () => {
        runs++;
        running++;
        most = Math.max(most, running);
        const gate = deferred();
        gates.push(gate);
        await gate.promise;
        running--;
      });
      runner.schedule("slow", 100);
      await runner.start();
      await vi.advanceTimersByTimeAsync(1_050);
      expect(runs).toBe(1);
      gates[0]!.resolve();
      await vi.advanceTimersByTimeAsync(100);
      expect(runs).toBe(2);
      gates[1]!.resolve();
      await vi.advanceTimersByTimeAsync(100);
      expect(runs).toBe(3);
      expect(most).toBe(1);
      gates[2]!.resolve();
      await runner.close();
    });

    it("a failing run is logged and the schedule goes on", async () => {
      const { log, logger } = fakeLog();
      const runner = new InProcessJobRunner(logger);
      const handler = vi.fn(async () => {
        throw new Error("boom");
      });
      runner.register("tick", handler);
      runner.schedule("tick", 100);
      await runner.start();
      await vi.advanceTimersByTimeAsync(350);
      expect(handler).toHaveBeenCalledTimes(3);
      expect(log.error).toHaveBeenCalledTimes(3);
      expect(log.error.mock.calls[0]![0]).toMatchObject({ job: "tick" });
      await runner.close();
    });

    it("keeps separate schedules independent", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      const fast = vi.fn(async () => {});
      const slow = vi.fn(async () => {});
      runner.register("fast", fast);
      runner.register("slow", slow);
      runner.schedule("fast", 100);
      runner.schedule("slow", 300);
      await runner.start();
      await vi.advanceTimersByTimeAsync(950);
      expect(fast).toHaveBeenCalledTimes(9);
      expect(slow).toHaveBeenCalledTimes(3);
      await runner.close();
    });

    it("start() refuses a schedule whose job has no handler", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      runner.schedule("ghost", 100);
      await expect(runner.start()).rejects.toThrow("ghost");
      await runner.close();
    });
  });

  describe("close", () => {
    it("stops the schedules", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      const handler = vi.fn(async () => {});
      runner.register("tick", handler);
      runner.schedule("tick", 100);
      await runner.start();
      await vi.advanceTimersByTimeAsync(250);
      expect(handler).toHaveBeenCalledTimes(2);
      await runner.close();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(handler).toHaveBeenCalledTimes(2);
      expect(vi.getTimerCount()).toBe(0);
    });

    it("waits for running one-off and scheduled jobs", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      const oneOff = deferred();
      const scheduled = deferred();
      runner.register("once", () => oneOff.promise);
      runner.register("tick", () => scheduled.promise);
      runner.schedule("tick", 100);
      await runner.start();
      await runner.enqueue("once", null);
      await vi.advanceTimersByTimeAsync(100);
      const closing = runner.close();
      expect(await settlesNow(closing)).toBe(false);
      oneOff.resolve();
      expect(await settlesNow(closing)).toBe(false);
      scheduled.resolve();
      expect(await settlesNow(closing)).toBe(true);
    });

    it("resolves at once with nothing running", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      expect(await settlesNow(runner.close())).toBe(true);
    });

    it("a job failing while closing is retried at once, so close() still completes the work", async () => {
      const runner = new InProcessJobRunner(fakeLog().logger);
      const gate = deferred();
      let calls = 0;
      runner.register(
        "job",
        async () => {
          calls++;
          if (calls === 1) await gate.promise;
          if (calls < 3) throw new Error("transient");
        },
        { attempts: 5, backoffMs: 60_000 },
      );
      await runner.enqueue("job", null);
      await settle();
      const closing = runner.close();
      gate.resolve();
      expect(await settlesNow(closing)).toBe(true);
      expect(calls).toBe(3);
    });

    it("a retry already waiting out its back-off runs at once when close() is called", async () => {
      // JobRunner.close(): "pending retries of one-off jobs run now".
      const runner = new InProcessJobRunner(fakeLog().logger);
      let calls = 0;
      runner.register(
        "job",
        async () => {
          calls++;
          if (calls === 1) throw new Error("transient");
        },
        { attempts: 5, backoffMs: 60_000 },
      );
      await runner.enqueue("job", null);
      await settle();
      expect(calls).toBe(1); // now sleeping 60 s before attempt 2
      const closing = runner.close();
      const settled = await settlesNow(closing);
      await vi.advanceTimersByTimeAsync(60_000); // let the test end either way
      await closing;
      expect(settled, "close() waited out the back-off instead of running the retry now").toBe(true);
      expect(calls).toBe(2);
    });
  });
});
