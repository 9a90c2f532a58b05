/**
 * A request header by name, as `c.req.header(name)` answers it (duplicates joined with ", ",
 * as a web `Headers` does), read off the request's raw header list when it came from Node's
 * HTTP server. Hono's `c.req.header` builds a whole web `Headers` object from that list on
 * first use, on every request; the gateway reads a handful of headers per call, so it scans
 * the list instead. Node's own `incoming.headers` would not do: it keeps only the first of a
 * duplicated Authorization, Host or Content-Type, where the web object (and so every check
 * written against it) sees both.
 */
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

export function requestHeader(c: Context, name: string): string | undefined {
  const raw = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.rawHeaders;
  if (raw === undefined) return c.req.header(name);
  return headerFromRaw(raw, name);
}

/** `name` must be lower case. Exported for its unit test. */
export function headerFromRaw(raw: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length !== name.length || (key !== name && key.toLowerCase() !== name)) continue;
    value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
  }
  return value;
}
