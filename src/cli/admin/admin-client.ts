/**
 * The admin API (`/admin/v1`) over HTTP, for every operator command (`sandpool policy`, `usage`,
 * `keys`, `sessions`, `pools`): where the gateway is and which token to send (--url/--token, or
 * SANDPOOL_URL/SANDPOOL_ADMIN_TOKEN), one request, and every refusal turned into a reason an
 * operator can act on. The requests go through the client generated from the OpenAPI document
 * (`npm run gen:admin-client`). Exit codes: 1 refused or unreachable (AdminCliError), 2 bad usage
 * (AdminUsageError).
 */
import createClient from "openapi-fetch";
import type { paths } from "../generated/admin-api.js";

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
  url: string;
  token: string;
  json: boolean;
}

/** An answer of the admin API: its status and JSON body (typed by the operation, see AdminBody). */
export interface AdminAnswer<B = unknown> {
  status: number;
  body: B;
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
  return { url, token, json: options.json === true };
}

/** The admin API's paths in the generated types (`/admin/v1/...`), and those that answer `method`. */
export type AdminPath = Extract<keyof paths, `/admin/v1/${string}`>;
export type AdminMethod = "get" | "put" | "post" | "delete" | "patch";
export type AdminPathWith<M extends AdminMethod> = {
  [P in AdminPath]: paths[P][M] extends undefined ? never : P;
}[AdminPath];

/**
 * The JSON body of an operation's 2xx answer, from the types generated off the OpenAPI document
 * (undefined for a 204): the CLI reads the admin API's answers in the registry's own shapes.
 */
type SuccessBody<Operation> = Operation extends { responses: infer Responses }
  ? {
      [Status in keyof Responses]: Status extends 200 | 201
        ? Responses[Status] extends { content: { "application/json": infer Body } }
          ? Body
          : never
        : Status extends 204
          ? undefined
          : never;
    }[keyof Responses]
  : unknown;

export type AdminBody<M extends AdminMethod, P extends AdminPathWith<M>> = SuccessBody<paths[P][M]>;

/** The parts of one admin request: path parameters, query (undefined values are left out), JSON body. */
export interface AdminRequest {
  path?: Record<string, string>;
  query?: Record<string, string | undefined>;
  body?: unknown;
}

/**
 * The generated client's call, with the arguments loose: the path and method are checked
 * against the generated types (AdminPathWith), the parameters and body only once the admin
 * operations declare their schemas (src/operations/admin-operations.ts).
 */
type LooseRequest = (
  method: AdminMethod,
  path: string,
  init: { params: { path?: object; query?: object }; body?: unknown; parseAs: "text" },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/**
 * One admin API request, through the client generated from the OpenAPI document
 * (openapi-fetch over src/cli/generated/admin-api.ts). Answers 2xx with the parsed JSON body;
 * anything else throws AdminCliError with the reason.
 */
export async function adminCall<M extends AdminMethod, P extends AdminPathWith<M>>(
  conn: AdminConnection,
  method: M,
  path: P,
  request: AdminRequest = {},
): Promise<AdminAnswer<AdminBody<M, P>>> {
  const client = await adminClient(conn);
  let answer: Awaited<ReturnType<LooseRequest>>;
  try {
    answer = await (client.request as unknown as LooseRequest)(method, path, {
      params: { path: request.path, query: request.query },
      body: request.body,
      parseAs: "text",
    });
  } catch (error) {
    throw new AdminCliError(`cannot reach sandpool at ${conn.url}: ${describeNetworkError(error)}`);
  }
  const status = answer.response.status;
  // The body is the operation's declared answer: the registry's schema these types are generated from.
  if (status >= 200 && status < 300)
    return { status, body: parseJson(conn, status, answer.data) as AdminBody<M, P> };
  // openapi-fetch parses an error's JSON itself; text it could not parse stays a string.
  const body = answer.error === "" ? undefined : answer.error;
  if (typeof body === "string") throw notJson(conn, status);
  throw new AdminCliError(describeRefusal(conn, status, body));
}

/**
 * The generated client for one connection. undici's fetch, Request and timeouts, loaded only
 * here: once loaded in a process, Node's global fetch uses its stricter dispatcher.
 */
async function adminClient(conn: AdminConnection) {
  const { Agent, fetch, Request } = await import("undici");
  const dispatcher = new Agent({ headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
  return createClient<paths>({
    baseUrl: conn.url.replace(/\/+$/, ""),
    headers: { authorization: `Bearer ${conn.token}`, accept: "application/json" },
    fetch: fetch as unknown as (input: globalThis.Request) => Promise<Response>,
    Request: Request as unknown as typeof globalThis.Request,
    requestInitExt: { dispatcher },
  });
}

function parseJson(conn: AdminConnection, status: number, text: unknown): unknown {
  if (text === undefined || text === "") return undefined;
  try {
    return JSON.parse(String(text));
  } catch {
    throw notJson(conn, status);
  }
}

function notJson(conn: AdminConnection, status: number): AdminCliError {
  return new AdminCliError(
    `unexpected answer from ${conn.url} (HTTP ${status}, not JSON): is it a sandpool gateway?`,
  );
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
      if (detail.code === "auth.expired")
        return (
          `the admin token has expired (${what}): ${detail.message ?? "get a new one"}.\n` +
          "In dev mode `sandpool token --admin` mints a new one (and `sandpool dev` prints one at each start)."
        );
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
