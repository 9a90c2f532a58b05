/**
 * An operation called in process: the same pipeline as over HTTP (route by id, authenticate,
 * mounted, args, resolve, policy, admit, run, audit), without a transport. The caller is
 * given (already authenticated, as a token's verified claims would be); the outcome is
 * returned as it is, and a refusal is thrown as the SandpoolError an HTTP caller would get
 * as its answer. Tests and explain use it.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Caller } from "../auth/principal.js";
import { SandpoolError } from "../contract/error-codes.js";
import type { CallArgs, OperationHandlers, Outcome } from "../operations/handler.js";
import { type PipelineDeps, runPipeline } from "./pipeline.js";
import { routeById } from "./steps/route.js";

/** An operation's arguments, as an in-process caller gives them: all optional. */
export type InProcessArgs = Partial<CallArgs>;

export type InProcessCall = (
  operationId: string,
  caller: Caller | undefined,
  args?: InProcessArgs,
) => Promise<Outcome>;

export function inProcessCall(deps: PipelineDeps, handlers: OperationHandlers, log: Logger): InProcessCall {
  return async (operationId, caller, args = {}) => {
    const operation = routeById(operationId);
    const handler = handlers[operation.id];
    if (!handler)
      throw new SandpoolError("request.not_found", `the operation '${operationId}' is not served here`);
    const { body } = args;
    return runPipeline(deps, handler, {
      operation,
      credential: { caller },
      raw: {
        params: args.params ?? {},
        query: args.query ?? {},
        readBody: body === undefined ? undefined : async () => body,
        stream: args.stream,
        answer: args.answer,
      },
      requestId: randomUUID(),
      log,
    });
  };
}
