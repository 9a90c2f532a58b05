/**
 * Reads a JSON request body under the pipeline's parse rules (step 1; docs/architecture.md,
 * "The pipeline"): the size cap is checked on Content-Length before anything is read (413),
 * and a chunked body is counted as it arrives and refused the moment it passes the cap; a body
 * must be typed `application/json` (415, so a cross-origin "simple" POST never reaches a
 * handler) and must parse (400).
 *
 * On Node the body is read straight from the socket's IncomingMessage: converting it to a
 * web stream first costs more than the rest of a small call's handling.
 */
import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import { takeIfBuffered } from "../../forward/read-capped.js";
import { requestHeader } from "./request-header.js";

/** Bodies read early (chunked ones, by the limit middleware), by request. */
const bodiesRead = new WeakMap<Request, string>();

function tooLarge(): SandpoolError {
  return new SandpoolError("request.too_large", "the request body is too large");
}

function incomingOf(c: Context): IncomingMessage | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
}

function readCapped(incoming: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        incoming.off("data", onData);
        incoming.resume(); // drain the rest unread; the answer is already decided
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    incoming.on("data", onData);
    incoming.once("end", () => resolve(Buffer.concat(chunks, size).toString("utf8")));
    // A client that hangs up mid-body is its own failure, not the server's: a 4xx (nobody is
    // left to read it), so it is neither logged as an unexpected error nor counted as a 5xx.
    incoming.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "ECONNRESET"
          ? new SandpoolError("request.malformed", "the request body ended early", { cause: error })
          : error,
      ),
    );
  });
}

/**
 * The body as text when all the bytes its Content-Length declares are already buffered (a
 * small body most often came in the same read as its headers): taken at once, without waiting
 * for the stream's end, which comes several ticks later. Else undefined, the stream untouched.
 */
function takeWhole(c: Context, incoming: IncomingMessage): string | undefined {
  const declared = declaredLength(c);
  return declared === undefined ? undefined : takeIfBuffered(incoming, declared)?.toString("utf8");
}

/** The length a body declares, unless it is chunked (then its Content-Length means nothing). */
function declaredLength(c: Context): number | undefined {
  const declared = requestHeader(c, "content-length");
  return declared === undefined || requestHeader(c, "transfer-encoding") ? undefined : Number(declared);
}

/**
 * The cap, enforced before the handler runs: on Content-Length (at once: undefined, nothing
 * to wait for), or while a chunked body arrives (the promise of its read).
 */
export function checkJsonSize(c: Context, maxBytes: number): Promise<void> | undefined {
  const declared = declaredLength(c);
  if (declared !== undefined) {
    if (declared > maxBytes) throw tooLarge();
    return undefined;
  }
  return readWithinCap(c, maxBytes);
}

async function readWithinCap(c: Context, maxBytes: number): Promise<void> {
  const incoming = incomingOf(c);
  if (incoming) {
    bodiesRead.set(c.req.raw, await readCapped(incoming, maxBytes));
  } else {
    const text = await c.req.text();
    if (Buffer.byteLength(text) > maxBytes) throw tooLarge();
    bodiesRead.set(c.req.raw, text);
  }
}

/** `checkJsonSize` as a middleware (the sandbox's app). */
export function jsonBodyLimit(maxBytes: number): MiddlewareHandler {
  return async (c, next) => {
    await checkJsonSize(c, maxBytes);
    return next();
  };
}

export async function readJsonBody(c: Context, options: { optional?: boolean } = {}): Promise<unknown> {
  const incoming = incomingOf(c);
  const text =
    bodiesRead.get(c.req.raw) ??
    (incoming
      ? (takeWhole(c, incoming) ?? (await readCapped(incoming, Number.MAX_SAFE_INTEGER)))
      : await c.req.text());
  if (text.length === 0 && options.optional) return {};
  const type = requestHeader(c, "content-type") ?? "";
  if (!/^application\/(.+\+)?json\s*(;|$)/i.test(type)) {
    throw new SandpoolError("request.bad_content_type", "the request body must be application/json");
  }
  // Checked on the text: JSON.parse copes with any depth, but the recursive walks after it
  // (JSON.stringify when a body is forwarded, schema checks) overflow the stack, a 500.
  if (exceedsJsonDepth(text, MAX_JSON_DEPTH)) {
    throw new SandpoolError(
      "request.malformed",
      `the request body nests deeper than ${MAX_JSON_DEPTH} levels`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SandpoolError("request.bad_json", "the request body is not valid JSON");
  }
}

/** Far above any contract or admin body (they nest a handful of levels), far below the stack's limit. */
export const MAX_JSON_DEPTH = 128;

/** Whether arrays and objects in `text` nest deeper than `maxDepth` (brackets inside strings do not count). */
export function exceedsJsonDepth(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c)
        i++; // backslash: the next character is escaped
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) {
      inString = true;
    } else if (char === 0x5b || char === 0x7b) {
      if (++depth > maxDepth) return true;
    } else if ((char === 0x5d || char === 0x7d) && depth > 0) {
      depth--; // never below 0: stray closers must not buy extra depth
    }
  }
  return false;
}
