/**
 * The fuzz suite's HTTP side: sends a request exactly as generated (raw target, raw bytes,
 * any headers), with a deadline so a request the gateway never answers fails the case
 * instead of hanging the suite, and checks every answer the same way: no 5xx but the
 * few a deliberate load may earn, and every error a contract `Error` body whose code is
 * one of ours, with the status that code maps to.
 */
import { Agent, request } from "node:http";
import { type ErrorCode, errorStatus } from "../../../src/contract/error-codes.js";
import { assertContractResponse, assertSchema } from "../../support/contract.js";

export interface FuzzRequest {
  method: string;
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Sent as separate writes (chunked, unless a content-length header says otherwise). */
  chunks?: Buffer[];
}

export interface FuzzAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body's bytes as they came (a node's answer is framed: text would mangle its MACs). */
  bytes: Buffer;
  json: unknown;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const ANSWER_DEADLINE_MS = 20_000;

export function send(baseUrl: string, req: FuzzRequest): Promise<FuzzAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.target,
        headers: req.headers,
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString("utf8");
          let json: unknown;
          if (String(res.headers["content-type"] ?? "").includes("json") && text.length > 0) {
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes, json });
        });
        res.on("error", reject);
      },
    );
    outgoing.setTimeout(ANSWER_DEADLINE_MS, () =>
      outgoing.destroy(
        new Error(`no answer within ${ANSWER_DEADLINE_MS} ms to ${req.method} ${req.target.slice(0, 200)}`),
      ),
    );
    outgoing.on("error", reject);
    if (req.chunks) {
      for (const chunk of req.chunks) outgoing.write(chunk);
      outgoing.end();
    } else {
      outgoing.end(req.body);
    }
  });
}

export function closeFuzzClient(): void {
  agent.destroy();
}

/** 5xx answers a deliberate load may earn (per operation); anything else at 500+ is a bug. */
const TOLERATED_5XX: Record<string, readonly string[]> = {
  "*": ["request.busy"],
  CreateSession: ["capacity.exhausted"],
};

export interface Expectation {
  /** What the fuzzer calls the route, for messages and the summary. */
  label: string;
  /** Contract operation to check the answer against, if it is one. */
  operationId?: string;
  /** 2xx/3xx statuses that are fine here (a request that happened to be valid). */
  success?: readonly number[];
  /** Text no answer may contain (the canary's secret). */
  forbiddenText?: string;
  /** The request names the suite's live session: a 404 for it means an earlier case killed it. */
  liveSession?: boolean;
}

/** Throws, with the request and answer in the message, when the answer breaks the rules. */
export function checkAnswer(expectation: Expectation, req: FuzzRequest, answer: FuzzAnswer): void {
  const fail = (why: string): never => {
    throw new Error(
      `${expectation.label}: ${why}\nrequest: ${req.method} ${req.target.slice(0, 300)}\n` +
        `headers: ${JSON.stringify(req.headers ?? {}).slice(0, 300)}\n` +
        `body: ${String(req.body ?? "").slice(0, 300)}\nanswer: ${answer.status} ${answer.text.slice(0, 500)}`,
    );
  };
  if (expectation.forbiddenText && answer.text.includes(expectation.forbiddenText))
    fail("the answer leaks the canary outside the workspace");
  if (answer.status < 400) {
    if (!(expectation.success ?? []).includes(answer.status))
      fail(`unexpected success status ${answer.status}`);
    if (expectation.operationId && answer.json !== undefined)
      assertContractResponse(expectation.operationId, answer.status, answer.json);
    return;
  }
  // A HEAD answer has no body by definition: its status is all there is to check.
  if (req.method === "HEAD") {
    if (answer.status >= 500) fail(`a server error (${answer.status})`);
    return;
  }
  if (answer.json === undefined) fail("an error answer without a JSON body");
  try {
    assertSchema("Error", answer.json);
    if (expectation.operationId) assertContractResponse(expectation.operationId, answer.status, answer.json);
  } catch (error) {
    fail((error as Error).message);
  }
  const code = (answer.json as { detail?: { code?: unknown } }).detail?.code;
  if (typeof code !== "string" || !Object.hasOwn(errorStatus, code))
    fail(`unknown error code ${String(code)}`);
  if (expectation.liveSession && code === "session.not_found")
    fail("the session is gone: an earlier case ended it (look for a 5xx before this one)");
  const expectedStatus = errorStatus[code as ErrorCode];
  if (expectedStatus !== answer.status) fail(`code ${String(code)} belongs with ${expectedStatus}`);
  if (answer.status >= 500) {
    const tolerated = [
      ...(TOLERATED_5XX["*"] ?? []),
      ...(TOLERATED_5XX[expectation.operationId ?? ""] ?? []),
    ];
    if (!tolerated.includes(code as string)) fail(`a server error (${answer.status} ${String(code)})`);
  }
}

/** Per-property tally, printed as one summary line. */
export class Tally {
  readonly statuses = new Map<number, number>();
  cases = 0;
  requests = 0;
  private readonly started = Date.now();

  constructor(readonly label: string) {}

  /** Named counts worth a mention in the summary (e.g. how many edits the editor carried out). */
  readonly notes = new Map<string, number>();

  note(name: string): void {
    this.notes.set(name, (this.notes.get(name) ?? 0) + 1);
  }

  count(status: number): void {
    this.requests++;
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
  }

  summary(seed: number): string {
    const byStatus = [...this.statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${status}x${n}`)
      .join(" ");
    const notes = [...this.notes.entries()].map(([name, n]) => `; ${name}x${n}`).join("");
    const seconds = ((Date.now() - this.started) / 1000).toFixed(1);
    return `fuzz: ${this.cases} cases (${this.requests} requests) on ${this.label} in ${seconds} s [seed ${seed}; ${byStatus}${notes}]`;
  }
}
