import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { auditRefusal, sessionIdInPath } from "../../../src/audit/audit-refusal.js";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { KeptUsage, workspaceCaller } from "../pipeline/fixtures.js";

const log = pino({ level: "silent" });

describe("the refusal audit", () => {
  it("records a refusal by policy, quota, capacity or an unknown session, with who and what", () => {
    const usage = new KeptUsage();
    const error = new SandpoolError("quota.exec_budget", "spent");
    const call = { principal: workspaceCaller, operationId: "sessions.exec", sessionId: "s1" };
    auditRefusal(usage, log, call, error);
    expect(usage.events).toEqual([
      {
        workspace: "ws-1",
        sessionId: "s1",
        kind: "denied",
        detail: { operation: "sessions.exec", code: "quota.exec_budget", status: 429, principal: "alice" },
      },
    ]);
  });

  it("records neither other failures nor a refusal before authentication", () => {
    const usage = new KeptUsage();
    const call = { principal: workspaceCaller, operationId: "sessions.exec", sessionId: "s1" };
    auditRefusal(usage, log, call, new SandpoolError("tool.unknown", "no such tool"));
    auditRefusal(usage, log, call, new Error("boom"));
    auditRefusal(
      usage,
      log,
      { ...call, principal: undefined },
      new SandpoolError("session.not_found", "gone"),
    );
    expect(usage.events).toEqual([]);
  });

  it("keeps a session id no session could have out of the record", () => {
    const usage = new KeptUsage();
    const call = { principal: workspaceCaller, operationId: "sessions.get", sessionId: "<script>" };
    auditRefusal(usage, log, call, new SandpoolError("session.not_found", "gone"));
    expect(usage.events[0]?.sessionId).toBe("(malformed)");
    expect(sessionIdInPath("/v1/sessions/abc/exec")).toBe("abc");
  });
});
