/**
 * A man in the middle on loopback: an HTTP proxy that forwards every request to `target`
 * as it is and its answer back, except that answers to requests whose path matches the
 * current rule have their headers or each chunk of their body rewritten (same length: what
 * the framing or Content-Length says still holds). Tests set and clear the rule between calls.
 */
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface TamperRule {
  path: RegExp;
  /** Rewrites one chunk of the answer's body; must keep its length. */
  rewrite?(chunk: Buffer): Buffer;
  /** Rewrites the answer's headers. */
  rewriteHeaders?(headers: IncomingHttpHeaders): IncomingHttpHeaders;
}

export interface TamperingProxy {
  url: string;
  /** Where the proxy sends requests; set once the target is known. */
  target: string;
  rule: TamperRule | undefined;
  /** Answer chunks rewritten so far (a rule that never matched proves nothing). */
  tampered: number;
  close(): Promise<void>;
}

/** Replaces every `from` with `to` (same length) in a chunk. */
export function replaceBytes(from: string, to: string): (chunk: Buffer) => Buffer {
  if (Buffer.byteLength(from) !== Buffer.byteLength(to)) throw new Error("a rewrite keeps the length");
  const needle = Buffer.from(from);
  const replacement = Buffer.from(to);
  return (chunk) => {
    let at = chunk.indexOf(needle);
    if (at < 0) return chunk;
    const out = Buffer.from(chunk);
    while (at >= 0) {
      replacement.copy(out, at);
      at = out.indexOf(needle, at + needle.length);
    }
    return out;
  };
}

export async function startTamperingProxy(): Promise<TamperingProxy> {
  const proxy: TamperingProxy = {
    url: "",
    target: "",
    rule: undefined,
    tampered: 0,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const target = new URL(proxy.target);
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const rule = proxy.rule?.path.test(req.url ?? "") ? proxy.rule : undefined;
        if (rule?.rewriteHeaders) proxy.tampered++;
        res.writeHead(answer.statusCode ?? 502, rule?.rewriteHeaders?.(answer.headers) ?? answer.headers);
        answer.on("data", (chunk: Buffer) => {
          const rewritten = rule?.rewrite ? rule.rewrite(chunk) : chunk;
          if (!rewritten.equals(chunk)) proxy.tampered++;
          res.write(rewritten);
        });
        answer.on("end", () => res.end());
        answer.on("error", () => res.destroy());
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return proxy;
}
