/**
 * Workspace policy through the gateway (docs/architecture.md, "Policy"): the image and tool
 * allow-lists, the kill switch, the ceilings on timeouts, lifetimes and file sizes, and the
 * rule that a row may narrow the deployment but never widen it.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { validatePolicyEdit } from "../../../src/policy/workspace-policy-fields.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import type { EditablePolicyFields } from "../../../src/store/sql/policy-row.js";
import type { Answer, ContractClient } from "../../support/contract-client.js";
import { startTestGateway, TEST_IMAGE, type TestGateway } from "../../support/gateway-harness.js";

const ALT_IMAGE = "sandpool/sandbox:alt";

let harness: TestGateway;
beforeAll(async () => {
  harness = await startTestGateway({
    policy: { allowedImages: [TEST_IMAGE, ALT_IMAGE], defaultImage: TEST_IMAGE },
    pools: [
      { name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 8 },
      { name: "alt", image: ALT_IMAGE, minIdle: 0, maxTotal: 2 },
    ],
  });
});
afterAll(() => harness.close());

const freshWorkspace = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

async function setPolicy(workspace: string, fields: Partial<EditablePolicyFields>): Promise<void> {
  await harness.gateway.policyRepository.put(workspace, fields, "policy-test");
  harness.gateway.services.policies.invalidate(workspace);
}

function sessionIdOf(answer: Answer): string {
  expect(answer.status, answer.text).toBe(201);
  return (answer.body as { session_id: string }).session_id;
}

function expectError(answer: Answer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect((answer.body as { detail?: { code?: string } }).detail?.code).toBe(code);
}

/** Leases a pool has served or queued for on this replica: warm, cold (started or queued) and reused. */
function leaseAttempts(pool: string): number {
  const counts = harness.gateway.services.pools.demand.countersOf(pool);
  return counts.warmLeases + counts.coldLeases + counts.reusedLeases;
}

/** What the pools and leases hold, to show a refused request took nothing. */
async function leasedState() {
  const idle = async (pool: string) => (await harness.store.listIdle(pool)).map((r) => r.sandboxId).sort();
  return {
    leases: (await harness.store.listLeases()).map((l) => l.sessionId).sort(),
    defaultIdle: await idle("default"),
    altIdle: await idle("alt"),
    attempts: { default: leaseAttempts("default"), alt: leaseAttempts("alt") },
  };
}

/**
 * Nothing was taken since `before`: the same leases, every sandbox idle then still idle, and
 * no lease attempted, so no sandbox started for the refused request. Warm-up may start
 * sandboxes meanwhile (an earlier test's demand sizes the pools), so members are not compared.
 */
async function expectNothingLeased(before: Awaited<ReturnType<typeof leasedState>>): Promise<void> {
  const after = await leasedState();
  expect(after.leases).toEqual(before.leases);
  expect(after.defaultIdle).toEqual(expect.arrayContaining(before.defaultIdle));
  expect(after.altIdle).toEqual(expect.arrayContaining(before.altIdle));
  expect(after.attempts).toEqual(before.attempts);
}

