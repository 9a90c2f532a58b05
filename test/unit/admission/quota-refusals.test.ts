/**
 * A 429 says which setting raises the limit it hit: an operator reading it in a client's log
 * finds the knob without the docs.
 */
import { describe, expect, it } from "vitest";
import { budgetSpent, rateReached, slotsTaken } from "../../../src/admission/quota-refusals.js";
import { CallsInFlight } from "../../../src/http/middleware/calls-in-flight.js";
import type { EffectivePolicy } from "../../../src/policy/effective-policy.js";

const policy = { maxConcurrentSessions: 3, sessionsPerMinute: 5, execSecondsPerDay: 60 } as EffectivePolicy;

describe("quota refusals", () => {
  it("name the workspace's policy flag and the deployment's ceiling", () => {
    expect(slotsTaken(policy).message).toContain(
      "sandpool policy set <workspace> --max-concurrent-sessions <n>`, up to the deployment's ceiling policy.maxConcurrentSessions",
    );
    expect(rateReached(policy, 1_000).message).toContain("--sessions-per-minute <n>");
    expect(rateReached(policy, 1_000).message).toContain("policy.sessionsPerMinute");
    expect(budgetSpent(policy, 0).message).toContain("--exec-seconds-per-day <n>");
  });

  it("calls in flight name the deployment's limit", () => {
    const calls = new CallsInFlight(1);
    calls.enter("w");
    expect(() => calls.enter("w")).toThrow(/limits\.maxCallsInFlightPerWorkspace/);
  });

  it("the default bound of calls in flight holds a burst of a hundred sessions and their first calls", () => {
    expect(new CallsInFlight().maxPerWorkspace).toBeGreaterThanOrEqual(200);
  });
});
