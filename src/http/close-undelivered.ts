/**
 * Closes the client's connection if an answer is not delivered by a deadline: a client that
 * stops reading a streamed answer would otherwise hold it, and the events written to it,
 * forever (Node waits for a drain that never comes, and the server sets no socket timeout
 * once a request is in).
 */
import type { Context } from "hono";
import type { GatewayEnv } from "./gateway-env.js";

export function closeUndelivered(c: Context<GatewayEnv>, afterMs: number): void {
  const outgoing = c.env?.outgoing;
  if (!outgoing) return; // not served over a socket (app.request in tests)
  const timer = setTimeout(
    () => {
      if (!outgoing.writableFinished) outgoing.destroy();
    },
    Math.max(0, afterMs),
  );
  timer.unref();
  outgoing.once("close", () => clearTimeout(timer));
}
