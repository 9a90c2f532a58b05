/** A small admin API client for tests: one request, its status, parsed JSON body and headers. */
import type { Answer } from "./contract-client.js";

export function adminApi(baseUrl: string, defaultToken: string) {
  return async (
    method: string,
    path: string,
    options: { token?: string | null; body?: unknown } = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = {};
    const token = options.token === undefined ? defaultToken : options.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${baseUrl}/admin/v1${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    const body =
      (res.headers.get("content-type") ?? "").includes("application/json") && text ? JSON.parse(text) : text;
    return { status: res.status, body, headers: res.headers, text };
  };
}
