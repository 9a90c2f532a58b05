import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { CallArgs } from "../../../src/operations/handler.js";
import { policyGate } from "../../../src/pipeline/steps/policy.js";
import { UPLOAD_FRAMING_BYTES as MULTIPART_OVERHEAD_BYTES } from "../../../src/policy/decide-access.js";
import { sessionPlans } from "../../../src/session/session-plans.js";
import { workspaceCaller } from "./fixtures.js";
import { sessionSteps } from "./session-steps.js";

const exec = (tool: string): CallArgs => ({ params: { id: "s1" }, query: {}, body: { tool, input: {} } });

describe("pipeline step policy", () => {
  it("gives the policy in force to a call the workspace may make", async () => {
    const { calls, policy } = sessionSteps();
    expect(
      await policyGate(calls, sessionPlans["sessions.exec"]!, workspaceCaller, exec("code_execution")),
    ).toBe(policy);
  });

  it("refuses every call on a disabled workspace's sessions with 403", async () => {
    const { calls } = sessionSteps({ row: { enabled: false } });
    await expect(
      policyGate(calls, sessionPlans["files.list"]!, workspaceCaller, { params: { id: "s1" }, query: {} }),
    ).rejects.toMatchObject({ code: "policy.workspace_disabled", status: 403 });
  });

  it("refuses a tool outside the workspace's list with 403", async () => {
    const { calls } = sessionSteps({ row: { allowedTools: ["code_execution"] } });
    await expect(
      policyGate(calls, sessionPlans["sessions.exec"]!, workspaceCaller, exec("bash_code_execution")),
    ).rejects.toMatchObject({ code: "policy.tool_not_allowed" });
  });

  it("refuses an upload whose declared length passes the file-size cap with 413, before reading it", async () => {
    const { calls, policy } = sessionSteps();
    const upload = (contentLength: number): CallArgs => ({
      params: { id: "s1" },
      query: {},
      stream: { contentType: "multipart/form-data", contentLength, body: Readable.from([]) },
    });
    const put = sessionPlans["files.put"]!;
    const cap = policy.maxFileBytes + MULTIPART_OVERHEAD_BYTES;
    expect(await policyGate(calls, put, workspaceCaller, upload(cap))).toBe(policy);
    await expect(policyGate(calls, put, workspaceCaller, upload(cap + 1))).rejects.toMatchObject({
      code: "file.too_large",
    });
  });

  it("leaves ungated operations alone: a disabled workspace still reads and ends its sessions", async () => {
    const { calls } = sessionSteps({ row: { enabled: false } });
    for (const id of ["sessions.get", "sessions.delete"]) {
      expect(
        await policyGate(calls, sessionPlans[id]!, workspaceCaller, { params: { id: "s1" }, query: {} }),
      ).toBeUndefined();
    }
  });
});
