/**
 * Reads a JSON request body under the pipeline's parse rules: a body must be typed
 * `application/json` (415 otherwise, so a cross-origin "simple" POST never reaches a
 * handler) and must parse (400). The size cap is enforced earlier, by the body-limit
 * middleware, before the body is read.
 */
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";

export async function readJsonBody(c: Context, options: { optional?: boolean } = {}): Promise<unknown> {
  const text = await c.req.text();
  if (text.length === 0 && options.optional) return {};
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/(.+\+)?json\s*(;|$)/i.test(type)) {
    throw new SandpoolError("request.bad_content_type", "the request body must be application/json");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SandpoolError("request.bad_json", "the request body is not valid JSON");
  }
}
