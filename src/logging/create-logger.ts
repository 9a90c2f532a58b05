/**
 * Structured logs (pino) on stderr, so stdout stays free for what a command prints for
 * people and scripts. Level from SANDPOOL_LOG_LEVEL (default info). A request's lines carry
 * its id through the request's child logger (`c.get("log")`, made by observe-request).
 * Tokens and program output are never logged: the authorization header is redacted should
 * a request object ever be logged whole.
 */
import { type Logger, pino } from "pino";

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
      redact: ["req.headers.authorization", "headers.authorization", "authorization"],
    },
    destination,
  );
}
