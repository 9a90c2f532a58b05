/**
 * SessionLifecycle.end around its parts (they stand in here; the Redis store's record of
 * copies is tested on Redis in test/integration/redis/lease-cache.test.ts): the sandbox
 * session's close is sent at once, and the end waits for it only when another replica may
 * still serve a call from a cached copy of the lease.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { GatewayMetrics } from "../../../src/metering/gateway-metrics.js";
import { SessionLifecycle, type SessionLifecycleDeps } from "../../../src/session/session-lifecycle.js";
import type { TakenLease } from "../../../src/store/coordination/lease-store.js";
import { fresh, keyOf, leaseIn } from "../../support/lease-fixture.js";

function lifecycleEnding(taken: TakenLease) {
  const closes: string[] = [];
  let finishClose = () => {};
  const enqueued: unknown[] = [];
  const expected: string[] = [];
  const deps = {
    store: { takeLease: async () => taken },
    pools: {
      markRetiring: async () => {},
      expectRecycle: (_record: unknown, owner: string) => expected.push(owner),
    },
    admission: { releaseSession: async () => {} },
    jobs: {
      enqueue: async (_name: string, payload: unknown) => {
        enqueued.push(payload);
      },
    },
    // A busy sandbox: the close is answered only when the test says so.
    sandboxes: {
      closeInnerSession: (_endpoint: string, inner: string) => {
        closes.push(inner);
        return new Promise<void>((resolve) => {
          finishClose = resolve;
        });
      },
    },
    metrics: new GatewayMetrics({ processMetrics: false }),
    usage: { record: () => {} },
    log: pino({ level: "silent" }),
  } as unknown as SessionLifecycleDeps;
  return {
    lifecycle: new SessionLifecycle(deps),
    closes,
    enqueued,
    expected,
    finishClose: () => finishClose(),
  };
}

const settledWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))]);

describe("SessionLifecycle.end", () => {
  it("answers without waiting for the sandbox when no other replica holds a copy of the lease", async () => {
    const lease = leaseIn(fresh("ws"));
    const ending = lifecycleEnding(lease);
    expect(await settledWithin(ending.lifecycle.end(keyOf(lease), "destroyed"), 500)).toBe(true);
    // The close went out all the same: calls in flight stop now, not at the scrub.
    expect(ending.closes).toEqual([lease.sandbox.innerSessionId]);
    // The settle job carries the lease as it was stored, without the store's note.
    expect(ending.enqueued).toEqual([{ lease, reason: "destroyed" }]);
    // Its scrub is counted as coming from now: a lease of the workspace waits for it.
    expect(ending.expected).toEqual([lease.workspace]);
  });

  it("announces no recycle for an end after which the sandbox is not reused", async () => {
    const lease = leaseIn(fresh("ws"));
    const ending = lifecycleEnding(lease);
    ending.finishClose();
    expect(await ending.lifecycle.end(keyOf(lease), "ended_by_operator")).toBe(true);
    expect(ending.expected).toEqual([]);
  });

  it("waits for the close when another replica may still serve a call from its copy", async () => {
    const lease = leaseIn(fresh("ws"));
    const ending = lifecycleEnding({ ...lease, copiedElsewhere: true });
    const ended = ending.lifecycle.end(keyOf(lease), "destroyed");
    expect(await settledWithin(ended, 300)).toBe(false);
    ending.finishClose();
    expect(await ended).toBe(true);
    expect(ending.enqueued).toEqual([{ lease, reason: "destroyed" }]);
  });

  it("sends no close for an end that needs none (an expiry: no copy serves past a deadline)", async () => {
    const lease = leaseIn(fresh("ws"));
    const ending = lifecycleEnding({ ...lease, copiedElsewhere: true });
    expect(await ending.lifecycle.end(keyOf(lease), "expired")).toBe(true);
    expect(ending.closes).toEqual([]);
  });
});
