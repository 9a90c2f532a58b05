/**
 * Fuzzing every contract and admin route of a real gateway (process runtime, real sandbox
 * servers) over HTTP with fast-check: hostile JWTs, random and mutated JSON, wrong types,
 * deep nesting, huge bodies, invalid UTF-8, every path-escape spelling we know of, hostile
 * request targets and a few slow clients. The rules every answer must keep:
 *   - never a 5xx (only a `request.busy` under load, or `capacity.exhausted` on
 *     CreateSession), never a crash (the gateway and the session's sandbox still serve
 *     at the end);
 *   - every error is the contract's `Error` shape with one of our codes, at its status;
 *   - nothing outside the workspace is read (no answer holds the canary's secret) or
 *     written (canaries beside the workspace are untouched, no new file appears in the
 *     sandbox root outside the session directories, no marker file anywhere else).
 * Each property runs a fixed number of cases and prints how many ran, with its seed
 * (set FUZZ_SEED to replay one, FUZZ_SCALE to run more cases).
 */

import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import {
  startTestGateway,
  TEST_IMAGE,
  TEST_SECRET,
  type TestGateway,
} from "../../support/gateway-harness.js";
import {
  checkAnswer,
  closeFuzzClient,
  type Expectation,
  type FuzzAnswer,
  type FuzzRequest,
  send,
  Tally,
} from "./fuzz-client.js";
import {
  deeplyNested,
  encodeForQuery,
  hostilePath,
  hostileTarget,
  hostileToken,
  invalidUtf8,
  jsonish,
  markerName,
  mutateJsonText,
  notQuiteAdminToken,
  PLANTED,
  queryEncodings,
  rawEncode,
  toolNames,
} from "./hostile-inputs.js";

const BASE_SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** FUZZ_SCALE=10 runs ten times the cases of every property (a deeper hunt than `npm test` affords). */
const SCALE = Math.max(1, Number(process.env.FUZZ_SCALE ?? 1));
const WORKSPACE = "fuzz-tenant";
const MAX_JSON_BYTES = 512 * 1024;
const MAX_FILE_BYTES = 256 * 1024;
/** Random bytes: only the canary files hold them, so any answer containing them leaked one. */
const SECRET = `canary-secret-${randomBytes(12).toString("hex")}`;
const CANARY_ONLY_NAME = `canary-only-${randomBytes(6).toString("hex")}.txt`;
/** Every file name the fuzzer may write carries this, so a stray one is found anywhere. */
const MARKER = `fuzzmark${randomBytes(4).toString("hex")}`;
const WRONG_SECRET = "a-wrong-secret-of-at-least-thirty-two-bytes";

let harness: TestGateway;
let token: string;
let adminToken: string;
let sessionId: string;
let workspaceDir: string;
let sessionDir: string;
let canaryDirs: string[];
let before: Map<string, string>;
let seedOffset = 0;

const auth = (value = token) => ({ authorization: `Bearer ${value}` });
const json = (value = token) => ({ ...auth(value), "content-type": "application/json" });

/** Runs `numRuns` cases of `arbitrary` through `run`, then prints the tally. */
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
    // No shrinking: each try is a real request; the first counterexample is reported whole.
    { numRuns, seed, endOnFailure: true },
  );
  console.log(tally.summary(seed));
  expect(tally.cases).toBe(numRuns);
}

/** Sends, counts and checks one request; returns the answer for further checks. */
async function exchange(tally: Tally, expectation: Expectation, req: FuzzRequest): Promise<FuzzAnswer> {
  const answer = await send(harness.url, req);
  tally.count(answer.status);
  checkAnswer({ forbiddenText: SECRET, ...expectation }, req, answer);
  if (answer.text.includes(CANARY_ONLY_NAME) || answer.text.includes(harness.root)) {
    throw new Error(
      `${expectation.label}: the answer names what lies outside the workspace: ${answer.text.slice(0, 300)}`,
    );
  }
  return answer;
}

// --- the sandbox root: canaries, and what may change ----------------------------------------

async function plantCanary(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "secret-outside.txt"), `canary ${SECRET}\n`);
  await writeFile(path.join(dir, CANARY_ONLY_NAME), `canary ${SECRET}\n`);
}

/** Every entry under `root` (not following links): path -> content hash, link target or "dir". */
async function snapshot(root: string): Promise<Map<string, string>> {
  const entries = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    const children = await readdir(dir).catch(() => [] as string[]);
    for (const name of children) {
      const full = path.join(dir, name);
      const stats = await lstat(full).catch(() => undefined);
      if (!stats) continue;
      if (stats.isSymbolicLink()) entries.set(full, `link:${await readlink(full)}`);
      else if (stats.isDirectory()) {
        entries.set(full, "dir");
        await walk(full);
      } else if (!stats.isFile()) {
        entries.set(full, `special:${stats.mode}`); // a FIFO would block a read forever
      } else {
        const content = await readFile(full).catch(() => Buffer.alloc(0));
        entries.set(full, createHash("sha256").update(content).digest("hex"));
      }
    }
  };
  await walk(root);
  return entries;
}

/** A session's own files: `<root>/sandboxes/<sandbox>/<session>/{workspace,uploads}/...`. */
function insideSessionFiles(root: string, entry: string): boolean {
  const parts = path.relative(root, entry).split(path.sep);
  return (
    parts[0] === "sandboxes" && parts.length >= 4 && (parts[3] === "workspace" || parts[3] === "uploads")
  );
}

/** Sandbox and session directories come and go with the pool; their own entries are not files. */
function sandboxScaffolding(root: string, entry: string, kind: string | undefined): boolean {
  const parts = path.relative(root, entry).split(path.sep);
  return parts[0] === "sandboxes" && parts.length <= 3 && kind === "dir";
}

