/**
 * The pipeline's order over its steps, with the real steps and a session layer kept in
 * memory (session-steps.ts): the handler runs only once every step has admitted the call.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { Caller } from "../../../src/auth/principal.js";
import type { OperationCall, Outcome } from "../../../src/operations/handler.js";
import { operations } from "../../../src/operations/registry.js";
import { type PipelineDeps, type PipelineRequest, runPipeline } from "../../../src/pipeline/pipeline.js";
import { sessionSteps } from "../session/session-steps.js";
import { adminCaller, check, KeptUsage, workspaceCaller } from "./fixtures.js";

const log = pino({ level: "silent" });
const ok: Outcome = { kind: "json", status: 200, body: { ran: true } };

function setup(options: Parameters<typeof sessionSteps>[0] = {}) {
  const steps = sessionSteps(options);
  const usage = new KeptUsage();
  const deps: PipelineDeps = { check: check(), usage, sessions: steps.calls };
  const seen: OperationCall[] = [];
  const handler = async (call: OperationCall) => {
    seen.push(call);
    return ok;
  };
  const request = (
    operationId: string,
    body: unknown,
    caller: Caller = workspaceCaller,
  ): PipelineRequest => ({
    operation: operations.get(operationId)!,
    credential: { caller },
    raw: { params: { id: "s1" }, query: {}, readBody: async () => body },
    requestId: "r1",
    log,
  });
  return { ...steps, usage, deps, seen, handler, request };
}

const run = { tool: "code_execution", input: { code: "1" } };

describe("the request pipeline", () => {
  it("runs the handler with the admitted arguments and the call begun on its session", async () => {
    const { deps, handler, request, seen, counted } = setup({ sessions: ["s1"] });
    expect(await runPipeline(deps, handler, request("sessions.exec", run))).toBe(ok);
    expect(seen[0]?.args.body).toBe(run);
    expect(seen[0]?.session).toMatchObject({
      key: { workspace: "ws-1", sessionId: "s1" },
      lease: { sessionId: "s1" },
    });
    expect(counted.begins).toHaveLength(1);
    expect(counted.resolves).toBe(0);
  });

  it("answers the session's 404 before a malformed body, a tool not allowed or a disabled workspace", async () => {
    for (const [row, body] of [
      [{}, { tool: "teleport" }],
      [{ allowedTools: ["bash_code_execution"] as const }, run],
      [{ enabled: false }, run],
    ] as const) {
      const { deps, handler, request, seen } = setup({ row: row as never });
      await expect(runPipeline(deps, handler, request("sessions.exec", body))).rejects.toMatchObject({
        code: "session.not_found",
      });
      expect(seen).toEqual([]);
    }
  });

  it("answers the refusal itself on a live session, audited, never running the handler", async () => {
    const { deps, handler, request, seen, usage, counted } = setup({
      sessions: ["s1"],
      row: { enabled: false },
    });
    await expect(runPipeline(deps, handler, request("sessions.exec", run))).rejects.toMatchObject({
      code: "policy.workspace_disabled",
    });
    expect(seen).toEqual([]);
    expect(counted.begins).toEqual([]);
    expect(usage.events.map((event) => event.detail)).toEqual([
      expect.objectContaining({ operation: "sessions.exec", code: "policy.workspace_disabled" }),
    ]);
  });

  it("refuses a caller the operation is not mounted for before reading anything", async () => {
    const { deps, handler, request, counted } = setup({ sessions: ["s1"] });
    await expect(
      runPipeline(deps, handler, request("sessions.exec", run, adminCaller)),
    ).rejects.toMatchObject({
      status: 401,
    });
    expect(counted.resolves + counted.begins.length).toBe(0);
  });

  it("runs an operation open to anyone without a credential, as an anonymous caller", async () => {
    const { deps, handler, request, seen } = setup();
    const anonymous = { ...request("service.healthz", undefined), credential: {} };
    expect(await runPipeline(deps, handler, anonymous)).toBe(ok);
    expect(seen[0]?.caller.workspace).toBeUndefined();
  });
});
