/**
 * Black-box checks generated from the operation registry, for EVERY operation in
 * `operations.all()`, against a real dev gateway over HTTP (real sandbox servers):
 *
 * - no token: 401 `auth.missing` for contract and admin operations; the operation's success for anyone-operations;
 * - wrong audience (the mounted rule, docs/deploying.md "Tokens"): an admin token (it names no
 *   workspace) gets 401 `auth.invalid` on every contract operation and a workspace token 403
 *   `auth.forbidden` on every admin operation, the same bytes as at an unknown route, so the
 *   answer tells nothing about the operation; anyone-operations answer every caller;
 * - wrong workspace (session operations): another workspace's session answers the same bytes
 *   as an unknown session, while its owner's request succeeds;
 * - wrong method: 405 with the `Allow` of the registry (401 first without a token);
 * - unknown route next to it: 404, the same bytes as any unknown route (401 first without a token);
 * - malformed args: the case of operation-cases.ts (every operation must have one).
 *
 * Every contract answer is checked against the contract's schemas.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { mountedPath, type OperationSpec } from "../../../src/operations/operation.js";
import { operations } from "../../../src/operations/registry.js";
import { startTestGateway, TEST_SECRET, type TestGateway } from "../../support/gateway-harness.js";
import { type CheckName, MALFORMED, SESSION_REQUESTS } from "./operation-cases.js";
import {
  allowedOn,
  type CaseRequest,
  checkAnswer,
  codeOf,
  concretePath,
  expectError,
  send,
  unknownRouteNextTo,
  unknownRouteOfGroup,
  wrongMethodFor,
} from "./operation-requests.js";

let harness: TestGateway;
let workspaceToken: string;
let otherWorkspaceToken: string;
let adminToken: string;
/** A live session of the test's workspace, holding the file `optests.txt`. */
let sessionId: string;

beforeAll(async () => {
  // Hundreds of token-less calls from one address: the failed-attempt limit (its own tests
  // cover it) would turn their 401s into 429s.
  harness = await startTestGateway({ authFailures: { maxFailures: 1_000_000, windowMs: 60_000 } });
  workspaceToken = await harness.token("optests-owner");
  otherWorkspaceToken = await harness.token("optests-other");
  adminToken = await mintToken({ secret: TEST_SECRET, admin: true, subject: "ops" });
  const client = await harness.client("optests-owner");
  const created = await client.createSession({});
  expect(created.status, created.text).toBe(201);
  sessionId = (created.body as { session_id: string }).session_id;
  expect((await client.putFile(sessionId, "hello", { path: "optests.txt" })).status).toBe(201);
});
afterAll(() => harness?.close());

/** The token of a caller the operation is mounted for (anyone-operations: a workspace token, which must not matter). */
function audienceToken(operation: OperationSpec): string {
  return operation.mountedFor === "admin" ? adminToken : workspaceToken;
}

function itself(operation: OperationSpec): CaseRequest {
  return { method: operation.method, path: concretePath(operation) };
}

const isSessionOperation = (operation: OperationSpec) =>
  operation.group === "contract" && operation.path.includes("{");

async function noToken(operation: OperationSpec): Promise<void> {
  const answer = await send(harness.url, undefined, itself(operation));
  checkAnswer(operation, answer, true);
  if (operation.mountedFor === "anyone") expect(answer.status, answer.text).toBe(operation.success);
  else expectError(answer, 401, "auth.missing");
}

async function wrongAudience(operation: OperationSpec): Promise<void> {
  if (operation.mountedFor === "anyone") {
    for (const token of [workspaceToken, adminToken]) {
      const answer = await send(harness.url, token, itself(operation));
      expect(answer.status, answer.text).toBe(operation.success);
    }
    return;
  }
  const [token, status, code] =
    operation.mountedFor === "workspace"
      ? ([adminToken, 401, "auth.invalid"] as const)
      : ([workspaceToken, 403, "auth.forbidden"] as const);
  const answer = await send(harness.url, token, itself(operation));
  checkAnswer(operation, answer, true);
  expectError(answer, status, code);
  // The same bytes as at an unknown route of its group: the refusal says nothing about the operation.
  const unknown = await send(harness.url, token, {
    method: operation.method,
    path: unknownRouteOfGroup(operation),
  });
  expect(answer.text).toBe(unknown.text);
}