/** Files carrying MARKER in the top levels of places an escape would land. */
async function strayMarkers(): Promise<string[]> {
  const found: string[] = [];
  const places = new Set([tmpdir(), "/", process.cwd(), homedir(), path.dirname(harness.root)]);
  for (const place of places) {
    for (const name of await readdir(place).catch(() => [] as string[])) {
      if (name.includes(MARKER)) found.push(path.join(place, name));
    }
  }
  return found;
}

beforeAll(async () => {
  const started = Date.now();
  harness = await startTestGateway({
    policy: {
      allowedImages: [TEST_IMAGE],
      defaultImage: TEST_IMAGE,
      maxFileBytes: MAX_FILE_BYTES,
      sessionsPerMinute: 1_000,
    },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 3 }],
    limits: { maxJsonBodyBytes: MAX_JSON_BYTES },
    // The limiter would turn most hostile-token cases into 429s; security-rate-limit covers it.
    authFailures: { maxFailures: 1_000_000, windowMs: 60_000 },
  });
  token = await harness.token(WORKSPACE);
  adminToken = await mintToken({ secret: TEST_SECRET, admin: true, subject: "fuzzer", ttlSeconds: 3600 });

  const created = await send(harness.url, {
    method: "POST",
    target: "/sessions",
    headers: json(),
    body: "{}",
  });
  expect(created.status, created.text).toBe(201);
  sessionId = (created.json as { session_id: string }).session_id;
  const cwd = await send(harness.url, {
    method: "POST",
    target: `/sessions/${sessionId}/exec`,
    headers: json(),
    body: JSON.stringify({ tool: "code_execution", input: { code: "import os; print(os.getcwd())" } }),
  });
  expect(cwd.status, cwd.text).toBe(200);
  const stdout = (cwd.json as { result_block: { content: { stdout: string } } }).result_block.content.stdout;
  workspaceDir = await realpath(stdout.trim());
  sessionDir = path.dirname(workspaceDir);
  expect(insideSessionFiles(await realpath(harness.root), path.join(workspaceDir, "x"))).toBe(true);

  // Canaries right beside the workspace, and at the top of the sandbox root.
  canaryDirs = [path.join(sessionDir, "canary"), path.join(harness.root, "canary")];
  for (const dir of canaryDirs) await plantCanary(dir);
  // What a tenant's code could plant in its workspace: links out, a loop, a dangling one.
  await symlink(canaryDirs[0]!, path.join(workspaceDir, PLANTED.outsideLink));
  await symlink("/", path.join(workspaceDir, PLANTED.rootLink));
  await symlink(path.join(canaryDirs[0]!, "secret-outside.txt"), path.join(workspaceDir, PLANTED.fileLink));
  await symlink(PLANTED.loopLink, path.join(workspaceDir, PLANTED.loopLink));
  await symlink(path.join(harness.root, "nowhere", "at-all"), path.join(workspaceDir, PLANTED.danglingLink));
  await symlink(PLANTED.subdir, path.join(workspaceDir, PLANTED.insideLink));
  execFileSync("mkfifo", [path.join(workspaceDir, PLANTED.fifo)]);
  await mkdir(path.join(workspaceDir, PLANTED.subdir, "inner"), { recursive: true });
  await writeFile(path.join(workspaceDir, PLANTED.subdir, "inner", "ok.txt"), "inside\n");
  // Names user code may well create: not UTF-8, with a newline, a control character, very long.
  const inner = path.join(workspaceDir, PLANTED.subdir);
  await writeFile(Buffer.concat([Buffer.from(`${inner}/bad-`), Buffer.from([0xff, 0xfe, 0xc0, 0xae])]), "x");
  for (const name of [
    "new\nline",
    "tab\there",
    "esc\u001b[31m",
    `${"n".repeat(255)}`,
    "-rf",
    "*",
    'quo"te;.txt',
    "\u00fcn\u00ef\u202e.txt",
  ]) {
    await writeFile(path.join(inner, name), "x");
  }

  // One session at a time for this workspace: a CreateSession body that happens to be
  // valid is parsed all the way, then refused (429), instead of starting a sandbox each time.
  const limited = await send(harness.url, {
    method: "PUT",
    target: `/admin/v1/workspaces/${WORKSPACE}/policy`,
    headers: json(adminToken),
    body: JSON.stringify({ maxConcurrentSessions: 1 }),
  });
  expect(limited.status, limited.text).toBe(200);

  before = await snapshot(harness.root);
  console.log(`fuzz: gateway, session and canaries ready in ${Date.now() - started} ms`);
}, 120_000);

afterAll(async () => {
  closeFuzzClient();
  if (harness) {
    for (const stray of await strayMarkers()) await rm(stray, { recursive: true, force: true });
    await harness.close();
  }
});

// --- the routes ---------------------------------------------------------------------------

interface Route {
  method: string;
  target: () => string;
  operationId?: string;
  admin?: boolean;
  body?: string;
  contentType?: string;
}

