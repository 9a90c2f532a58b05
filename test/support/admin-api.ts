/** A small admin API client for tests: one request, its status, parsed JSON body and headers. */
import type { Answer } from "./contract-client.js";

export interface AdminRequestOptions {
  /** The bearer; `null` sends none; undefined the client's default (an admin token). */
  token?: string | null;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is (with `contentType`, JSON by default): malformed bodies, odd types. */
  rawBody?: string;
  contentType?: string;
}

/** One admin API request to `baseUrl`'s /admin/v1; a JSON answer is parsed, anything else kept as text. */
export async function adminRequest(
  baseUrl: string,
  defaultToken: string,
  method: string,
  path: string,
  options: AdminRequestOptions = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  const token = options.token === undefined ? defaultToken : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const body = options.body === undefined ? options.rawBody : JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] = options.contentType ?? "application/json";
  const res = await fetch(`${baseUrl}/admin/v1${path}`, { method, headers, body });
  const text = await res.text();
  const parsed =
    (res.headers.get("content-type") ?? "").includes("application/json") && text ? JSON.parse(text) : text;
  return { status: res.status, body: parsed, headers: res.headers, text };
}

/** A client bound to one gateway and one default token. */
export function adminApi(baseUrl: string, defaultToken: string) {
  return (method: string, path: string, options: AdminRequestOptions = {}) =>
    adminRequest(baseUrl, defaultToken, method, path, options);
}
