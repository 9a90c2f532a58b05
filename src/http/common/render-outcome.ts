/** An operation handler's outcome (src/operations/handler.ts) as the HTTP answer. */
import type { Context } from "hono";

/** Hono's body type: the handler's bytes are never over a SharedArrayBuffer. */
type BodyData = string | Uint8Array<ArrayBuffer> | ReadableStream;

import type { Outcome } from "../../operations/handler.js";

export function renderOutcome(c: Context, outcome: Outcome): Response {
  switch (outcome.kind) {
    case "json":
      return c.json(outcome.body, outcome.status as 200, outcome.headers);
    case "raw":
      return c.body(outcome.body as BodyData, outcome.status as 200, outcome.headers);
    case "empty":
      return c.body(null, outcome.status as 204, outcome.headers);
  }
}
