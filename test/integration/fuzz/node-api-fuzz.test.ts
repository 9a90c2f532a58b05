/**
 * Fuzzing the node API of a real node (in this process, sandbox servers as processes, behind
 * a real edge that leased the live session's sandbox) over raw HTTP with fast-check. The
 * rules every answer must keep:
 *   - whoever does not hold the secret gets 401 and nothing else (the public routes aside),
 *     never a signed answer; a signed request altered in any one place is refused the same;
 *   - a signed request, however odd, is never a 5xx but for a lease the node cannot serve
 *     (capacity.exhausted), and every answer to it is signed, head and body frames, with an
 *     error code of ours at its status;
 *   - the live session's sandbox serves no workspace but the one it was leased to, and is
 *     never destroyed by another;
 *   - an upload whose frames were broken on the way is never taken for a whole one, and no
 *     byte it stores is one the edge did not send.
 * At the end the live session still serves through the edge. Each property runs a fixed
 * number of cases and prints how many ran, with its seed (FUZZ_SEED replays, FUZZ_SCALE
 * runs more).
 */
import { Readable } from "node:stream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ErrorCode, errorStatus } from "../../../src/contract/error-codes.js";
import { FrameSigner, FrameVerifier } from "../../../src/roles/shared/mac-frames.js";
import {
  FRAMED_BODY,
  NODE_ERROR_HEADER,
  NodeSecrets,
  SIGNATURE_HEADERS,
} from "../../../src/roles/shared/node-signature.js";
import type { Lease } from "../../../src/store/coordination/records.js";
import type { ContractClient } from "../../support/contract-client.js";
import {
  type EdgeNodeStack,
  NODE_ID,
  NODE_SECRET,
  startEdgeNodeStack,
} from "../../support/edge-node-stack.js";
import { redisAvailable } from "../../support/redis.js";
import { requireService } from "../../support/require-service.js";
import { closeFuzzClient, type FuzzAnswer, type FuzzRequest, send, Tally } from "./fuzz-client.js";
import { jsonish, mutateJsonText } from "./hostile-inputs.js";
import {
  type Alteration,
  alterations,
  breakFrames,
  forgedSignatureHeaders,
  frameBreaks,
  nodeTarget,
} from "./node-api-inputs.js";

const available = await requireService("Redis", redisAvailable, { start: "docker compose up -d redis" });
const BASE_SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const SCALE = Math.max(1, Number(process.env.FUZZ_SCALE ?? 1));
const OWNER = "team-a";
const PUBLIC = new Set(["/healthz", "/readyz", "/metrics"]);
const secrets = new NodeSecrets([NODE_SECRET]);

let stack: EdgeNodeStack;
let owner: ContractClient;
let live: Lease;
let seedOffset = 0;

async function fuzz<T>(
  label: string,
  baseRuns: number,
  arbitrary: fc.Arbitrary<T>,
  run: (value: T, tally: Tally) => Promise<void>,
): Promise<void> {
  const tally = new Tally(label);
  const seed = BASE_SEED + seedOffset++;
  const numRuns = baseRuns * SCALE;
  await fc.assert(
    fc.asyncProperty(arbitrary, async (value) => {
      tally.cases++;
      await run(value, tally);
    }),
    { numRuns, seed, endOnFailure: true },
  );
  console.log(tally.summary(seed));
  expect(tally.cases).toBe(numRuns);
}

interface Signed {
  req: FuzzRequest;
  nonce: string;
}

/** A request signed as an edge signs it (the headers it acts on included). */
function signed(
  method: string,
  target: string,
  options: {
    workspace?: string;
    headers?: Record<string, string>;
    body?: Buffer | string;
    framed?: Buffer;
  } = {},
): Signed {
  const headers: Record<string, string> = { ...options.headers };
  if (options.workspace !== undefined)
    headers[SIGNATURE_HEADERS.workspace] = encodeURIComponent(options.workspace);
  const head = secrets.sign({
    nodeId: NODE_ID,
    method,
    target,
    headers,
    body: options.framed ? FRAMED_BODY : options.body,
  });
  const req: FuzzRequest = { method, target, headers: { ...headers, ...head.headers } };
  if (options.framed) req.chunks = [options.framed];
  else if (options.body !== undefined) req.body = options.body;
  return { req, nonce: head.nonce };
}

