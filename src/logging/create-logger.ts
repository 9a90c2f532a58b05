/**
 * Structured logs (pino) on stderr, so stdout stays free for what a command prints for
 * people and scripts. Level from SANDPOOL_LOG_LEVEL (default info). A line written while a
 * request is being served carries its id, whichever service writes it. Tokens and program
 * output are never logged: the authorization header is redacted should a request object
 * ever be logged whole.
 */
import { type Logger, pino } from "pino";
import { currentRequestId } from "./request-context.js";

export function createLogger(
  name: string,
  level = process.env.SANDPOOL_LOG_LEVEL ?? "info",
  destination: pino.DestinationStream = pino.destination({ fd: 2, sync: false }),
): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      mixin: () => {
        const requestId = currentRequestId();
        return requestId ? { requestId } : {};
      },
      redact: ["req.headers.authorization", "headers.authorization", "authorization"],
    },
    destination,
  );
}
