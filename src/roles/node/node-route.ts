/**
 * A node API route, and the shape of every route on one held sandbox: reached only for the
 * workspace the sandbox was leased to (node-api.ts, node-hibernation-routes.ts).
 */
import type { SandboxRecord } from "../../store/coordination/records.js";
import { SANDBOX_ID_PATTERN } from "../shared/node-api-wire.js";
import type { NodeCall } from "./node-call.js";
import { unknownSession } from "./node-relay.js";

export interface NodeRoute {
  method: string | undefined;
  path: RegExp;
  /** Whether the route takes a framed (streamed) body; others read theirs whole. */
  streams?: boolean;
  handle(call: NodeCall): Promise<void>;
}

/**
 * A route on one held sandbox, reached only for the workspace it was leased to. One not held
 * here at all is `unheld`'s to answer; one held for another workspace is refused as unknown.
 */
export function sandboxAction(
  method: string,
  action: string,
  handle: (call: NodeCall, record: SandboxRecord) => Promise<void>,
  unheld: (call: NodeCall) => void = (call) => call.answer.error(unknownSession()),
): NodeRoute {
  return {
    method,
    path: new RegExp(`^/node/v1/sandboxes/${SANDBOX_ID_PATTERN}/${action}$`),
    handle: async (call) => {
      const sandboxId = call.params[0]!;
      const record = call.deps.sandboxes.heldFor(sandboxId, call.workspace);
      if (record) return handle(call, record);
      if (!call.deps.sandboxes.holds(sandboxId)) return unheld(call);
      call.deps.log.warn(
        { sandbox: sandboxId, workspace: call.workspace },
        "a call for another workspace was refused",
      );
      call.answer.error(unknownSession());
    },
  };
}
