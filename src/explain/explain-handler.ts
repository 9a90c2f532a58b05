/** `admin.explain` as an operation handler: the request checked (422 listing every problem), the trace answered. */
import type { OperationHandler } from "../operations/handler.js";
import { type ExplainDeps, explain } from "./explain.js";
import { parseExplainRequest } from "./explain-request.js";

export function explainHandler(services: ExplainDeps): OperationHandler {
  return async (call) => {
    const request = parseExplainRequest(call.args.body);
    return { kind: "json", status: 200, body: await explain(services, request) };
  };
}
