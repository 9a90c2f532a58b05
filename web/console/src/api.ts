/**
 * The console's one way to the gateway: the admin API (`/admin/v1`), the same operations the
 * `sandpool` CLI calls, through the client generated from the OpenAPI document
 * (src/cli/generated/admin-api.ts, via openapi-fetch as the CLI does). The admin token lives
 * in this object only: not in a cookie, not in storage. The browser never sends it on its
 * own, so another site cannot make it act with it (no CSRF by construction), and a reload or
 * signing out forgets it. Every refusal becomes an AdminApiError with the API's code, message
 * and per-field problems. No DOM here, so unit tests run it in Node.
 */
import createClient from "openapi-fetch";
import type { paths } from "../../../src/cli/generated/admin-api.js";

type Json<P extends keyof paths, M extends keyof paths[P], S extends number = 200> = paths[P][M] extends {
  responses: infer R;
}
  ? R extends Record<S, { content: { "application/json": infer B } }>
    ? B
    : never
  : never;
type RequestBody<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? B
  : never;

export type WorkspaceRow = Json<"/admin/v1/workspaces", "get">["workspaces"][number];
export type PolicyView = Json<"/admin/v1/workspaces/{ws}/policy", "get">;
export type PolicyEdit = RequestBody<"/admin/v1/workspaces/{ws}/policy", "put">;
export type PoolsAnswer = Json<"/admin/v1/pools", "get">;
export type Pool = PoolsAnswer["items"][number];
export type AnswerMinute = PoolsAnswer["serverErrors"]["minutes"][number];
export type NodeInfo = Json<"/admin/v1/nodes", "get">["items"][number];
export type SessionInfo = Json<"/admin/v1/sessions", "get">["items"][number];
export type KeyInfo = Json<"/admin/v1/keys", "get">["items"][number];
export type CreatedKey = Json<"/admin/v1/keys", "post", 201>;
export type AuditItem = Json<"/admin/v1/audit", "get">["items"][number];
export type UsageReport = Json<"/admin/v1/usage", "get">;
export type ExplainRequest = RequestBody<"/admin/v1/explain", "post">;
export type ExplainAnswer = Json<"/admin/v1/explain", "post">;

/** A refusal of the admin API (or no answer at all: status 0). */
export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** A refused input's problems, each `field: reason` (422 request.malformed). */
    readonly problems: readonly string[] = [],
  ) {
    super(message);
  }

  /** Signed in with a token that is not (or no longer) valid. */
  get unauthenticated(): boolean {
    return this.status === 401;
  }

  /** A valid token without admin rights. */
  get forbidden(): boolean {
    return this.code === "auth.forbidden";
  }
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

/** The body of a 2xx answer, or the refusal as an AdminApiError. */
function unwrap<T>(answer: Answer<T>): T {
  const { response } = answer;
  if (response.ok) return answer.data as T;
  const detail = (answer.error as { detail?: { code?: string; message?: string; problems?: unknown } })
    ?.detail;
  const problems = Array.isArray(detail?.problems) ? detail.problems.map(String) : [];
  throw new AdminApiError(
    response.status,
    detail?.code ?? "unknown",
    detail?.message ?? `the gateway answered ${response.status}`,
    problems,
  );
}

async function reached<T>(call: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await call;
  } catch (error) {
    throw new AdminApiError(0, "network", `the gateway could not be reached (${(error as Error).message})`);
  }
  return unwrap(answer);
}

export interface AdminApiOptions {
  /** The gateway's origin; empty: this page's own (the console is served beside the admin API). */
  baseUrl?: string;
  /** The fetch to call (tests pass their own). */
  fetch?: (request: Request) => Promise<Response>;
}

/** The admin API with one admin token. */
export class AdminApi {
  readonly #client: ReturnType<typeof createClient<paths>>;

