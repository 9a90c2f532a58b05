/**
 * The request pipeline (docs/architecture.md, "The pipeline"): the one code path from a
 * routed call to its handler, for every operation and every transport (HTTP, src/http/
 * bind-operations.ts; in process, call.ts). Its steps run in a fixed order, each in its own
 * file under steps/:
 *
 *   route -> authenticate -> mounted -> args -> resolve -> policy -> admit -> run -> audit
 *
 * (the transport has run before: request target, Host and Origin, the size cap, the bound on
 * unauthenticated requests and, for the contract, the calls in flight; it renders the
 * outcome after). Resolve, policy and admit are the session layer's, as the operation's
 * session plan says (src/session/session-calls.ts): resolve costs no round trip of its own
 * (admit resolves the session, reserves the budget and marks it busy in one), and a refusal
 * by args or policy resolves the session first so that the 404 comes first. A refused
 * contract call is audited, whichever step refused it.
 */
import type { Logger } from "pino";
import { auditRefusal } from "../audit/audit-refusal.js";
import { type Caller, scopedPrincipal } from "../auth/principal.js";
import type { BearerCheck } from "../auth/verify-bearer.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type {
  CallArgs,
  CallTransport,
  OperationCall,
  OperationHandler,
  Outcome,
} from "../operations/handler.js";
import type { OperationSpec } from "../operations/operation.js";
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { SessionCalls } from "../session/session-calls.js";
import { parseArgs, type RawArgs } from "./steps/args.js";
import { authenticateCaller, type Credential } from "./steps/authenticate.js";
import { mountedCaller } from "./steps/mounted.js";

export interface PipelineDeps {
  /** Authentication: the authenticator, the failed-attempt limits, and metrics. */
  check: BearerCheck;
  /** Where refusals are audited. */
  usage: UsageSink;
  /** The session layer's steps, for contract calls; without it no operation has a session. */
  sessions?: SessionCalls;
}

/** A call routed to its operation (the route step), as the transport hands it on. */
export interface PipelineRequest {
  operation: OperationSpec;
  credential: Credential;
  raw: RawArgs;
  requestId: string;
  log: Logger;
  signal?: AbortSignal;
  transport?: CallTransport;
}

/** The caller of an operation open to anyone that was called without a credential. */
export const ANONYMOUS: Caller = Object.freeze({
  workspace: undefined,
  subject: undefined,
  tokenId: undefined,
  expiresAt: 0,
});

export async function runPipeline(
  deps: PipelineDeps,
  handler: OperationHandler,
  request: PipelineRequest,
): Promise<Outcome> {
  const { operation } = request;
  const authenticated = await authenticateCaller(deps.check, operation, request.credential);
  const caller = mountedCaller(operation.mountedFor, authenticated, deps.check.metrics) ?? ANONYMOUS;
  const principal = operation.mountedFor === "workspace" ? scopedPrincipal(caller) : undefined;
  try {
    const plan = principal && operation.session;
    const sessions = deps.sessions;
    if (!plan || !sessions)
      return await handler(callOf(request, caller, await parseArgs(operation, request.raw)));
    // The session the path names: known before its args are, so a 404 can come first.
    const key = sessions.keyOf(principal, request.raw);
    let args: CallArgs;
    let policy: EffectivePolicy | undefined;
    try {
      args = await parseArgs(operation, request.raw);
      policy = await sessions.gate(plan, principal.workspace, args);
    } catch (refusal) {
      return await sessions.refuseInOrder(key, refusal);
    }
    const session = key === undefined ? undefined : await sessions.admit(plan, key, policy, args);
    return await handler({ ...callOf(request, caller, args), policy, session });
  } catch (error) {
    if (principal !== undefined && operation.group === "contract") {
      auditRefusal(
        deps.usage,
        request.log,
        { principal, operationId: operation.id, sessionId: request.raw.params.id },
        error,
      );
    }
    throw error;
  }
}

function callOf(request: PipelineRequest, caller: Caller, args: CallArgs): OperationCall {
  return {
    operation: request.operation,
    caller,
    args,
    requestId: request.requestId,
    log: request.log,
    signal: request.signal,
    transport: request.transport,
  };
}
