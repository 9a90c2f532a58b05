/** The handlers of every contract operation, by operation id: the session layer's calls. */
import type { GatewayServices } from "../http/gateway-services.js";
import type { OperationHandlers } from "../operations/handler.js";
import { executeHandler } from "./execute.js";
import { fileHandlers } from "./files.js";
import { sessionHandlers } from "./session-handlers.js";

export function contractHandlers(services: GatewayServices): OperationHandlers {
  return {
    ...sessionHandlers(services),
    "sessions.exec": executeHandler(services),
    ...fileHandlers(services),
  };
}