function everyRoute(): Route[] {
  const session = () => `/sessions/${sessionId}`;
  const policyBody = JSON.stringify({ maxConcurrentSessions: 1 });
  return [
    { method: "POST", target: () => "/sessions", operationId: "CreateSession", body: "{}" },
    { method: "GET", target: session },
    { method: "DELETE", target: session, operationId: "DestroySession" },
    {
      method: "POST",
      target: () => `${session()}/exec`,
      operationId: "Execute",
      body: JSON.stringify({ tool: "code_execution", input: { code: "print(1)" } }),
    },
    { method: "GET", target: () => `${session()}/files/list`, operationId: "ListFiles" },
    { method: "GET", target: () => `${session()}/files?path=${PLANTED.fileLink}`, operationId: "GetFile" },
    {
      method: "POST",
      target: () => `${session()}/files`,
      operationId: "PutFile",
      body: '--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nx\r\n--b--\r\n',
      contentType: "multipart/form-data; boundary=b",
    },
    { method: "GET", target: () => "/no/such/route" },
    { method: "GET", target: () => "/admin/v1/workspaces", admin: true },
    { method: "GET", target: () => `/admin/v1/workspaces/${WORKSPACE}/policy`, admin: true },
    {
      method: "PUT",
      target: () => `/admin/v1/workspaces/${WORKSPACE}/policy`,
      admin: true,
      body: policyBody,
    },
    { method: "DELETE", target: () => `/admin/v1/workspaces/${WORKSPACE}/policy`, admin: true },
    { method: "GET", target: () => `/admin/v1/workspaces/${WORKSPACE}/audit`, admin: true },
    { method: "GET", target: () => `/admin/v1/workspaces/${WORKSPACE}/usage`, admin: true },
    { method: "GET", target: () => `/admin/v1/usage?workspace=${WORKSPACE}&by=hour`, admin: true },
    { method: "GET", target: () => "/admin/v1/policies", admin: true },
    { method: "PUT", target: () => "/admin/v1/policies?dryRun=true", admin: true, body: '{"policies":{}}' },
    { method: "GET", target: () => "/admin/v1/pools", admin: true },
    { method: "PATCH", target: () => "/admin/v1/pools/default", admin: true, body: '{"minIdle":1}' },
    { method: "GET", target: () => `/admin/v1/sessions?workspace=${WORKSPACE}`, admin: true },
    { method: "DELETE", target: () => `/admin/v1/sessions/${sessionId}`, admin: true },
    { method: "POST", target: () => "/admin/v1/keys", admin: true, body: `{"workspace":"${WORKSPACE}"}` },
    { method: "GET", target: () => `/admin/v1/keys?workspace=${WORKSPACE}`, admin: true },
    { method: "DELETE", target: () => "/admin/v1/keys/0123456789ab", admin: true },
    { method: "GET", target: () => `/admin/v1/audit?workspace=${WORKSPACE}&kind=denied`, admin: true },
  ];
}

const execTarget = () => `/sessions/${sessionId}/exec`;
const execute = (label: string): Expectation => ({
  label,
  operationId: "Execute",
  success: [200],
  liveSession: true,
});

/** Keeps generated exec bodies harmless: whatever code or command they carry is replaced. */
function defang(body: unknown, tool: unknown): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return body;
  const input = (body as { input?: unknown }).input;
  if (typeof input !== "object" || input === null || Array.isArray(input)) return body;
  const safe: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  if (tool === "code_execution" && "code" in safe) safe.code = "print(1)";
  if (tool === "bash_code_execution" && "command" in safe) safe.command = "true";
  if (tool === "text_editor_code_execution" && "path" in safe) safe.path = `${MARKER}-random.txt`;
  return { ...(body as Record<string, unknown>), input: safe };
}

const MANGLES = [
  "no boundary",
  "other boundary",
  "truncated",
  "no closing delimiter",
  "two file parts",
  "bare LF",
  "not multipart",
  "empty body",
] as const;
type Mangle = "none" | (typeof MANGLES)[number];

/** A multipart body and its Content-Type, broken in one of the ways parsers trip over. */
function mangleMultipart(
  body: Buffer,
  boundary: string,
  mangle: Mangle,
): { body: Buffer; contentType: string } {
  const type = `multipart/form-data; boundary=${boundary}`;
  switch (mangle) {
    case "none":
      return { body, contentType: type };
    case "no boundary":
      return { body, contentType: "multipart/form-data" };
    case "other boundary":
      return { body, contentType: "multipart/form-data; boundary=somethingelse" };
    case "truncated":
      return { body: body.subarray(0, Math.floor(body.length / 2)), contentType: type };
    case "no closing delimiter":
      return { body: body.subarray(0, body.length - boundary.length - 6), contentType: type };
    case "two file parts": {
      const second = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${MARKER}-second"\r\n\r\nsecond\r\n`,
      );
      return { body: Buffer.concat([second, body]), contentType: type };
    }
    case "bare LF":
      return {
        body: Buffer.from(body.toString("latin1").replaceAll("\r\n", "\n"), "latin1"),
        contentType: type,
      };
    case "not multipart":
      return { body, contentType: "application/octet-stream" };
    case "empty body":
      return { body: Buffer.alloc(0), contentType: type };
  }
}

const harmlessExecTexts = [
  JSON.stringify({ tool: "code_execution", input: { code: "print(1)" } }),
  JSON.stringify({ tool: "bash_code_execution", input: { command: "true" }, timeout_seconds: 5 }),
  JSON.stringify({
    tool: "text_editor_code_execution",
    input: { command: "view", path: `${PLANTED.subdir}/inner/ok.txt`, view_range: [1, 1] },
  }),
  JSON.stringify({
    tool: "text_editor_code_execution",
    input: { command: "create", path: `${MARKER}-mutated.txt`, file_text: "x" },
  }),
];

// --- the properties -------------------------------------------------------------------------

