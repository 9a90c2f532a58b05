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
      // Built with its headers as a plain record, not through c.body: Hono turns two headers
      // or more into a WHATWG Headers object, which @hono/node-server then walks back into a
      // record; a record goes to Node's writeHead as it is (the sandbox's answers, per call).
      // A copy: @hono/node-server adds Content-Length to the record it is given, and an
      // outcome's headers may be shared (a constant), which would give the next answer this one's.
      return new Response(outcome.body as BodyData, {
        status: outcome.status,
        headers: { ...outcome.headers },
      });
    case "empty":
      return c.body(null, outcome.status as 204, outcome.headers);
  }
}
