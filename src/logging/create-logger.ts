/**
 * Structured logs (pino) on stderr, so stdout stays free for what a command prints for
 * people and scripts. Level from SANDPOOL_LOG_LEVEL (default info). A request's lines carry
 * its id through the request's child logger (`c.get("log")`, made by observe-request).
 * Tokens, program output and request bodies are never logged: the authorization header and
 * a call's body are redacted should a request object or a call's arguments ever be logged whole.
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
      // Request bodies are never logged; should a call's arguments or a body ever be, a
      // workspace secret's value (docs/secrets.md) is cut out all the same.
      redact: [
        "req.headers.authorization",
        "headers.authorization",
        "authorization",
        "args.body",
        "call.args.body",
        "body.value",
      ],
    },
    destination,
  );
}
