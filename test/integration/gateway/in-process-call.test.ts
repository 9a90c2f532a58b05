/**
 * `call(operationId, caller, args)`: an operation called in process goes through the same
 * pipeline as over HTTP, against a real gateway with real sandbox servers, and gives back
 * the outcome (the answers checked against the contract as an HTTP client would get them).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../../src/auth/principal.js";
import { gatewayCall } from "../../../src/gateway/gateway-operations.js";
import type { Outcome } from "../../../src/operations/handler.js";
import type { InProcessCall } from "../../../src/pipeline/call.js";
import { assertContractResponse } from "../../support/contract.js";
import { startTestGateway, type TestGateway } from "../../support/gateway-harness.js";

const caller: Principal = {
  workspace: "team-in-process",
  subject: "tester",
  tokenId: undefined,
  expiresAt: Math.floor(Date.now() / 1000) + 600,
};

/** An outcome's body as the HTTP answer would carry it. */
async function bodyOf(outcome: Outcome): Promise<unknown> {
  if (outcome.kind === "json") return outcome.body;
  if (outcome.kind === "empty") return undefined;
  const text = await new Response(outcome.body as ConstructorParameters<typeof Response>[0]).text();
  return outcome.headers["content-type"]?.includes("json") ? JSON.parse(text) : text;
}

async function answered(label: string, outcome: Promise<Outcome>) {
  const settled = await outcome;
  const body = await bodyOf(settled);
  // A JSON answer (a handle, an Execute result, a listing) is held to the contract's schema.
  if (typeof body === "object") assertContractResponse(label, settled.status, body);
  return { status: settled.status, body };
}

describe("an operation called in process", () => {
  let gw: TestGateway;
  let call: InProcessCall;

  beforeAll(async () => {
    gw = await startTestGateway();
    call = gatewayCall(gw.gateway.services);
  });
  afterAll(() => gw?.close());

  it("creates a session, runs code in it, lists its files and ends it, as over HTTP", async () => {
    const created = await answered("CreateSession", call("sessions.create", caller, { body: {} }));
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;

    const run = await answered(
      "Execute",
      call("sessions.exec", caller, {
        params: { id },
        body: { tool: "code_execution", input: { code: "open('out.txt','w').write('hi'); print(6*7)" } },
      }),
    );
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ result_block: { content: { stdout: "42\n", return_code: 0 } } });

    const listed = await answered("ListFiles", call("files.list", caller, { params: { id }, query: {} }));
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain("out.txt");

    const fetched = await call("files.get", caller, { params: { id }, query: { path: "out.txt" } });
    expect(fetched.status).toBe(200);
    expect(await bodyOf(fetched)).toBe("hi");

    expect((await call("sessions.delete", caller, { params: { id } })).status).toBe(204);
    await expect(call("sessions.get", caller, { params: { id } })).rejects.toMatchObject({
      code: "session.not_found",
      status: 404,
    });
  });

  it("refuses as over HTTP: 404 first for an unknown session, the contract's codes for bad args, 401 for no caller", async () => {
    await expect(
      call("sessions.exec", caller, { params: { id: "no-such-session" }, body: { tool: "teleport" } }),
    ).rejects.toMatchObject({ code: "session.not_found" });
    const created = await call("sessions.create", caller, { body: {} });
    const id = ((await bodyOf(created)) as { session_id: string }).session_id;
    await expect(
      call("sessions.exec", caller, { params: { id }, body: { tool: "teleport" } }),
    ).rejects.toMatchObject({
      code: "tool.unknown",
      status: 400,
    });
    await expect(
      call("sessions.create", caller, { body: { idle_timeout_seconds: 0 } }),
    ).rejects.toMatchObject({
      code: "request.malformed",
      status: 422,
    });
    await expect(call("sessions.get", undefined, { params: { id } })).rejects.toMatchObject({ status: 401 });
    await expect(call("sessions.teleport", caller)).rejects.toMatchObject({ code: "request.not_found" });
    expect((await call("service.healthz", undefined)).status).toBe(200);
  });
});