/** The frames of an upload as the edge would send them for `head`, one frame per piece. */
async function framesFor(head: ReturnType<NodeSecrets["sign"]>, pieces: Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of Readable.from(pieces).pipe(new FrameSigner(head.frames)))
    out.push(chunk as Buffer);
  return Buffer.concat(out);
}

/** Fails unless the answer is the node's: its head signed for `nonce`, its body frames sound. */
async function signedBody(label: string, nonce: string, answer: FuzzAnswer): Promise<Buffer> {
  const lookup = (name: string) => {
    const value = answer.headers[name];
    return typeof value === "string" ? value : undefined;
  };
  const frames = secrets.verifyAnswer(nonce, answer.status, lookup);
  if (!frames) throw new Error(`${label}: an answer (${answer.status}) whose head the node did not sign`);
  if (answer.status === 204) return Buffer.alloc(0);
  const length = Number(lookup(SIGNATURE_HEADERS.length));
  const verifier = new FrameVerifier(frames, {
    length: Number.isSafeInteger(length) ? length : undefined,
    failure: (reason) => new Error(`${label}: the answer's frames: ${reason}`),
  });
  const out: Buffer[] = [];
  for await (const chunk of Readable.from([answer.bytes]).pipe(verifier)) out.push(chunk as Buffer);
  return Buffer.concat(out);
}

/** A signed request's answer: signed, no 5xx but those allowed, every error one of ours. */
async function exchangeSigned(
  tally: Tally,
  label: string,
  call: Signed,
  allowed5xx: readonly string[] = [],
): Promise<{ answer: FuzzAnswer; body: Buffer; code?: string }> {
  const answer = await send(stack.nodeUrl, call.req);
  tally.count(answer.status);
  const describe = `${label}: ${call.req.method} ${call.req.target.slice(0, 200)} -> ${answer.status}`;
  if (answer.status === 401) throw new Error(`${describe}: a signed request was refused`);
  const body = await signedBody(describe, call.nonce, answer);
  if (answer.status < 400) return { answer, body };
  let code: unknown;
  try {
    code = (JSON.parse(body.toString("utf8")) as { detail?: { code?: unknown } }).detail?.code;
  } catch {
    throw new Error(`${describe}: an error answer that is not JSON: ${body.toString("utf8").slice(0, 200)}`);
  }
  if (typeof code !== "string" || !Object.hasOwn(errorStatus, code)) {
    throw new Error(`${describe}: unknown error code ${String(code)}`);
  }
  if (errorStatus[code as ErrorCode] !== answer.status)
    throw new Error(`${describe}: ${code} at the wrong status`);
  const nodeError = answer.headers[NODE_ERROR_HEADER];
  if (nodeError !== undefined && nodeError !== code)
    throw new Error(`${describe}: node error ${nodeError} != ${code}`);
  if (answer.status >= 500 && !allowed5xx.includes(code))
    throw new Error(`${describe}: a server error (${code})`);
  return { answer, body, code };
}

function relayTarget(subPath: string): string {
  return `/node/v1/sandboxes/${live.sandbox.sandboxId}/relay/sessions/${encodeURIComponent(live.sandbox.innerSessionId)}${subPath}`;
}