  constructor(token: string, options: AdminApiOptions = {}) {
    const origin =
      options.baseUrl ?? (globalThis as { location?: { origin: string } }).location?.origin ?? "";
    this.#client = createClient<paths>({
      baseUrl: origin,
      headers: { Authorization: `Bearer ${token}` },
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  /** Checks the token: resolves for an admin token, else throws (401 invalid, 403 `auth.forbidden`). */
  async signIn(): Promise<void> {
    await this.workspaces();
  }

  async workspaces(): Promise<WorkspaceRow[]> {
    return (await reached(this.#client.GET("/admin/v1/workspaces"))).workspaces;
  }

  policy(ws: string): Promise<PolicyView> {
    return reached(this.#client.GET("/admin/v1/workspaces/{ws}/policy", { params: { path: { ws } } }));
  }

  putPolicy(ws: string, edit: PolicyEdit): Promise<PolicyView> {
    return reached(
      this.#client.PUT("/admin/v1/workspaces/{ws}/policy", { params: { path: { ws } }, body: edit }),
    );
  }

  /** The pools, and the answering replica's contract calls and server errors per minute over the last hour. */
  pools(): Promise<PoolsAnswer> {
    return reached(this.#client.GET("/admin/v1/pools"));
  }

  async nodes(): Promise<NodeInfo[]> {
    return (await reached(this.#client.GET("/admin/v1/nodes"))).items;
  }

  drainNode(id: string, drain: boolean): Promise<NodeInfo> {
    return drain
      ? reached(this.#client.POST("/admin/v1/nodes/{id}/drain", { params: { path: { id } } }))
      : reached(this.#client.POST("/admin/v1/nodes/{id}/undrain", { params: { path: { id } } }));
  }

  async sessions(workspace?: string): Promise<SessionInfo[]> {
    const query = workspace === undefined ? {} : { workspace };
    return (await reached(this.#client.GET("/admin/v1/sessions", { params: { query } }))).items;
  }

  async endSession(id: string): Promise<SessionInfo> {
    return (await reached(this.#client.DELETE("/admin/v1/sessions/{id}", { params: { path: { id } } })))
      .ended;
  }

  async hibernateSession(id: string): Promise<SessionInfo> {
    return (
      await reached(this.#client.POST("/admin/v1/sessions/{id}/hibernate", { params: { path: { id } } }))
    ).hibernated;
  }

  /** Restores a hibernated session now; a running one is answered as it is. */
  async resumeSession(id: string): Promise<SessionInfo> {
    return (await reached(this.#client.POST("/admin/v1/sessions/{id}/resume", { params: { path: { id } } })))
      .resumed;
  }

  async keys(workspace?: string): Promise<KeyInfo[]> {
    const query = workspace === undefined ? {} : { workspace };
    return (await reached(this.#client.GET("/admin/v1/keys", { params: { query } }))).items;
  }

  createKey(workspace: string, name: string | null, expiresInSeconds?: number): Promise<CreatedKey> {
    const body = { workspace, name, ...(expiresInSeconds === undefined ? {} : { expiresInSeconds }) };
    return reached(this.#client.POST("/admin/v1/keys", { body }));
  }

  async revokeKey(prefix: string): Promise<KeyInfo> {
    return (await reached(this.#client.DELETE("/admin/v1/keys/{prefix}", { params: { path: { prefix } } })))
      .revoked;
  }

  async audit(query: {
    workspace?: string;
    kind?: "denied" | "admin";
    limit?: number;
  }): Promise<AuditItem[]> {
    const { limit, ...rest } = query;
    const params = { query: { ...rest, ...(limit === undefined ? {} : { limit: String(limit) }) } };
    return (await reached(this.#client.GET("/admin/v1/audit", { params }))).items;
  }

  usage(workspace: string, by: "hour" | "day", since: Date, until?: Date): Promise<UsageReport> {
    const query = {
      workspace,
      by,
      since: since.toISOString(),
      ...(until === undefined ? {} : { until: until.toISOString() }),
    };
    return reached(this.#client.GET("/admin/v1/usage", { params: { query } }));
  }

  explain(request: ExplainRequest): Promise<ExplainAnswer> {
    return reached(this.#client.POST("/admin/v1/explain", { body: request }));
  }
}
