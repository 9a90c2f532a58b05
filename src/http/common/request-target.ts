/**
 * Pipeline step 0, transport (docs/architecture.md, "The pipeline"): request targets are
 * judged as they arrived on the request line, before any URL parser normalizes `/../` away. A
 * target with `//`, dot segments, encoded dots or slashes, backslashes, NUL or control
 * characters is refused with 400 before routing, authentication or any handler sees it. It
 * runs as the first middleware after request observation, so even these refusals carry a
 * request id and are counted.
 */
import type { Context, MiddlewareHandler } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
const BAD_CHARACTERS = /[\u0000-\u001f\u007f\\]/;
const BAD_ENCODINGS = /%(2e|2f|5c|00)/i;
const DOT_SEGMENT = /(^|\/)\.\.?(\/|$)/;

export function isBadRequestTarget(target: string): boolean {
  const question = target.indexOf("?");
  const pathPart = question >= 0 ? target.slice(0, question) : target;
  if (!pathPart.startsWith("/")) return true;
  if (BAD_CHARACTERS.test(target)) return true;
  return pathPart.includes("//") || DOT_SEGMENT.test(pathPart) || BAD_ENCODINGS.test(pathPart);
}

interface RawRequestBindings {
  incoming?: { url?: string };
}

/** Refuses a bad raw request target (taken from Node's request, not the parsed URL). */
export function refuseBadTarget(c: Context): void {
  const raw = (c.env as RawRequestBindings | undefined)?.incoming?.url;
  if (raw !== undefined && isBadRequestTarget(raw)) {
    throw new SandpoolError("request.bad_target", "malformed request target");
  }
}

/** `refuseBadTarget` as a middleware of its own (the sandbox's app). */
export function guardRequestTarget(): MiddlewareHandler {
  return async (c, next) => {
    refuseBadTarget(c);
    await next();
  };
}
