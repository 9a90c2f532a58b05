/**
 * The HTTP answer to an operation's outcome. Built through the context (not `new Response`)
 * so headers set earlier in the pipeline (X-Request-Id) are part of it from the start: a
 * header added to a finished response makes Hono rebuild it around a web stream, which the
 * Node adapter then drains chunk by chunk instead of writing the bytes at once.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode, StatusCode } from "hono/utils/http-status";
import type { Outcome } from "../operations/handler.js";

export function renderOutcome(c: Context, outcome: Outcome): Response {
  switch (outcome.kind) {
    case "json":
      return c.json(outcome.body, outcome.status as ContentfulStatusCode, outcome.headers);
    case "raw":
      return c.body(outcome.body as never, outcome.status as ContentfulStatusCode, outcome.headers);
    case "empty":
      return c.body(null, outcome.status as StatusCode, outcome.headers);
  }
}
