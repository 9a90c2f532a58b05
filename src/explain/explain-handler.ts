/** `admin.explain` as an operation handler: the request checked (422 listing every problem), the trace answered. */
import type { AdminOperation } from "../operations/admin-operations.js";
import type { TypedHandler } from "../operations/typed-handlers.js";
import { type ExplainDeps, explain } from "./explain.js";
import { parseExplainRequest } from "./explain-request.js";

export function explainHandler(services: ExplainDeps): TypedHandler<AdminOperation<"admin.explain">> {
  return async (call) => {
    const request = parseExplainRequest(call.args.body);
    return { kind: "json", status: 200, body: await explain(services, request) };
  };
}