describe("gateway fuzz", () => {
  it("refuses every hostile JWT on every contract and admin route with 401", async () => {
    const routes = everyRoute();
    await fuzz(
      "every route with hostile JWTs",
      250,
      fc.tuple(fc.integer({ min: 0, max: routes.length - 1 }), hostileToken(TEST_SECRET, WRONG_SECRET)),
      async ([index, hostile], tally) => {
        const route = routes[index]!;
        const headers: Record<string, string> = {};
        if (hostile.authorization !== undefined) headers.authorization = hostile.authorization;
        if (route.body !== undefined) headers["content-type"] = route.contentType ?? "application/json";
        const answer = await exchange(
          tally,
          { label: `${route.method} ${route.target()} (${hostile.kind})`, operationId: route.operationId },
          { method: route.method, target: route.target(), headers, body: route.body },
        );
        // Past Node's 16 KiB header limit the request is refused before it is parsed: 400.
        const allowed = hostile.kind.startsWith("huge") ? [400, 401] : [401];
        if (!allowed.includes(answer.status))
          throw new Error(
            `${hostile.kind} on ${route.method} ${route.target()}: ${answer.status} ${answer.text}`,
          );
      },
    );
  });

  it("refuses the admin API to tokens whose admin claim is anything but true, or is named otherwise", async () => {
    const adminRoutes = everyRoute().filter((route) => route.admin);
    await fuzz(
      "admin routes with not-quite-admin tokens",
      60,
      fc.tuple(fc.integer({ min: 0, max: adminRoutes.length - 1 }), notQuiteAdminToken(TEST_SECRET)),
      async ([index, { claim, token: notAdmin }], tally) => {
        const route = adminRoutes[index]!;
        const answer = await exchange(
          tally,
          { label: `${route.method} ${route.target()} (${JSON.stringify(claim)})` },
          { method: route.method, target: route.target(), headers: json(notAdmin), body: route.body },
        );
        expect({ claim, status: answer.status, body: answer.json }).toMatchObject({
          status: 403,
          body: { detail: { code: "auth.forbidden" } },
        });
      },
    );
  });

  it("answers random and mutated CreateSession bodies with a 4xx", async () => {
    const valid = JSON.stringify({ image: TEST_IMAGE, idle_timeout_seconds: 60, max_lifetime_seconds: 600 });
    const body = fc.oneof(
      jsonish().map((value) => JSON.stringify(value)),
      fc
        .record(
          { image: jsonish(), idle_timeout_seconds: jsonish(), max_lifetime_seconds: jsonish() },
          { requiredKeys: [] },
        )
        .map((value) => JSON.stringify(value)),
      mutateJsonText(valid),
      fc.constantFrom(
        deeplyNested(50_000, "array"),
        deeplyNested(20_000, "object"),
        `{"image":${deeplyNested(100_000, "mixed")}}`,
      ),
    );
    const contentType = fc.constantFrom(
      "application/json",
      "application/json",
      "application/json; charset=latin1",
      "application/vnd.api+json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "",
      "application/jsonx",
    );
    await fuzz("POST /sessions", 200, fc.tuple(body, contentType), async ([text, type], tally) => {
      const headers: Record<string, string> = { ...auth() };
      if (type) headers["content-type"] = type;
      const answer = await exchange(
        tally,
        { label: "POST /sessions", operationId: "CreateSession", success: [201] },
        { method: "POST", target: "/sessions", headers, body: text },
      );
      if (answer.status === 201) {
        // Only if the one-session limit did not hold; never leave a sandbox behind.
        await send(harness.url, {
          method: "DELETE",
          target: `/sessions/${(answer.json as { session_id: string }).session_id}`,
          headers: auth(),
        });
      }
    });
  });

  it("answers random, mutated and ill-typed Execute bodies with 200 or a 4xx", async () => {
    const structured = fc
      .record(
        {
          tool: toolNames,
          input: jsonish(),
          timeout_seconds: jsonish(),
          tool_use_id: jsonish(),
          extra: jsonish(),
        },
        { requiredKeys: ["tool"] },
      )
      .map((value) => JSON.stringify(defang(value, value.tool)));
    const editorInputs = fc
      .record(
        {
          command: fc.constantFrom<unknown>(
            "view",
            "str_replace",
            "insert",
            "undo_edit",
            "delete",
            "",
            null,
            7,
          ),
          path: fc.constant(`${MARKER}-typed.txt`),
          file_text: jsonish(),
          old_str: jsonish(),
          new_str: jsonish(),
          insert_line: jsonish(),
          view_range: jsonish(),
        },
        { requiredKeys: ["command"] },
      )
      .map((input) => JSON.stringify({ tool: "text_editor_code_execution", input }));
    const body = fc.oneof(
      { weight: 3, arbitrary: structured },
      { weight: 2, arbitrary: editorInputs },
      { weight: 1, arbitrary: jsonish().map((value) => JSON.stringify(value)) },
      { weight: 3, arbitrary: fc.constantFrom(...harmlessExecTexts).chain((text) => mutateJsonText(text)) },
    );
    await fuzz("POST /sessions/{id}/exec", 200, body, async (text, tally) => {
      await exchange(tally, execute("POST /sessions/{id}/exec"), {
        method: "POST",
        target: execTarget(),
        headers: json(),
        body: text,
      });
    });
  });

  it("answers deep nesting, huge bodies and invalid UTF-8 on every JSON route with a 4xx or a proper answer", async () => {
    const harmless = harmlessExecTexts[0]!;
    const jsonRoutes = [
      {
        label: "POST /sessions",
        target: () => "/sessions",
        operationId: "CreateSession",
        success: [201],
        admin: false,
      },
      {
        label: "POST /sessions/{id}/exec",
        target: execTarget,
        operationId: "Execute",
        success: [200],
        admin: false,
      },
      {
        label: "PUT /admin/v1/workspaces/{ws}/policy",
        target: () => "/admin/v1/workspaces/fuzz-admin-bodies/policy",
        operationId: undefined,
        success: [200],
        admin: true,
      },
    ];
    const nested = fc
      .tuple(
        fc.constantFrom(1_000, 10_000, 100_000, 200_000),
        fc.constantFrom<"array" | "object" | "mixed">("array", "object", "mixed"),
        fc.constantFrom("whole", "extra", "input"),
      )
      .map(([depth, shape, where]) => {
        const deep = deeplyNested(depth, shape);
        if (where === "whole") return Buffer.from(deep);
        if (where === "extra") return Buffer.from(`${harmless.slice(0, -1)},"extra":${deep}}`);
        return Buffer.from(`{"tool":"text_editor_code_execution","input":${deep}}`);
      });
    const badBytes = fc
      .tuple(invalidUtf8, fc.constantFrom("code", "path", "key", "tool", "raw"))
      .map(([bytes, where]) => {
        if (where === "code")
          return Buffer.concat([
            Buffer.from('{"tool":"code_execution","input":{"code":"print(1)  # '),
            bytes,
            Buffer.from('"}}'),
          ]);
        if (where === "path")
          return Buffer.concat([
            Buffer.from(`{"tool":"text_editor_code_execution","input":{"command":"view","path":"${MARKER}`),
            bytes,
            Buffer.from('"}}'),
          ]);
        if (where === "key")
          return Buffer.concat([
            Buffer.from('{"'),
            bytes,
            Buffer.from('":1,"tool":"code_execution","input":{"code":"print(1)"}}'),
          ]);
        if (where === "tool")
          return Buffer.concat([
            Buffer.from('{"tool":"code_execution'),
            bytes,
            Buffer.from('","input":{"code":"print(1)"}}'),
          ]);
        return Buffer.concat([bytes, Buffer.from(harmless), bytes]);
      });
    type Sized = { body: Buffer; mode: "declared" | "chunked" | "lying" };
    const huge = fc.constantFrom<Sized>(
      { body: Buffer.alloc(MAX_JSON_BYTES + 1, 0x20), mode: "declared" },
      { body: Buffer.alloc(MAX_JSON_BYTES * 3, 0x5b), mode: "chunked" },
      {
        body: Buffer.from(
          `{"tool":"code_execution","input":{"code":"print(1)"},"pad":"${"x".repeat(MAX_JSON_BYTES - 100)}"}`,
        ),
        mode: "declared",
      },
      { body: Buffer.from(harmless), mode: "lying" },
    );
    const payload = fc.oneof(
      nested.map((body): Sized => ({ body, mode: "declared" })),
      nested.map((body): Sized => ({ body, mode: "chunked" })),
      badBytes.map((body): Sized => ({ body, mode: "declared" })),
      huge,
    );
    await fuzz(
      "JSON routes with deep nesting, huge bodies and invalid UTF-8",
      80,
      fc.tuple(fc.integer({ min: 0, max: jsonRoutes.length - 1 }), payload),
      async ([index, { body, mode }], tally) => {
        const route = jsonRoutes[index]!;
        const headers: Record<string, string> = json(route.admin ? adminToken : token);
        const req: FuzzRequest = { method: route.admin ? "PUT" : "POST", target: route.target(), headers };
        if (mode === "chunked") {
          const chunks: Buffer[] = [];
          for (let at = 0; at < body.length; at += 64 * 1024) chunks.push(body.subarray(at, at + 64 * 1024));
          req.chunks = chunks;
        } else if (mode === "lying") {
          // Declares less than it sends: the rest is a second, malformed request on the connection.
          headers["content-length"] = String(Math.floor(body.length / 2));
          headers.connection = "close";
          req.body = body;
        } else {
          req.body = body;
        }
        await exchange(
          tally,
          { label: route.label, operationId: route.operationId, success: route.success, liveSession: true },
          req,
        );
      },
    );
  });

  it("keeps GetFile and ListFiles inside the workspace whatever the path spelling", async () => {
    const query = fc
      .tuple(
        fc.array(fc.tuple(hostilePath({ marker: MARKER, forWrite: false }), queryEncodings), {
          minLength: 0,
          maxLength: 3,
        }),
        fc.constantFrom(
          "",
          "&path",
          "&path=",
          "&x=1",
          "&%70ath=..",
          "&path[]=..",
          "&PATH=/etc",
          "&recursive=1",
          "&recursive=true",
          "&recursive=%ff",
          "&recursive",
        ),
      )
      .map(([paths, extra]) => `${paths.map(([p, e]) => `path=${encodeForQuery(p, e)}`).join("&")}${extra}`);
    for (const [label, suffix, operationId] of [
      ["GET /sessions/{id}/files", "files", "GetFile"],
      ["GET /sessions/{id}/files/list", "files/list", "ListFiles"],
    ] as const) {
      await fuzz(label, 200, query, async (q, tally) => {
        await exchange(
          tally,
          { label, operationId, success: [200], liveSession: true },
          { method: "GET", target: `/sessions/${sessionId}/${suffix}?${q}`, headers: auth() },
        );
      });
    }
  });

  it("keeps PutFile inside the workspace whatever the path field or file name", async () => {
    const name = fc.oneof(hostilePath({ marker: MARKER, forWrite: true }), markerName(MARKER));
    const upload = fc.record({
      pathField: fc.option(name, { nil: undefined }),
      filename: fc.option(name, { nil: undefined }),
      starEncoded: fc.boolean(),
      fieldFirst: fc.boolean(),
      // Mostly a small file; now and then one over the cap, sent chunked so no length gives it away.
      size: fc.constantFrom(11, 11, 11, 11, 11, 11, 11, 11, MAX_FILE_BYTES + 1, 4 * MAX_FILE_BYTES),
      mangle: fc.constantFrom<Mangle>("none", "none", "none", "none", "none", ...MANGLES),
    });
    await fuzz("POST /sessions/{id}/files", 200, upload, async (u, tally) => {
      const boundary = `fuzz${randomBytes(6).toString("hex")}`;
      const parts: Buffer[] = [];
      const field =
        u.pathField === undefined
          ? []
          : [
              Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\n`),
              Buffer.from(u.pathField),
              Buffer.from("\r\n"),
            ];
      const disposition =
        u.filename === undefined
          ? Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"\r\n`)
          : u.starEncoded
            ? Buffer.from(
                `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''${rawEncode(u.filename)}\r\n`,
              )
            : Buffer.concat([
                Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="`),
                Buffer.from(u.filename),
                Buffer.from('"\r\n'),
              ]);
      const content = u.size === 11 ? Buffer.from("fuzz upload") : Buffer.alloc(u.size, 0x61);
      const file = [
        disposition,
        Buffer.from("Content-Type: application/octet-stream\r\n\r\n"),
        content,
        Buffer.from("\r\n"),
      ];
      if (u.fieldFirst) parts.push(...field, ...file);
      else parts.push(...file, ...field);
      parts.push(Buffer.from(`--${boundary}--\r\n`));
      const { body, contentType } = mangleMultipart(Buffer.concat(parts), boundary, u.mangle);
      const req: FuzzRequest = {
        method: "POST",
        target: `/sessions/${sessionId}/files`,
        headers: { ...auth(), "content-type": contentType },
      };
      if (u.size > MAX_FILE_BYTES) {
        const chunks: Buffer[] = [];
        for (let at = 0; at < body.length; at += 64 * 1024) chunks.push(body.subarray(at, at + 64 * 1024));
        req.chunks = chunks;
      } else {
        req.body = body;
      }
      const answer = await exchange(
        tally,
        { label: "POST /sessions/{id}/files", operationId: "PutFile", success: [201], liveSession: true },
        req,
      );
      const stored = answer.status === 201 ? (answer.json as { size_bytes: number }).size_bytes : 0;
      if (stored > MAX_FILE_BYTES)
        throw new Error(`PutFile stored ${stored} bytes, past the ${MAX_FILE_BYTES}-byte cap`);
      if (answer.status === 201) {
        const stored = (answer.json as { path: string }).path;
        if (path.isAbsolute(stored) || stored.split("/").includes(".."))
          throw new Error(`PutFile stored at '${stored}', which is not inside the workspace`);
      }
    });
  });

  it("keeps the text editor inside the workspace whatever the path spelling", async () => {
    const write = hostilePath({ marker: MARKER, forWrite: true });
    const escapeTarget = fc.constantFrom(PLANTED.fileLink, `${PLANTED.outsideLink}/secret-outside.txt`);
    const input = fc.oneof(
      hostilePath({ marker: MARKER, forWrite: false }).map((p) => ({ command: "view", path: p })),
      fc.oneof(write, escapeTarget).map((p) => ({ command: "create", path: p, file_text: "fuzz" })),
      fc
        .oneof(write, escapeTarget)
        .map((p) => ({ command: "str_replace", path: p, old_str: "canary", new_str: "pwned" })),
      fc
        .oneof(write, escapeTarget)
        .map((p) => ({ command: "insert", path: p, insert_line: 0, new_str: "pwned\n" })),
      fc.oneof(write, escapeTarget).map((p) => ({ command: "undo_edit", path: p })),
    );
    await fuzz("POST /sessions/{id}/exec (text editor paths)", 200, input, async (value, tally) => {
      const answer = await exchange(tally, execute("POST /sessions/{id}/exec (text editor paths)"), {
        method: "POST",
        target: execTarget(),
        headers: json(),
        body: JSON.stringify({ tool: "text_editor_code_execution", input: value }),
      });
      // The editor reports a refusal in the result (return code 1), as the contract asks.
      const result = (answer.json as { result_block?: { content?: { return_code?: number } } }).result_block;
      tally.note(`${value.command}:${result?.content?.return_code === 0 ? "done" : "refused"}`);
    });
  });

  it("answers hostile session ids on every session route with a 4xx (or DestroySession's 204)", async () => {
    const otherTenant = await send(harness.url, {
      method: "POST",
      target: "/sessions",
      headers: json(await harness.token("fuzz-other-tenant")),
      body: "{}",
    });
    expect(otherTenant.status, otherTenant.text).toBe(201);
    const foreignId = (otherTenant.json as { session_id: string }).session_id;
    const id = fc.oneof(
      fc.constant(foreignId), // another workspace's live session: the same 404 as an unknown one
      fc.constant(foreignId.toUpperCase()),
      fc.constant(`${sessionId}x`),
      fc.constant(sessionId.slice(0, -1)),
      fc.string({ unit: "binary", minLength: 1, maxLength: 40 }),
      fc.constantFrom(
        "__proto__",
        "constructor",
        "hasOwnProperty",
        "null",
        "undefined",
        "0",
        "-1",
        "*",
        "x".repeat(5000),
      ),
      hostilePath({ marker: MARKER, forWrite: false }),
    );
    const routes = [
      { method: "GET", suffix: "", operationId: undefined, success: [] as number[] },
      { method: "DELETE", suffix: "", operationId: "DestroySession", success: [204] },
      { method: "POST", suffix: "/exec", operationId: "Execute", success: [] },
      { method: "GET", suffix: "/files/list", operationId: "ListFiles", success: [] },
      { method: "GET", suffix: "/files?path=x", operationId: "GetFile", success: [] },
      { method: "POST", suffix: "/files", operationId: "PutFile", success: [] },
    ];
    await fuzz(
      "session routes with hostile session ids",
      200,
      fc.tuple(id, queryEncodings, fc.integer({ min: 0, max: routes.length - 1 })),
      async ([raw, encoding, index], tally) => {
        const route = routes[index]!;
        const encoded = encodeForQuery(raw, encoding) || "x";
        await exchange(
          tally,
          {
            label: `${route.method} /sessions/{hostile id}${route.suffix}`,
            operationId: route.operationId,
            success: route.success,
          },
          {
            method: route.method,
            target: `/sessions/${encoded}${route.suffix}`,
            headers: json(),
            body: route.method === "POST" ? harmlessExecTexts[0] : undefined,
          },
        );
      },
    );
    // The other tenant's session was never reachable from this workspace, DELETE included.
    const still = await send(harness.url, {
      method: "GET",
      target: `/sessions/${foreignId}`,
      headers: auth(await harness.token("fuzz-other-tenant")),
    });
    expect(still.status, still.text).toBe(200);
  });

  it("refuses hostile request targets before any handler, whatever the method", async () => {
    await fuzz(
      "hostile request targets",
      200,
      fc.tuple(
        fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"),
        fc.boolean(),
        fc.constant(null).chain(() => hostileTarget(sessionId)),
      ),
      async ([method, asAdmin, target], tally) => {
        await exchange(
          tally,
          // A spelling the guard lets through may reach a real route: a 2xx is then fine.
          { label: `${method} hostile target`, success: [200, 201, 204] },
          {
            method,
            target,
            headers: json(asAdmin ? adminToken : token),
            body: method === "GET" || method === "HEAD" ? undefined : "{}",
          },
        );
      },
    );
  });

  it("answers the admin API's hostile workspace ids, queries and policy edits with a 4xx or a proper answer", async () => {
    const workspaceId = fc.oneof(
      fc.stringMatching(/^fuzz-admin-[a-z0-9]{1,6}$/),
      fc.constantFrom(
        "a".repeat(128),
        "a".repeat(129),
        "A",
        "0",
        ".",
        "..",
        "-x",
        "x:y",
        "x.y",
        "__proto__",
        "constructor",
        "%00",
        "\u0430",
      ),
      hostilePath({ marker: MARKER, forWrite: false }),
      fc.string({ unit: "binary", maxLength: 20 }),
    );
    const queryValue = fc.oneof(
      fc.constantFrom(
        "0",
        "1",
        "1000",
        "1001",
        "-1",
        "1e3",
        "0x10",
        " 1",
        "1 ",
        "\u0661",
        "999999999999999999999",
        "NaN",
        "2026-01-01",
        "0000-01-01",
        "0001-01-01",
        "9999-12-31T23:59:59.999999999Z",
        "2026-13-45",
        "2026-02-31",
        "2026-01-01T25:61",
        "2026-01-01T00:00+99:99",
        "+275760-09-13",
        "1970-01-01T00:00:00Z",
        "1969-12-31",
      ),
      jsonish().map((v) => String(JSON.stringify(v)).slice(0, 200)),
    );
    const policyEdit = fc.oneof(
      fc
        .record(
          {
            enabled: jsonish(),
            allowedImages: fc.oneof(jsonish(), fc.constant([TEST_IMAGE])),
            defaultImage: fc.oneof(jsonish(), fc.constant(TEST_IMAGE)),
            allowedTools: fc.oneof(jsonish(), fc.constant(["code_execution"])),
            execTimeoutCeilingSeconds: fc.oneof(jsonish(), fc.integer({ min: -5, max: 100 })),
            maxConcurrentSessions: fc.oneof(jsonish(), fc.integer({ min: -5, max: 100 })),
            maxFileBytes: fc.oneof(jsonish(), fc.integer()),
            resourceClass: jsonish(),
            egressAllowed: jsonish(),
            unknownField: jsonish(),
          },
          { requiredKeys: [] },
        )
        .map((value) => JSON.stringify(value)),
      jsonish().map((value) => JSON.stringify(value)),
      mutateJsonText(
        JSON.stringify({ enabled: true, maxConcurrentSessions: 2, allowedTools: ["code_execution"] }),
      ),
    );
    const request = fc.record({
      route: fc.constantFrom(
        "workspaces",
        "policy",
        "audit",
        "usage",
        "report",
        "policies",
        "pools",
        "trail",
        "unknown",
      ),
      method: fc.constantFrom("GET", "GET", "PUT", "DELETE", "POST", "PATCH"),
      workspace: workspaceId,
      encoding: queryEncodings,
      query: fc.array(
        fc.tuple(
          fc.constantFrom("limit", "from", "to", "x", "since", "until", "by", "kind"),
          queryValue,
          queryEncodings,
        ),
        {
          maxLength: 3,
        },
      ),
      body: policyEdit,
    });
    await fuzz("/admin/v1 routes with an admin token", 250, request, async (r, tally) => {
      const ws = encodeForQuery(r.workspace, r.encoding) || "x";
      const pathPart = {
        workspaces: "/admin/v1/workspaces",
        policy: `/admin/v1/workspaces/${ws}/policy`,
        audit: `/admin/v1/workspaces/${ws}/audit`,
        usage: `/admin/v1/workspaces/${ws}/usage`,
        report: `/admin/v1/usage?workspace=${ws}`,
        // A dry run only: random sets must not replace the policies the other properties rely on.
        policies: "/admin/v1/policies?dryRun=true",
        pools: "/admin/v1/pools",
        trail: `/admin/v1/audit?workspace=${ws}`,
        unknown: `/admin/v1/${ws}`,
      }[r.route];
      const q = r.query.map(([name, value, enc]) => `${name}=${encodeForQuery(value, enc)}`).join("&");
      const withBody = r.method === "PUT" || r.method === "POST" || r.method === "PATCH";
      await exchange(
        tally,
        { label: `${r.method} /admin/v1/${r.route}`, success: [200, 204] },
        {
          method: r.method,
          target: q ? `${pathPart}${pathPart.includes("?") ? "&" : "?"}${q}` : pathPart,
          headers: withBody ? json(adminToken) : auth(adminToken),
          body: withBody ? r.body : undefined,
        },
      );
    });
  });

  it("serves everyone else while a few clients are slow, and answers the slow ones properly", async () => {
    const tally = new Tally("slow clients");
    const { Socket } = await import("node:net");
    const url = new URL(harness.url);
    const connect = () =>
      new Promise<InstanceType<typeof Socket>>((resolve, reject) => {
        const socket = new Socket();
        socket.once("error", reject);
        socket.connect(Number(url.port), url.hostname, () => resolve(socket));
      });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const body = harmlessExecTexts[0]!;
    const head = (length: number | "chunked") =>
      `POST /sessions/${sessionId}/exec HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\n${length === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${length}`}\r\nConnection: close\r\n\r\n`;
    const collect = (socket: InstanceType<typeof Socket>) =>
      new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (chunk) => {
          text += chunk.toString("utf8");
        });
        socket.on("close", () => resolve(text));
        socket.on("error", () => undefined);
      });
    const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
    const probe = async () => {
      const answer = await exchange(
        tally,
        { label: "a normal call during slow clients", success: [200] },
        {
          method: "GET",
          target: `/sessions/${sessionId}`,
          headers: auth(),
        },
      );
      expect(answer.status).toBe(200);
    };

    // 1. Stalled mid-headers, 2. stalled mid-body, 3. idle sockets: others are still served.
    const stalled = await Promise.all([connect(), connect(), connect(), connect()]);
    try {
      stalled[0]!.write(`GET /sessions/${sessionId} HTTP/1.1\r\nHost: ${url.host}\r\nAuthoriz`);
      stalled[1]!.write(`${head(body.length)}${body.slice(0, 10)}`);
      for (let i = 0; i < 3; i++) {
        await probe();
        await sleep(200);
      }
    } finally {
      // A request left half-sent would hold the gateway's drain at close.
      for (const socket of stalled) socket.destroy();
    }

    // 4. A body dribbled byte by byte (fixed length and chunked): answered as usual.
    for (const mode of ["length", "chunked"] as const) {
      const socket = await connect();
      const answer = collect(socket);
      socket.write(head(mode === "length" ? body.length : "chunked"));
      for (let at = 0; at < body.length; at += 8) {
        const piece = body.slice(at, at + 8);
        socket.write(mode === "chunked" ? `${piece.length.toString(16)}\r\n${piece}\r\n` : piece);
        await sleep(15);
      }
      if (mode === "chunked") socket.write("0\r\n\r\n");
      const text = await answer;
      tally.count(statusOf(text));
      expect(statusOf(text), text).toBe(200);
      tally.cases++;
    }

    // 5. A client that disappears mid-body, then one that disappears waiting for its answer.
    for (const cut of [body.length / 2, body.length]) {
      const socket = await connect();
      socket.write(`${head(body.length)}${body.slice(0, cut)}`);
      await sleep(100);
      socket.destroy();
      await probe();
      tally.cases++;
    }
    tally.cases += 4;
    console.log(tally.summary(0));
  });

  it("is still serving, and nothing outside the workspace was read or written", async () => {
    const health = await send(harness.url, { method: "GET", target: "/healthz" });
    expect(health.status).toBe(200);
    const ran = await send(harness.url, {
      method: "POST",
      target: execTarget(),
      headers: json(),
      body: JSON.stringify({ tool: "code_execution", input: { code: "print(6 * 7)" } }),
    });
    expect(ran.status, ran.text).toBe(200);
    expect(ran.text).toContain("42");

    // Answers nobody received count too: the gateway's own tally has no 5xx, even for the
    // clients that hung up mid-request.
    const metrics = await send(harness.url, { method: "GET", target: "/metrics" });
    const serverErrors = metrics.text
      .split("\n")
      .filter((line) => line.startsWith("sandpool_http_requests_total{") && /status="5\d\d"/.test(line))
      .filter((line) => Number(line.split(" ").at(-1)) > 0);
    expect(serverErrors, "5xx answers counted by the gateway").toEqual([]);

    const root = harness.root;
    const after = await snapshot(root);
    const canaryEntries = (map: Map<string, string>) =>
      [...map.entries()].filter(([entry]) =>
        canaryDirs.some((dir) => entry === dir || entry.startsWith(`${dir}/`)),
      );
    expect(canaryEntries(after)).toEqual(canaryEntries(before));
    const outside = [...after.entries()].filter(
      ([entry, kind]) =>
        before.get(entry) !== kind &&
        !insideSessionFiles(root, entry) &&
        !sandboxScaffolding(root, entry, kind),
    );
    expect(outside, "entries new or changed outside the session directories").toEqual([]);
    const markedOutside = [...after.keys()].filter(
      (entry) => entry.includes(MARKER) && !insideSessionFiles(root, entry),
    );
    expect(markedOutside).toEqual([]);
    expect(await strayMarkers()).toEqual([]);
    // The planted links still point where they did: nothing replaced them.
    for (const [name, target] of [
      [PLANTED.outsideLink, canaryDirs[0]],
      [PLANTED.rootLink, "/"],
    ] as const) {
      expect(await readlink(path.join(workspaceDir, name))).toBe(target);
    }
  });
});