async function waitForIdle(pool: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await harness.store.listIdle(pool)).length < count) {
    if (Date.now() > deadline) throw new Error(`pool ${pool} never had ${count} idle`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("images", () => {
  it("gives the default image when the client names none", async () => {
    const client = await harness.client(freshWorkspace("img-default"));
    const answer = await client.createSession();
    expect((answer.body as { image?: string }).image).toBe(TEST_IMAGE);
    await client.destroy(sessionIdOf(answer));
  });

  it("gives a workspace's own default image when its row names one", async () => {
    const workspace = freshWorkspace("img-row-default");
    await setPolicy(workspace, { defaultImage: ALT_IMAGE });
    const client = await harness.client(workspace);
    const answer = await client.createSession();
    expect((answer.body as { image?: string }).image).toBe(ALT_IMAGE);
    await client.destroy(sessionIdOf(answer));
  });

  it("leases an allowed image the client asks for", async () => {
    const client = await harness.client(freshWorkspace("img-allowed"));
    const answer = await client.createSession({ image: ALT_IMAGE });
    const id = sessionIdOf(answer);
    expect((answer.body as { image?: string }).image).toBe(ALT_IMAGE);
    const lease = (await harness.store.listLeases()).find((l) => l.sessionId === id);
    expect(lease?.pool).toBe("alt");
    expect((await client.run(id, "code_execution", { code: "print(6 * 7)" })).stdout).toBe("42\n");
    await client.destroy(id);
  });

  it("refuses an image the workspace may not use with 403, leasing nothing", async () => {
    const workspace = freshWorkspace("img-denied");
    await setPolicy(workspace, { allowedImages: [TEST_IMAGE] });
    const client = await harness.client(workspace);
    await waitForIdle("default", 1);
    const before = await leasedState();
    expectError(await client.createSession({ image: ALT_IMAGE }), 403, "policy.image_not_allowed");
    // An image the deployment does not know at all is refused the same way.
    expectError(await client.createSession({ image: "evil/miner:latest" }), 403, "policy.image_not_allowed");
    await expectNothingLeased(before);
    expect(await harness.store.countSlots(workspace, Date.now())).toBe(0);
    // The image it may use still works.
    await client.destroy(sessionIdOf(await client.createSession({ image: TEST_IMAGE })));
  });
});

describe("the workspace kill switch", () => {
  it("refuses every new session of a disabled workspace with 403", async () => {
    const workspace = freshWorkspace("disabled");
    await setPolicy(workspace, { enabled: false });
    const client = await harness.client(workspace);
    const before = await leasedState();
    expectError(await client.createSession(), 403, "policy.workspace_disabled");
    expectError(await client.createSession({ image: TEST_IMAGE }), 403, "policy.workspace_disabled");
    await expectNothingLeased(before);

    // Re-enabled, it works again.
    await setPolicy(workspace, { enabled: true });
    await client.destroy(sessionIdOf(await client.createSession()));
  });

  it("refuses calls on a disabled workspace's open sessions with 403", async () => {
    // docs/architecture.md, "The pipeline", step 7: the kill switch is a policy check of the
    // pipeline, so a disabled workspace runs no more code, not merely opens no more sessions.
    const workspace = freshWorkspace("disabled-open");
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    expect((await client.run(id, "code_execution", { code: "print(1)" })).stdout).toBe("1\n");

    await setPolicy(workspace, { enabled: false });
    const exec = await client.exec(id, { tool: "code_execution", input: { code: "print(2)" } });
    expectError(exec, 403, "policy.workspace_disabled");
    const put = await client.putFile(id, "data", { path: "after-disable.txt" });
    expectError(put, 403, "policy.workspace_disabled");
    await client.destroy(id);
  });
});

describe("tools", () => {
  it("refuses a tool outside the workspace's list with 403 and never runs it", async () => {
    const workspace = freshWorkspace("tools");
    await setPolicy(workspace, { allowedTools: ["code_execution"] });
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());

    const bash = await client.exec(id, { tool: "bash_code_execution", input: { command: "touch marker" } });
    expectError(bash, 403, "policy.tool_not_allowed");
    const editor = await client.exec(id, {
      tool: "text_editor_code_execution",
      input: { command: "create", path: "notes.md", file_text: "x" },
    });
    expectError(editor, 403, "policy.tool_not_allowed");

    const python = await client.run(id, "code_execution", {
      code: "import os\nprint(sorted(os.listdir('.')))",
    });
    expect(python.return_code).toBe(0);
    expect(python.stdout).toBe("[]\n");
    await client.destroy(id);
  });
});

describe("ceilings", () => {
  it("clamps timeout_seconds to the workspace's execution ceiling", async () => {
    const workspace = freshWorkspace("exec-ceiling");
    await setPolicy(workspace, { execTimeoutCeilingSeconds: 2 });
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());
    const started = Date.now();
    const result = await client.run(
      id,
      "code_execution",
      { code: "import time\ntime.sleep(5)\nprint('woke')" },
      { timeout_seconds: 100 },
    );
    const elapsed = Date.now() - started;
    expect(result.return_code).toBe(124);
    expect(result.stdout).not.toContain("woke");
    expect(elapsed).toBeGreaterThanOrEqual(1_800);
    expect(elapsed).toBeLessThan(5_000); // well short of the 100 s asked for (and of the 5 s sleep)
    await client.destroy(id);
  });

  it("clamps lifetime hints to the row's ceilings and reports the values in force", async () => {
    const workspace = freshWorkspace("lifetimes");
    await setPolicy(workspace, { idleTimeoutCeilingSeconds: 30, maxLifetimeCeilingSeconds: 90 });
    const client = await harness.client(workspace);

    const above = await client.createSession({ idle_timeout_seconds: 1_000, max_lifetime_seconds: 100_000 });
    expect(above.body).toMatchObject({ idle_timeout_seconds: 30, max_lifetime_seconds: 90 });
    const aboveId = sessionIdOf(above);
    expect((await client.getSession(aboveId)).body).toMatchObject({
      idle_timeout_seconds: 30,
      max_lifetime_seconds: 90,
    });

    const below = await client.createSession({ idle_timeout_seconds: 10, max_lifetime_seconds: 20 });
    expect(below.body).toMatchObject({ idle_timeout_seconds: 10, max_lifetime_seconds: 20 });

    // No hint: the deployment's defaults (300 s, 3600 s), narrowed by the row.
    const none = await client.createSession();
    expect(none.body).toMatchObject({ idle_timeout_seconds: 30, max_lifetime_seconds: 90 });

    for (const answer of [above, below, none]) await client.destroy(sessionIdOf(answer));
  });

  it("caps uploads at the workspace's file size", async () => {
    const workspace = freshWorkspace("file-cap");
    await setPolicy(workspace, { maxFileBytes: 1_000 });
    const client = await harness.client(workspace);
    const id = sessionIdOf(await client.createSession());

    const over = await client.putFile(id, new Uint8Array(1_001).fill(7), { path: "over.bin" });
    expectError(over, 413, "file.too_large");
    const fits = await client.putFile(id, new Uint8Array(1_000).fill(7), { path: "fits.bin" });
    expect(fits.status, fits.text).toBe(201);
    expect(fits.body).toEqual({ path: "fits.bin", size_bytes: 1_000 });
    // Far above the cap: refused on Content-Length, before the body is read.
    const huge = await client.putFile(id, new Uint8Array(512 * 1024), { path: "huge.bin" });
    expectError(huge, 413, "file.too_large");

    const listed = await client.listFiles(id);
    expect((listed.body as { files: { path: string }[] }).files.map((f) => f.path)).toEqual(["fits.bin"]);
    await client.destroy(id);
  });
});

