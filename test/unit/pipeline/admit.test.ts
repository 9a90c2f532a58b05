import { describe, expect, it } from "vitest";
import { admitCall } from "../../../src/pipeline/steps/admit.js";
import { sessionPlans } from "../../../src/session/session-plans.js";
import { sessionSteps } from "./session-steps.js";

const key = { workspace: "ws-1", sessionId: "s1" };

describe("pipeline step admit", () => {
  it("begins an Execute in one step: its time reserved, the session busy for as long as it may take", async () => {
    const { calls, counted, policy } = sessionSteps({ sessions: ["s1"] });
    const args = { params: { id: "s1" }, query: {}, body: { tool: "code_execution", timeout_seconds: 3 } };
    const admitted = await admitCall(calls, sessionPlans["sessions.exec"]!, key, policy, args);
    expect(admitted?.call?.grantedMs).toBe(3_000);
    expect(counted.begins).toEqual([{ deadlineMs: 8_000, budget: { policy, requestedMs: 3_000 } }]);
    expect(counted.resolves).toBe(0);
  });

  it("clamps the time asked for to the ceiling in force", async () => {
    const { calls, counted, policy } = sessionSteps({ sessions: ["s1"] });
    const args = { params: { id: "s1" }, query: {}, body: { tool: "code_execution", timeout_seconds: 1e6 } };
    await admitCall(calls, sessionPlans["sessions.exec"]!, key, policy, args);
    expect(counted.begins[0]?.budget?.requestedMs).toBe(policy.execTimeoutCeilingSeconds * 1000);
  });

  it("answers 404 for a session that is not the caller's, and reads only the lease for GetSession", async () => {
    const { calls, counted, policy } = sessionSteps({ sessions: ["s1"] });
    const args = { params: { id: "gone" }, query: {} };
    await expect(
      admitCall(calls, sessionPlans["files.list"]!, { ...key, sessionId: "gone" }, policy, args),
    ).rejects.toMatchObject({ code: "session.not_found" });
    const read = await admitCall(calls, sessionPlans["sessions.get"]!, key, undefined, args);
    expect(read?.lease?.sessionId).toBe("s1");
    expect(read?.call).toBeUndefined();
    expect(counted.resolves).toBe(1);
  });

  it("admits nothing for a call that names no session (CreateSession admits in its handler)", () => {
    const { calls, policy } = sessionSteps();
    expect(
      admitCall(calls, sessionPlans["sessions.create"]!, undefined, policy, { params: {}, query: {} }),
    ).toBeUndefined();
  });
});
