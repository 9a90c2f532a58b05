/**
 * The server errors the console's overview charts (`GET /admin/v1/pools`, `serverErrors`), on
 * a real gateway over HTTP: a sandbox killed under its session makes the next call a 502
 * `sandbox.unreachable`, which the answering replica counts in the minute it answered it, as
 * a server error and a sandbox failure, beside the contract calls it answered; admin calls
 * (the console's own polling) are not counted. Answers checked against the admin document.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminRequest } from "../../support/admin-api.js";
import { assertAdminResponse } from "../../support/admin-openapi.js";
import {
  startTestGateway,
  TEST_IMAGE,
  type TestGateway,
  testAdminToken,
} from "../../support/gateway-harness.js";
import { waitFor } from "../../support/wait-for.js";

let harness: TestGateway;
let adminToken: string;
beforeAll(async () => {
  harness = await startTestGateway({
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2, demand: false }],
  });
  adminToken = await testAdminToken();
});
afterAll(() => harness?.close());

interface Minute {
  start: string;
  calls: number;
  serverErrors: number;
  sandboxErrors: number;
}

async function lastHour(): Promise<{ calls: number; serverErrors: number; sandboxErrors: number }> {
  const answer = await adminRequest(harness.url, adminToken, "GET", "/pools");
  assertAdminResponse("get", "/admin/v1/pools", answer.status, answer.body);
  expect(answer.status).toBe(200);
  const { scope, minutes } = (answer.body as { serverErrors: { scope: string; minutes: Minute[] } })
    .serverErrors;
  expect(scope).toBe("replica");
  expect(minutes).toHaveLength(61);
  return {
    calls: minutes.reduce((sum, m) => sum + m.calls, 0),
    serverErrors: minutes.reduce((sum, m) => sum + m.serverErrors, 0),
    sandboxErrors: minutes.reduce((sum, m) => sum + m.sandboxErrors, 0),
  };
}

describe("server errors per minute in the pools list", () => {
  it("counts a sandbox failure's 502 as a server error and a sandbox failure; admin calls are not counted", async () => {
    const before = await lastHour();
    expect(await lastHour()).toEqual(before); // its own polling is not a contract call

    const client = await harness.client("errors-ws");
    const created = await client.createSession({});
    expect(created.status, created.text).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    const lease = (await harness.store.listLeases()).find((l) => l.sessionId === id)!;
    process.kill(Number(lease.sandbox.runtimeId), "SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const call = await client.exec(id, { tool: "code_execution", input: { code: "print(1)" } });
    expect(call.status, call.text).toBe(502);

    // Counted once each answer is written: a moment after the client has it.
    await waitFor(
      async () => (await lastHour()).sandboxErrors === before.sandboxErrors + 1,
      5_000,
      "the 502 to be counted",
    );
    const after = await lastHour();
    expect(after.calls).toBe(before.calls + 2);
    expect(after.serverErrors).toBe(before.serverErrors + 1);
  });
});
