/**
 * The HTTP-proxy wire details the egress proxy needs: reading a CONNECT authority or an
 * absolute-form URL into a host and port, dropping hop-by-hop and Proxy-* headers, and
 * answering a raw socket (a CONNECT is answered before any HTTP response object exists).
 */
import { type IncomingHttpHeaders, STATUS_CODES } from "node:http";
import { isIP } from "node:net";
import type { Duplex } from "node:stream";

export interface Target {
  /** Host name (lower case) or IP literal, without brackets. */
  host: string;
  port: number;
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;

function target(host: string, portText: string): Target | undefined {
  if (!/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port < 1 || port > 65_535) return undefined;
  const name = host.toLowerCase();
  if (isIP(name) === 0 && !HOST_NAME.test(name)) return undefined;
  return { host: name, port };
}

/** `host:port` or `[v6]:port`, as a CONNECT request names its target. */
export function parseAuthority(authority: string | undefined): Target | undefined {
  if (!authority) return undefined;
  const bracketed = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(authority);
  if (bracketed) return isIP(bracketed[1]!) === 6 ? target(bracketed[1]!, bracketed[2]!) : undefined;
  const colon = authority.lastIndexOf(":");
  if (colon <= 0) return undefined;
  return target(authority.slice(0, colon), authority.slice(colon + 1));
}

/** An absolute-form `http://` request target; undefined for anything else. */
export function parseAbsoluteHttpUrl(
  requestTarget: string | undefined,
): (Target & { path: string; authority: string }) | undefined {
  if (!requestTarget || !/^http:\/\//i.test(requestTarget)) return undefined;
  let url: URL;
  try {
    url = new URL(requestTarget);
  } catch {
    return undefined;
  }
  if (url.username !== "" || url.password !== "") return undefined;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const parsed = target(host, url.port === "" ? "80" : url.port);
  return parsed && { ...parsed, path: `${url.pathname}${url.search}`, authority: url.host };
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Headers without hop-by-hop ones, those `Connection` names, and every `Proxy-*` header. */
export function endToEndHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const named = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ""),
  );
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(lower) || named.has(lower) || lower.startsWith("proxy-"))
      continue;
    kept[lower] = value;
  }
  return kept;
}

/** A complete short text answer on a raw socket, which is then ended. */
export function answerSocket(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed || !socket.writable) return;
  const body = `${text}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n` +
      "Content-Type: text/plain; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Connection: close\r\n\r\n" +
      body,
  );
}
