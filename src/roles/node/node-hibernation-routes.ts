/**
 * The node API's hibernation routes (node-hibernation.ts; served by node-api.ts beside the
 * others, signed both ways, every one made for a workspace):
 *
 *   POST /node/v1/sandboxes/{id}/checkpoint    {sessionId, bounds} -> 200 {outcome: saved, kind, bytes} | {outcome: lost}
 *   POST /node/v1/sandboxes/{id}/restore       {sessionId} -> 204: the files checkpoint put into the held sandbox
 *   POST /node/v1/restores                     {pool, sessionId, sandboxId, sandboxSessionId} -> 201 {record}: a memory checkpoint restored
 *   GET  /node/v1/checkpoints/{session}        200 {committed: true} | 204: whether the session's checkpoint is here
 *   POST /node/v1/checkpoints/{session}/delete 204 (idempotent)
 *
 * A held sandbox is reached only for the workspace it was leased to (any other is told the
 * session is unknown), a checkpoint only in the calling workspace's part of the store. A
 * node that cannot hibernate (no `hibernate` on its runtime) answers 409 session.not_hibernatable.
 */
import { SandpoolError } from "../../contract/error-codes.js";
import type { SandboxRecord } from "../../store/coordination/records.js";
import { SANDBOX_ID_PATTERN, SESSION_ID_PATTERN } from "../shared/node-api-wire.js";
import type { NodeCall } from "./node-call.js";
import type { NodeHibernation } from "./node-hibernation.js";
import { sandboxAction } from "./node-route.js";

interface HibernationRoute {
  method: string;
  path: RegExp;
  handle(call: NodeCall): Promise<void>;
}

const SANDBOX_ID = SANDBOX_ID_PATTERN;
const SESSION_ID = SESSION_ID_PATTERN;

export const NODE_HIBERNATION_ROUTES: readonly HibernationRoute[] = [
  onHeldSandbox("checkpoint", async (call, record, hibernation, workspace) => {
    const sessionId = stringField(call, "sessionId");
    const bounds = boundsOf(jsonBody(call).bounds);
    call.answer.send(200, {}, await hibernation.save(record, workspace, sessionId, bounds));
  }),
  onHeldSandbox("restore", async (call, record, hibernation, workspace) => {
    await hibernation.restoreFiles(record, workspace, stringField(call, "sessionId"));
    call.answer.send(204);
  }),
  {
    method: "POST",
    path: /^\/node\/v1\/restores$/,
    handle: async (call) => {
      const { hibernation, workspace } = hibernationCall(call);
      const record = await hibernation.restoreMemory(
        stringField(call, "pool"),
        workspace,
        stringField(call, "sessionId"),
        {
          sandboxId: sandboxIdField(call),
          sandboxSessionId: stringField(call, "sandboxSessionId"),
        },
      );
      call.answer.send(201, {}, { record });
    },
  },
  {
    method: "GET",
    path: new RegExp(`^/node/v1/checkpoints/${SESSION_ID}$`),
    handle: async (call) => {
      const { hibernation, workspace } = hibernationCall(call);
      if (await hibernation.committed(workspace, call.params[0]!))
        call.answer.send(200, {}, { committed: true });
      else call.answer.send(204);
    },
  },
  {
    method: "POST",
    path: new RegExp(`^/node/v1/checkpoints/${SESSION_ID}/delete$`),
    handle: async (call) => {
      const { hibernation, workspace } = hibernationCall(call);
      await hibernation.delete(workspace, call.params[0]!);
      call.answer.send(204);
    },
  },
];

/** A route on a sandbox held here for the calling workspace; any other is told it is unknown. */
function onHeldSandbox(
  action: string,
  handle: (
    call: NodeCall,
    record: SandboxRecord,
    hibernation: NodeHibernation,
    workspace: string,
  ) => Promise<void>,
): HibernationRoute {
  const route = sandboxAction("POST", action, (call, record) => {
    const { hibernation, workspace } = hibernationCall(call);
    return handle(call, record, hibernation, workspace);
  });
  return {
    method: "POST",
    path: route.path,
    // Refused before the sandbox is looked up: a call without a workspace, or on a node that cannot hibernate.
    handle: (call) => {
      hibernationCall(call);
      return route.handle(call);
    },
  };
}

function hibernationCall(call: NodeCall): { hibernation: NodeHibernation; workspace: string } {
  if (call.workspace === undefined) {
    throw new SandpoolError("request.malformed", "a hibernation call names its workspace");
  }
  if (!call.deps.hibernation) {
    throw new SandpoolError("session.not_hibernatable", "this node's sandboxes cannot hibernate");
  }
  return { hibernation: call.deps.hibernation, workspace: call.workspace };
}

function jsonBody(call: NodeCall): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse((call.body as Buffer).toString("utf8"));
  } catch {
    throw new SandpoolError("request.bad_json", "the body is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw new SandpoolError("request.malformed", "the body is not a JSON object");
  }
  return parsed as Record<string, unknown>;
}

function stringField(call: NodeCall, name: string): string {
  const value = jsonBody(call)[name];
  if (typeof value !== "string" || value === "") {
    throw new SandpoolError("request.malformed", `the body names no ${name}`);
  }
  return value;
}

function sandboxIdField(call: NodeCall): string {
  const value = stringField(call, "sandboxId");
  if (!new RegExp(`^${SANDBOX_ID}$`).test(value))
    throw new SandpoolError("request.malformed", "not a sandbox id");
  return value;
}

function boundsOf(value: unknown): { maxCheckpoints?: number; maxBytes?: number } {
  const bounds: { maxCheckpoints?: number; maxBytes?: number } = {};
  if (typeof value !== "object" || value === null) return bounds;
  for (const name of ["maxCheckpoints", "maxBytes"] as const) {
    const bound = (value as Record<string, unknown>)[name];
    if (typeof bound === "number" && Number.isSafeInteger(bound) && bound >= 0) bounds[name] = bound;
  }
  return bounds;
}
