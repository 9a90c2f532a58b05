/**
 * How `sandpool verify` talks to a deployment: the contract (sessions, tool calls, files) as
 * any client would, with a workspace's token, and the admin API for what only an operator may
 * see (which sandbox a session landed on, usage figures). undici sets TCP_NODELAY, so a probe's
 * timing is the deployment's, not Nagle's.
 */
import { Agent, request } from "undici";

export interface HttpAnswer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/** What one tool call printed, as the contract's result block carries it. */
export interface ToolOutput {
  stdout: string;
  stderr: string;
  returnCode: number;
}

/** A call the deployment answered with something other than what the probe needs. */
export class VerifyCallError extends Error {
  /** The gateway's answer, when it answered. */
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const CALL_DEADLINE_MS = 120_000;
/** The longest a run waits out a workspace's session rate, in all, before it takes the 429. */
const MAX_RATE_WAIT_S = 180;

export class VerifyHttp {
  private readonly agent = new Agent({ connect: { timeout: 10_000 } });

  constructor(readonly baseUrl: string) {}

  async send(
    method: string,
    path: string,
    init: { token?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
  ): Promise<HttpAnswer> {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    const answer = await request(new URL(path, this.baseUrl), {
      method: method as "GET",
      headers,
      body: init.body,
      dispatcher: this.agent,
      headersTimeout: CALL_DEADLINE_MS,
      bodyTimeout: CALL_DEADLINE_MS,
    });
    return { status: answer.statusCode, text: await answer.body.text(), headers: answer.headers };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** A workspace's view of the deployment: open sessions, run tools in them, end them. */
export class WorkspaceClient {
  constructor(
    private readonly http: VerifyHttp,
    readonly token: string,
  ) {}

  /**
   * Opens a session; a workspace's session rate (429 with Retry-After) is waited out, as any
   * good client would: a run opens many sessions, more than some deployments allow a minute.
   */
  async createSession(onWait: (seconds: number) => void = () => {}): Promise<string> {
    let answer: HttpAnswer;
    for (let waited = 0; ; ) {
      answer = await this.http.send("POST", "sessions", {
        token: this.token,
        body: "{}",
        headers: { "content-type": "application/json" },
      });
      const retryAfter = Number(answer.headers["retry-after"]);
      if (answer.status !== 429 || !(retryAfter > 0) || waited + retryAfter > MAX_RATE_WAIT_S) break;
      onWait(retryAfter);
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
      waited += retryAfter;
    }
    if (answer.status !== 201)
      throw new VerifyCallError(
        `CreateSession answered ${answer.status}: ${answer.text.slice(0, 300)}`,
        answer.status,
      );
    return (JSON.parse(answer.text) as { session_id: string }).session_id;
  }

  async deleteSession(sessionId: string): Promise<void> {
    const answer = await this.http.send("DELETE", `sessions/${encodeURIComponent(sessionId)}`, {
      token: this.token,
    });
    if (answer.status !== 204 && answer.status !== 404)
      throw new VerifyCallError(`DeleteSession answered ${answer.status}: ${answer.text.slice(0, 300)}`);
  }

  /** Runs a tool; answers other than 200 are errors (the probes need the output). */
  async tool(
    sessionId: string,
    tool: "code_execution" | "bash_code_execution",
    source: string,
    timeoutSeconds = 60,
  ): Promise<ToolOutput> {
    const input = tool === "code_execution" ? { code: source } : { command: source };
    const answer = await this.exec(sessionId, { tool, input, timeout_seconds: timeoutSeconds });
    if (answer.status !== 200)
      throw new VerifyCallError(`Execute answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const content = (JSON.parse(answer.text) as { result_block: { content: Record<string, unknown> } })
      .result_block.content;
    return {
      stdout: String(content.stdout ?? ""),
      stderr: String(content.stderr ?? ""),
      returnCode: Number(content.return_code ?? -1),
    };
  }

  exec(sessionId: string, body: unknown): Promise<HttpAnswer> {
    return this.http.send("POST", `sessions/${encodeURIComponent(sessionId)}/exec`, {
      token: this.token,
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
  }

  raw(method: string, path: string, init: { body?: string | Buffer; headers?: Record<string, string> } = {}) {
    return this.http.send(method, path, { ...init, token: this.token });
  }
}

/** The operator's view: optional; without it the probes that need it say what they could not check. */
export class AdminView {
  constructor(
    private readonly http: VerifyHttp,
    private readonly token: string,
  ) {}

  /** A live session's sandbox and workspace, as the admin API lists it. */
  async sessionOf(sessionId: string): Promise<{ sandboxId: string; workspace: string } | undefined> {
    const answer = await this.http.send("GET", "admin/v1/sessions", { token: this.token });
    if (answer.status !== 200)
      throw new VerifyCallError(`the admin API answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const items = (
      JSON.parse(answer.text) as { items: { id: string; sandboxId: string; workspace: string }[] }
    ).items;
    return items.find((item) => item.id === sessionId);
  }

  /** Stores a workspace secret (`PUT .../secrets/{name}`): the answer's status and text, as they are. */
  putSecret(workspace: string, name: string, body: unknown): Promise<{ status: number; text: string }> {
    return this.http.send("PUT", `admin/v1/workspaces/${encodeURIComponent(workspace)}/secrets/${name}`, {
      token: this.token,
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
  }

  async removeSecret(workspace: string, name: string): Promise<void> {
    await this.http.send("DELETE", `admin/v1/workspaces/${encodeURIComponent(workspace)}/secrets/${name}`, {
      token: this.token,
    });
  }

  /**
   * A workspace's usage since `from`: quantity and count per kind (summed over tools). The
   * range ends a minute ahead: a session's end figures are stamped one by one as they are
   * recorded, so an end of "now" taken here could fall between its CPU and its memory peak
   * (CI saw that once: the peak then counted as the next session's). Every figure recorded
   * by the time the gateway answers counts; a session's figures are appended together.
   */
  async usage(workspace: string, from: Date): Promise<Map<string, { count: number; quantity: number }>> {
    const to = new Date(Date.now() + 60_000);
    const query = new URLSearchParams({ from: from.toISOString(), to: to.toISOString() });
    const answer = await this.http.send(
      "GET",
      `admin/v1/workspaces/${encodeURIComponent(workspace)}/usage?${query}`,
      { token: this.token },
    );
    if (answer.status !== 200)
      throw new VerifyCallError(`the usage API answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const rows = (JSON.parse(answer.text) as { usage: { kind: string; count: number; quantity: number }[] })
      .usage;
    const byKind = new Map<string, { count: number; quantity: number }>();
    for (const row of rows) {
      const sum = byKind.get(row.kind) ?? { count: 0, quantity: 0 };
      byKind.set(row.kind, { count: sum.count + row.count, quantity: sum.quantity + row.quantity });
    }
    return byKind;
  }
}
