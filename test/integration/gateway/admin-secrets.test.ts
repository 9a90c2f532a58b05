/**
 * Workspace secrets through the admin API of a real dev gateway: stored (201), replaced (200),
 * listed and removed (204; 404 when absent or another workspace's). The value goes in and
 * never comes out: not in any answer, not in the audit trail, not in a log line (every line
 * the gateway logs, at debug, is captured). Bindings are checked field by field (422 naming
 * the field); a host outside the workspace's egressAllowHosts is refused. Every answer matches
 * the gateway's OpenAPI document. A gateway without a key ring starts and answers 503.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newKeyEntry } from "../../../src/secrets/key-ring.js";
import { type AdminRequestOptions, adminRequest } from "../../support/admin-api.js";
import { expectDeclaredAnswer } from "../../support/admin-openapi.js";
import type { Answer } from "../../support/contract-client.js";
import { startTestGateway, type TestGateway, testAdminToken } from "../../support/gateway-harness.js";

const logLines: string[] = [];
const capture = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});

let harness: TestGateway;
let adminToken: string;
beforeAll(async () => {
  harness = await startTestGateway(
    {
      secrets: { keys: newKeyEntry("k1") },
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 0 }],
    },
    { log: pino({ level: "debug" }, capture) },
  );
  adminToken = await testAdminToken("alice");
});
afterAll(() => harness?.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
/** A value no other text in the test run could hold by chance. */
const freshValue = () => `sv_${randomBytes(18).toString("hex")}`;

/** One admin call, its answer checked against the OpenAPI document. */
async function call(
  operationId: string,
  method: string,
  path: string,
  options?: AdminRequestOptions,
): Promise<Answer> {
  const answer = await adminRequest(harness.url, adminToken, method, path, options);
  expectDeclaredAnswer(operationId, answer);
  return answer;
}
const put = (workspace: string, name: string, body: unknown) =>
  call("admin.secrets.put", "PUT", `/workspaces/${workspace}/secrets/${name}`, { body });
const list = (workspace: string) => call("admin.secrets.list", "GET", `/workspaces/${workspace}/secrets`);
const remove = (workspace: string, name: string) =>
  call("admin.secrets.delete", "DELETE", `/workspaces/${workspace}/secrets/${name}`);

const github = (value: string) => ({
  value,
  hosts: ["api.github.com"],
  header: "Authorization",
  template: "Bearer {{secret}}",
});

