/**
 * Pipeline step 0 (DESIGN.md section 4): request targets are judged as they arrived on the
 * request line, before any URL parser normalizes `/../` away. A target with `//`, dot
 * segments, encoded dots or slashes, backslashes, NUL or control characters is refused
 * with 400 before routing, authentication or any handler sees it.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorBody } from "../../contract/error-codes.js";

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

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

export function guardRequestTarget(listener: Listener): Listener {
  return (req, res) => {
    if (!isBadRequestTarget(req.url ?? "")) {
      listener(req, res);
      return;
    }
    const body = JSON.stringify(errorBody("request.bad_target", "malformed request target"));
    res.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  };
}
