/** The handlers of every contract operation, by operation id: the session layer's calls. */
import { contractOperations } from "../operations/contract-operations.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import { type ExecuteDeps, executeHandler } from "./execute.js";
import { type FileDeps, fileHandlers } from "./files.js";
import { type SessionHandlerDeps, sessionHandlers } from "./session-handlers.js";

/** What the contract's handlers need, together: each group takes its own part of it. */
export type ContractDeps = SessionHandlerDeps & ExecuteDeps & FileDeps;

export function contractHandlers(deps: ContractDeps): OperationHandlers {
  return {
    ...sessionHandlers(deps),
    ...handlersFor(contractOperations, { "sessions.exec": executeHandler(deps) }),
    ...fileHandlers(deps),
  };
}