describe("admin API: workspace secrets", () => {
  it("stores, replaces, lists and removes a secret; the value is in no answer, audit row or log line", async () => {
    const workspace = freshWorkspace("secrets");
    const value = freshValue();
    const created = await put(workspace, "github", github(value));
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      workspace,
      name: "github",
      hosts: ["api.github.com"],
      header: "Authorization",
      template: "Bearer {{secret}}",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const second = freshValue();
    const replaced = await put(workspace, "github", {
      ...github(second),
      ports: [443],
      paths: ["/repos/"],
      methods: ["GET"],
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ ports: [443], paths: ["/repos/"], methods: ["GET"] });
    const pypi = await put(workspace, "pypi", {
      value: freshValue(),
      hosts: ["upload.pypi.org"],
      basicAuth: { username: "__token__" },
    });
    expect(pypi.status, pypi.text).toBe(201);

    const listed = await list(workspace);
    expect(listed.status).toBe(200);
    const items = (listed.body as { items: { name: string }[] }).items;
    expect(items.map((item) => item.name)).toEqual(["github", "pypi"]);
    expect(items[1]).toMatchObject({ basicAuth: { username: "__token__" } });

    // The reading side egress uses is the one place the value comes out.
    const opened = await harness.gateway.services.secrets.openedSecretsOf(workspace);
    expect(opened.find((secret) => secret.name === "github")?.value).toBe(second);

    const audit = await call("admin.audit.list", "GET", "/audit?kind=admin&limit=500");
    expect(audit.text).toContain('"secret.set"');

    const removed = await remove(workspace, "github");
    expect(removed.status).toBe(204);
    const again = await remove(workspace, "github");
    expect(again.status).toBe(404);
    expect((again.body as { detail: { code: string } }).detail.code).toBe("request.not_found");
    expect((await list(workspace)).text).not.toContain("github");
    const afterRemove = await call("admin.audit.list", "GET", "/audit?kind=admin&limit=500");
    expect(afterRemove.text).toContain('"secret.remove"');

    const everything = [
      created.text,
      replaced.text,
      listed.text,
      audit.text,
      afterRemove.text,
      ...logLines,
    ].join("\n");
    for (const secret of [value, second]) expect(everything).not.toContain(secret);
    // The log has the operation all the same, by name.
    expect(logLines.join("")).toContain("workspace secret set");
  });

  it("keeps workspaces apart: another workspace's secret is listed nowhere, and removing it is 404", async () => {
    const owner = freshWorkspace("owner");
    const stranger = freshWorkspace("stranger");
    expect((await put(owner, "token", github(freshValue()))).status).toBe(201);
    expect((await list(stranger)).body).toEqual({ items: [] });
    expect((await remove(stranger, "token")).status).toBe(404);
    expect((await list(owner)).text).toContain('"token"');
    // A workspace token reaches no secrets route at all.
    const workspaceToken = await harness.token(owner);
    for (const [method, path] of [
      ["GET", `/workspaces/${owner}/secrets`],
      ["PUT", `/workspaces/${owner}/secrets/token`],
      ["DELETE", `/workspaces/${owner}/secrets/token`],
    ] as const) {
      const answer = await adminRequest(harness.url, adminToken, method, path, {
        token: workspaceToken,
        body: method === "PUT" ? github(freshValue()) : undefined,
      });
      expect(answer.status, `${method} ${path}`).toBe(403);
    }
  });

  it("refuses bad bindings and values with 422 naming the field, echoing no value", async () => {
    const workspace = freshWorkspace("invalid");
    const value = freshValue();
    const base = github(value);
    const cases: [unknown, RegExp][] = [
      [{ ...base, hosts: [] }, /hosts: at least one host/],
      [{ ...base, hosts: ["10.0.0.1"] }, /hosts\.0: '10\.0\.0\.1' is an address/],
      [{ ...base, hosts: ["bad host"] }, /hosts\.0: 'bad host' is not a host name/],
      [
        { ...base, template: "Bearer" },
        /template: must contain \{\{secret\}\} exactly once \(it holds it 0 times\)/,
      ],
      [{ ...base, template: "{{secret}}{{secret}}" }, /template: .*2 times/],
      [{ ...base, header: "Host" }, /header: 'Host' is written by the proxy/],
      [{ ...base, header: "Proxy-Authorization" }, /header: 'Proxy-Authorization'/],
      [{ ...base, header: "Bad Header" }, /header: 'Bad Header' is not an HTTP header name/],
      [
        { ...base, basicAuth: { username: "u" } },
        /basicAuth: give header and template, or basicAuth, not both/,
      ],
      [{ value, hosts: ["a.example"] }, /header: required: header and template, or basicAuth/],
      [{ value, hosts: ["a.example"], header: "X-Key" }, /template: required with header/],
      [{ ...base, value: `${value}\r\nX-Injected: 1` }, /value: must not contain control characters/],
      [{ ...base, value: "" }, /value:/],
      [{ ...base, value: "x".repeat(8 * 1024 + 1) }, /value: must be 8192 bytes at most/],
      [{ ...base, ports: [0] }, /ports\.0:/],
      [{ ...base, paths: ["repos"] }, /paths\.0: must start with \//],
      [{ ...base, methods: ["get"] }, /methods\.0: must be an upper-case method/],
      [{ ...base, extra: true }, /extra: /],
    ];
    for (const [body, problem] of cases) {
      const answer = await put(workspace, "token", body);
      expect(answer.status, answer.text).toBe(422);
      expect((answer.body as { detail: { code: string } }).detail.code).toBe("request.malformed");
      expect(answer.text).toMatch(problem);
      expect(answer.text).not.toContain(value);
    }
    const badName = await put(workspace, "Not_A_Name", base);
    expect(badName.status).toBe(422);
    expect(badName.text).toMatch(/not a secret name/);
    expect((await list(workspace)).body).toEqual({ items: [] });
    expect(logLines.join("")).not.toContain(value);
  });

  it("refuses a bound host outside the workspace's egressAllowHosts, naming it", async () => {
    const workspace = freshWorkspace("narrow");
    const policy = await adminRequest(harness.url, adminToken, "PUT", `/workspaces/${workspace}/policy`, {
      body: { egressAllowHosts: ["*.example.com"] },
    });
    expect(policy.status, policy.text).toBe(200);
    const outside = await put(workspace, "token", {
      ...github(freshValue()),
      hosts: ["api.example.com", "api.github.com"],
    });
    expect(outside.status).toBe(422);
    expect(outside.text).toMatch(
      /api\.github\.com is outside the workspace's egressAllowHosts \(\*\.example\.com\)/,
    );
    const inside = await put(workspace, "token", { ...github(freshValue()), hosts: ["api.example.com"] });
    expect(inside.status, inside.text).toBe(201);
  });
});

describe("policy files: secrets' bindings without values", () => {
  const apply = (body: unknown, dryRun = false) =>
    call("admin.policies.apply", "PUT", `/policies${dryRun ? "?dryRun=true" : ""}`, { body });
  /** The set in force with `extra` workspaces added: an apply replaces the whole set. */
  const current = async () =>
    ((await call("admin.policies.get", "GET", "/policies")).body as { policies: Record<string, unknown> })
      .policies;

  it("rebinds a stored secret keeping its value; a second apply changes nothing; a dry run nothing either", async () => {
    const workspace = freshWorkspace("file");
    const value = freshValue();
    expect((await put(workspace, "github", github(value))).status).toBe(201);
    const entry = {
      egressAllowHosts: ["*.github.com"],
      secrets: {
        github: { hosts: ["api.github.com"], header: "X-Token", template: "{{secret}}", methods: ["GET"] },
      },
    };
    const policies = { ...(await current()), [workspace]: entry };
    const dry = await apply({ policies }, true);
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toMatchObject({
      dryRun: true,
      changed: true,
      secrets: [{ workspace, name: "github", action: "rebind" }],
    });
    expect(((await list(workspace)).body as { items: { header: string }[] }).items[0]!.header).toBe(
      "Authorization",
    );

    const applied = await apply({ policies });
    expect(applied.status, applied.text).toBe(200);
    expect(applied.body).toMatchObject({ changed: true, secrets: [{ name: "github", action: "rebind" }] });
    expect(((await list(workspace)).body as { items: unknown[] }).items[0]).toMatchObject({
      header: "X-Token",
      template: "{{secret}}",
      methods: ["GET"],
    });
    const opened = await harness.gateway.services.secrets.openedSecretsOf(workspace);
    expect(opened[0]!.value).toBe(value);
    const again = await apply({ policies });
    expect(again.body).toMatchObject({ changed: false, secrets: [{ name: "github", action: "unchanged" }] });
    expect([dry.text, applied.text, again.text].join()).not.toContain(value);
  });

  it("refuses the whole file, naming the secret, for a secret without a value, a value, or a bad binding", async () => {
    const workspace = freshWorkspace("refused");
    expect((await put(workspace, "stored", github(freshValue()))).status).toBe(201);
    const before = await current();
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { missing: { hosts: ["a.example"], header: "X-Key", template: "{{secret}}" } },
        /secrets\.missing: no value stored yet/,
      ],
      [{ stored: { ...github("plain-in-a-file") } }, /secrets\.stored: a policy file carries no values/],
      [
        { stored: { hosts: ["a.example"], header: "X-Key", template: "none" } },
        /secrets\.stored\.template: must contain/,
      ],
    ];
    for (const [secrets, problem] of cases) {
      const answer = await apply({
        policies: { ...before, [workspace]: { maxConcurrentSessions: 2, secrets } },
      });
      expect(answer.status, answer.text).toBe(422);
      expect(answer.text).toMatch(problem);
      expect(answer.text).not.toContain("plain-in-a-file");
    }
    // Nothing was applied: not the policy row, not the binding.
    expect((await current())[workspace]).toBeUndefined();
    expect(((await list(workspace)).body as { items: { header: string }[] }).items[0]!.header).toBe(
      "Authorization",
    );
  });
});

describe("admin API: workspace secrets without a key ring", () => {
  let keyless: TestGateway;
  beforeAll(async () => {
    keyless = await startTestGateway({
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 0 }],
    });
  });
  afterAll(() => keyless?.close());

  it("starts, and answers 503 secrets.not_configured naming the setting", async () => {
    const answer = await adminRequest(keyless.url, adminToken, "PUT", "/workspaces/any/secrets/token", {
      body: github(freshValue()),
    });
    expectDeclaredAnswer("admin.secrets.put", answer);
    expect(answer.status).toBe(503);
    expect((answer.body as { detail: { code: string; message: string } }).detail).toMatchObject({
      code: "secrets.not_configured",
      message: expect.stringMatching(/secrets\.keys or secrets\.keysFile/),
    });
    const listed = await adminRequest(keyless.url, adminToken, "GET", "/workspaces/any/secrets");
    expect(listed.body).toEqual({ items: [] });
  });
});