describe.skipIf(!available)("fuzz: the node API", () => {
  beforeAll(async () => {
    stack = await startEdgeNodeStack({
      config: {
        pools: [
          {
            name: "default",
            image: "sandpool/sandbox:dev",
            minIdle: 1,
            maxTotal: 3,
            coldStartTimeoutMs: 5_000,
          },
        ],
      },
    });
    owner = await stack.client(OWNER);
    const created = await owner.createSession();
    expect(created.status).toBe(201);
    const id = (created.body as { session_id: string }).session_id;
    live = (await stack.store.getLease({ workspace: OWNER, sessionId: id }))!;
    await owner.run(id, "bash_code_execution", { command: "echo canary > canary.txt" });
  }, 120_000);
  afterAll(async () => {
    closeFuzzClient();
    await stack?.close();
  }, 60_000);

  it("gives whoever lacks the secret a 401 and nothing else", async () => {
    const arbitrary = fc.record({
      method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"),
      target: nodeTarget(live.sandbox.sandboxId),
      headers: forgedSignatureHeaders(Date.now()),
      body: fc.oneof(
        fc.constant(undefined),
        jsonish().map((value) => JSON.stringify(value) ?? "null"),
        fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)),
      ),
      /** A real signature, made with another secret or for another node. */
      impostor: fc.constantFrom("none", "other-secret", "other-node"),
    });
    await fuzz("unsigned and forged requests", 120, arbitrary, async (value, tally) => {
      let headers = value.headers;
      if (value.impostor !== "none") {
        const forger =
          value.impostor === "other-secret"
            ? new NodeSecrets(["another-secret-of-at-least-32-bytes!!"])
            : secrets;
        headers = forger.sign({
          nodeId: value.impostor === "other-node" ? "another-node" : NODE_ID,
          method: value.method,
          target: value.target,
          body: value.body,
        }).headers;
      }
      // Declared: a GET's body without a length would be no body at all, but the next request.
      if (value.body !== undefined)
        headers = { ...headers, "content-length": String(Buffer.byteLength(value.body)) };
      const req: FuzzRequest = { method: value.method, target: value.target, headers, body: value.body };
      const answer = await send(stack.nodeUrl, req);
      tally.count(answer.status);
      const path = value.target.split("?")[0]!;
      const publicRoute = value.method === "GET" && PUBLIC.has(path);
      if (publicRoute ? answer.status !== 200 : answer.status !== 401 && answer.status !== 400) {
        throw new Error(`${value.method} ${value.target}: ${answer.status} ${answer.text.slice(0, 200)}`);
      }
      if (answer.headers[SIGNATURE_HEADERS.answer] !== undefined) {
        throw new Error(`${value.method} ${value.target}: an unsigned request got a signed answer`);
      }
    });
  }, 120_000);

  it("refuses a signed request altered in any one place, and its replay", async () => {
    const kinds = fc.constantFrom("lease", "usage", "relay-list", "relay-exec");
    let replayedExecs = 0;
    await fuzz(
      "altered signed requests",
      80,
      fc.tuple(kinds, alterations),
      async ([kind, alteration], tally) => {
        const call =
          kind === "lease"
            ? signed("POST", "/node/v1/leases", {
                workspace: OWNER,
                headers: { "content-type": "application/json" },
                body: '{"pool":"nope"}',
              })
            : kind === "usage"
              ? signed("GET", `/node/v1/sandboxes/${live.sandbox.sandboxId}/usage`, { workspace: OWNER })
              : kind === "relay-list"
                ? signed("GET", relayTarget("/files/list?path=."), { workspace: OWNER })
                : signed("POST", relayTarget("/exec"), {
                    workspace: OWNER,
                    headers: { "content-type": "application/json", "x-sandpool-max-file-bytes": "1024" },
                    body: JSON.stringify({
                      tool: "bash_code_execution",
                      input: { command: "echo fuzz >> altered.txt" },
                    }),
                  });
        const req = alter(call.req, alteration);
        if (alteration.kind === "replay") {
          const first = await send(stack.nodeUrl, call.req);
          tally.count(first.status);
          if (kind === "relay-exec") replayedExecs++;
        }
        const answer = await send(stack.nodeUrl, req);
        tally.count(answer.status);
        if (answer.status !== 401) {
          throw new Error(
            `${kind} altered (${JSON.stringify(alteration)}): ${answer.status} ${answer.text.slice(0, 200)}`,
          );
        }
      },
    );
    // A replayed Execute ran once, the first time; an altered one never ran.
    const ran = await owner.run(live.sessionId, "bash_code_execution", {
      command: "cat altered.txt 2>/dev/null | wc -l",
    });
    expect(Number(ran.stdout.trim())).toBe(replayedExecs);
  }, 120_000);

  it("answers any signed request with a signed answer, never a 5xx, and keeps the live sandbox to its workspace", async () => {
    const stranger = fc.constantFrom("team-b", "TEAM-A", "team-a ", "", "team-a/..", "x".repeat(200), "café");
    const arbitrary = fc.oneof(
      fc.record({
        kind: fc.constant("lease" as const),
        workspace: fc.option(stranger, { nil: undefined }),
        body: fc.oneof(
          jsonish().map((value) => JSON.stringify(value) ?? "null"),
          mutateJsonText('{"pool":"default"}'),
          fc.constantFrom('{"pool":"nope"}', '{"pool":1}', "", "[]"),
        ),
      }),
      fc.record({
        kind: fc.constant("foreign" as const),
        workspace: fc.option(stranger, { nil: undefined }),
        action: fc.constantFrom("usage", "destroy", "exec", "files", "list"),
      }),
      fc.record({
        kind: fc.constant("elsewhere" as const),
        target: nodeTarget("00aa"),
        method: fc.constantFrom("GET", "POST", "DELETE"),
        workspace: fc.option(stranger, { nil: undefined }),
      }),
    );
    await fuzz("signed requests", 100, arbitrary, async (value, tally) => {
      if (value.kind === "lease") {
        const call = signed("POST", "/node/v1/leases", {
          workspace: value.workspace,
          headers: { "content-type": "application/json" },
          body: value.body,
        });
        const { answer, body } = await exchangeSigned(tally, "lease", call, ["capacity.exhausted"]);
        if (answer.status === 201) {
          // A lease it served: given back at once, for the workspace it was made for.
          const { record } = JSON.parse(body.toString("utf8")) as { record: { sandboxId: string } };
          const destroy = signed("POST", `/node/v1/sandboxes/${record.sandboxId}/destroy`, {
            workspace: value.workspace,
          });
          const done = await exchangeSigned(tally, "destroy", destroy);
          if (done.answer.status !== 204)
            throw new Error(`a leased sandbox was not destroyed: ${done.answer.status}`);
          tally.note("leased");
        }
        return;
      }
      if (value.kind === "foreign") {
        const id = live.sandbox.sandboxId;
        const call =
          value.action === "usage"
            ? signed("GET", `/node/v1/sandboxes/${id}/usage`, { workspace: value.workspace })
            : value.action === "destroy"
              ? signed("POST", `/node/v1/sandboxes/${id}/destroy`, { workspace: value.workspace })
              : value.action === "exec"
                ? signed("POST", relayTarget("/exec"), {
                    workspace: value.workspace,
                    headers: { "content-type": "application/json" },
                    body: JSON.stringify({
                      tool: "bash_code_execution",
                      input: { command: "echo x > foreign.txt" },
                    }),
                  })
                : value.action === "files"
                  ? signed("GET", relayTarget("/files?path=canary.txt"), { workspace: value.workspace })
                  : signed("GET", relayTarget("/files/list?path=."), { workspace: value.workspace });
        const { answer, body } = await exchangeSigned(tally, `foreign ${value.action}`, call);
        if (answer.status !== 404 || body.toString("utf8").includes("canary")) {
          throw new Error(`the live sandbox answered workspace ${String(value.workspace)}: ${answer.status}`);
        }
        return;
      }
      const call = signed(value.method, value.target, { workspace: value.workspace });
      // The public routes answer anyone, signed or not: nothing of the node's to check there.
      if (value.method === "GET" && PUBLIC.has(value.target.split("?")[0]!)) return;
      await exchangeSigned(tally, "elsewhere", call);
    });
    // The live session was neither reached nor destroyed by another workspace.
    const after = await owner.run(live.sessionId, "bash_code_execution", { command: "ls; cat canary.txt" });
    expect(after.stdout).not.toContain("foreign.txt");
    expect(after.stdout).toContain("canary\n");
  }, 180_000);

  it("never takes a broken upload for a whole one, nor stores a byte the edge did not send", async () => {
    const content = "fuzzed upload content\n";
    let index = 0;
    const upload = async (broken?: Parameters<typeof breakFrames>[1]) => {
      const name = `up-${index++}.txt`;
      const boundary = "fuzz-boundary";
      const multipart = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\n${content}\r\n--${boundary}--\r\n`,
      );
      const target = relayTarget("/files");
      const headers: Record<string, string> = {
        "content-type": `multipart/form-data; boundary=${boundary}`,
        [SIGNATURE_HEADERS.workspace]: OWNER,
        "x-sandpool-max-file-bytes": "4096",
      };
      const head = secrets.sign({ nodeId: NODE_ID, method: "POST", target, headers, body: FRAMED_BODY });
      // Small frames, so a break can land in the data, between frames or in the end.
      const pieces = [multipart.subarray(0, 40), multipart.subarray(40, 90), multipart.subarray(90)];
      const framed = await framesFor(head, pieces);
      const wire = broken ? breakFrames(framed, broken) : framed;
      const req: FuzzRequest = {
        method: "POST",
        target,
        headers: { ...headers, ...head.headers },
        chunks: [wire],
      };
      return { name, call: { req, nonce: head.nonce } };
    };
    const whole = await upload();
    const tally = new Tally("control");
    expect((await exchangeSigned(tally, "whole upload", whole.call)).answer.status).toBe(201);
    await fuzz("broken uploads", 60, frameBreaks, async (broken, tally) => {
      const { call } = await upload(broken);
      const answer = await send(stack.nodeUrl, call.req).catch(() => undefined);
      if (!answer) {
        tally.note("connection cut");
        return;
      }
      tally.count(answer.status);
      // Every break breaks something (the chain, the end, the bytes after it): never a success.
      if (answer.status < 400 || answer.status >= 500) {
        throw new Error(`a broken upload (${JSON.stringify(broken)}) was answered ${answer.status}`);
      }
      await signedBody(`broken upload ${broken.kind}`, call.nonce, answer);
    });
    // Whatever was stored holds exactly what was sent: a frame that did not verify passed nothing.
    const stored = await owner.run(live.sessionId, "bash_code_execution", {
      command: 'for f in up-*.txt; do printf \'%s:\' "$f"; cat "$f" | sha256sum | cut -c1-16; done',
    });
    const expected = (await import("node:crypto"))
      .createHash("sha256")
      .update(content)
      .digest("hex")
      .slice(0, 16);
    for (const line of stored.stdout.split("\n").filter(Boolean)) expect(line.split(":")[1]).toBe(expected);
    expect(stored.stdout).toContain(`${whole.name}:`);
  }, 180_000);
});

/** `req` with one thing changed after it was signed. */
function alter(req: FuzzRequest, alteration: Alteration): FuzzRequest {
  const headers = { ...req.headers };
  switch (alteration.kind) {
    case "header":
      if (headers[alteration.name] === alteration.value) headers[alteration.name] = `${alteration.value}x`;
      else headers[alteration.name] = alteration.value;
      return { ...req, headers };
    case "drop-header":
      if (headers[alteration.name] === undefined) headers[alteration.name] = "added";
      else delete headers[alteration.name];
      return { ...req, headers };
    case "method":
      return { ...req, method: req.method === alteration.method ? "PUT" : alteration.method };
    case "target":
      return { ...req, target: `${req.target}${alteration.suffix}` };
    case "body": {
      const body = Buffer.from(req.body ?? "x");
      const at = alteration.at % body.length;
      if (req.body !== undefined) body[at] = body[at]! ^ 0x01;
      // Declared: a GET's body without a length would be no body at all, but the next request.
      return { ...req, headers: { ...headers, "content-length": String(body.length) }, body };
    }
    case "timestamp":
      headers[SIGNATURE_HEADERS.timestamp] = String(
        Number(headers[SIGNATURE_HEADERS.timestamp]) + alteration.by,
      );
      return { ...req, headers };
    case "replay":
      return req;
  }
}
