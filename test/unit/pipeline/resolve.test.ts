import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { refuseAfterResolving } from "../../../src/pipeline/steps/resolve.js";
import { sessionSteps } from "./session-steps.js";

const refusal = new SandpoolError("policy.tool_not_allowed", "no");

describe("pipeline step resolve", () => {
  it("answers the session's 404 before a refusal found ahead of the call's round trip", async () => {
    const { calls, counted } = sessionSteps();
    await expect(
      refuseAfterResolving(calls, { workspace: "ws-1", sessionId: "gone" }, refusal),
    ).rejects.toMatchObject({
      code: "session.not_found",
    });
    expect(counted.resolves).toBe(1);
  });

  it("answers the refusal itself when the session exists", async () => {
    const { calls } = sessionSteps({ sessions: ["s1"] });
    await expect(refuseAfterResolving(calls, { workspace: "ws-1", sessionId: "s1" }, refusal)).rejects.toBe(
      refusal,
    );
  });

  it("resolves nothing for a call that names no session", async () => {
    const { calls, counted } = sessionSteps();
    await expect(refuseAfterResolving(calls, undefined, refusal)).rejects.toBe(refusal);
    expect(counted.resolves).toBe(0);
  });
});
