/**
 * The session layer's part of the pipeline (src/session/session-calls.ts), as each
 * operation's session plan says (declared with the operation): the policy gate, the
 * 404-first order of refusals, and the call's admission on its session.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import type { CallArgs } from "../../../src/operations/handler.js";
import { operations } from "../../../src/operations/registry.js";
import type { SessionPlan } from "../../../src/operations/session-plan.js";
import { UPLOAD_FRAMING_BYTES as MULTIPART_OVERHEAD_BYTES } from "../../../src/policy/decide-access.js";
import { workspaceCaller } from "../pipeline/fixtures.js";
import { sessionSteps } from "./session-steps.js";

const plan = (id: string): SessionPlan => operations.get(id)!.session!;
const key = { workspace: "ws-1", sessionId: "s1" };
const refusal = new SandpoolError("policy.tool_not_allowed", "no");
const exec = (tool: string): CallArgs => ({ params: { id: "s1" }, query: {}, body: { tool, input: {} } });

describe("SessionCalls.refuseInOrder (the pipeline's resolve step)", () => {
  it("answers the session's 404 before a refusal found ahead of the call's round trip", async () => {
    const { calls, counted } = sessionSteps();
    await expect(
      calls.refuseInOrder({ workspace: "ws-1", sessionId: "gone" }, refusal),
    ).rejects.toMatchObject({
      code: "session.not_found",
    });
    expect(counted.resolves).toBe(1);
  });

  it("answers the refusal itself when the session exists", async () => {
    const { calls } = sessionSteps({ sessions: ["s1"] });
    await expect(calls.refuseInOrder({ workspace: "ws-1", sessionId: "s1" }, refusal)).rejects.toBe(refusal);
  });

  it("resolves nothing for a call that names no session", async () => {
    const { calls, counted } = sessionSteps();
    await expect(calls.refuseInOrder(undefined, refusal)).rejects.toBe(refusal);
    expect(counted.resolves).toBe(0);
  });
});

describe("SessionCalls.gate (the pipeline's policy step)", () => {
  it("gives the policy in force to a call the workspace may make", async () => {
    const { calls, policy } = sessionSteps();
    expect(await calls.gate(plan("sessions.exec"), workspaceCaller.workspace, exec("code_execution"))).toBe(
      policy,
    );
  });

  it("refuses every call on a disabled workspace's sessions with 403", async () => {
    const { calls } = sessionSteps({ row: { enabled: false } });
    await expect(
      calls.gate(plan("files.list"), workspaceCaller.workspace, { params: { id: "s1" }, query: {} }),
    ).rejects.toMatchObject({ code: "policy.workspace_disabled", status: 403 });
  });

  it("refuses a tool outside the workspace's list with 403", async () => {
    const { calls } = sessionSteps({ row: { allowedTools: ["code_execution"] } });
    await expect(
      calls.gate(plan("sessions.exec"), workspaceCaller.workspace, exec("bash_code_execution")),
    ).rejects.toMatchObject({ code: "policy.tool_not_allowed" });
  });

  it("refuses an upload whose declared length passes the file-size cap with 413, before reading it", async () => {
    const { calls, policy } = sessionSteps();
    const upload = (contentLength: number): CallArgs => ({
      params: { id: "s1" },
      query: {},
      stream: { contentType: "multipart/form-data", contentLength, body: Readable.from([]) },
    });
    const put = plan("files.put");
    const cap = policy.maxFileBytes + MULTIPART_OVERHEAD_BYTES;
    expect(await calls.gate(put, workspaceCaller.workspace, upload(cap))).toBe(policy);
    await expect(calls.gate(put, workspaceCaller.workspace, upload(cap + 1))).rejects.toMatchObject({
      code: "file.too_large",
    });
  });

  it("leaves ungated operations alone: a disabled workspace still reads and ends its sessions", async () => {
    const { calls } = sessionSteps({ row: { enabled: false } });
    for (const id of ["sessions.get", "sessions.delete"]) {
      expect(
        await calls.gate(plan(id), workspaceCaller.workspace, { params: { id: "s1" }, query: {} }),
      ).toBeUndefined();
    }
  });
});

describe("SessionCalls.admit (the pipeline's admit step)", () => {
  it("begins an Execute in one step: its time reserved, the session busy for as long as it may take", async () => {
    const { calls, counted, policy } = sessionSteps({ sessions: ["s1"] });
    const args = { params: { id: "s1" }, query: {}, body: { tool: "code_execution", timeout_seconds: 3 } };
    const admitted = await calls.admit(plan("sessions.exec"), key, policy, args);
    expect(admitted?.call?.grantedMs).toBe(3_000);
    expect(counted.begins).toEqual([{ deadlineMs: 8_000, budget: { policy, requestedMs: 3_000 } }]);
    expect(counted.resolves).toBe(0);
  });

  it("clamps the time asked for to the ceiling in force", async () => {
    const { calls, counted, policy } = sessionSteps({ sessions: ["s1"] });
    const args = { params: { id: "s1" }, query: {}, body: { tool: "code_execution", timeout_seconds: 1e6 } };
    await calls.admit(plan("sessions.exec"), key, policy, args);
    expect(counted.begins[0]?.budget?.requestedMs).toBe(policy.execTimeoutCeilingSeconds * 1000);
  });

  it("answers 404 for a session that is not the caller's, and reads only the lease for GetSession", async () => {
    const { calls, counted, policy } = sessionSteps({ sessions: ["s1"] });
    const args = { params: { id: "gone" }, query: {} };
    await expect(
      calls.admit(plan("files.list"), { ...key, sessionId: "gone" }, policy, args),
    ).rejects.toMatchObject({ code: "session.not_found" });
    const read = await calls.admit(plan("sessions.get"), key, undefined, args);
    expect(read?.lease?.sessionId).toBe("s1");
    expect(read?.call).toBeUndefined();
    expect(counted.resolves).toBe(1);
  });
});

describe("session plans", () => {
  it("are declared by every contract operation, and only by them", () => {
    for (const operation of operations.all("contract")) expect(operation.session, operation.id).toBeDefined();
    for (const group of ["admin", "service"] as const)
      for (const operation of operations.all(group)) expect(operation.session, operation.id).toBeUndefined();
  });

  it("say how long a call begun keeps its session busy, and gate every call that begins one", () => {
    for (const operation of operations.all("contract")) {
      const session = operation.session!;
      if (session.admits !== "call") continue;
      expect(session.gated, operation.id).toBe(true);
      expect(session.busyMs, operation.id).toBeDefined();
    }
  });
});