describe("a row never widens the deployment", () => {
  it("ignores row values above the deployment's ceilings that reached the database", async () => {
    const workspace = freshWorkspace("widen");
    // The repository checks shape only; a row like this could come from an older deployment.
    await setPolicy(workspace, {
      maxConcurrentSessions: 1_000,
      execTimeoutCeilingSeconds: 100_000,
      idleTimeoutCeilingSeconds: 100_000,
      maxLifetimeCeilingSeconds: 100_000,
      allowedImages: [TEST_IMAGE, "not/in-the-deployment"],
    });
    const policy = await harness.gateway.services.policies.forWorkspace(workspace);
    const deployment = harness.gateway.services.policies.deployment;
    expect(policy).toMatchObject({
      configured: true,
      maxConcurrentSessions: deployment.maxConcurrentSessions,
      execTimeoutCeilingSeconds: deployment.execTimeoutCeilingSeconds,
      idleTimeoutCeilingSeconds: deployment.idleTimeoutCeilingSeconds,
      maxLifetimeCeilingSeconds: deployment.maxLifetimeCeilingSeconds,
      allowedImages: [TEST_IMAGE],
    });
    const client: ContractClient = await harness.client(workspace);
    const answer = await client.createSession({
      idle_timeout_seconds: 100_000,
      max_lifetime_seconds: 100_000,
    });
    expect(answer.body).toMatchObject({
      idle_timeout_seconds: deployment.idleTimeoutCeilingSeconds,
      max_lifetime_seconds: deployment.maxLifetimeCeilingSeconds,
    });
    expectError(
      await client.createSession({ image: "not/in-the-deployment" }),
      403,
      "policy.image_not_allowed",
    );
    await client.destroy(sessionIdOf(answer));
  });

  it("refuses an edit above the deployment with 422 listing every problem", () => {
    const deployment = deploymentPolicySchema.parse({
      allowedImages: [TEST_IMAGE],
      defaultImage: TEST_IMAGE,
      allowedTools: ["code_execution", "bash_code_execution"],
      maxConcurrentSessions: 5,
      execTimeoutCeilingSeconds: 60,
    });
    const edit = () =>
      validatePolicyEdit(
        {
          maxConcurrentSessions: 6,
          execTimeoutCeilingSeconds: 61,
          allowedImages: ["other/image"],
          allowedTools: ["text_editor_code_execution"],
          resourceClass: "gpu",
          egressAllowed: true,
        },
        deployment,
        ["standard"],
      );
    expect(edit).toThrow(SandpoolError);
    try {
      edit();
    } catch (error) {
      const refused = error as SandpoolError;
      expect(refused.code).toBe("request.malformed");
      expect(refused.status).toBe(422);
      for (const field of [
        "maxConcurrentSessions",
        "execTimeoutCeilingSeconds",
        "allowedImages",
        "allowedTools",
        "resourceClass",
        "egressAllowed",
      ]) {
        expect(refused.message).toContain(field);
      }
    }
    // At the ceiling, or narrower, is fine.
    expect(
      validatePolicyEdit(
        { maxConcurrentSessions: 5, execTimeoutCeilingSeconds: 1, allowedTools: ["code_execution"] },
        deployment,
        ["standard"],
      ),
    ).toMatchObject({ maxConcurrentSessions: 5, execTimeoutCeilingSeconds: 1 });

    // And the effective policy of a row that slipped through is still the stricter value.
    const effective = effectivePolicy("w", deployment, {
      maxConcurrentSessions: 50,
      allowedTools: ["text_editor_code_execution", "code_execution"],
      egressAllowed: true,
    });
    expect(effective).toMatchObject({
      maxConcurrentSessions: 5,
      allowedTools: ["code_execution"],
      egressAllowed: false,
    });
  });
});
