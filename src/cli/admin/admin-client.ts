/**
 * The admin API (`/admin/v1`) over HTTP, for every operator command (`sandpool policy`, `usage`,
 * `keys`, `sessions`, `pools`): where the gateway is and which token to send (--url/--token, or
 * SANDPOOL_URL/SANDPOOL_ADMIN_TOKEN), one request, and every refusal turned into a reason an
 * operator can act on. Exit codes: 1 refused or unreachable (AdminCliError), 2 bad usage
 * (AdminUsageError).
 */

export const DEFAULT_ADMIN_URL = "http://127.0.0.1:8080";
export const ADMIN_USAGE_EXIT_CODE = 2;
const REQUEST_TIMEOUT_MS = 30_000;

/** Bad usage: exit code 2. */
export class AdminUsageError extends Error {}
/** The gateway refused, or could not be reached: exit code 1. */
export class AdminCliError extends Error {}

export interface ConnectionOptions {
  url?: string;
  token?: string;
  json?: boolean;
}

export interface AdminConnection {
  /** `<url>/admin/v1`, without a trailing slash. */
  base: string;
  url: string;
  token: string;
  json: boolean;
}

export interface AdminAnswer {
  status: number;
  body: unknown;
}

/** The connection an admin command uses, from its --url/--token/--json options (env already applied). */
export function adminConnection(options: ConnectionOptions): AdminConnection {
  const url = options.url && options.url.trim() !== "" ? options.url.trim() : DEFAULT_ADMIN_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AdminUsageError(`--url '${url}' is not a URL (for example ${DEFAULT_ADMIN_URL})`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new AdminUsageError(`--url '${url}' must be an http:// or https:// URL`);
  const token = options.token?.trim() ?? "";
  if (token === "") {
    throw new AdminUsageError(
      "no admin token: pass --token or set SANDPOOL_ADMIN_TOKEN (`sandpool dev` prints one as SANDPOOL_ADMIN_TOKEN=...)",
    );
  }
  return { base: `${url.replace(/\/+$/, "")}/admin/v1`, url, token, json: options.json === true };
}

/**
 * One admin API request; `path` is below `/admin/v1` (e.g. `/usage?workspace=a`). Answers 2xx
 * with the parsed JSON body; anything else throws AdminCliError with the reason.
 */
export async function adminCall(
  conn: AdminConnection,
  method: string,
  path: string,
  body?: unknown,
): Promise<AdminAnswer> {
  // undici only here: once loaded in a process, Node's global fetch uses its stricter dispatcher.
  const { request } = await import("undici");
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(`${conn.base}${path}`, {
      method: method as "GET",
      headers: {
        authorization: `Bearer ${conn.token}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
  } catch (error) {
    throw new AdminCliError(`cannot reach sandpool at ${conn.url}: ${describeNetworkError(error)}`);
  }
  const text = await response.body.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    throw new AdminCliError(
      `unexpected answer from ${conn.url} (HTTP ${response.statusCode}, not JSON): is it a sandpool gateway?`,
    );
  }
  if (response.statusCode >= 200 && response.statusCode < 300)
    return { status: response.statusCode, body: parsed };
  throw new AdminCliError(describeRefusal(conn, response.statusCode, parsed));
}

function describeNetworkError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0)
    return describeNetworkError(error.errors[0]);
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error.message) return error.message;
    if (code) return code;
  }
  return String(error);
}

interface ErrorDetail {
  code?: string;
  message?: string;
  problems?: string[];
}

function describeRefusal(conn: AdminConnection, status: number, body: unknown): string {
  const detail = ((body as { detail?: ErrorDetail } | undefined)?.detail ?? {}) as ErrorDetail;
  const what = `${status}${detail.code ? ` ${detail.code}` : ""}`;
  switch (status) {
    case 401:
      return (
        `the gateway refused the token (${what}): it is missing, expired, or not signed with a key the gateway trusts.\n` +
        "Pass an admin token with --token or SANDPOOL_ADMIN_TOKEN (`sandpool dev` prints one as SANDPOOL_ADMIN_TOKEN=...)."
      );
    case 403:
      return (
        `the token is valid but is not an admin token (${what}).\n` +
        "The admin API needs a token whose admin claim (auth.adminClaim, default sandpool_admin) is true."
      );
    case 422: {
      const problems = detail.problems ?? (detail.message ? detail.message.split("; ") : []);
      return `the gateway refused the request (${what}):\n${problems.map((p) => `  - ${p}`).join("\n")}`;
    }
    case 429:
      return `the gateway is limiting this client (${what}): ${detail.message ?? "too many requests"}; try again shortly`;
    default:
      if (status === 404 && detail.code === undefined)
        return `no admin API at ${conn.url} (HTTP 404): is it a sandpool gateway?`;
      return `the gateway answered ${what}: ${detail.message ?? "no detail"}`;
  }
}