async function wrongWorkspace(operation: OperationSpec): Promise<void> {
  const request = SESSION_REQUESTS[operation.id];
  expect(request, `${operation.id} needs a valid request in SESSION_REQUESTS`).toBeDefined();
  const owner = await harness.client("optests-owner");
  // Ending a session is checked on a session of its own; the others share one.
  let target = sessionId;
  if (operation.id === "sessions.delete") {
    const created = await owner.createSession({});
    expect(created.status, created.text).toBe(201);
    target = (created.body as { session_id: string }).session_id;
  } else {
    const own = await send(harness.url, workspaceToken, request!, target);
    checkAnswer(operation, own, true);
    expect(own.status, own.text).toBe(operation.success);
  }
  const foreign = await send(harness.url, otherWorkspaceToken, request!, target);
  const unknown = await send(harness.url, otherWorkspaceToken, request!, "never-issued-session-id");
  checkAnswer(operation, foreign, true);
  checkAnswer(operation, unknown, true);
  expect([foreign.status, foreign.text]).toEqual([unknown.status, unknown.text]);
  if (operation.id !== "sessions.delete") expect(foreign.status, foreign.text).toBeGreaterThanOrEqual(400);
  // The other workspace's call changed nothing: the session is still its owner's.
  expect((await owner.getSession(target)).status).toBe(200);
  if (operation.id === "sessions.delete") {
    const own = await send(harness.url, workspaceToken, request!, target);
    expect(own.status).toBe(204);
    expect((await owner.getSession(target)).status).toBe(404);
  }
}

async function wrongMethod(operation: OperationSpec): Promise<void> {
  const request: CaseRequest = { method: wrongMethodFor(operation), path: concretePath(operation) };
  if (operation.mountedFor !== "anyone") {
    const anonymous = await send(harness.url, undefined, request);
    checkAnswer(operation, anonymous, false);
    expectError(anonymous, 401, "auth.missing");
  }
  const answer = await send(harness.url, audienceToken(operation), request);
  checkAnswer(operation, answer, false);
  expectError(answer, 405, "request.method_not_allowed");
  const allow = (answer.headers.get("allow") ?? "").split(",").map((method) => method.trim());
  expect(allow.sort()).toEqual(allowedOn(operation));
}

async function unknownRoute(operation: OperationSpec): Promise<void> {
  const request: CaseRequest = { method: operation.method, path: unknownRouteNextTo(operation) };
  const anonymous = await send(harness.url, undefined, request);
  checkAnswer(operation, anonymous, false);
  expectError(anonymous, 401, "auth.missing");
  const answer = await send(harness.url, audienceToken(operation), request);
  checkAnswer(operation, answer, false);
  expect(answer.status, answer.text).toBe(404);
  const elsewhere = await send(harness.url, audienceToken(operation), {
    method: operation.method,
    path: unknownRouteOfGroup(operation),
  });
  expect(answer.text).toBe(elsewhere.text);
}

async function malformedArgs(operation: OperationSpec): Promise<void> {
  const entry = MALFORMED[operation.id];
  expect(entry, `${operation.id} needs a case in MALFORMED`).toBeDefined();
  if ("noArguments" in entry!) {
    // No argument to get wrong: the registry must say so too, else the operation needs a case.
    expect(operation.path).not.toContain("{");
    expect([operation.method, operation.params, operation.query, operation.body]).toEqual([
      "GET",
      undefined,
      undefined,
      undefined,
    ]);
    const answer = await send(harness.url, audienceToken(operation), itself(operation));
    checkAnswer(operation, answer, true);
    expect(answer.status, answer.text).toBe(operation.success);
    return;
  }
  // The case addresses the operation itself, not a neighbour.
  expect(entry!.request.method ?? "GET").toBe(operation.method);
  const answer = await send(harness.url, audienceToken(operation), entry!.request, sessionId);
  checkAnswer(operation, answer, true);
  expect(answer.status, answer.text).toBe(entry!.status);
  if (entry!.code !== undefined) expect(codeOf(answer), answer.text).toBe(entry!.code);
  if (answer.status >= 400 && codeOf(answer) === "request.malformed") {
    const problems = (answer.body as { detail: { problems?: unknown } }).detail.problems;
    expect(
      Array.isArray(problems) && problems.length > 0 && problems.every((p) => typeof p === "string"),
    ).toBe(true);
  }
}

const CHECKS: Record<CheckName, (operation: OperationSpec) => Promise<void>> = {
  "no token": noToken,
  "wrong audience": wrongAudience,
  "wrong workspace": wrongWorkspace,
  "wrong method": wrongMethod,
  "unknown route": unknownRoute,
  "malformed args": malformedArgs,
};

function checksOf(operation: OperationSpec): CheckName[] {
  const names = Object.keys(CHECKS) as CheckName[];
  return names.filter((name) => name !== "wrong workspace" || isSessionOperation(operation));
}

describe("the per-operation cases", () => {
  const ids = operations.all().map((operation) => operation.id);

  it("has a malformed case for every operation and none for an operation the registry lacks", () => {
    expect(Object.keys(MALFORMED).sort()).toEqual([...ids].sort());
  });

  it("has a valid request for every session operation, and only for those", () => {
    const sessionIds = operations
      .all()
      .filter(isSessionOperation)
      .map((operation) => operation.id);
    expect(Object.keys(SESSION_REQUESTS).sort()).toEqual(sessionIds.sort());
  });
});

for (const operation of operations.all()) {
  describe(`${operation.id} (${operation.method} ${mountedPath(operation)})`, () => {
    for (const name of checksOf(operation)) it(name, () => CHECKS[name](operation));
  });
}
